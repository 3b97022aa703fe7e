//! `toolgate serve`: the daemon.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use toolgate_policy::LoadOptions;
use toolgate_server::{ConfigFile, DEFAULT_LISTEN, Server, ServerConfig};

use crate::args::PolicyArgs;
use crate::{EXIT_OK, Failure};

/// Runs the daemon: the approval page, the HTTP API, the store.
#[derive(Debug, Args)]
#[command(after_help = "\
The daemon keeps its database (SQLite, unless --store names a PostgreSQL one) and its access token
in the data directory; the token file is created at first start, readable only by you. API clients
send `Authorization: Bearer <token>`; the page signs in through the one-time address printed at
start. It listens on loopback only unless --allow-remote is given. Settings the command line does not give are read from the file
--config names, else $XDG_CONFIG_HOME/toolgate/daemon.toml or ~/.config/toolgate/daemon.toml when
it exists (not with --isolated): listen, data_dir, allow_remote, hosts, durability, store,
max_anonymous_connections, retain, token_file. Stop it with Ctrl-C.")]
pub(crate) struct ServeArgs {
    #[command(flatten)]
    pub(crate) policy: PolicyArgs,
    /// The settings file [default: $XDG_CONFIG_HOME/toolgate/daemon.toml or
    /// ~/.config/toolgate/daemon.toml, when it exists].
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Where the database and the token live [default: $TOOLGATE_DATA_DIR, else
    /// $XDG_DATA_HOME/toolgate, else ~/.local/share/toolgate].
    #[arg(long, value_name = "DIR")]
    pub(crate) data_dir: Option<PathBuf>,
    /// The address to listen on, an IP address and port (`localhost:PORT` is 127.0.0.1:PORT)
    /// [default: 127.0.0.1:7811].
    #[arg(long, value_name = "ADDR", env = "TOOLGATE_LISTEN", value_parser = listen_address)]
    pub(crate) listen: Option<SocketAddr>,
    /// Allow listening on a non-loopback address.
    #[arg(long)]
    pub(crate) allow_remote: bool,
    /// What an acknowledged decision survives: `process` (the daemon's crash; a power loss may
    /// cost the last decisions before it — SQLite's `synchronous = NORMAL`) or `full` (a power
    /// loss too: every transaction is flushed to the disk before its decisions are
    /// acknowledged, the decisions waiting at once sharing one flush) [default: process].
    #[arg(long, value_name = "LEVEL", value_parser = parse_durability)]
    pub(crate) durability: Option<toolgate_store::Durability>,
    /// Keep everything in this PostgreSQL database instead of the SQLite file in the data
    /// directory (which still holds the token): `postgres://USER[:PASSWORD]@HOST[:PORT]/DB`,
    /// or libpq's `key=value` pairs; on PostgreSQL the database's own settings decide
    /// durability. Daemons given the same database share one approval queue.
    #[arg(
        long,
        value_name = "URL",
        env = "TOOLGATE_STORE",
        hide_env_values = true
    )]
    pub(crate) store: Option<String>,
    /// Where the access token is kept [default: `token` in the data directory]: daemons that
    /// share one --store name the same file, so one token reaches them all.
    #[arg(long, value_name = "FILE")]
    pub(crate) token_file: Option<PathBuf>,
    /// How long the audit log's events and decided decisions are kept, as `90d`, `12h` or
    /// `2weeks` (at least 1h); older ones are removed at start and every hour, after an
    /// `audit_pruned` event [default: kept for ever].
    #[arg(long, value_name = "SPAN", value_parser = toolgate_server::parse_retain)]
    pub(crate) retain: Option<std::time::Duration>,
}

fn parse_durability(text: &str) -> Result<toolgate_store::Durability, String> {
    text.parse()
}

/// The settings file: the one named, else the default one when it exists (never with
/// `--isolated`).
fn config_file(args: &ServeArgs) -> Result<ConfigFile, Failure> {
    let path = match &args.config {
        Some(path) => path.clone(),
        None if args.policy.isolated => return Ok(ConfigFile::default()),
        None => {
            return ConfigFile::load_default().map_err(|e| Failure::Message(format!("error: {e}")));
        }
    };
    ConfigFile::load(&path).map_err(|e| Failure::Message(format!("error: {e}")))
}

