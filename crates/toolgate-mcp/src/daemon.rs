//! Letting toolgate's daemon decide (`toolgate mcp --daemon`): every call the gateway judges
//! is sent to the daemon, which decides it with its policy and its grants, records it in its
//! audit log, and holds the calls its policy asks about on its approval page until a person
//! answers there.
//!
//! The gate itself does no input or output: it hands a call to the daemon as
//! [`Out::ToDaemon`](crate::Out::ToDaemon) and hears what came of it through
//! [`Gate::pending`](crate::Gate::pending) and [`Gate::decided`](crate::Gate::decided). While a
//! call waits on the page, a client that offers URL-mode elicitation is sent the page's
//! address; declining it, or cancelling the call, withdraws the request from the page.

use std::time::Instant;

use serde_json::{Value, json};
use toolgate_policy::{Call, Decision};

/// A decision's reason as peers show it: `toolgate (RULE): REASON`, or `toolgate: REASON` when
/// no rule decided.
pub fn stated(rule: Option<&str>, reason: &str) -> String {
    match rule {
        Some(rule) => format!("toolgate ({rule}): {reason}"),
        None => format!("toolgate: {reason}"),
    }
}

/// What the daemon said about a call.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// Allow or deny; `None` when there is no decision (nobody answered in time, the daemon
    /// could not be reached, or it answered in a way toolgate does not know). The gateway
    /// refuses such a call: it never relays one the daemon did not allow.
    pub decision: Option<Decision>,
    /// Why, as the client is told: `toolgate (RULE): REASON`.
    pub reason: String,
    /// The daemon's whole answer (`null` when there is none).
    pub body: Value,
}

impl Verdict {
    /// No decision, for this reason.
    pub fn undecided(reason: impl Into<String>) -> Verdict {
        Verdict {
            decision: None,
            reason: reason.into(),
            body: Value::Null,
        }
    }
}

/// What the daemon did with a call sent to it.
#[derive(Clone, Debug, PartialEq)]
pub enum Submitted {
    /// It decided at once (or could not be asked: an undecided verdict).
    Decided(Verdict),
    /// The call waits for a person on the approval page as request `id`, for this reason
    /// (`toolgate (RULE): REASON`).
    Pending {
        /// The request's id (what `GET` and `DELETE /api/decisions/{id}` name).
        id: String,
        /// Why a person decides.
        reason: String,
    },
}

/// A daemon that decides calls. Its methods block (they talk HTTP to the daemon); the relay
/// calls them on the runtime's blocking threads.
pub trait Daemon: Send + Sync + 'static {
    /// Sends a call to be decided.
    fn submit(&self, call: &Call) -> Submitted;
    /// Waits for the decision on a pending request until `deadline`; when none came by then,
    /// withdraws the request from the page and says so (an undecided verdict, unless an answer
    /// came meanwhile).
    fn wait(&self, id: &str, deadline: Instant) -> Verdict;
    /// Withdraws a pending request: nobody waits for its answer any more (a poll still waiting
    /// on it hears a refusal).
    fn withdraw(&self, id: &str);
    /// Answers a pending request as a person did elsewhere (`by`: where), so the daemon records
    /// that answer and the poll waiting on the request hears it. An answer that comes after
    /// another is refused by the daemon, and the first one stands. A daemon that takes no
    /// answers withdraws the request instead (its waiter hears a refusal).
    fn answer(&self, id: &str, choice: toolgate_policy::Choice, by: &str) {
        let _ = (choice, by);
        self.withdraw(id);
    }
    /// The approval page's address, where a person answers.
    fn page(&self) -> String;
    /// Tells the daemon the result of `call` (one it allowed; `call_id`: its id, when known)
    /// came into the call's session, so a result that brings untrusted content taints it. A
    /// daemon that keeps no sessions does nothing.
    fn report(&self, call: &Call, call_id: Option<&str>) {
        let _ = (call, call_id);
    }
}

/// A call the daemon is deciding.
pub(crate) struct Deciding {
    /// The call's request id.
    pub(crate) call_id: Value,
    /// The call, as the client wrote it.
    pub(crate) line: String,
    /// Whether it is a `resources/read` (refused with a JSON-RPC error, not a tool result).
    pub(crate) resource: bool,
    /// The daemon's request, once it said the call waits for a person.
    pub(crate) request: Option<String>,
    /// The call as the daemon decides it, when its result is to be reported (the gate has a
    /// session): reported when it is allowed and its result comes.
    pub(crate) call: Option<Call>,
    /// The id (as JSON text) of the URL-mode question that sent the person to the page.
    pub(crate) question: Option<String>,
}

/// The URL-mode `elicitation/create` that sends the person to the approval page.
pub(crate) fn page_question(
    question_id: &str,
    server: &str,
    tool: &str,
    request: &str,
    reason: &str,
    page: &str,
) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": question_id,
        "method": "elicitation/create",
        "params": {
            "mode": "url",
            "elicitationId": question_id,
            "url": page,
            "message": format!(
                "`{tool}` on the `{server}` server waits for a person on toolgate's approval \
                 page (request `{request}`).\n{reason}\nOpen the page to allow or deny it; \
                 declining here refuses the call."
            ),
        },
    })
}

/// The notice that a URL-mode question's work is done (the call was decided).
pub(crate) fn page_done(question_id: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "method": "notifications/elicitation/complete",
        "params": {"elicitationId": question_id},
    })
}
