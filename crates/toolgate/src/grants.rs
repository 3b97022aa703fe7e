//! `toolgate grants`: the remembered "always" answers.

use std::io::Write;

use clap::{Args, Subcommand};

use serde_json::json;

use crate::client::{Client, ClientArgs, SHORT_ID, field, folded, grant_line, one_starting_with};
use crate::{EXIT_FOUND, EXIT_OK, Failure};

/// Lists the remembered answers, or revokes one.
#[derive(Debug, Args)]
pub(crate) struct GrantsArgs {
    #[command(flatten)]
    pub(crate) client: ClientArgs,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) filter: Filter,
    #[command(subcommand)]
    pub(crate) action: Option<Action>,
}

/// Which grants are listed.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct Filter {
    /// List only the grants kept for this session.
    #[arg(long, value_name = "SESSION")]
    pub(crate) session: Option<String>,
    /// List only the grants about this tool.
    #[arg(long, value_name = "TOOL")]
    pub(crate) tool: Option<String>,
    /// List only the grants of this scope (`session` covers a session's once, turn and
    /// session grants).
    #[arg(long, value_name = "SCOPE", value_parser = ["session", "workspace", "user"])]
    pub(crate) scope: Option<String>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Action {
    /// List them (the default).
    List(Filter),
    /// Make one a rule: write the rule that decides the same calls the same way into a policy
    /// file (the workspace's for a workspace grant, the user's for a user grant), first among
    /// its rules, with the call that made the grant as its example; show the diff, check the
    /// policy still loads and its examples pass; with --yes, write it and revoke the grant.
    Promote {
        /// The grant's id, or its start (4+ characters).
        id: String,
        /// The policy file to write [default: by the grant's scope: the workspace's
        /// `.toolgate/policy.toml`, the user's policy, or the current project's for a
        /// session's grant].
        #[arg(long, value_name = "FILE")]
        policy: Option<std::path::PathBuf>,
        /// Write it and revoke the grant (else the diff alone is shown).
        #[arg(long)]
        yes: bool,
        /// Who revokes the grant, as the audit log says it.
        #[arg(long, value_name = "NAME", default_value = "promote")]
        by: String,
    },
    /// Revoke one.
    Revoke {
        /// The grant's id, or its start (4+ characters).
        id: String,
        /// Who revokes, as the audit log says it.
        #[arg(long, value_name = "NAME", default_value = "cli")]
        by: String,
    },
}

