//! `toolgate serve`: the daemon.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use toolgate_policy::LoadOptions;
use toolgate_server::{DEFAULT_LISTEN, Server, ServerConfig, default_data_dir};

use crate::args::PolicyArgs;
use crate::{EXIT_OK, Failure};

/// Runs the daemon: the approval page, the HTTP API, the store.
#[derive(Debug, Args)]
#[command(after_help = "\
The daemon keeps its database (SQLite) and its access token in the data directory; the token file
is created at first start, readable only by you. API clients send `Authorization: Bearer <token>`;
the page signs in through the one-time address printed at start. It listens on loopback only
unless --allow-remote is given. Stop it with Ctrl-C.")]
pub(crate) struct ServeArgs {
    #[command(flatten)]
    pub(crate) policy: PolicyArgs,
    /// Where the database and the token live [default: $TOOLGATE_DATA_DIR, else
    /// $XDG_DATA_HOME/toolgate, else ~/.local/share/toolgate].
    #[arg(long, value_name = "DIR")]
    pub(crate) data_dir: Option<PathBuf>,
    /// The address to listen on.
    #[arg(long, value_name = "ADDR", env = "TOOLGATE_LISTEN", default_value_t = DEFAULT_LISTEN)]
    pub(crate) listen: SocketAddr,
    /// Allow listening on a non-loopback address.
    #[arg(long)]
    pub(crate) allow_remote: bool,
    /// What an acknowledged decision survives: `full` (a power loss too: every commit is
    /// flushed to the disk) or `process` (the daemon's crash only; several times faster).
    #[arg(long, value_name = "LEVEL", default_value = "full", value_parser = parse_durability)]
    pub(crate) durability: toolgate_store::Durability,
}

fn parse_durability(text: &str) -> Result<toolgate_store::Durability, String> {
    match text {
        "full" => Ok(toolgate_store::Durability::Full),
        "process" => Ok(toolgate_store::Durability::Process),
        other => Err(format!(
            "`{other}` is not a durability; use `full` or `process`"
        )),
    }
}

pub(crate) fn run(args: &ServeArgs) -> Result<u8, Failure> {
    let policy = args.policy.load(LoadOptions::default())?;
    let data_dir = args
        .data_dir
        .clone()
        .or_else(default_data_dir)
        .ok_or_else(|| {
            Failure::Message("no data directory: pass --data-dir or set $TOOLGATE_DATA_DIR".into())
        })?;
    let mut config = ServerConfig::new(data_dir);
    config.listen = args.listen;
    config.allow_remote = args.allow_remote;
    config.durability = args.durability;
    config
        .validate()
        .map_err(|e| Failure::Message(e.to_string()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Message(format!("cannot start the runtime: {e}")))?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .map_err(|e| Failure::Message(format!("cannot listen on {}: {e}", args.listen)))?;
        let address = listener
            .local_addr()
            .map_err(|e| Failure::Message(e.to_string()))?;
        // The Host and Origin checks name the port really bound (`--listen 127.0.0.1:0`).
        config.listen = address;
        let token_file = config.token_file();
        let database = config.database();
        let server = Server::open(config, policy)
            .await
            .map_err(|e| Failure::Message(e.to_string()))?;
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
        let _ = writeln!(out, "  store: {}", database.display());
        if server.recovered > 0 {
            let _ = writeln!(
                out,
                "  {} request(s) left pending by the last run were refused",
                server.recovered
            );
        }
        let _ = out.flush();
        drop(out);
        let shutdown = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        server
            .serve(listener, shutdown)
            .await
            .map_err(|e| Failure::Message(format!("the server failed: {e}")))?;
        Ok(EXIT_OK)
    })
}
