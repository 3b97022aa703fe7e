use std::process::ExitCode;

use beacon_core::{probe, Config, Outcome};

use crate::output::{self, Format};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only run checks whose id contains this
    #[arg(long)]
    pub only: Option<String>,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

pub async fn run(config: &Config, args: Args) -> anyhow::Result<()> {
    let client = reqwest::Client::builder().build()?;
    let mut rows = Vec::new();
    for check in &config.checks {
        if let Some(filter) = &args.only {
            if !check.id.as_str().contains(filter.as_str()) {
                continue;
            }
        }
        let outcome = probe::run(&client, check).await;
        rows.push((check.id.clone(), outcome));
    }
    output::print(&rows, args.format)?;
    if rows.iter().any(|(_, o)| matches!(o, Outcome::Down { .. })) {
        std::process::exit(ExitCode::from(2).into());
    }
    Ok(())
}
