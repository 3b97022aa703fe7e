//! `toolgate replay`: the calls of the audit log re-evaluated under another policy, and what
//! would change; and the log itself, as `lint --against-log` reads it.
//!
//! The log is the daemon's record of the calls its requesters submitted (`GET /api/decisions`:
//! each call as submitted, with its workspace, and its outcome), or a file of those records, one
//! JSON object per line (`--log`). What the policy decided then is read from the outcome: a call
//! a grant, a person or a timeout answered, or one still waiting, was an ask; any other outcome
//! is the policy's own decision.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::SystemTime;

use clap::{Args, ValueEnum};
use serde_json::{Value, json};
use toolgate_policy::{Call, Decision, Evaluation, LoadOptions, Policy};

use crate::args::PolicyArgs;
use crate::client::{Client, ClientArgs, encode, field, folded};
use crate::{EXIT_FOUND, EXIT_OK, Failure};

const REPLAY_HELP: &str = "\
The calls are read from the daemon (`GET /api/decisions`, an approver's or admin's token) or,
with --log, from a file of the same records, one JSON object per line. What the policy decided
then is read from each call's outcome: a call a grant, a person or a timeout answered, or one
still waiting, was an ask. Grants are not consulted: the replay compares policies.

Exit codes: 0 no call would be decided otherwise, 1 some would, 2 the policy failed to load or
the log could not be read.";

/// Which calls of the log are read, and from where.
#[derive(Debug, Args)]
pub(crate) struct LogArgs {
    #[command(flatten)]
    pub(crate) client: ClientArgs,
    /// Only the calls made since then: an RFC 3339 time (2026-11-28T09:00:00Z), or how long
    /// ago (`24h`, `7days`).
    #[arg(long, value_name = "TIME")]
    pub(crate) since: Option<String>,
    /// Only the calls of this session.
    #[arg(long, value_name = "SESSION")]
    pub(crate) session: Option<String>,
    /// Read the calls from this file (one record of `GET /api/decisions` per line) instead of
    /// the daemon.
    #[arg(long, value_name = "FILE")]
    pub(crate) log: Option<PathBuf>,
}

/// Re-evaluate the calls of the audit log under another policy and print what would change.
#[derive(Debug, Args)]
#[command(after_help = REPLAY_HELP)]
pub(crate) struct ReplayArgs {
    #[command(flatten)]
    policy: PolicyArgs,
    #[command(flatten)]
    log: LogArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    /// The counts of each change, then the calls, by change.
    Text,
    /// One JSON object: the counts and the calls.
    Json,
}

/// One call of the log.
#[derive(Debug)]
pub(crate) struct Logged {
    /// The record's id (the request's).
    pub(crate) id: String,
    /// When the call was made (RFC 3339).
    pub(crate) created: String,
    /// The call, as submitted.
    pub(crate) raw: Value,
    /// The call, read.
    pub(crate) call: Call,
    /// What the policy decided then.
    pub(crate) then: Decision,
    /// How the call ended (pending: ask).
    pub(crate) outcome: Decision,
}

/// What the policy decided, from an outcome and its status: the answered and the waiting
/// were asks. `None` when the outcome says no decision.
fn decided_then(status: &str, outcome: &Value) -> Option<(Decision, Decision)> {
    if status == "pending" {
        return Some((Decision::Ask, Decision::Ask));
    }
    let decision: Decision = serde_json::from_value(field(outcome, "decision").clone()).ok()?;
    let answered = matches!(
        field(outcome, "layer").as_str(),
        Some("grant" | "handler" | "timeout" | "withdrawn")
    );
    Some((if answered { Decision::Ask } else { decision }, decision))
}

/// A record of the log read; `None` when it is not one this toolgate can replay.
fn logged(record: &Value) -> Option<Logged> {
    let raw = field(record, "call").clone();
    let call = Call::from_value(raw.clone()).ok()?;
    let status = field(record, "status").as_str().unwrap_or("decided");
    let (then, outcome) = decided_then(status, field(record, "outcome"))?;
    Some(Logged {
        id: field(record, "id").as_str().unwrap_or_default().to_owned(),
        created: field(record, "created")
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        raw,
        call,
        then,
        outcome,
    })
}

/// `--since` as the log writes times: a duration is that long before now.
fn since(text: &str) -> Result<String, Failure> {
    if let Ok(ago) = humantime::parse_duration(text.trim()) {
        let then = SystemTime::now()
            .checked_sub(ago)
            .unwrap_or(SystemTime::UNIX_EPOCH);
        return Ok(humantime::format_rfc3339_micros(then).to_string());
    }
    toolgate_server::log_time(text).ok_or_else(|| {
        Failure::Message(format!(
            "--since {}: give an RFC 3339 time (2026-11-28T09:00:00Z) or how long ago (24h, 7days)",
            toolgate_runtime::terminal_text(text)
        ))
    })
}

