use std::path::PathBuf;

use clap::{Parser, Subcommand};

mod commands;
mod output;

/// Uptime checks from the command line
#[derive(Debug, Parser)]
#[command(name = "beacon", version = env!("BEACON_VERSION"), about)]
struct Cli {
    /// Path to the config file
    #[arg(short, long, env = "BEACON_CONFIG", default_value = "beacon.toml")]
    config: PathBuf,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run every check once and print the results
    Check(commands::check::Args),
    /// Validate the config file without running anything
    Validate,
    /// Start the HTTP API and the scheduler
    Serve(commands::serve::Args),
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();

    let cli = Cli::parse();
    let config = beacon_core::Config::from_path(&cli.config)?;
    match cli.command {
        Command::Check(args) => commands::check::run(&config, args).await,
        Command::Validate => commands::validate::run(&config),
        Command::Serve(args) => commands::serve::run(config, args).await,
    }
}
