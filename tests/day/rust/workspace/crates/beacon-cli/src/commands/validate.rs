use beacon_core::Config;

pub fn run(config: &Config) -> anyhow::Result<()> {
    println!("ok: {} checks", config.checks.len());
    Ok(())
}
