//! `toolgate explain`: the whole trace of how the policy decides a call.

use std::io::{self, Write};

use clap::Args;
use serde_json::json;
use toolgate_policy::LoadOptions;

use crate::args::{CallArgs, PolicyArgs, RunArgs};
use crate::lines;
use crate::{EXIT_OK, Failure};

/// Trace how the policy decides a call: every layer, every rule considered and why it matched
/// or not.
#[derive(Debug, Args)]
#[command(
    after_help = "Input as for `toolgate check`: one call from flags, or JSON Lines. \
Output: a readable trace per call, or with --json one JSON object per line \
({\"tool\", \"evaluation\", \"mode\", \"profile\", \"subjects\", \"adjustments\"}). Exit codes as for check."
)]
pub(crate) struct ExplainArgs {
    #[command(flatten)]
    policy: PolicyArgs,
    #[command(flatten)]
    call: CallArgs,
    #[command(flatten)]
    run: RunArgs,
    /// Print the trace as JSON (one object per line).
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: &ExplainArgs) -> Result<u8, Failure> {
    let policy = args.policy.load(LoadOptions::default())?;
    let run = args.run.options();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut first = true;
    let mut each = |line: lines::Line| -> Result<(), Failure> {
        match line.call {
            Ok(call) => {
                let explanation = policy.explain(&call, &run);
                if args.json {
                    serde_json::to_writer(&mut out, &explanation).map_err(io::Error::from)?;
                    writeln!(out)?;
                } else {
                    if !first {
                        writeln!(out)?;
                    }
                    write!(out, "{explanation}")?;
                }
            }
            Err(error) => {
                if args.json {
                    let value =
                        json!({"error": {"kind": error.kind.as_str(), "message": error.message}});
                    writeln!(out, "{value}")?;
                } else {
                    if !first {
                        writeln!(out)?;
                    }
                    writeln!(out, "line {}: {error}", line.number)?;
                }
            }
        }
        first = false;
        out.flush()?;
        Ok(())
    };
    if let Some(call) = args.call.flag_call()? {
        each(lines::Line {
            number: 1,
            id: None,
            call: Ok(call),
        })?;
        return Ok(EXIT_OK);
    }
    let mut input = lines::open(args.call.input.as_deref())?;
    lines::for_each_call(&mut *input, each)?;
    Ok(EXIT_OK)
}
