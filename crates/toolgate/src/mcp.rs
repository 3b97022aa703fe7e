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
    /// Serve MCP over Streamable HTTP at `http://ADDR/mcp` instead of stdio (each client
    /// session gets its own servers). Requests must carry the gateway's token
    /// (`Authorization: Bearer …`, see --http-token-file) and name this machine in `Host`
    /// and `Origin`. Port 0 picks a free port (the address is printed).
    #[arg(long, value_name = "ADDR")]
    listen: Option<std::net::SocketAddr>,
    /// With --listen, the file of the token requests must carry [default: `mcp-http-token` in
    /// the data directory, made on first use, readable by its owner only]. Never the daemon's
    /// own token: an agent holding that could answer its own questions.
    #[arg(
        long,
        value_name = "FILE",
        requires = "listen",
        conflicts_with = "no_auth"
    )]
    http_token_file: Option<PathBuf>,
    /// With --listen on a loopback address, take requests without a token (any program of
    /// this machine's users may then call the servers).
    #[arg(long, requires = "listen")]
    no_auth: bool,
    /// With --listen, another name requests may give in `Host` and `Origin` (loopback names
    /// and the address listened on always may).
    #[arg(long, value_name = "NAME", requires = "listen")]
    allowed_host: Vec<String>,
    /// With --listen, the most client sessions at once (each runs its own servers).
    #[arg(long, value_name = "N", default_value_t = 32, requires = "listen")]
    max_sessions: usize,
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
    // The servers: the file's, or the one after `--`.
    let servers = match &args.servers {
        Some(file) => servers_of(file, &args.separator)?,
        None => {
            let Some((program, rest)) = args.command.split_first() else {
                return Err(Failure::Message(
                    "error: name the server's command after `--`".into(),
                ));
            };
            let name = args
                .name
                .clone()
                .unwrap_or_else(|| server_name(&args.command));
            let command = toolgate_mcp::ServerCommand {
                program: program.clone(),
                args: rest.to_vec(),
                ..toolgate_mcp::ServerCommand::default()
            };
            vec![(name, command)]
        }
    };
    let mut made = Vec::new();
    for (name, command) in servers {
        let options = options(&name)?;
        made.push((name, command, options));
    }
    if let Some(listen) = args.listen {
        let front = front(args, listen)?;
        // Each client session: its own gate (a hub of them, with --servers) and processes.
        let session_gate = |options: &toolgate_mcp::Options, name: &str, session: &str| {
            let mut options = options.clone();
            options.session = Some(format!("mcp-{name}-{session}"));
            toolgate_mcp::Gate::new(options)
        };
        if args.servers.is_none() {
            let make = move |session: &str| -> Made<toolgate_mcp::Gate> {
                let (name, command, options) = made.first().ok_or("no server")?;
                Ok((session_gate(options, name, session), vec![command.clone()]))
            };
            return serve_front(&runtime, listen, front, Arc::new(make), daemon);
        }
        let separator = args.separator.clone();
        let make = move |session: &str| -> Made<toolgate_mcp::Hub> {
            let gates = made
                .iter()
                .map(|(name, _, options)| (name.clone(), session_gate(options, name, session)))
                .collect();
            let commands = made.iter().map(|(_, command, _)| command.clone()).collect();
            Ok((toolgate_mcp::Hub::new(gates, &separator), commands))
        };
        return serve_front(&runtime, listen, front, Arc::new(make), daemon);
    }
    let commands = made.iter().map(|(_, command, _)| command.clone()).collect();
    let relayed = if args.servers.is_some() {
        let gates = made
            .into_iter()
            .map(|(name, _, options)| (name, toolgate_mcp::Gate::new(options)))
            .collect();
        let hub = toolgate_mcp::Hub::new(gates, &args.separator);
        runtime.block_on(toolgate_mcp::relay(hub, commands, daemon))
    } else {
        let Some((_, _, options)) = made.into_iter().next() else {
            return Err(Failure::Message("error: no server".into()));
        };
        let gate = toolgate_mcp::Gate::new(options);
        runtime.block_on(toolgate_mcp::relay(gate, commands, daemon))
    };
    let code = relayed.map_err(|e| Failure::Message(format!("error: {e}")))?;
    Ok(u8::try_from(code).unwrap_or(1))
}

