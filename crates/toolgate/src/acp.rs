//! `toolgate acp -- AGENT ARGS…`: the ACP proxy between an editor and a coding agent over
//! stdio (see the `toolgate-acp` crate and docs/acp.md).

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use toolgate_policy::{LoadOptions, Mode};

use crate::Failure;
use crate::args::PolicyArgs;
use crate::client::ClientArgs;
use crate::daemon::{DaemonClient, waiting};

/// Runs a coding agent behind toolgate: an editor talks ACP to toolgate over stdio, and the
/// agent's permission requests, file reads and writes and terminals are judged by the policy
/// before the editor sees them.
#[derive(Debug, Args)]
pub(crate) struct AcpArgs {
    #[command(flatten)]
    policy: PolicyArgs,
    /// Where the project's policy is found (default: the current folder). Each session's
    /// workspace is its own `cwd`; requests of a session not opened through toolgate are
    /// refused.
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// The mode sessions start in (deny-all, approve-reads, approve-all; default: the
    /// policy's). The editor can switch a session to another when the agent offers modes of
    /// those names.
    #[arg(long, value_name = "MODE", value_parser = parse_mode)]
    mode: Option<Mode>,
    /// How long a question waits for the editor's person before the agent's request is
    /// refused (default: the policy's approval timeout).
    #[arg(long, value_name = "SECONDS")]
    timeout: Option<f64>,
    /// Run allowed terminals inside `toolgate sandbox`, confined to their session's workspace
    /// under the same policy files.
    #[arg(long)]
    sandbox: bool,
    /// Let the daemon decide every judged request (`toolgate serve`): its policy, its grants,
    /// its audit log. A request it holds for a person waits on the approval page and is asked
    /// in the editor too; the first answer decides, and the other question is withdrawn.
    #[arg(long)]
    daemon: bool,
    /// With --daemon, how long a request waits for a person before it is withdrawn and
    /// refused (the daemon's own approval timeout may end it sooner).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 600.0,
        requires = "daemon"
    )]
    wait: f64,
    /// Append every judged request's events to this file, one JSON object a line (toolgate's
    /// event fields with AGH's permission-event fields): pending, then resolved.
    #[arg(long, value_name = "FILE")]
    events: Option<PathBuf>,
    #[command(flatten)]
    client: ClientArgs,
    /// The agent's command line, after `--`.
    #[arg(last = true, required = true, value_name = "AGENT")]
    command: Vec<OsString>,
}

fn parse_mode(text: &str) -> Result<Mode, String> {
    if text.is_empty() {
        return Err("name a mode: deny-all, approve-reads or approve-all".into());
    }
    Mode::parse(text).map_err(|e| e.to_string())
}

/// `toolgate sandbox` with this invocation's policy flags, up to `--workspace`.
fn sandbox_command(policy: &PolicyArgs) -> Result<(String, Vec<String>), Failure> {
    let exe = std::env::current_exe()
        .and_then(|e| e.canonicalize())
        .map_err(|e| Failure::Message(format!("error: cannot find toolgate's own program: {e}")))?;
    let mut args = vec!["sandbox".to_owned()];
    if policy.isolated {
        args.push("--isolated".to_owned());
    }
    for file in &policy.policies {
        let file = std::path::absolute(file).unwrap_or_else(|_| file.clone());
        args.push("--policy".to_owned());
        args.push(file.to_string_lossy().into_owned());
    }
    Ok((exe.to_string_lossy().into_owned(), args))
}

/// Appends events to `file`, a line each. A line that cannot be written is said on stderr (the
/// editor's log) and the proxy goes on: the daemon's audit log is the one that may not lose one.
fn event_log(file: &std::path::Path) -> Result<toolgate_acp::EventSink, Failure> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
        .map_err(|e| Failure::Message(format!("error: {}: cannot open it: {e}", file.display())))?;
    let log = std::sync::Mutex::new(log);
    let name = file.display().to_string();
    Ok(Arc::new(move |event: serde_json::Value| {
        use std::io::Write;
        let mut line = event.to_string();
        line.push('\n');
        let mut log = log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Err(e) = log.write_all(line.as_bytes()) {
            eprintln!("toolgate: cannot write an event to {name}: {e}");
        }
    }))
}

pub(crate) fn run(args: &AcpArgs) -> Result<u8, Failure> {
    let folder = match &args.workspace {
        Some(dir) => dir.clone(),
        None => crate::args::current_folder()?,
    };
    let folder = std::path::absolute(&folder).unwrap_or(folder);
    let files = args.policy.files_from(&folder);
    let policy =
        toolgate_policy::SharedPolicy::new(PolicyArgs::load_files(&files, LoadOptions::default())?);
    let timeout = match args.timeout {
        Some(seconds) if seconds.is_finite() && seconds > 0.0 => {
            Some(Duration::from_secs_f64(seconds.min(86_400.0)))
        }
        Some(_) => {
            return Err(Failure::Message(
                "error: --timeout takes a number of seconds above 0".into(),
            ));
        }
        None => None,
    };
    let options = toolgate_acp::Options {
        policy: policy.clone(),
        workspace: Some(folder),
        mode: args.mode,
        timeout,
        daemon: args.daemon,
        events: match &args.events {
            Some(file) => Some(event_log(file)?),
            None => None,
        },
        sandbox: if args.sandbox {
            Some(sandbox_command(&args.policy)?)
        } else {
            None
        },
    };
    let Some((program, rest)) = args.command.split_first() else {
        return Err(Failure::Message(
            "error: name the agent's command after `--`".into(),
        ));
    };
    let agent = toolgate_acp::ServerCommand {
        program: program.clone(),
        args: rest.to_vec(),
        ..toolgate_acp::ServerCommand::default()
    };
    let daemon = if args.daemon {
        let daemon: Arc<dyn toolgate_mcp::Daemon> = Arc::new(DaemonClient::new(&args.client)?);
        Some((daemon, waiting(args.wait)))
    } else {
        None
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Message(format!("error: {e}")))?;
    crate::reloading::keep_loaded(&policy, files, &runtime, "acp");
    let relayed = runtime.block_on(toolgate_acp::relay(
        toolgate_acp::Proxy::new(options),
        vec![agent],
        daemon,
    ));
    let code = relayed.map_err(|e| Failure::Message(format!("error: {e}")))?;
    Ok(u8::try_from(code).unwrap_or(1))
}
