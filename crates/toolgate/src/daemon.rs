//! Asking the daemon to decide a call (`toolgate hook … --daemon`, `toolgate mcp --daemon`):
//! `POST /api/decisions`, then, while a person decides on the approval page, long polls of
//! `GET /api/decisions/{id}`; a request nobody answered in time is withdrawn from the page
//! (`DELETE`), and an answer that came meanwhile still wins.

use std::time::{Duration, Instant};

use serde_json::Value;
use toolgate_mcp::{Daemon, Submitted, Verdict};
use toolgate_policy::{Call, Decision};

use crate::Failure;
use crate::client::{Client, ClientArgs, encode, field};

/// The daemon, reached through the CLI's HTTP client.
pub(crate) struct DaemonClient {
    client: Client,
}

pub(crate) use toolgate_mcp::stated_reason as with_rule;

/// A failure's message.
pub(crate) fn failure_text(failure: &Failure) -> String {
    match failure {
        Failure::Message(message) => message.clone(),
        Failure::BrokenPipe => "broken pipe".to_owned(),
    }
}

/// The decision a daemon's answer holds, if it holds one.
fn decided(body: &Value) -> Option<Verdict> {
    let decision = match field(body, "decision").as_str()? {
        "allow" => Decision::Allow,
        "deny" => Decision::Deny,
        _ => return None,
    };
    let reason = field(body, "reason").as_str().unwrap_or_default();
    Some(Verdict {
        decision: Some(decision),
        reason: with_rule(field(body, "rule").as_str(), reason),
        body: body.clone(),
    })
}

fn undecided(why: String) -> Verdict {
    Verdict::undecided(format!("toolgate: {why}"))
}

impl DaemonClient {
    /// The daemon the client arguments name (its address and token).
    pub(crate) fn new(args: &ClientArgs) -> Result<DaemonClient, Failure> {
        Ok(DaemonClient {
            client: Client::new(args)?,
        })
    }
}

impl DaemonClient {
    /// Tells the daemon the result of `call` came into its session (`POST
    /// /api/sessions/{id}/results`), which the policy may say tainted it. An error says why.
    fn report_result(
        &self,
        session: &str,
        call: &Call,
        call_id: Option<&str>,
    ) -> Result<(), String> {
        let body = serde_json::json!({"call": call, "call_id": call_id});
        let path = format!("/api/sessions/{}/results", encode(session));
        match self.client.send("POST", &path, Some(&body)) {
            Ok(reply) if reply.status == 200 => Ok(()),
            Ok(reply) => Err(reply.error()),
            Err(e) => Err(failure_text(&e)),
        }
    }
}

impl Daemon for DaemonClient {
    fn submit(&self, call: &Call) -> Submitted {
        let body = match serde_json::to_value(call) {
            Ok(body) => body,
            Err(e) => return Submitted::Decided(undecided(format!("cannot send the call: {e}"))),
        };
        let reply = match self.client.send("POST", "/api/decisions", Some(&body)) {
            Ok(reply) => reply,
            Err(e) => {
                return Submitted::Decided(undecided(format!(
                    "cannot ask the daemon ({})",
                    failure_text(&e)
                )));
            }
        };
        match reply.status {
            200 => Submitted::Decided(
                decided(&reply.body)
                    .unwrap_or_else(|| undecided("the daemon's answer has no decision".into())),
            ),
            202 => Submitted::Pending {
                id: field(&reply.body, "id")
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                reason: with_rule(
                    field(&reply.body, "rule").as_str(),
                    field(&reply.body, "reason")
                        .as_str()
                        .unwrap_or("a person decides"),
                ),
            },
            _ => Submitted::Decided(undecided(format!(
                "the daemon refused the call: {}",
                reply.error()
            ))),
        }
    }

    fn wait(&self, id: &str, deadline: Instant) -> Verdict {
        let path = format!("/api/decisions/{}", encode(id));
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            let wait = left.as_secs_f64().min(60.0);
            match self
                .client
                .send("GET", &format!("{path}?wait={wait:.1}"), None)
            {
                Ok(reply) if reply.status == 200 => {
                    if let Some(answer) = decided(&reply.body) {
                        return answer;
                    }
                }
                Ok(reply) => {
                    return undecided(format!("the daemon lost request `{id}`: {}", reply.error()));
                }
                Err(e) => return undecided(format!("the daemon went away ({})", failure_text(&e))),
            }
        }
        // Nobody answered in time: the request is withdrawn from the page (an answer there
        // would reach nobody). An answer that came meanwhile wins.
        let withdrawn = match self.client.send("DELETE", &path, None) {
            Ok(reply) if reply.status == 200 => "it is withdrawn from the page",
            Ok(reply) if reply.status == 409 => {
                if let Ok(reply) = self.client.send("GET", &path, None)
                    && reply.status == 200
                    && let Some(answer) = decided(&reply.body)
                {
                    return answer;
                }
                "it is no longer pending"
            }
            _ => "it still waits there",
        };
        Verdict::undecided(format!(
            "nobody answered on the approval page in time (request `{id}`: {withdrawn})"
        ))
    }

    fn withdraw(&self, id: &str) {
        let path = format!("/api/decisions/{}", encode(id));
        if let Err(e) = self.client.send("DELETE", &path, None) {
            eprintln!(
                "toolgate: could not withdraw request `{id}` from the approval page: {}",
                failure_text(&e)
            );
        }
    }

    fn answer(&self, id: &str, choice: toolgate_policy::Choice, by: &str) {
        let path = format!("/api/approvals/{}", encode(id));
        let body = serde_json::json!({"decision": choice.as_str(), "by": by});
        match self.client.send("POST", &path, Some(&body)) {
            // 409: answered already (on the page): that answer stands, and the waiter hears it.
            Ok(reply) if matches!(reply.status, 200 | 409) => {}
            Ok(reply) => {
                eprintln!(
                    "toolgate: the daemon did not take the answer to `{id}`: {}; withdrawing it",
                    reply.error()
                );
                self.withdraw(id);
            }
            Err(e) => {
                eprintln!(
                    "toolgate: could not answer request `{id}` on the daemon: {}; withdrawing it",
                    failure_text(&e)
                );
                self.withdraw(id);
            }
        }
    }

    fn page(&self) -> String {
        format!("http://{}/", self.client.host())
    }

    fn report(&self, call: &Call, call_id: Option<&str>) {
        let Some(session) = call.context.session.as_deref() else {
            return;
        };
        if let Err(why) = self.report_result(session, call, call_id) {
            eprintln!(
                "toolgate: the daemon was not told of a result (its session's taint may miss it): {why}"
            );
        }
    }
}

/// How long a call may wait for a person, as given in seconds (0 to an hour).
pub(crate) fn waiting(seconds: f64) -> Duration {
    Duration::from_secs_f64(if seconds.is_finite() {
        seconds.clamp(0.0, 3600.0)
    } else {
        0.0
    })
}