/// The token the HTTP front takes: `--http-token-file`'s, else the data directory's
/// `mcp-http-token`, made (random, readable by its owner only) when there is none.
fn http_token(args: &McpArgs) -> Result<String, Failure> {
    let file = match &args.http_token_file {
        Some(file) => file.clone(),
        None => crate::client::data_dir(&args.client)
            .map(|dir| dir.join("mcp-http-token"))
            .ok_or_else(|| {
                Failure::Message(
                    "error: no data directory for the gateway's token: pass --http-token-file \
                     FILE or --data-dir DIR"
                        .into(),
                )
            })?,
    };
    if file.exists() {
        toolgate_server::check_private(&file).map_err(|e| Failure::Message(e.to_string()))?;
        let token = std::fs::read_to_string(&file)
            .map_err(|e| Failure::Message(format!("error: {}: {e}", file.display())))?
            .trim()
            .to_owned();
        if token.len() < 16 {
            return Err(Failure::Message(format!(
                "error: {}: the token is shorter than 16 characters",
                file.display()
            )));
        }
        return Ok(token);
    }
    let token = toolgate_mcp::http::new_token()
        .ok_or_else(|| Failure::Message("error: no randomness for a token".into()))?;
    if let Some(folder) = file.parent() {
        std::fs::create_dir_all(folder)
            .map_err(|e| Failure::Message(format!("error: {}: {e}", folder.display())))?;
    }
    crate::serve::write_private(&file, &format!("{token}\n"))
        .map_err(|e| Failure::Message(format!("error: {}: {e}", file.display())))?;
    eprintln!(
        "toolgate: the gateway's token is in {} (clients send it as `Authorization: Bearer …`)",
        file.display()
    );
    Ok(token)
}

/// A session's switch and its servers' commands, or why they could not be made.
type Made<S> = Result<(S, Vec<toolgate_mcp::ServerCommand>), String>;

/// Serves MCP over HTTP on `listen` until Ctrl-C, each session made by `make`.
fn serve_front<S: toolgate_mcp::Switch>(
    runtime: &tokio::runtime::Runtime,
    listen: std::net::SocketAddr,
    front: toolgate_mcp::Front,
    make: Arc<toolgate_mcp::http::MakeSession<S>>,
    daemon: Option<(Arc<dyn toolgate_mcp::Daemon>, std::time::Duration)>,
) -> Result<u8, Failure> {
    runtime
        .block_on(async move {
            let listener = tokio::net::TcpListener::bind(listen).await?;
            eprintln!(
                "toolgate: serving MCP at http://{}{}",
                listener.local_addr()?,
                toolgate_mcp::http::PATH
            );
            let stop = crate::serve::stop_signal();
            toolgate_mcp::serve_http(listener, front, make, daemon, stop).await
        })
        .map(|()| 0)
        .map_err(|e| Failure::Message(format!("error: --listen {listen}: {e}")))
}

/// How the HTTP front is guarded: the token (unless `--no-auth`, only on loopback), the names
/// it answers to, its sessions.
fn front(args: &McpArgs, listen: std::net::SocketAddr) -> Result<toolgate_mcp::Front, Failure> {
    let token = if args.no_auth {
        if !listen.ip().is_loopback() {
            return Err(Failure::Message(format!(
                "error: --no-auth is for a loopback address; {listen} is reachable from other \
                 machines (drop --no-auth: requests then carry the token)"
            )));
        }
        None
    } else {
        Some(http_token(args)?)
    };
    Ok(toolgate_mcp::Front {
        token,
        allowed_hosts: args.allowed_host.clone(),
        max_sessions: args.max_sessions.max(1),
        ..toolgate_mcp::Front::default()
    })
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
        if let Some(url) = entry.get("url").or_else(|| entry.get("httpUrl")) {
            out.push((name.clone(), remote_of(entry, url).map_err(|why| at(&why))?));
            continue;
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
                remote: None,
            },
        ));
    }
    Ok(out)
}

/// A remote server's entry (`url`, `headers`): reached over Streamable HTTP.
fn remote_of(
    entry: &serde_json::Value,
    url: &serde_json::Value,
) -> Result<toolgate_mcp::ServerCommand, String> {
    let url = url.as_str().ok_or("`url` is not a string")?;
    let parsed = url::Url::parse(url).map_err(|e| format!("`url` {url:?}: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("`url` {url:?} is not http:// or https://"));
    }
    if entry.get("type").and_then(serde_json::Value::as_str) == Some("sse") {
        return Err(
            "an SSE server (`\"type\": \"sse\"`, the transport MCP replaced in 2025-03-26): \
             toolgate reaches remote servers over Streamable HTTP"
                .into(),
        );
    }
    let headers = match entry.get("headers") {
        None => Vec::new(),
        Some(serde_json::Value::Object(headers)) => headers
            .iter()
            .map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
            .collect::<Option<Vec<_>>>()
            .ok_or("`headers` values are not all strings")?,
        Some(_) => return Err("`headers` is not an object".into()),
    };
    Ok(toolgate_mcp::ServerCommand {
        remote: Some(toolgate_mcp::Remote {
            url: url.to_owned(),
            headers,
        }),
        ..toolgate_mcp::ServerCommand::default()
    })
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
