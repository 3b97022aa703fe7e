//! `toolgate approvals`: the requests waiting for a person, and answering them.

use std::io::Write;

use clap::{Args, Subcommand};
use serde_json::{Value, json};
use toolgate_runtime::terminal_text;

use crate::client::{
    Client, ClientArgs, SHORT_ID, argument, covers, field, folded, grant_line, one_starting_with,
};
use crate::{EXIT_FAILED, EXIT_FOUND, EXIT_OK, Failure};

/// Lists the requests waiting for a person, or answers one.
#[derive(Debug, Args)]
pub(crate) struct ApprovalsArgs {
    #[command(flatten)]
    pub(crate) client: ClientArgs,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// List only this session's requests.
    #[arg(long, value_name = "SESSION")]
    pub(crate) session: Option<String>,
    #[command(subcommand)]
    pub(crate) action: Option<Action>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Action {
    /// List the pending requests (the default).
    List(ListArgs),
    /// Allow a request (once, or always with --always).
    Allow(Answer),
    /// Refuse a request (once, or always with --always).
    Deny(Answer),
}

#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// List only this session's requests.
    #[arg(long, value_name = "SESSION")]
    pub(crate) session: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct Answer {
    /// The request's id, or its start (4 characters or more) when that names one waiting
    /// request.
    pub(crate) id: String,
    /// Remember the answer for what the request says "always" covers.
    #[arg(long)]
    pub(crate) always: bool,
    /// Where an --always answer applies: `session`, `workspace` (every session in the call's
    /// workspace) or `user` (every workspace) — one the request offers (the list shows them);
    /// the request's default when left out.
    #[arg(long, value_name = "SCOPE", requires = "always",
          value_parser = ["session", "workspace", "user"])]
    pub(crate) scope: Option<String>,
    /// How long an --always answer lasts (`8h`, `30m`, `7days`); until revoked when left out.
    #[arg(long = "for", value_name = "DURATION", requires = "always")]
    pub(crate) lasting: Option<String>,
    /// Why (a refusal's reason is what the agent reads).
    #[arg(long)]
    pub(crate) reason: Option<String>,
    /// Who answers, as the audit log records it.
    #[arg(long, value_name = "NAME", default_value = "cli")]
    pub(crate) by: String,
}

/// How long a request has waited, and when it is refused unanswered (`waiting 2m 10s, refused
/// in 2m 50s`), to the second; `None` when the daemon does not say when it was made.
fn waiting(item: &Value, request: &Value, now: std::time::SystemTime) -> Option<String> {
    let created = humantime::parse_rfc3339(field(item, "created").as_str()?).ok()?;
    let seconds = |d: std::time::Duration| {
        humantime::format_duration(std::time::Duration::from_secs(d.as_secs())).to_string()
    };
    let waited = now.duration_since(created).unwrap_or_default();
    let mut said = format!("waiting {}", seconds(waited));
    if let Some(timeout) = field(request, "timeout_ms").as_u64() {
        let left = std::time::Duration::from_millis(timeout).saturating_sub(waited);
        said += &format!(", refused unanswered in {}", seconds(left));
    }
    Some(said)
}

/// How much of one value a line shows (`--json` shows everything).
const SHOWN: usize = 300;

/// A value as one line of terminal-safe text, long values folded.
fn line(value: &Value) -> String {
    folded(value, SHOWN)
}

