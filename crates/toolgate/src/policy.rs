//! `toolgate policy`: the built-in policy.

use std::io::{self, Write};

use clap::{Args, Subcommand};

use crate::{EXIT_OK, Failure};

/// The built-in policy: what applies when no policy file does.
#[derive(Debug, Args)]
pub(crate) struct PolicyCommandArgs {
    #[command(subcommand)]
    command: PolicyCommand,
}

#[derive(Debug, Subcommand)]
enum PolicyCommand {
    /// Print the built-in policy (TOML). A policy file with `extends = "default"` adds its rules
    /// to it as a layer of its own; one without replaces it.
    ShowDefault,
}

pub(crate) fn run(args: &PolicyCommandArgs) -> Result<u8, Failure> {
    match args.command {
        PolicyCommand::ShowDefault => {
            let mut out = io::stdout().lock();
            out.write_all(toolgate_policy::DEFAULT_POLICY.as_bytes())?;
            out.flush()?;
        }
    }
    Ok(EXIT_OK)
}