/// The calls of the log, oldest first, as `args` chooses, and how many records could not be
/// read.
pub(crate) fn read_log(args: &LogArgs) -> Result<(Vec<Logged>, usize), Failure> {
    let since = args.since.as_deref().map(since).transpose()?;
    let mut calls = Vec::new();
    let mut unreadable = 0;
    let mut take = |record: &Value| match logged(record) {
        Some(call) => calls.push(call),
        None => unreadable += 1,
    };
    match &args.log {
        Some(path) => {
            let file = std::fs::File::open(path).map_err(|e| {
                Failure::Message(format!("error: cannot read {}: {e}", path.display()))
            })?;
            for (number, line) in std::io::BufReader::new(file).lines().enumerate() {
                let line = line.map_err(|e| {
                    Failure::Message(format!("error: cannot read {}: {e}", path.display()))
                })?;
                if line.trim().is_empty() {
                    continue;
                }
                let record: Value = serde_json::from_str(&line).map_err(|e| {
                    Failure::Message(format!(
                        "error: {}:{}: not a JSON record ({e})",
                        path.display(),
                        number + 1
                    ))
                })?;
                let created = field(&record, "created").as_str().unwrap_or_default();
                let session = field(field(field(&record, "call"), "context"), "session").as_str();
                if since.as_deref().is_some_and(|since| created < since)
                    || args
                        .session
                        .as_deref()
                        .is_some_and(|wanted| session != Some(wanted))
                {
                    continue;
                }
                take(&record);
            }
        }
        None => {
            const PAGE: usize = 1000;
            let client = Client::new(&args.client)?;
            let mut query = format!("limit={PAGE}");
            if let Some(since) = &since {
                query += &format!("&since={}", encode(since));
            }
            if let Some(session) = &args.session {
                query += &format!("&session={}", encode(session));
            }
            let mut after: Option<String> = None;
            loop {
                let path = match &after {
                    Some(after) => format!("/api/decisions?{query}&after={}", encode(after)),
                    None => format!("/api/decisions?{query}"),
                };
                let (body, records) = client.list(&path, "decisions", false)?;
                records.iter().for_each(&mut take);
                match field(&body, "next").as_str() {
                    Some(next) if records.len() == PAGE => after = Some(next.to_owned()),
                    _ => break,
                }
            }
        }
    }
    Ok((calls, unreadable))
}

/// A call in one line: its tool and its most telling argument.
fn described(call: &Call) -> String {
    match call.telling_argument() {
        Some(detail) => format!(
            "{}  {}",
            toolgate_runtime::terminal_text(&call.tool),
            folded(detail, 200)
        ),
        None => format!(
            "{}  {}",
            toolgate_runtime::terminal_text(&call.tool),
            folded(&call.args, 200)
        ),
    }
}

/// Why the new policy decides as it does, in a few words.
fn why(evaluation: &Evaluation) -> String {
    match evaluation.rule_name() {
        Some(rule) => format!("rule `{}`", toolgate_runtime::terminal_text(rule)),
        None => format!("{}: {}", evaluation.layer, evaluation.reason),
    }
}

