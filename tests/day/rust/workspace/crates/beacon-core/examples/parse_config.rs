//! cargo run -p beacon-core --example parse_config -- config/beacon.example.toml
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path: PathBuf = std::env::args().nth(1).unwrap_or_else(|| "beacon.toml".into()).into();
    let config = beacon_core::Config::from_path(&path)?;
    for check in &config.checks {
        println!("{:<16} every {:?}", check.id, check.interval);
    }
    Ok(())
}