pub(crate) fn run(args: &ApprovalsArgs) -> Result<u8, Failure> {
    let client = Client::new(&args.client)?;
    let mut out = std::io::stdout().lock();
    match &args.action {
        None | Some(Action::List(_)) => {
            let session = match &args.action {
                Some(Action::List(list)) => list.session.as_ref().or(args.session.as_ref()),
                _ => args.session.as_ref(),
            };
            let path = match session {
                Some(session) => format!("/api/pending?session={}", crate::client::encode(session)),
                None => "/api/pending".to_owned(),
            };
            let (body, pending) = client.list(&path, "pending", args.json)?;
            if args.json {
                writeln!(out, "{body}")?;
                return Ok(EXIT_OK);
            }
            if pending.is_empty() {
                match session {
                    Some(session) => {
                        writeln!(
                            out,
                            "nothing is waiting in session `{}`",
                            terminal_text(session)
                        )?;
                    }
                    None => writeln!(out, "nothing is waiting")?,
                }
            }
            let shown = pending.len();
            for item in pending {
                let request = if field(field(&item, "request"), "request").is_object() {
                    &field(field(&item, "request"), "request")
                } else {
                    &field(&item, "request")
                };
                writeln!(
                    out,
                    "{}  {}",
                    line(field(&item, "id")),
                    line(field(request, "tool"))
                )?;
                // Each argument on its line, text shown whole up to 1,000 characters.
                match field(request, "arguments") {
                    Value::Object(arguments) => {
                        for (key, value) in arguments {
                            writeln!(
                                out,
                                "    {}: {}",
                                line(&key.as_str().into()),
                                argument(value)
                            )?;
                        }
                    }
                    Value::Null => {}
                    other => writeln!(out, "    arguments: {}", argument(other))?,
                }
                let rule = match field(request, "rule").as_str() {
                    Some(rule) => format!(" (rule {})", terminal_text(rule)),
                    None => String::new(),
                };
                writeln!(out, "    reason: {}{rule}", line(field(request, "reason")))?;
                let mut place = Vec::new();
                if let Some(session) = field(&item, "session").as_str() {
                    place.push(format!("session {}", terminal_text(session)));
                }
                if let Some(workspace) = field(request, "workspace").as_str() {
                    place.push(format!("workspace {}", terminal_text(workspace)));
                }
                if !place.is_empty() {
                    writeln!(out, "    in: {}", place.join(", "))?;
                }
                if let Some(waiting) = waiting(&item, request, std::time::SystemTime::now()) {
                    writeln!(out, "    {waiting}")?;
                }
                let choices: Vec<String> = field(request, "choices")
                    .as_array()
                    .map(|c| c.iter().map(line).collect())
                    .unwrap_or_default();
                writeln!(out, "    answers: {}", choices.join(", "))?;
                for always in field(request, "always").as_array().into_iter().flatten() {
                    writeln!(
                        out,
                        "    {} covers: {}",
                        line(field(always, "choice")),
                        covers(field(always, "targets"), field(always, "scope"))
                    )?;
                    // The scopes it may choose instead (`--scope`), each saying what it covers.
                    let scopes = field(always, "scopes").as_array().into_iter().flatten();
                    for offer in scopes.skip(1) {
                        writeln!(
                            out,
                            "      --scope {}: {}",
                            line(field(offer, "scope")),
                            line(field(offer, "covers"))
                        )?;
                    }
                }
            }
            let more = crate::client::more_than(&body, shown);
            if more > 0 {
                writeln!(
                    out,
                    "… and {more} more waiting (answer these to see them, or list one --session)"
                )?;
            }
            Ok(EXIT_OK)
        }
        Some(Action::Allow(_) | Action::Deny(_)) if args.session.is_some() => {
            Err(Failure::Message(
                "--session chooses what is listed; an answer names its request by id".into(),
            ))
        }
        Some(Action::Allow(answer)) | Some(Action::Deny(answer)) => {
            let allow = matches!(args.action, Some(Action::Allow(_)));
            let decision = match (allow, answer.always) {
                (true, false) => "allow-once",
                (true, true) => "allow-always",
                (false, false) => "reject-once",
                (false, true) => "reject-always",
            };
            if answer.id.trim().is_empty() {
                return Err(Failure::Message(
                    "a request's id is needed (`toolgate approvals` lists them)".into(),
                ));
            }
            // (`null` scope and life: the request's default, until revoked.)
            let lasting = answer
                .lasting
                .as_deref()
                .map(|text| {
                    humantime::parse_duration(text.trim())
                        .map(|d| d.as_secs())
                        .map_err(|e| {
                            Failure::Message(format!(
                                "--for is a duration such as 8h, 30m or 7days, not `{text}`: {e}"
                            ))
                        })
                })
                .transpose()?;
            let body = json!({"decision": decision, "reason": answer.reason, "by": answer.by,
                              "scope": answer.scope, "expires_in": lasting});
            let send = |id: &str| {
                let path = format!("/api/approvals/{}", crate::client::encode(id));
                client.send("POST", &path, Some(&body))
            };
            let mut reply = send(&answer.id)?;
            // No such request: the start of one waiting request's id names it, as a short
            // commit id does (of the oldest 1,000 waiting).
            let mut id = answer.id.clone();
            let unknown =
                field(field(&reply.body, "error"), "code").as_str() == Some("not_pending");
            if unknown && answer.id.chars().count() >= SHORT_ID {
                let (_, pending) = client.list("/api/pending?limit=1000", "pending", args.json)?;
                let ids = pending.iter().filter_map(|item| field(item, "id").as_str());
                if let Some(full) = one_starting_with(ids, &answer.id, "waiting requests'")? {
                    reply = send(&full)?;
                    id = full;
                }
            }
            if args.json {
                writeln!(out, "{}", reply.body)?;
            }
            match reply.status {
                200 => {
                    if !args.json {
                        writeln!(out, "{}: {decision}", terminal_text(&id))?;
                        // What an "always" now answers by itself.
                        for grant in field(&reply.body, "grants")
                            .as_array()
                            .into_iter()
                            .flatten()
                        {
                            writeln!(
                                out,
                                "    remembered: {} (grant {})",
                                grant_line(grant),
                                line(field(grant, "id"))
                            )?;
                        }
                    }
                    Ok(EXIT_OK)
                }
                400 | 404 | 409 => {
                    if !args.json {
                        let _ = writeln!(
                            std::io::stderr(),
                            "{}: {}",
                            terminal_text(&id),
                            reply.error()
                        );
                    }
                    // Already answered, or no such request: a conflict. An answer the request
                    // does not take (not offered, a reason too long): not done.
                    let code =
                        crate::client::field(crate::client::field(&reply.body, "error"), "code");
                    let not_taken = matches!(
                        code.as_str(),
                        Some("decision_not_offered" | "scope_not_offered" | "wrong_request_kind")
                    );
                    Ok(if reply.status == 400 || not_taken {
                        EXIT_FAILED
                    } else {
                        EXIT_FOUND
                    })
                }
                _ => Err(Failure::Message(reply.error())),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::waiting;
    use serde_json::json;
    use std::time::{Duration, SystemTime};

    #[test]
    fn how_long_a_request_has_waited_and_has_left() {
        let created = humantime::parse_rfc3339("2026-11-27T10:00:00Z").unwrap();
        let now = created + Duration::from_millis(130_400);
        let item = json!({"created": "2026-11-27T10:00:00Z"});
        assert_eq!(
            waiting(&item, &json!({"timeout_ms": 300_000}), now).as_deref(),
            Some("waiting 2m 10s, refused unanswered in 2m 49s")
        );
        assert_eq!(
            waiting(&item, &json!({}), now).as_deref(),
            Some("waiting 2m 10s")
        );
        // Past its time (the daemon refuses it any moment), and a clock behind the daemon's.
        let late = created + Duration::from_secs(400);
        assert_eq!(
            waiting(&item, &json!({"timeout_ms": 300_000}), late).as_deref(),
            Some("waiting 6m 40s, refused unanswered in 0s")
        );
        assert_eq!(
            waiting(&item, &json!({}), SystemTime::UNIX_EPOCH).as_deref(),
            Some("waiting 0s")
        );
        assert_eq!(waiting(&json!({}), &json!({}), now), None);
    }
}
