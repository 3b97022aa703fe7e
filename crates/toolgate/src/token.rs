//! `toolgate token`: named tokens with roles (made, listed and revoked with the admin's token).

use std::io::Write;

use clap::{Args, Subcommand};
use serde_json::json;

use crate::client::{Client, ClientArgs, field};
use crate::{EXIT_FOUND, EXIT_OK, Failure};

/// Names tokens with roles: `agent` (asks and waits: hooks, gateways, runtimes), `approver`
/// (also answers, lists and revokes grants, reads the log) or `admin` (everything).
#[derive(Debug, Args)]
pub(crate) struct TokenArgs {
    #[command(flatten)]
    pub(crate) client: ClientArgs,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    pub(crate) json: bool,
    #[command(subcommand)]
    pub(crate) action: Action,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Action {
    /// Make a token (printed once: the daemon keeps its SHA-256 only).
    Create {
        /// Who it is: what it does is logged under this name.
        #[arg(long, value_name = "NAME")]
        name: String,
        /// What it may do.
        #[arg(long, value_name = "ROLE", value_parser = ["agent", "approver", "admin"])]
        role: String,
    },
    /// List the named tokens (never the tokens).
    List,
    /// Revoke a token by its name.
    Revoke {
        /// Its name.
        name: String,
    },
}

pub(crate) fn run(args: &TokenArgs) -> Result<u8, Failure> {
    let client = Client::new(&args.client)?;
    let mut out = std::io::stdout().lock();
    match &args.action {
        Action::Create { name, role } => {
            let reply = client.send(
                "POST",
                "/api/tokens",
                Some(&json!({"name": name, "role": role})),
            )?;
            if reply.status != 201 {
                return Err(reply.failure(args.json));
            }
            if args.json {
                writeln!(out, "{}", reply.body)?;
            } else {
                // The token alone on stdout (for `$(toolgate token create …)`); the rest said
                // on stderr.
                writeln!(
                    out,
                    "{}",
                    field(&reply.body, "token").as_str().unwrap_or_default()
                )?;
                let _ = writeln!(
                    std::io::stderr(),
                    "the {role} token `{}`: shown this once (give it as TOOLGATE_TOKEN)",
                    toolgate_runtime::terminal_text(name)
                );
            }
            Ok(EXIT_OK)
        }
        Action::List => {
            let reply = client.send("GET", "/api/tokens", None)?;
            if reply.status != 200 {
                return Err(reply.failure(args.json));
            }
            if args.json {
                writeln!(out, "{}", reply.body)?;
                return Ok(EXIT_OK);
            }
            let tokens = field(&reply.body, "tokens")
                .as_array()
                .cloned()
                .unwrap_or_default();
            if tokens.is_empty() {
                writeln!(out, "no named tokens")?;
            }
            for token in tokens {
                writeln!(
                    out,
                    "{}  {}  (made {})",
                    crate::client::folded(field(&token, "name"), 100),
                    crate::client::folded(field(&token, "role"), 20),
                    crate::client::folded(field(&token, "created"), 40)
                )?;
            }
            Ok(EXIT_OK)
        }
        Action::Revoke { name } => {
            let path = format!("/api/tokens/{}", crate::client::encode(name));
            let reply = client.send("DELETE", &path, None)?;
            match reply.status {
                204 => {
                    writeln!(out, "{}: revoked", toolgate_runtime::terminal_text(name))?;
                    Ok(EXIT_OK)
                }
                404 => {
                    let _ = writeln!(std::io::stderr(), "{}", reply.error());
                    Ok(EXIT_FOUND)
                }
                _ => Err(reply.failure(args.json)),
            }
        }
    }
}
