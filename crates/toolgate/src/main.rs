//! The `toolgate` binary.

mod acp;
mod approvals;
mod args;
mod check;
mod client;
mod daemon;
mod explain;
mod grants;
mod hook;
mod install;
mod lines;
mod lint;
mod mcp;
mod mcp_import;
mod page;
mod policy;
mod promote;
mod reloading;
mod replay;
mod sandbox;
mod sandbox_proxy;
mod serve;
mod tail;
mod test;
mod token;

use std::io::{self, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The exit code for "the work was done" (a batch processed, a clean lint, passing tests).
pub(crate) const EXIT_OK: u8 = 0;
/// The exit code for "the work was done and found problems" (test mismatches, lint errors).
pub(crate) const EXIT_FOUND: u8 = 1;
/// The exit code for "the work could not be done" (a policy failed to load, unreadable input,
/// bad usage).
pub(crate) const EXIT_FAILED: u8 = 2;

const AFTER_HELP: &str = "\
Exit codes:
  0  done (a batch processed, lint clean, tests passed)
  1  done, with findings (test mismatches; lint errors, or warnings with --strict)
  2  could not run (a policy failed to load, unreadable input, bad usage); the error is on stderr

Policy files load in this order: the user file ($TOOLGATE_CONFIG_DIR/policy.toml, else
$XDG_CONFIG_HOME/toolgate/policy.toml, else ~/.config/toolgate/policy.toml), the project file
(.toolgate/policy.toml in the current folder or the nearest parent, up to the repository root),
then each --policy FILE in order. --isolated loads only the --policy files. With no file at all,
the built-in policy applies (`toolgate policy show-default`); a file with extends = \"default\" keeps
it as a layer under its own rules.";

/// toolgate decides, for every tool call an AI agent wants to make, whether it runs, is refused,
/// or waits for a human.
#[derive(Debug, Parser)]
#[command(name = "toolgate", version, about, after_help = AFTER_HELP, term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Check(check::CheckArgs),
    Explain(explain::ExplainArgs),
    Lint(lint::LintArgs),
    Replay(replay::ReplayArgs),
    Test(test::TestArgs),
    Serve(serve::ServeArgs),
    Approvals(approvals::ApprovalsArgs),
    Grants(grants::GrantsArgs),
    Tail(tail::TailArgs),
    Page(page::PageArgs),
    Hook(hook::HookArgs),
    Install(install::InstallArgs),
    Uninstall(install::UninstallArgs),
    Doctor(install::DoctorArgs),
    Mcp(mcp::McpArgs),
    Acp(acp::AcpArgs),
    Sandbox(sandbox::SandboxArgs),
    Policy(policy::PolicyCommandArgs),
    Token(token::TokenArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check(args) => check::run(&args),
        Command::Explain(args) => explain::run(&args),
        Command::Lint(args) => lint::run(&args),
        Command::Replay(args) => replay::run(&args),
        Command::Test(args) => test::run(&args),
        Command::Serve(args) => serve::run(&args),
        Command::Approvals(args) => approvals::run(&args),
        Command::Grants(args) => grants::run(&args),
        Command::Tail(args) => tail::run(&args),
        Command::Page(args) => page::run(&args),
        Command::Hook(args) => hook::run(&args),
        Command::Install(args) => install::install(&args),
        Command::Uninstall(args) => install::uninstall(&args),
        Command::Doctor(args) => install::doctor(&args),
        Command::Mcp(args) => mcp::run(&args),
        Command::Acp(args) => acp::run(&args),
        Command::Sandbox(args) => sandbox::run(&args),
        Command::Policy(args) => policy::run(&args),
        Command::Token(args) => token::run(&args),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(Failure::BrokenPipe) => ExitCode::from(EXIT_OK),
        Err(Failure::Message(message)) => {
            let mut stderr = io::stderr().lock();
            let _ = write!(stderr, "{message}");
            if !message.ends_with('\n') {
                let _ = writeln!(stderr);
            }
            ExitCode::from(EXIT_FAILED)
        }
    }
}

/// Why a command could not run.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Printed on stderr; exit 2.
    Message(String),
    /// The reader of our output went away: stop quietly.
    BrokenPipe,
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Failure {
        if e.kind() == io::ErrorKind::BrokenPipe {
            Failure::BrokenPipe
        } else {
            Failure::Message(format!("error: {e}"))
        }
    }
}

impl From<toolgate_policy::LoadError> for Failure {
    fn from(e: toolgate_policy::LoadError) -> Failure {
        Failure::Message(e.to_string())
    }
}