pub(crate) fn run(args: &GrantsArgs) -> Result<u8, Failure> {
    let client = Client::new(&args.client)?;
    let mut out = std::io::stdout().lock();
    match &args.action {
        None | Some(Action::List(_)) => {
            let given = match &args.action {
                Some(Action::List(list)) => list.clone(),
                _ => Filter::default(),
            };
            let session = given.session.or_else(|| args.filter.session.clone());
            let tool = given.tool.or_else(|| args.filter.tool.clone());
            let scope = given.scope.or_else(|| args.filter.scope.clone());
            let filters: Vec<String> = [("session", &session), ("tool", &tool), ("scope", &scope)]
                .into_iter()
                .filter_map(|(name, value)| {
                    value
                        .as_ref()
                        .map(|v| format!("{name}={}", crate::client::encode(v)))
                })
                .collect();
            let path = if filters.is_empty() {
                "/api/grants".to_owned()
            } else {
                format!("/api/grants?{}", filters.join("&"))
            };
            if args.json {
                let (body, _) = client.list(&path, "grants", args.json)?;
                writeln!(out, "{body}")?;
                return Ok(EXIT_OK);
            }
            let mut any = false;
            every_grant(&client, &path, |g| {
                any = true;
                writeln!(
                    out,
                    "{}  {}  (by {})",
                    folded(field(g, "id"), 100),
                    grant_line(g),
                    folded(field(g, "created_by"), 100)
                )
                .map_err(Failure::from)
            })?;
            if !any {
                writeln!(out, "no grants")?;
            }
            Ok(EXIT_OK)
        }
        Some(Action::Promote {
            id,
            policy,
            yes,
            by,
        }) => {
            let mut found = None;
            let mut starting = Vec::new();
            every_grant(&client, "/api/grants", |g| {
                let Some(full) = field(g, "id").as_str() else {
                    return Ok(());
                };
                if full == id {
                    found = Some(g.clone());
                } else if full.starts_with(id.as_str()) {
                    starting.push(g.clone());
                }
                Ok(())
            })?;
            if found.is_none() && id.chars().count() >= SHORT_ID {
                let ids = starting.iter().filter_map(|g| field(g, "id").as_str());
                if let Some(full) = one_starting_with(ids, id, "grants'")? {
                    found = starting
                        .into_iter()
                        .find(|g| field(g, "id") == full.as_str());
                }
            }
            let Some(grant) = found else {
                let _ = writeln!(
                    std::io::stderr(),
                    "{}: no such grant (`toolgate grants` lists them)",
                    toolgate_runtime::terminal_text(id)
                );
                return Ok(EXIT_FOUND);
            };
            crate::promote::promote(
                &client,
                &crate::promote::Promotion {
                    grant: &grant,
                    policy: policy.as_deref(),
                    yes: *yes,
                    by,
                },
            )
        }
        Some(Action::Revoke { .. })
            if args.filter.session.is_some()
                || args.filter.tool.is_some()
                || args.filter.scope.is_some() =>
        {
            Err(Failure::Message(
                "--session, --tool and --scope choose what is listed; a revocation names its \
                 grant by id"
                    .into(),
            ))
        }
        Some(Action::Revoke { id, by }) => {
            if id.trim().is_empty() {
                return Err(Failure::Message(
                    "a grant's id is needed (`toolgate grants` lists them)".into(),
                ));
            }
            let send = |id: &str| {
                let path = format!(
                    "/api/grants/{}?by={}",
                    crate::client::encode(id),
                    crate::client::encode(by)
                );
                client.send("DELETE", &path, None)
            };
            let mut reply = send(id)?;
            // No such grant: the start of one grant's id names it.
            let mut id = id.clone();
            if reply.status == 404 && id.chars().count() >= SHORT_ID {
                let mut ids = Vec::new();
                every_grant(&client, "/api/grants", |g| {
                    if let Some(full) = field(g, "id").as_str()
                        && full.starts_with(id.as_str())
                    {
                        ids.push(full.to_owned());
                    }
                    Ok(())
                })?;
                if let Some(full) =
                    one_starting_with(ids.iter().map(String::as_str), &id, "grants'")?
                {
                    reply = send(&full)?;
                    id = full;
                }
            }
            match reply.status {
                204 => {
                    if args.json {
                        writeln!(out, "{}", json!({"id": id, "status": "revoked"}))?;
                    } else {
                        writeln!(out, "{}: revoked", toolgate_runtime::terminal_text(&id))?;
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
                            toolgate_runtime::terminal_text(&id),
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

/// Calls `each` with every grant `path` lists, page after page (`next`), oldest first.
fn every_grant(
    client: &Client,
    path: &str,
    mut each: impl FnMut(&serde_json::Value) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let join = if path.contains('?') { '&' } else { '?' };
    let mut page = path.to_owned();
    // Each page starts past the one before: as many pages as there are grants, at most.
    loop {
        let (body, grants) = client.list(&page, "grants", false)?;
        for grant in &grants {
            each(grant)?;
        }
        match field(&body, "next").as_str() {
            Some(next) if !grants.is_empty() => {
                let following = format!("{path}{join}after={}", crate::client::encode(next));
                // (A proxy that drops the query would send the same page again.)
                if following == page {
                    return Err(Failure::Message(format!(
                        "the daemon gave the same page twice (`{}`)",
                        toolgate_runtime::terminal_text(next)
                    )));
                }
                page = following;
            }
            _ => return Ok(()),
        }
    }
}
