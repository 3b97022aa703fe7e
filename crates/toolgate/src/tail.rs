//! `toolgate tail`: the daemon's events as they happen.

use std::io::Write;

use clap::Args;
use serde_json::Value;

use std::time::{Duration, Instant};

use crate::client::{Client, ClientArgs, Streamed, field, folded};
use crate::{EXIT_FOUND, EXIT_OK, Failure};

/// Prints the daemon's events: the newest ten, then live (Ctrl-C stops), as `tail -f` does.
#[derive(Debug, Args)]
pub(crate) struct TailArgs {
    #[command(flatten)]
    pub(crate) client: ClientArgs,
    /// One JSON object per line instead of text.
    #[arg(long)]
    pub(crate) json: bool,
    /// Only this session's events.
    #[arg(long)]
    pub(crate) session: Option<String>,
    /// Start after this sequence number instead of with the newest events (`--after 0`: the
    /// whole log).
    #[arg(long, value_name = "SEQ", conflicts_with = "last", value_parser = clap::value_parser!(i64).range(0..))]
    pub(crate) after: Option<i64>,
    /// Start with the newest N events (1 to 1000), as `tail -n` does [default: 10].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) last: Option<u32>,
    /// Print what is logged so far and stop, instead of following.
    #[arg(long)]
    pub(crate) no_follow: bool,
    /// When the daemon goes away while following, how long to keep trying to reconnect (and
    /// resume after the last event printed) before giving up with exit code 2.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0, value_parser = retry_seconds)]
    pub(crate) retry_for: f64,
}

/// How many of the newest events `toolgate tail` starts with when not told.
const DEFAULT_LAST: u32 = 10;

fn retry_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && (0.0..=86_400.0).contains(&seconds) => Ok(seconds),
        _ => Err("a number of seconds, 0 to 86400".into()),
    }
}

