//! `toolgate mcp -- SERVER ARGS…`: the MCP gateway in front of one server over stdio (see the
//! `toolgate-mcp` crate and docs/mcp.md).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use toolgate_policy::LoadOptions;

use crate::Failure;
use crate::args::PolicyArgs;
use crate::client::ClientArgs;
use crate::daemon::{DaemonClient, waiting};

/// Runs an MCP server behind toolgate: a client talks to toolgate over stdio, and every tool
/// call is judged by the policy before the server sees it.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub(crate) struct McpArgs {
    #[command(subcommand)]
    action: Option<McpAction>,
    #[command(flatten)]
    policy: PolicyArgs,
    /// The workspace root the server's paths are confined to (default: the current folder);
    /// the project's policy is found from it.
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// The server's name, which rules with `server = "…"` match (default: the package an
    /// `npx`/`uvx` line runs, else the program's name).
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// Trust the server's tool annotations: a tool it marks `readOnlyHint` is a read, and
    /// rules on `annotations` may allow by them. Untrusted (the default), its annotations can
    /// only make a decision stricter (they may claim anything).
    #[arg(long)]
    trusted: bool,
    /// Let the daemon decide every call (`toolgate serve`): it judges with its policy and its
    /// grants and records each decision; its asks wait on the approval page, and a client
    /// that offers URL-mode elicitation is sent there.
    #[arg(long)]
    daemon: bool,
    /// With --daemon, how long a call waits for a person on the page before it is withdrawn
    /// and refused (the daemon's own approval timeout may end it sooner).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 600.0,
        requires = "daemon"
    )]
    wait: f64,
    /// The folder of the pinned tool definitions, one file per server (default: `mcp-pins`
    /// in the daemon's data directory, `--data-dir`). A tool whose definition changed since it
    /// was pinned is withheld until a person approves the change.
    #[arg(long, value_name = "DIR", conflicts_with = "no_pins")]
    pins: Option<PathBuf>,
    /// Pin nothing: offer every tool as the server describes it now.
    #[arg(long)]
    no_pins: bool,
    #[command(flatten)]
    client: ClientArgs,
    /// Serve the servers of this file as one (the `mcpServers` JSON clients use: `command`,
    /// `args`, `env`, `cwd` for each), their tools', prompts' and resources' names prefixed by
    /// the server's (`fs__read_file`).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["command", "name"])]
    servers: Option<PathBuf>,
    /// With --servers, what joins a server's name to its tools' names.
    #[arg(long, value_name = "TEXT", default_value = "__", requires = "servers")]
    separator: String,
    /// The server's command line, after `--`.
    #[arg(
        last = true,
        required_unless_present = "servers",
        value_name = "SERVER"
    )]
    command: Vec<OsString>,
}

/// What else `toolgate mcp` does.
#[derive(Debug, clap::Subcommand)]
enum McpAction {
    /// Rewrites a client's MCP servers to start through `toolgate mcp` (`--undo`: back).
    Import(crate::mcp_import::ImportArgs),
}

/// The name a server is known by when none is given: the package `npx -y @scope/pkg@1.2`,
/// `uvx pkg` or `pipx run pkg` runs (`pkg`), else the program's file name.
fn server_name(command: &[OsString]) -> String {
    let words: Vec<String> = command
        .iter()
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    let program = words
        .first()
        .map(|p| {
            Path::new(p)
                .file_name()
                .map_or_else(|| p.clone(), |f| f.to_string_lossy().into_owned())
        })
        .unwrap_or_default();
    let runner = matches!(program.as_str(), "npx" | "uvx" | "bunx" | "pnpx" | "pipx");
    let package = runner.then(|| {
        words
            .iter()
            .skip(1)
            .find(|w| !w.starts_with('-') && w.as_str() != "run")
    });
    match package.flatten() {
        Some(package) => {
            let bare = package.rsplit('/').next().unwrap_or(package);
            // `pkg@1.2` (npm), `pkg==1.2` (PyPI).
            let bare = bare.split("==").next().unwrap_or(bare);
            let bare = match bare.rfind('@') {
                Some(at) if at > 0 => bare.get(..at).unwrap_or(bare),
                _ => bare,
            };
            bare.to_owned()
        }
        None => program,
    }
}

/// This gateway's session: the server's name, the process and the moment it started
/// (`mcp-fs-4242-1764375000123`), unique on the machine.
fn session_name(server: &str) -> String {
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    format!("mcp-{server}-{}-{started}", std::process::id())
}

/// The server's pins, unless `--no-pins`.
fn pins(args: &McpArgs, server: &str) -> Result<Option<toolgate_mcp::Pins>, Failure> {
    if args.no_pins {
        return Ok(None);
    }
    let folder = match &args.pins {
        Some(folder) => folder.clone(),
        None => args
            .client
            .data_dir
            .clone()
            .or_else(|| {
                toolgate_server::ConfigFile::load_default()
                    .ok()
                    .and_then(|file| file.resolved_data_dir())
            })
            .map(|dir| dir.join("mcp-pins"))
            .ok_or_else(|| {
                Failure::Message(
                    "error: no folder for the pinned tools: pass --pins DIR or --data-dir DIR \
                     (or --no-pins)"
                        .into(),
                )
            })?,
    };
    toolgate_mcp::Pins::load(&folder, server)
        .map(Some)
        .map_err(|e| Failure::Message(format!("error: {e}")))
}