pub(crate) fn run(args: &ReplayArgs) -> Result<u8, Failure> {
    let policy = args.policy.load(LoadOptions::default())?;
    let (calls, unreadable) = read_log(&args.log)?;
    let report = replay(&policy, &calls);
    let mut out = std::io::stdout().lock();
    match args.format {
        Format::Json => {
            let counts: Vec<Value> = report
                .counts
                .iter()
                .map(|((from, to), count)| json!({"from": from, "to": to, "count": count}))
                .collect();
            let changes: Vec<Value> = report
                .changes
                .iter()
                .map(|(logged, evaluation)| {
                    json!({
                        "id": logged.id,
                        "created": logged.created,
                        "session": logged.call.context.session,
                        "call": logged.raw,
                        "from": logged.then,
                        "to": evaluation.decision,
                        "layer": evaluation.layer,
                        "rule": evaluation.rule_name(),
                        "reason": &*evaluation.reason,
                    })
                })
                .collect();
            let body = json!({
                "calls": calls.len(),
                "unreadable": unreadable,
                "changed": report.changes.len(),
                "counts": counts,
                "changes": changes,
            });
            writeln!(out, "{body}")?;
        }
        Format::Text => {
            let span = match (calls.first(), calls.last()) {
                (Some(first), Some(last)) => format!(
                    " ({} … {})",
                    toolgate_runtime::terminal_text(&first.created),
                    toolgate_runtime::terminal_text(&last.created)
                ),
                _ => String::new(),
            };
            writeln!(
                out,
                "{} {} replayed{span}: {} would be decided otherwise",
                calls.len(),
                crate::lint::plural(calls.len(), "call"),
                report.changes.len()
            )?;
            if unreadable > 0 {
                writeln!(
                    out,
                    "({unreadable} {} of the log could not be read as calls and were left out)",
                    crate::lint::plural(unreadable, "record")
                )?;
            }
            for ((from, to), count) in &report.counts {
                let (from, to) = (from.to_string(), to.to_string());
                writeln!(out, "  {from:>5} → {to:<5}  {count}")?;
            }
            for ((from, to), count) in &report.counts {
                writeln!(out, "\n{from} → {to} ({count}):")?;
                for (logged, evaluation) in report
                    .changes
                    .iter()
                    .filter(|(l, e)| l.then == *from && e.decision == *to)
                {
                    let session = logged
                        .call
                        .context
                        .session
                        .as_deref()
                        .map(|s| format!("  [{}]", toolgate_runtime::terminal_text(s)))
                        .unwrap_or_default();
                    writeln!(
                        out,
                        "  {}{session}  {}  ({})",
                        toolgate_runtime::terminal_text(&logged.created),
                        described(&logged.call),
                        why(evaluation)
                    )?;
                }
            }
        }
    }
    Ok(if report.changes.is_empty() {
        EXIT_OK
    } else {
        EXIT_FOUND
    })
}

/// What a replay found: each change's count (by what the policy decided then and what the
/// new one decides), and the calls that change, in the log's order.
pub(crate) struct Report<'a> {
    pub(crate) counts: BTreeMap<(Decision, Decision), usize>,
    pub(crate) changes: Vec<(&'a Logged, Evaluation)>,
}

/// Evaluates every call under `policy` and keeps those decided otherwise than then.
pub(crate) fn replay<'a>(policy: &Policy, calls: &'a [Logged]) -> Report<'a> {
    let mut counts = BTreeMap::new();
    let mut changes = Vec::new();
    for logged in calls {
        let evaluation = policy.evaluate(&logged.call);
        if evaluation.decision != logged.then {
            *counts
                .entry((logged.then, evaluation.decision))
                .or_insert(0) += 1;
            changes.push((logged, evaluation));
        }
    }
    Report { counts, changes }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_policy_decided_then_is_read_from_the_outcome() {
        let outcome = |decision: &str, layer: &str| json!({"decision": decision, "layer": layer});
        let cases = [
            (
                "decided",
                outcome("allow", "rule"),
                Some((Decision::Allow, Decision::Allow)),
            ),
            (
                "decided",
                outcome("deny", "guard"),
                Some((Decision::Deny, Decision::Deny)),
            ),
            (
                "decided",
                outcome("allow", "default"),
                Some((Decision::Allow, Decision::Allow)),
            ),
            // Answered by a grant, a person, a timeout; taken back: the policy asked.
            (
                "decided",
                outcome("allow", "grant"),
                Some((Decision::Ask, Decision::Allow)),
            ),
            (
                "decided",
                outcome("deny", "handler"),
                Some((Decision::Ask, Decision::Deny)),
            ),
            (
                "decided",
                outcome("deny", "timeout"),
                Some((Decision::Ask, Decision::Deny)),
            ),
            (
                "decided",
                outcome("deny", "withdrawn"),
                Some((Decision::Ask, Decision::Deny)),
            ),
            (
                "pending",
                json!({"decision": "ask"}),
                Some((Decision::Ask, Decision::Ask)),
            ),
            ("decided", json!({"layer": "rule"}), None),
            ("decided", outcome("perhaps", "rule"), None),
        ];
        for (status, outcome, want) in cases {
            assert_eq!(decided_then(status, &outcome), want, "{status} {outcome}");
        }
    }

    #[test]
    fn since_takes_a_time_or_how_long_ago() {
        assert_eq!(
            since("2026-11-28T10:00:00+01:00").unwrap(),
            "2026-11-28T09:00:00.000000Z"
        );
        let ago = since("2h").unwrap();
        let now = humantime::format_rfc3339_micros(SystemTime::now()).to_string();
        assert!(ago < now, "{ago} {now}");
        assert!(since("yesterday-ish").is_err());
    }
}
