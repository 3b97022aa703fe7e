//! `toolgate tail`: the daemon's events as they happen.

use std::io::Write;

use clap::Args;
use serde_json::Value;

use crate::client::{Client, ClientArgs, field};
use crate::{EXIT_FOUND, EXIT_OK, Failure};

/// Prints the daemon's events: the log so far, then live (Ctrl-C stops).
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
    /// Start after this sequence number (default: the beginning).
    #[arg(long, value_name = "SEQ", default_value_t = 0)]
    pub(crate) after: i64,
    /// Print what is logged so far and stop, instead of following.
    #[arg(long)]
    pub(crate) no_follow: bool,
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
    for key in ["action", "decision", "actor"] {
        let value = text(event, key);
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
                let _ = writeln!(std::io::stderr(), "error: {}", reply.error());
                return Ok(EXIT_FOUND);
            }
            _ => return Err(Failure::Message(reply.error())),
        }
    }
    if args.no_follow {
        let mut after = args.after;
        loop {
            let mut path = format!("/api/audit?after={after}&limit=1000");
            if let Some(session) = &args.session {
                path.push_str(&format!("&session={}", crate::client::encode(session)));
            }
            let reply = client.send("GET", &path, None)?;
            if reply.status != 200 {
                return Err(Failure::Message(reply.error()));
            }
            let events = field(&reply.body, "events")
                .as_array()
                .cloned()
                .unwrap_or_default();
            for event in &events {
                print(event)?;
            }
            match field(&reply.body, "next").as_i64() {
                Some(next) if !events.is_empty() => after = next,
                _ => return Ok(EXIT_OK),
            }
        }
    }
    let path = match &args.session {
        Some(session) => format!(
            "/api/sessions/{}/events?after={}",
            crate::client::encode(session),
            args.after
        ),
        None => format!("/api/events?after={}", args.after),
    };
    let mut failed = None;
    client.events(&path, |event| match print(event) {
        Ok(()) => true,
        Err(e) => {
            failed = Some(e);
            false
        }
    })?;
    match failed {
        Some(Failure::BrokenPipe) | None => Ok(EXIT_OK),
        Some(other) => Err(other),
    }
}