pub(crate) fn run(args: &McpArgs) -> Result<u8, Failure> {
    if let Some(McpAction::Import(import)) = &args.action {
        return crate::mcp_import::run(import);
    }
    let workspace = match &args.workspace {
        Some(dir) => dir.clone(),
        None => crate::args::current_folder()?,
    };
    let workspace = std::path::absolute(&workspace).unwrap_or(workspace);
    let files = args.policy.files_from(&workspace);
    let policy = PolicyArgs::load_files(&files, LoadOptions::default())?;
    // No workspace given and none in the policy: the client's roots name it.
    let roots_workspace = args.workspace.is_none() && policy.settings().roots.is_empty();
    let policy = toolgate_policy::SharedPolicy::new(policy);
    let options = |server: &str| -> Result<toolgate_mcp::Options, Failure> {
        Ok(toolgate_mcp::Options {
            policy: policy.clone(),
            server: server.to_owned(),
            workspace: Some(workspace.display().to_string()),
            daemon: args.daemon,
            session: Some(session_name(server)),
            pins: pins(args, server)?,
            trusted: args.trusted,
            roots_workspace,
        })
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
    crate::reloading::keep_loaded(&policy, files, &runtime, "mcp");
    let relayed = match &args.servers {
        Some(file) => {
            let servers = servers_of(file, &args.separator)?;
            let mut gates = Vec::new();
            let mut commands = Vec::new();
            for (name, command) in servers {
                gates.push((name.clone(), toolgate_mcp::Gate::new(options(&name)?)));
                commands.push(command);
            }
            let hub = toolgate_mcp::Hub::new(gates, &args.separator);
            runtime.block_on(toolgate_mcp::relay(hub, commands, daemon))
        }
        None => {
            let Some((program, rest)) = args.command.split_first() else {
                return Err(Failure::Message(
                    "error: name the server's command after `--`".into(),
                ));
            };
            let server = args
                .name
                .clone()
                .unwrap_or_else(|| server_name(&args.command));
            let gate = toolgate_mcp::Gate::new(options(&server)?);
            runtime.block_on(toolgate_mcp::relay_stdio(
                gate,
                daemon,
                program.clone(),
                rest.to_vec(),
            ))
        }
    };
    let code = relayed.map_err(|e| Failure::Message(format!("error: {e}")))?;
    Ok(u8::try_from(code).unwrap_or(1))
}

/// The servers of an `mcpServers` file, in its order, each with how it is started.
fn servers_of(
    file: &Path,
    separator: &str,
) -> Result<Vec<(String, toolgate_mcp::ServerCommand)>, Failure> {
    let fail = |why: String| Failure::Message(format!("error: {}: {why}", file.display()));
    let text = std::fs::read_to_string(file).map_err(|e| fail(format!("cannot read it: {e}")))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| fail(format!("line {}, column {}: {e}", e.line(), e.column())))?;
    let servers = value
        .get("mcpServers")
        .or_else(|| value.get("servers"))
        .and_then(serde_json::Value::as_object)
        .ok_or_else(|| fail("no `mcpServers` object".into()))?;
    if servers.is_empty() {
        return Err(fail("`mcpServers` names no server".into()));
    }
    let base = file.parent().unwrap_or(Path::new("."));
    let mut out = Vec::new();
    for (name, entry) in servers {
        let at = |why: &str| fail(format!("`mcpServers.{name}`: {why}"));
        if let Some(why) = toolgate_mcp::Hub::check_name(name, separator) {
            return Err(at(&why));
        }
        if entry.get("url").is_some() {
            return Err(at(
                "a remote server (`url`): toolgate serves the servers it starts (`command`); \
                 remote ones are not served yet",
            ));
        }
        let program = entry
            .get("command")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| at("no `command`"))?;
        let strings = |key: &str| -> Result<Vec<String>, Failure> {
            match entry.get(key) {
                None => Ok(Vec::new()),
                Some(serde_json::Value::Array(items)) => items
                    .iter()
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| at(&format!("`{key}` is not a list of strings"))),
                Some(_) => Err(at(&format!("`{key}` is not a list of strings"))),
            }
        };
        let env = match entry.get("env") {
            None => Vec::new(),
            Some(serde_json::Value::Object(env)) => env
                .iter()
                .map(|(k, v)| v.as_str().map(|v| (k.into(), v.into())))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| at("`env` values are not all strings"))?,
            Some(_) => return Err(at("`env` is not an object")),
        };
        let cwd = match entry.get("cwd") {
            None => None,
            Some(serde_json::Value::String(cwd)) => Some(base.join(cwd)),
            Some(_) => return Err(at("`cwd` is not a string")),
        };
        out.push((
            name.clone(),
            toolgate_mcp::ServerCommand {
                program: program.into(),
                args: strings("args")?.into_iter().map(Into::into).collect(),
                env,
                cwd,
            },
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::server_name;

    #[test]
    fn a_server_is_named_by_the_package_it_runs() {
        for (line, name) in [
            (
                "npx -y @modelcontextprotocol/server-filesystem /tmp",
                "server-filesystem",
            ),
            ("npx @scope/pkg@1.2.3", "pkg"),
            ("uvx mcp-server-git --repository .", "mcp-server-git"),
            ("uvx mcp-server-fetch==2026.10.24", "mcp-server-fetch"),
            ("pipx run mcp-server-time", "mcp-server-time"),
            ("/usr/local/bin/my-server --flag", "my-server"),
            ("node build/index.js", "node"),
        ] {
            let words: Vec<std::ffi::OsString> = line.split(' ').map(Into::into).collect();
            assert_eq!(server_name(&words), name, "{line}");
        }
    }
}
