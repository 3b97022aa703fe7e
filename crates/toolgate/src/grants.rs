//! `toolgate grants`: the remembered "always" answers.

use std::io::Write;

use clap::{Args, Subcommand};

use serde_json::json;

use crate::client::{Client, ClientArgs, field, folded, grant_line};
use crate::{EXIT_FOUND, EXIT_OK, Failure};

/// Lists the remembered answers, or revokes one.
#[derive(Debug, Args)]
pub(crate) struct GrantsArgs {
    #[command(flatten)]
    pub(crate) client: ClientArgs,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    pub(crate) json: bool,
    #[command(subcommand)]
    pub(crate) action: Option<Action>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Action {
    /// List them (the default).
    List,
    /// Revoke one.
    Revoke {
        /// The grant's id.
        id: String,
    },
}

pub(crate) fn run(args: &GrantsArgs) -> Result<u8, Failure> {
    let client = Client::new(&args.client)?;
    let mut out = std::io::stdout().lock();
    match &args.action {
        None | Some(Action::List) => {
            let (body, grants) = client.list("/api/grants", "grants", args.json)?;
            if args.json {
                writeln!(out, "{body}")?;
                return Ok(EXIT_OK);
            }
            if grants.is_empty() {
                writeln!(out, "no grants")?;
            }
            for g in grants {
                writeln!(
                    out,
                    "{}  {}  (by {})",
                    folded(field(&g, "id"), 100),
                    grant_line(&g),
                    folded(field(&g, "created_by"), 100)
                )?;
            }
            Ok(EXIT_OK)
        }
        Some(Action::Revoke { id }) => {
            let reply = client.send(
                "DELETE",
                &format!("/api/grants/{}", crate::client::encode(id)),
                None,
            )?;
            match reply.status {
                204 => {
                    if args.json {
                        writeln!(out, "{}", json!({"id": id, "status": "revoked"}))?;
                    } else {
                        writeln!(out, "{}: revoked", toolgate_runtime::terminal_text(id))?;
                    }
                    Ok(EXIT_OK)
                }
                404 => {
                    if args.json {
                        writeln!(out, "{}", reply.body)?;
                    } else {
                        let _ = writeln!(
                            std::io::stderr(),
                            "{}: {}",
                            toolgate_runtime::terminal_text(id),
                            reply.error()
                        );
                    }
                    Ok(EXIT_FOUND)
                }
                _ => Err(reply.failure(args.json)),
            }
        }
    }
}