fn text(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

/// One event as a line of terminal-safe text.
pub(crate) fn human(event: &Value) -> String {
    let mut out = format!(
        "#{} {} {:20}",
        field(event, "seq"),
        text(event, "timestamp"),
        text(event, "type")
    );
    let session = text(event, "session");
    if !session.is_empty() {
        out.push_str(&format!(" [{session}]"));
    }
    let action = text(event, "action");
    if !action.is_empty() {
        out.push(' ');
        out.push_str(&action);
    }
    // What the call touches (a command, a path), folded: it is the agent's text.
    let resource = text(event, "resource");
    if !resource.is_empty() {
        out.push_str(&format!(" `{}`", folded(&Value::String(resource), 120)));
    }
    // A revocation says which grant, in words.
    if let Some(grant) = event.get("grant").filter(|g| g.is_object()) {
        out.push_str(&format!(
            " grant {}: {}",
            folded(field(grant, "id"), 100),
            crate::client::grant_line(grant)
        ));
    }
    for key in ["decision", "answer", "actor"] {
        let mut value = text(event, key);
        // A request its requester took back was decided by nobody.
        if key == "decision" && value.is_empty() && text(event, "layer") == "withdrawn" {
            value = "withdrawn".into();
        }
        if !value.is_empty() {
            out.push(' ');
            out.push_str(&value);
        }
    }
    let reason = text(event, "reason");
    if !reason.is_empty() {
        out.push_str(" — ");
        out.push_str(&reason);
    }
    toolgate_runtime::terminal_text(&out)
}

/// A page of the audit log (`query`, and the session's filter when one is given).
fn audit(client: &Client, args: &TailArgs, query: &str) -> Result<Value, Failure> {
    let mut path = format!("/api/audit?{query}");
    if let Some(session) = &args.session {
        path.push_str(&format!("&session={}", crate::client::encode(session)));
    }
    let reply = client.send("GET", &path, None)?;
    if reply.status != 200 {
        return Err(reply.failure(args.json));
    }
    Ok(reply.body)
}

fn events_of(page: &Value) -> Vec<Value> {
    field(page, "events")
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The newest `n` events (the session's, when one is given), in the order they were logged.
fn newest(client: &Client, args: &TailArgs, n: u32) -> Result<Vec<Value>, Failure> {
    // Newest first as the API gives them.
    let mut events = events_of(&audit(client, args, &format!("last={n}"))?);
    events.reverse();
    Ok(events)
}

pub(crate) fn run(args: &TailArgs) -> Result<u8, Failure> {
    let client = Client::new(&args.client)?;
    let mut out = std::io::stdout().lock();
    let mut print = |event: &Value| -> Result<(), Failure> {
        if args.json {
            writeln!(out, "{event}")?;
        } else {
            writeln!(out, "{}", human(event))?;
        }
        out.flush()?;
        Ok(())
    };
    // An unknown session is a mistake to say, not an empty stream to wait on.
    if let Some(session) = &args.session {
        let reply = client.send(
            "GET",
            &format!("/api/sessions/{}", crate::client::encode(session)),
            None,
        )?;
        match reply.status {
            200 => {}
            404 => {
                if let Failure::Message(message) = reply.failure(args.json) {
                    let _ = writeln!(std::io::stderr(), "error: {message}");
                }
                return Ok(EXIT_FOUND);
            }
            _ => return Err(reply.failure(args.json)),
        }
    }
    // The newest ten unless told where to start, as `tail` and `journalctl -f` do.
    let last = match args.after {
        Some(_) => None,
        None => Some(args.last.unwrap_or(DEFAULT_LAST)),
    };
    let mut start = args.after.unwrap_or(0);
    if let Some(last) = last {
        let events = newest(&client, args, last)?;
        for event in &events {
            print(event)?;
        }
        start = events
            .last()
            .and_then(|e| field(e, "seq").as_i64())
            .unwrap_or(0);
        if args.no_follow {
            return Ok(EXIT_OK);
        }
    }
    if args.no_follow {
        let mut after = start;
        loop {
            let page = audit(&client, args, &format!("after={after}&limit=1000"))?;
            let events = events_of(&page);
            for event in &events {
                print(event)?;
            }
            match field(&page, "next").as_i64() {
                Some(next) if !events.is_empty() => after = next,
                _ => return Ok(EXIT_OK),
            }
        }
    }
    // Reached already (its session checked, its newest events read): a daemon gone before the
    // stream starts is waited for, as one gone while streaming is.
    let reached = args.session.is_some() || last.is_some();
    follow(args, start, &client, &mut print, reached)
}

/// Follows the live stream; when it ends (the daemon stopped or restarted, the connection
/// broke), reconnects and resumes after the last event printed, for up to `--retry-for`. A
/// daemon not reachable at the start is said at once, unless it was `reached` before.
fn follow(
    args: &TailArgs,
    after: i64,
    client: &Client,
    print: &mut impl FnMut(&Value) -> Result<(), Failure>,
    reached: bool,
) -> Result<u8, Failure> {
    let retry_for = Duration::from_secs_f64(args.retry_for);
    let mut after = after;
    let mut lost: Option<Instant> = None;
    let mut pause = Duration::from_millis(100);
    let mut first = true;
    loop {
        let path = match &args.session {
            Some(session) => format!(
                "/api/sessions/{}/events?after={after}",
                crate::client::encode(session)
            ),
            None => format!("/api/events?after={after}"),
        };
        let mut failed = None;
        let streamed = client.events(&path, |event| {
            if let Some(seq) = event.get("seq").and_then(Value::as_i64) {
                after = after.max(seq);
            }
            match print(event) {
                Ok(()) => true,
                Err(e) => {
                    failed = Some(e);
                    false
                }
            }
        });
        if let Some(failed) = failed {
            return match failed {
                Failure::BrokenPipe => Ok(EXIT_OK),
                other => Err(other),
            };
        }
        let why = match streamed {
            Ok(Streamed::Stopped) => return Ok(EXIT_OK),
            // The daemon's log ends before what was printed: it is another log (a backup
            // restored, another data directory). Said, and followed from its end.
            Ok(Streamed::Refused(reply))
                if reply.status == 409
                    && field(field(&reply.body, "error"), "code").as_str()
                        == Some("ahead_of_log") =>
            {
                // Its newest events first, as at the start (those logged since it came back
                // would otherwise be skipped), then on.
                let events = newest(client, args, DEFAULT_LAST)?;
                // Nothing printed yet: the number was the one given with --after.
                let why = if first && args.after == Some(after) {
                    "the number given with --after"
                } else {
                    "it is not the log printed so far (a backup restored, or another data \
                     directory)"
                };
                let _ = writeln!(
                    std::io::stderr(),
                    "toolgate: the daemon's log at http://{} ends before #{after}: {why}; \
                     following it from its newest events",
                    client.host()
                );
                after = 0;
                for event in &events {
                    after = after.max(field(event, "seq").as_i64().unwrap_or(0));
                    if let Err(failed) = print(event) {
                        return match failed {
                            Failure::BrokenPipe => Ok(EXIT_OK),
                            other => Err(other),
                        };
                    }
                }
                continue;
            }
            Ok(Streamed::Refused(reply)) => return Err(reply.failure(args.json)),
            // Not reachable at the start (and never reached): said at once.
            Err(error) if first && !reached => return Err(error),
            Ok(Streamed::Ended) => {
                // It was streaming: the wait for the next one starts afresh.
                lost = None;
                pause = Duration::from_millis(100);
                "the daemon ended the event stream".to_owned()
            }
            Err(Failure::Message(message)) => message,
            Err(Failure::BrokenPipe) => return Ok(EXIT_OK),
        };
        first = false;
        let since = *lost.get_or_insert_with(|| {
            let _ = writeln!(
                std::io::stderr(),
                "toolgate: {why}; reconnecting to http://{} (for up to {} s)",
                client.host(),
                args.retry_for
            );
            Instant::now()
        });
        let left = retry_for.saturating_sub(since.elapsed());
        if left.is_zero() {
            return Err(Failure::Message(format!(
                "lost the daemon at http://{}: {why}; resume with `toolgate tail --after {after}`",
                client.host()
            )));
        }
        std::thread::sleep(pause.min(left));
        pause = (pause * 2).min(Duration::from_secs(2));
    }
}
