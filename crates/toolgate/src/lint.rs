//! `toolgate lint`: mistakes that load fine.

use std::io::{self, Write};

use clap::{Args, ValueEnum};
use toolgate_policy::{LoadOptions, Severity};

use crate::args::PolicyArgs;
use crate::{EXIT_FOUND, EXIT_OK, Failure};

const LINT_HELP: &str = "\
Findings: `shadowed` (an earlier rule of the same file matches every call a later one could; an
error when the later rule is stricter), `duplicate-name`, `allow-all` (an allow with no condition
but tool = \"*\"), `unknown-tag` (neither built in nor in custom_tags), `no-example` (no example of
the policy is decided by the rule). Failing examples are load errors.

With --against-log, the calls of the audit log (the daemon's, or --log FILE's) are traced
through every rule too: `unmatched` (no logged call matched the rule), `denies-past-allow` (the
rule would deny calls the log shows allowed; `toolgate replay` lists them).

Exit codes: 0 no errors (warnings are printed), 1 errors found (or warnings with --strict),
2 the policy failed to load.";

/// Check a policy for mistakes that load fine: shadowed rules, duplicate names, allow-everything
/// rules, unknown tags, rules no example reaches.
#[derive(Debug, Args)]
#[command(after_help = LINT_HELP)]
pub(crate) struct LintArgs {
    #[command(flatten)]
    policy: PolicyArgs,
    /// Fail (exit 1) on warnings too.
    #[arg(long)]
    strict: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Check the rules against the calls of the audit log too.
    #[arg(long)]
    against_log: bool,
    #[command(flatten)]
    log: crate::replay::LogArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    /// Diagnostics with a caret under each rule, and a summary.
    Text,
    /// One JSON object per finding.
    Json,
}

pub(crate) fn run(args: &LintArgs) -> Result<u8, Failure> {
    let policy = args.policy.load(LoadOptions::default())?;
    let mut findings = policy.lint();
    let log = &args.log;
    if !args.against_log && (log.log.is_some() || log.since.is_some() || log.session.is_some()) {
        return Err(Failure::Message(
            "--log, --since and --session choose the calls --against-log reads: add \
             --against-log"
                .into(),
        ));
    }
    let mut against = None;
    if args.against_log {
        let (calls, unreadable) = crate::replay::read_log(log)?;
        let logged: Vec<toolgate_policy::LoggedCall<'_>> = calls
            .iter()
            .map(|c| toolgate_policy::LoggedCall {
                call: &c.call,
                outcome: c.outcome,
            })
            .collect();
        findings.extend(policy.lint_against_log(&logged));
        against = Some((calls.len(), unreadable));
    }
    let errors = findings
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    let warnings = findings.len() - errors;
    let stdout = io::stdout();
    let mut out = stdout.lock();
    match args.format {
        Format::Json => {
            for finding in &findings {
                serde_json::to_writer(&mut out, finding).map_err(io::Error::from)?;
                writeln!(out)?;
            }
        }
        Format::Text => {
            for finding in &findings {
                writeln!(out, "{finding}")?;
            }
            if let Some((calls, unreadable)) = against {
                let left_out = if unreadable > 0 {
                    format!(" ({unreadable} unreadable, left out)")
                } else {
                    String::new()
                };
                writeln!(
                    out,
                    "checked against {calls} {} of the log{left_out}",
                    plural(calls, "call")
                )?;
            }
            let rules = policy.rules().count();
            writeln!(
                out,
                "{rules} rules checked: {errors} {}, {warnings} {}",
                plural(errors, "error"),
                plural(warnings, "warning")
            )?;
        }
    }
    let failed = errors > 0 || (args.strict && warnings > 0);
    Ok(if failed { EXIT_FOUND } else { EXIT_OK })
}

pub(crate) fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        word.to_owned()
    } else {
        format!("{word}s")
    }
}