pub(crate) fn run(args: &ServeArgs) -> Result<u8, Failure> {
    let file = config_file(args)?;
    let policy_files = args.policy.files()?;
    let policy = crate::args::PolicyArgs::load_files(&policy_files, LoadOptions::default())?;
    let data_dir = args
        .data_dir
        .clone()
        .or_else(|| file.resolved_data_dir())
        .ok_or_else(|| {
            Failure::Message("no data directory: pass --data-dir or set $TOOLGATE_DATA_DIR".into())
        })?;
    let listen = args.listen.or(file.listen).unwrap_or(DEFAULT_LISTEN);
    let mut config = ServerConfig::new(data_dir);
    config.listen = listen;
    config.allow_remote = args.allow_remote || file.allow_remote.unwrap_or(false);
    config.durability = args.durability.or(file.durability).unwrap_or_default();
    config.store = args.store.clone().or(file.store);
    config.extra_hosts = file.hosts;
    if let Some(max) = file.max_anonymous_connections {
        config.max_anonymous_connections = max;
    }
    config.retain = args.retain.or(file.retain.map(|retain| retain.0));
    config.token_file = args.token_file.clone().or(file.token_file);
    config
        .validate()
        .map_err(|e| Failure::Message(e.to_string()))?;
    // Connections are files: a daemon started with 1,024 of them could hold few.
    toolgate_server::raise_open_file_limit();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Message(format!("cannot start the runtime: {e}")))?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|e| Failure::Message(format!("cannot listen on {listen}: {e}")))?;
        let address = listener
            .local_addr()
            .map_err(|e| Failure::Message(e.to_string()))?;
        // The Host and Origin checks name the port really bound (`--listen 127.0.0.1:0`).
        config.listen = address;
        let token_file = config.token_file();
        let address_file = config.address_file();
        // Which files decide, as Claude Code and Gemini CLI say where their settings come from.
        let files: Vec<String> = policy.files().map(|(name, _)| name.to_owned()).collect();
        let mode = policy.settings().mode;
        let store = config.store_description();
        let server = Server::open(config, policy)
            .await
            .map_err(|e| Failure::Message(e.to_string()))?;
        // Loaded again on SIGHUP and when one of its files changes.
        let watched: Vec<std::path::PathBuf> =
            policy_files.iter().map(|(_, path)| path.clone()).collect();
        server.reload_from(toolgate_server::PolicySource {
            files: watched,
            load: std::sync::Arc::new(move || {
                crate::args::PolicyArgs::load_files(&policy_files, LoadOptions::default()).map_err(
                    |failure| match failure {
                        Failure::Message(message) => message,
                        Failure::BrokenPipe => "the policy could not be read".to_owned(),
                    },
                )
            }),
        });
        reload_on_hangup(server.state().clone());
        // For clients given the data directory (`toolgate approvals --data-dir DIR`): where
        // they reach it on this machine (loopback when it listens on every address).
        let written = format!("http://{}\n", toolgate_server::reachable(address));
        write_private(&address_file, &written).map_err(|e| {
            Failure::Message(format!("cannot write {}: {e}", address_file.display()))
        })?;
        let code = server.state().login_code();
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "toolgate is listening on http://{address}");
        let _ = writeln!(
            out,
            "  open the approval page: http://{address}/#login={code}"
        );
        let _ = writeln!(
            out,
            "  (that address signs you in once; the API token is in {})",
            token_file.display()
        );
        let _ = writeln!(out, "  store: {store}");
        if files.is_empty() {
            let _ = writeln!(
                out,
                "  policy: no policy file found; no rules, mode {mode} (give --policy FILE)"
            );
        } else {
            let _ = writeln!(out, "  policy: {}", files.join(", "));
        }
        if server.recovered > 0 {
            let _ = writeln!(
                out,
                "  {} request(s) left pending by the last run were refused",
                server.recovered
            );
        }
        let _ = out.flush();
        drop(out);
        let shutdown = stop_signal();
        let served = server.serve(listener, shutdown).await;
        // A stopped daemon's address is not left for clients to send the token to (another
        // program may take the port), unless another daemon has written its own since.
        if std::fs::read_to_string(&address_file).is_ok_and(|text| text == written) {
            let _ = std::fs::remove_file(&address_file);
        }
        served.map_err(|e| Failure::Message(format!("the server failed: {e}")))?;
        let _ = writeln!(
            std::io::stdout(),
            "toolgate stopped (requests still waiting are refused at the next start)"
        );
        Ok(EXIT_OK)
    })
}

/// `--listen`: as in daemon.toml (`localhost:PORT` is 127.0.0.1:PORT).
fn listen_address(text: &str) -> Result<SocketAddr, String> {
    toolgate_server::parse_listen(text)
}

/// Replaces `path` with `text`, readable by its owner only: written to a new file beside it,
/// then renamed over it (a reader sees the old text or the new, and whatever mode the old
/// file had is gone with it).
pub(crate) fn write_private(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{}.new", std::process::id()));
    let fresh = std::path::PathBuf::from(name);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options
        .open(&fresh)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .and_then(|()| std::fs::rename(&fresh, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&fresh);
    }
    written
}

/// Completes when the daemon is asked to stop: Ctrl-C (SIGINT), or SIGTERM (what `kill` and
/// service managers send). (SIGHUP loads the policy again: see [`reload_on_hangup`].)
pub(crate) async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut terminate) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// Loads the policy again at each SIGHUP, as daemons do (what went wrong, if anything, is said
/// by the daemon: on stderr, in the log, on the page).
fn reload_on_hangup(state: toolgate_server::AppState) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let Ok(mut hangup) = signal(SignalKind::hangup()) else {
            return;
        };
        tokio::spawn(async move {
            while hangup.recv().await.is_some() {
                let _ = state.reload_policy().await;
            }
        });
    }
    #[cfg(not(unix))]
    drop(state);
}

#[cfg(test)]
mod tests {
    use super::listen_address;
    use toolgate_server::reachable as reached;

    #[test]
    fn clients_reach_a_daemon_on_every_address_through_loopback() {
        for (bound, expected) in [
            ("0.0.0.0:7811", "127.0.0.1:7811"),
            ("[::]:7811", "[::1]:7811"),
            ("127.0.0.1:9", "127.0.0.1:9"),
            ("192.168.1.5:80", "192.168.1.5:80"),
        ] {
            assert_eq!(reached(bound.parse().unwrap()).to_string(), expected);
        }
    }

    #[test]
    fn listen_takes_addresses_and_localhost() {
        assert_eq!(
            listen_address("localhost:7900").map(|a| a.to_string()),
            Ok("127.0.0.1:7900".to_owned())
        );
        assert_eq!(
            listen_address("[::1]:7811").map(|a| a.to_string()),
            Ok("[::1]:7811".to_owned())
        );
        for refused in ["localhost", "localhost:70000", "example.com:80", "7811", ""] {
            assert!(listen_address(refused).is_err(), "{refused}");
        }
    }
}
