//! The approval broker: requests that wait for a person, and the answers that end them.
//!
//! A request is registered before it is published (so an answer can never arrive before its
//! waiter), then waits for the first valid answer, its timeout, or the turn's cancellation.
//! Answers are matched by id: the first valid answer wins; a second answer, an answer for an id
//! that was never asked, or one that arrives after the timeout is a [`Conflict`] and changes
//! nothing. An answer that was not offered is refused and the request stays pending.
//!
//! ```rust,standalone_crate
//! use std::time::Duration;
//! use toolgate_runtime::{Answer, ApprovalBroker, EventBus, EventKind, Resolution};
//! use toolgate_policy::Choice;
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! let events = EventBus::new();
//! let broker = ApprovalBroker::new(events.clone());
//! // A UI: answer every permission request as it is published.
//! let ui = broker.clone();
//! events.subscribe_fn(move |event| {
//!     if let EventKind::PermissionRequested(request) = &event.kind {
//!         ui.respond(&request.id, Answer::from(Choice::AllowOnce).into(), "alice").unwrap();
//!     }
//! });
//! let request = toolgate_runtime::PermissionRequest::example("delete_file");
//! let resolution = broker
//!     .request_permission(Default::default(), request, None, Duration::from_secs(5), &Default::default())
//!     .await;
//! assert!(matches!(resolution, Resolution::Answered { .. }));
//! assert_eq!(broker.pending().len(), 0);
//! # });
//! ```

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use toolgate_policy::{Choice, Layer};

use crate::approver::Approver;
use crate::events::{EventBus, EventKind, Scope};
use crate::grants::{GrantTarget, ScopeKind};
use crate::message::ToolCall;
use crate::messages;
use crate::tool::ToolInfo;

/// What an "always" answer would store, shown with the request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlwaysCovers {
    /// The answer (`allow-always` or `reject-always`).
    pub choice: Choice,
    /// What it would cover, exactly.
    pub targets: Vec<GrantTarget>,
    /// For how long and where, when the answer names no scope of its own.
    pub scope: ScopeKind,
    /// The scopes the answer may choose among, each saying what the grants would cover there
    /// (the default first); none: only `scope`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<ScopeOffer>,
}

impl AlwaysCovers {
    /// Whether an answer may make its grants in `scope`.
    pub fn offers(&self, scope: ScopeKind) -> bool {
        scope == self.scope || self.scopes.iter().any(|offer| offer.scope == scope)
    }
}

/// One scope an "always" answer may choose, and what its grants would cover there, in words
/// (`` `Bash`: commands starting with `git push`, for every session in the workspace `/ws` ``).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScopeOffer {
    /// The scope.
    pub scope: ScopeKind,
    /// What the grants would cover there.
    pub covers: String,
}

/// A tool call waiting for a person's approval (read back as it was published: a daemon
/// sharing a store answers another's request from its record).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PermissionRequest {
    /// Unique id; answers name it.
    pub id: String,
    /// Who asks (the middleware's name; HPD's `SourceName`).
    pub source: String,
    /// The tool.
    pub tool: String,
    /// The tool's description (`"No description available"` when it has none).
    pub description: String,
    /// The call's id.
    pub call_id: String,
    /// A copy of the arguments.
    pub arguments: Value,
    /// Why the call needs approval.
    pub reason: String,
    /// The rule that asked, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The layer that asked.
    pub layer: Layer,
    /// What the person may answer.
    pub choices: Vec<Choice>,
    /// For each "always" answer offered, exactly what it would cover.
    pub always: Vec<AlwaysCovers>,
    /// How long the request waits before it resolves as reject-once.
    pub timeout_ms: u64,
    /// The workspace the call works in, when its run or requester names one (shown to the
    /// person; an "always" answer scoped to the workspace covers it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
}

impl PermissionRequest {
    /// A request from `source` about one call, with a fresh id, offering allow-once and
    /// reject-once until the caller says otherwise.
    pub(crate) fn for_call(
        source: &str,
        call: &ToolCall,
        tool: &ToolInfo,
        args: &Map<String, Value>,
        timeout: Duration,
    ) -> PermissionRequest {
        PermissionRequest {
            id: new_id(),
            source: source.to_owned(),
            tool: call.name.clone(),
            description: if tool.description.is_empty() {
                messages::NO_DESCRIPTION.to_owned()
            } else {
                tool.description.clone()
            },
            call_id: call.id.clone(),
            arguments: Value::Object(args.clone()),
            reason: String::new(),
            rule: None,
            layer: Layer::Rule,
            choices: vec![Choice::AllowOnce, Choice::RejectOnce],
            always: Vec::new(),
            timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            workspace: None,
        }
    }

    /// A request for `tool` with every choice offered, for examples and tests.
    pub fn example(tool: &str) -> PermissionRequest {
        PermissionRequest {
            id: new_id(),
            source: "example".into(),
            tool: tool.into(),
            description: "No description available".into(),
            call_id: "call-1".into(),
            arguments: Value::Object(Default::default()),
            reason: "needs approval".into(),
            rule: None,
            layer: Layer::Rule,
            choices: Choice::ALL.to_vec(),
            always: Vec::new(),
            timeout_ms: 300_000,
            workspace: None,
        }
    }

    /// Whether this request takes `answer`: its choice is offered, and so is its scope, when
    /// it names one.
    pub fn takes(&self, answer: &Answer) -> Result<(), Conflict> {
        if !self.choices.contains(&answer.decision) {
            return Err(Conflict::NotOffered {
                id: self.id.clone(),
                choice: answer.decision,
                offered: self.choices.clone(),
            });
        }
        if let Some(scope) = answer.scope {
            let covers = self.always.iter().find(|a| a.choice == answer.decision);
            if !covers.is_some_and(|covers| covers.offers(scope)) {
                let offered = covers.map_or_else(Vec::new, |covers| {
                    let mut offered = vec![covers.scope];
                    for offer in &covers.scopes {
                        if !offered.contains(&offer.scope) {
                            offered.push(offer.scope);
                        }
                    }
                    offered
                });
                return Err(Conflict::ScopeNotOffered {
                    id: self.id.clone(),
                    scope,
                    offered,
                });
            }
        }
        Ok(())
    }

    /// What an answer would cover, when it is an "always".
    pub fn covers(&self, choice: Choice) -> Option<&[GrantTarget]> {
        self.always
            .iter()
            .find(|a| a.choice == choice)
            .map(|a| a.targets.as_slice())
    }
}

/// The run asks whether it may go on past its iteration limit (HPD's
/// `ContinuationRequestEvent`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ContinuationRequest {
    /// Unique id; answers name it.
    pub id: String,
    /// Who asks.
    pub source: String,
    /// The iteration about to run (1-based).
    pub current_iteration: u32,
    /// The limit it would pass.
    pub max_iterations: u32,
}

/// A request, of either kind.
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    /// A tool call's approval.
    Permission(Arc<PermissionRequest>),
    /// Going on past the iteration limit.
    Continuation(Arc<ContinuationRequest>),
}

impl Request {
    /// Its id.
    pub fn id(&self) -> &str {
        match self {
            Request::Permission(r) => &r.id,
            Request::Continuation(r) => &r.id,
        }
    }

    const fn kind(&self) -> &'static str {
        match self {
            Request::Permission(_) => "permission",
            Request::Continuation(_) => "continuation",
        }
    }
}

/// The longest reason an answer may give (it is stored with every event of the request, and a
/// refusal's reason is what the model reads).
pub const MAX_REASON: usize = 4096;

/// An answer to a permission request.
///
/// Its JSON form is either toolgate's (`{"decision": "allow-always", "reason": "…"}`, or just
/// the decision string) or HPD's (`{"approved": true, "choice": "alwaysAllow"}`), where
/// `approved` with `ask` is allow-once, with `alwaysAllow` allow-always; not approved with
/// `ask` is reject-once, with `alwaysDeny` reject-always. The two contradictory HPD forms fail
/// closed: approved with `alwaysDeny` is reject-always (HPD ran the call anyway), not approved
/// with `alwaysAllow` is reject-once. A body with both forms is refused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Answer {
    /// The choice.
    pub decision: Choice,
    /// Why, in the answerer's words (a refusal's reason is what the model reads).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Where an "always" answer's grants apply (one the request offers); none: the request's
    /// default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<ScopeKind>,
    /// How long an "always" answer's grants last (JSON `expires_in`, in seconds, as OAuth
    /// says it); none: until revoked.
    #[serde(
        rename = "expires_in",
        skip_serializing_if = "Option::is_none",
        serialize_with = "lasting"
    )]
    pub lasts: Option<Duration>,
}

/// The longest an "always" answer may last when it says how long: a year.
pub const LONGEST_GRANT: Duration = Duration::from_secs(366 * 24 * 3600);

fn lasting<S: serde::Serializer>(lasts: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match lasts {
        Some(lasts) => s.serialize_u64(lasts.as_secs()),
        None => s.serialize_none(),
    }
}

impl From<Choice> for Answer {
    fn from(decision: Choice) -> Answer {
        Answer {
            decision,
            reason: None,
            scope: None,
            lasts: None,
        }
    }
}

impl Answer {
    /// An answer with a reason.
    pub fn with_reason(decision: Choice, reason: impl Into<String>) -> Answer {
        Answer {
            decision,
            reason: Some(reason.into()),
            scope: None,
            lasts: None,
        }
    }

    /// An answer's `expires_in` from its JSON value: absent or null is none, else a whole
    /// number of seconds from 1 to [`LONGEST_GRANT`]'s.
    pub fn lasts_of(value: Option<&Value>) -> Result<Option<Duration>, String> {
        let most = LONGEST_GRANT.as_secs();
        match value {
            None | Some(Value::Null) => Ok(None),
            // (`3600.0` is the integer 3600, as JSON Schema counts.)
            Some(Value::Number(n)) => match n.as_u64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && (1.0..=most as f64).contains(f))
                    .map(|f| f as u64)
            }) {
                Some(seconds) if (1..=most).contains(&seconds) => {
                    Ok(Some(Duration::from_secs(seconds)))
                }
                _ => Err(format!(
                    "`expires_in` is a number of seconds from 1 to {most} (a year), not {n}"
                )),
            },
            Some(_) => Err(format!(
                "`expires_in` is a number of seconds from 1 to {most} (a year)"
            )),
        }
    }

    /// An answer's `scope` from its JSON value: absent or null is none.
    pub fn scope_of(value: Option<&Value>) -> Result<Option<ScopeKind>, String> {
        match value {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => match text.as_str() {
                "session" => Ok(Some(ScopeKind::Session)),
                "workspace" => Ok(Some(ScopeKind::Workspace)),
                "user" => Ok(Some(ScopeKind::User)),
                other => Err(format!(
                    "unknown scope `{other}`, expected `session`, `workspace` or `user`"
                )),
            },
            Some(_) => Err("`scope` is `session`, `workspace` or `user`".into()),
        }
    }

    /// The answer with the `scope` and `expires_in` of its JSON object: where and how long an
    /// "always" answer's grants last (read, and then left aside, for a "once" answer, which
    /// makes none: HPD's contradictory forms fail closed to one).
    fn lasting_from(mut self, object: &Map<String, Value>) -> Result<Answer, String> {
        self.scope = Answer::scope_of(object.get("scope"))?;
        self.lasts = Answer::lasts_of(object.get("expires_in"))?;
        if !self.decision.is_always() {
            self.scope = None;
            self.lasts = None;
        }
        Ok(self)
    }

    /// An answer's `reason` from its JSON value: absent or null is none, else a string of at
    /// most [`MAX_REASON`] characters.
    pub fn reason_of(value: Option<&Value>) -> Result<Option<String>, String> {
        match value {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.chars().count() <= MAX_REASON => Ok(Some(s.clone())),
            Some(Value::String(_)) => Err(format!("`reason` is at most {MAX_REASON} characters")),
            Some(_) => Err("`reason` must be a string".into()),
        }
    }

    /// Reads an answer from its JSON form (see the type's documentation).
    pub fn from_json(value: &Value) -> Result<Answer, String> {
        if let Some(text) = value.as_str() {
            return text
                .parse::<Choice>()
                .map(Answer::from)
                .map_err(|e| e.to_string());
        }
        let Some(object) = value.as_object() else {
            return Err("an answer is a decision string or an object".into());
        };
        let reason = Answer::reason_of(object.get("reason"))?;
        if let Some(decision) = object.get("decision") {
            // Two ways of answering in one body may disagree: neither is taken.
            if object.contains_key("approved") || object.contains_key("choice") {
                return Err(
                    "send `decision`, or HPD's `approved` and `choice`, not both in one answer"
                        .into(),
                );
            }
            let decision = decision
                .as_str()
                .ok_or("`decision` must be a string")?
                .parse::<Choice>()
                .map_err(|e| e.to_string())?;
            return Answer {
                decision,
                reason,
                scope: None,
                lasts: None,
            }
            .lasting_from(object);
        }
        let approved = match object.get("approved") {
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err("`approved` must be true or false".into()),
            None => return Err("an answer needs `decision` (or HPD's `approved`)".into()),
        };
        let choice = match object.get("choice") {
            None | Some(Value::Null) => "ask".to_owned(),
            Some(Value::String(s)) => s
                .chars()
                .filter(|c| c.is_ascii_alphanumeric())
                .collect::<String>()
                .to_ascii_lowercase(),
            Some(_) => return Err("`choice` must be a string".into()),
        };
        let decision = match (approved, choice.as_str()) {
            (true, "ask") => Choice::AllowOnce,
            (true, "alwaysallow") => Choice::AllowAlways,
            (false, "ask" | "alwaysallow") => Choice::RejectOnce,
            (_, "alwaysdeny") => Choice::RejectAlways,
            (_, other) => {
                return Err(format!(
                    "unknown choice `{other}`; expected ask, alwaysAllow or alwaysDeny"
                ));
            }
        };
        Answer {
            decision,
            reason,
            scope: None,
            lasts: None,
        }
        .lasting_from(object)
    }
}

/// An answer to a continuation request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContinuationAnswer {
    /// Whether the run may go on.
    pub approved: bool,
    /// How many more iterations (0: the middleware's default extension).
    #[serde(default, alias = "extensionAmount")]
    pub extension: u32,
}

/// An answer, of either kind.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Response {
    /// For a permission request.
    Permission(Answer),
    /// For a continuation request.
    Continuation(ContinuationAnswer),
}

impl From<Answer> for Response {
    fn from(answer: Answer) -> Response {
        Response::Permission(answer)
    }
}

impl From<ContinuationAnswer> for Response {
    fn from(answer: ContinuationAnswer) -> Response {
        Response::Continuation(answer)
    }
}

/// How a request ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum Resolution {
    /// Someone answered.
    Answered {
        /// The answer.
        response: Response,
        /// Who.
        by: String,
    },
    /// Nobody answered in time.
    TimedOut,
    /// The turn was cancelled.
    Cancelled,
    /// The handler failed or gave an answer that was not offered.
    Failed {
        /// What went wrong.
        message: String,
    },
}

impl Resolution {
    const fn status(&self) -> &'static str {
        match self {
            Resolution::Answered { .. } => "answered",
            Resolution::TimedOut => "timed out",
            Resolution::Cancelled => "cancelled",
            Resolution::Failed { .. } => "failed",
        }
    }
}

/// Why an answer changed nothing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "conflict", rename_all = "kebab-case")]
pub enum Conflict {
    /// No request with this id was ever pending here.
    Unknown {
        /// The id.
        id: String,
    },
    /// The request was already resolved (answered, timed out or cancelled).
    AlreadyResolved {
        /// The id.
        id: String,
        /// How it ended.
        status: &'static str,
    },
    /// The answer is for the other kind of request.
    WrongKind {
        /// The id.
        id: String,
        /// The request's kind.
        expected: &'static str,
    },
    /// The answer was not among the offered choices; the request is still pending.
    NotOffered {
        /// The id.
        id: String,
        /// The answer given.
        choice: Choice,
        /// What was offered.
        offered: Vec<Choice>,
    },
    /// The answer's scope was not offered for its choice; the request is still pending.
    ScopeNotOffered {
        /// The id.
        id: String,
        /// The scope given.
        scope: ScopeKind,
        /// What was offered.
        offered: Vec<ScopeKind>,
    },
}

impl fmt::Display for Conflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Conflict::Unknown { id } => write!(f, "no request `{id}` is pending"),
            Conflict::AlreadyResolved { id, status } => {
                write!(f, "request `{id}` is no longer pending: it was {status}")
            }
            Conflict::WrongKind { id, expected } => {
                write!(f, "request `{id}` is a {expected} request")
            }
            Conflict::NotOffered {
                id,
                choice,
                offered,
            } => {
                let offered: Vec<&str> = offered.iter().map(|c| c.as_str()).collect();
                write!(
                    f,
                    "`{choice}` was not offered for request `{id}` (offered: {})",
                    offered.join(", ")
                )
            }
            Conflict::ScopeNotOffered { id, scope, offered } => {
                let name = |scope: &ScopeKind| {
                    serde_json::to_value(scope)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default()
                };
                let offered: Vec<String> = offered.iter().map(name).collect();
                write!(
                    f,
                    "scope `{}` was not offered for request `{id}` (offered: {})",
                    name(scope),
                    offered.join(", ")
                )
            }
        }
    }
}

impl std::error::Error for Conflict {}

/// A request that is waiting.
#[derive(Clone, Debug, PartialEq)]
pub struct Pending {
    /// The request.
    pub request: Request,
    /// Where it comes from.
    pub scope: Scope,
}

struct Waiter {
    pending: Pending,
    sender: oneshot::Sender<Resolution>,
}

/// How many resolved ids are remembered, to tell a late answer from an unknown one.
const REMEMBERED: usize = 4096;

#[derive(Default)]
struct Registry {
    waiting: HashMap<String, Waiter>,
    /// The last [`REMEMBERED`] resolved ids in order, and how each ended.
    resolved: VecDeque<String>,
    statuses: HashMap<String, &'static str>,
}

impl Registry {
    fn remember(&mut self, id: String, status: &'static str) {
        if self.resolved.len() >= REMEMBERED
            && let Some(oldest) = self.resolved.pop_front()
        {
            self.statuses.remove(&oldest);
        }
        if self.statuses.insert(id.clone(), status).is_none() {
            self.resolved.push_back(id);
        }
    }

    fn resolved_status(&self, id: &str) -> Option<&'static str> {
        self.statuses.get(id).copied()
    }
}

/// The registry of pending requests. Cheap to clone; clones share it.
#[derive(Clone)]
pub struct ApprovalBroker {
    registry: Arc<Mutex<Registry>>,
    events: EventBus,
}

impl fmt::Debug for ApprovalBroker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApprovalBroker")
            .field("pending", &self.lock().waiting.len())
            .finish()
    }
}

/// A fresh request id.
pub(crate) fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

impl ApprovalBroker {
    /// A broker that publishes its requests on `events`.
    pub fn new(events: EventBus) -> ApprovalBroker {
        ApprovalBroker {
            registry: Arc::default(),
            events,
        }
    }

    /// The bus its requests are published on.
    pub fn events(&self) -> &EventBus {
        &self.events
    }

    /// The requests waiting now, in no particular order.
    pub fn pending(&self) -> Vec<Pending> {
        self.lock()
            .waiting
            .values()
            .map(|w| w.pending.clone())
            .collect()
    }

    /// The ids of the requests waiting now, in no particular order (without copying the
    /// requests).
    pub fn waiting_ids(&self) -> Vec<String> {
        self.lock().waiting.keys().cloned().collect()
    }

    /// Whether request `id` is waiting now.
    pub fn is_waiting(&self, id: &str) -> bool {
        self.lock().waiting.contains_key(id)
    }

    /// How many requests are waiting.
    pub fn len(&self) -> usize {
        self.lock().waiting.len()
    }

    /// Whether no request is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Publishes a permission request and waits for its resolution. With an `approver`, the
    /// approver is asked too (its answer races answers given through
    /// [`respond`](Self::respond); the first valid one wins).
    pub async fn request_permission(
        &self,
        scope: Scope,
        request: PermissionRequest,
        approver: Option<Arc<dyn Approver>>,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Resolution {
        let request = Request::Permission(Arc::new(request));
        self.request(scope, request, approver, timeout, cancel)
            .await
    }

    /// Publishes a continuation request and waits for its resolution.
    pub async fn request_continuation(
        &self,
        scope: Scope,
        request: ContinuationRequest,
        approver: Option<Arc<dyn Approver>>,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Resolution {
        let request = Request::Continuation(Arc::new(request));
        self.request(scope, request, approver, timeout, cancel)
            .await
    }

    async fn request(
        &self,
        scope: Scope,
        request: Request,
        approver: Option<Arc<dyn Approver>>,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Resolution {
        match self.open(scope, request) {
            Ok(ticket) => ticket.wait(approver, timeout, cancel).await,
            Err(conflict) => Resolution::Failed {
                message: conflict.to_string(),
            },
        }
    }

    /// Registers a request, then publishes it: from now on answers for its id are accepted.
    /// Wait for its resolution with [`Ticket::wait`]; a ticket dropped unresolved withdraws
    /// the request as cancelled.
    pub fn open(&self, scope: Scope, request: Request) -> Result<Ticket, Conflict> {
        let id = request.id().to_owned();
        let (sender, receiver) = oneshot::channel();
        {
            let mut registry = self.lock();
            if registry.waiting.contains_key(&id) || registry.resolved_status(&id).is_some() {
                return Err(Conflict::AlreadyResolved {
                    id,
                    status: "already used",
                });
            }
            registry.waiting.insert(
                id.clone(),
                Waiter {
                    pending: Pending {
                        request: request.clone(),
                        scope: scope.clone(),
                    },
                    sender,
                },
            );
        }
        let kind = match &request {
            Request::Permission(r) => EventKind::PermissionRequested(Arc::clone(r)),
            Request::Continuation(r) => EventKind::ContinuationRequested(Arc::clone(r)),
        };
        self.events.publish(scope.clone(), kind);
        Ok(Ticket {
            broker: self.clone(),
            request,
            scope,
            receiver: Some(receiver),
        })
    }

    /// Ends a waiting request with `resolution`, unless something already ended it.
    fn finish(&self, id: &str, scope: &Scope, resolution: Resolution) {
        let waiter = {
            let mut registry = self.lock();
            let waiter = registry.waiting.remove(id);
            if waiter.is_some() {
                registry.remember(id.to_owned(), resolution.status());
            }
            waiter
        };
        if let Some(waiter) = waiter {
            self.events.publish(
                scope.clone(),
                EventKind::RequestResolved {
                    request_id: id.to_owned(),
                    resolution: resolution.clone(),
                },
            );
            let _ = waiter.sender.send(resolution);
        }
    }

    /// Ends a waiting request without an answer, as failed: its waiter is refused with
    /// `message` (a daemon that could not record the request, so nobody could answer it).
    /// Whether it was waiting; when it was not, nothing changes.
    pub fn fail(&self, id: &str, message: impl Into<String>) -> bool {
        let waiter = {
            let mut registry = self.lock();
            let waiter = registry.waiting.remove(id);
            if waiter.is_some() {
                registry.remember(id.to_owned(), "failed");
            }
            waiter
        };
        let Some(waiter) = waiter else {
            return false;
        };
        let resolution = Resolution::Failed {
            message: message.into(),
        };
        self.events.publish(
            waiter.pending.scope.clone(),
            EventKind::RequestResolved {
                request_id: id.to_owned(),
                resolution: resolution.clone(),
            },
        );
        let _ = waiter.sender.send(resolution);
        true
    }

    /// Answers a waiting request. The first valid answer wins; anything else is a conflict and
    /// changes nothing.
    pub fn respond(&self, id: &str, response: Response, by: &str) -> Result<(), Conflict> {
        self.claim(id, response)?.complete(by);
        Ok(())
    }

    /// Takes a valid answer for a waiting request without delivering it yet: from now on the
    /// request is no longer pending (later answers conflict, its timeout no longer applies), and
    /// the answer reaches the waiter when the claim is [completed](Claim::complete). A daemon
    /// claims, makes the answer durable, then completes — or, if it cannot,
    /// [fails](Claim::fail) the request, which denies.
    pub fn claim(&self, id: &str, response: Response) -> Result<Claim, Conflict> {
        let mut registry = self.lock();
        let Some(waiter) = registry.waiting.get(id) else {
            let status = registry.resolved_status(id);
            return Err(match status {
                Some(status) => Conflict::AlreadyResolved {
                    id: id.to_owned(),
                    status,
                },
                None => Conflict::Unknown { id: id.to_owned() },
            });
        };
        match (&waiter.pending.request, &response) {
            (Request::Permission(request), Response::Permission(answer)) => {
                request.takes(answer)?;
            }
            (Request::Continuation(_), Response::Continuation(_)) => {}
            (request, _) => {
                return Err(Conflict::WrongKind {
                    id: id.to_owned(),
                    expected: request.kind(),
                });
            }
        }
        let Some(waiter) = registry.waiting.remove(id) else {
            return Err(Conflict::Unknown { id: id.to_owned() });
        };
        registry.remember(id.to_owned(), "answered");
        Ok(Claim {
            id: id.to_owned(),
            waiter: Some(waiter),
            response,
            events: self.events.clone(),
        })
    }

    /// Answers a waiting request from JSON: a permission answer (see [`Answer::from_json`]) or
    /// a continuation answer (`{"approved": true, "extension": 3}`).
    pub fn respond_json(&self, id: &str, answer: &Value, by: &str) -> Result<(), RespondError> {
        let kind = {
            let registry = self.lock();
            registry
                .waiting
                .get(id)
                .map(|w| matches!(w.pending.request, Request::Permission(_)))
        };
        let response = match kind {
            Some(false) => Response::Continuation(
                serde_json::from_value(answer.clone())
                    .map_err(|e| RespondError::Invalid(e.to_string()))?,
            ),
            // Unknown ids fall through to `respond`, which names the conflict.
            Some(true) | None => {
                Response::Permission(Answer::from_json(answer).map_err(RespondError::Invalid)?)
            }
        };
        self.respond(id, response, by)
            .map_err(RespondError::Conflict)
    }

    fn lock(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// An answer taken for a request, not yet delivered (see [`ApprovalBroker::claim`]). Dropped
/// without being completed, it fails the request, which denies.
pub struct Claim {
    id: String,
    waiter: Option<Waiter>,
    response: Response,
    events: EventBus,
}

impl fmt::Debug for Claim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Claim")
            .field("id", &self.id)
            .field("response", &self.response)
            .finish_non_exhaustive()
    }
}

impl Claim {
    /// The request answered.
    pub fn request(&self) -> Option<&Request> {
        self.waiter.as_ref().map(|w| &w.pending.request)
    }

    /// Where the request comes from.
    pub fn scope(&self) -> Option<&Scope> {
        self.waiter.as_ref().map(|w| &w.pending.scope)
    }

    /// The answer taken.
    pub fn response(&self) -> &Response {
        &self.response
    }

    /// Delivers the answer to the waiter.
    pub fn complete(mut self, by: &str) {
        let resolution = Resolution::Answered {
            response: self.response.clone(),
            by: by.to_owned(),
        };
        self.deliver(resolution);
    }

    /// Delivers another answer than the one claimed: the one recorded first elsewhere (another
    /// daemon sharing the store answered the same request first).
    pub fn complete_with(mut self, response: Response, by: &str) {
        self.response = response;
        self.complete(by);
    }

    /// Ends the request without the answer (it could not be recorded): the waiter is denied.
    pub fn fail(mut self, message: impl Into<String>) {
        let resolution = Resolution::Failed {
            message: message.into(),
        };
        self.deliver(resolution);
    }

    fn deliver(&mut self, resolution: Resolution) {
        if let Some(waiter) = self.waiter.take() {
            self.events.publish(
                waiter.pending.scope.clone(),
                EventKind::RequestResolved {
                    request_id: self.id.clone(),
                    resolution: resolution.clone(),
                },
            );
            let _ = waiter.sender.send(resolution);
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        self.deliver(Resolution::Failed {
            message: "the answer was taken but never delivered".into(),
        });
    }
}

/// A request registered with the broker (see [`ApprovalBroker::open`]).
pub struct Ticket {
    broker: ApprovalBroker,
    request: Request,
    scope: Scope,
    receiver: Option<oneshot::Receiver<Resolution>>,
}

impl fmt::Debug for Ticket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ticket")
            .field("id", &self.request.id())
            .finish_non_exhaustive()
    }
}

impl Ticket {
    /// The request's id.
    pub fn id(&self) -> &str {
        self.request.id()
    }

    /// Waits for the first valid answer, the timeout or the cancellation. With an `approver`,
    /// the approver is asked too; its answer races answers given through
    /// [`ApprovalBroker::respond`].
    pub async fn wait(
        mut self,
        approver: Option<Arc<dyn Approver>>,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Resolution {
        let dropped = || Resolution::Failed {
            message: "the request was dropped".into(),
        };
        let Some(mut receiver) = self.receiver.take() else {
            return dropped();
        };
        let broker = self.broker.clone();
        let (id, scope) = (self.request.id().to_owned(), self.scope.clone());
        let request = self.request.clone();
        let handler = async {
            if let Some(approver) = approver {
                let answer = match request {
                    Request::Permission(r) => approver.approve(r).await.map(Response::Permission),
                    Request::Continuation(r) => approver
                        .approve_continuation(r)
                        .await
                        .map(Response::Continuation),
                };
                let resolution = match answer {
                    Ok(response) => match broker.respond(&id, response, "handler") {
                        Ok(()) | Err(Conflict::AlreadyResolved { .. }) => None,
                        Err(conflict) => Some(Resolution::Failed {
                            message: format!(
                                "the approval handler's answer was refused: {conflict}"
                            ),
                        }),
                    },
                    Err(e) => Some(Resolution::Failed {
                        message: format!("the approval handler failed: {e}"),
                    }),
                };
                if let Some(resolution) = resolution {
                    broker.finish(&id, &scope, resolution);
                }
            }
            std::future::pending::<()>().await;
        };
        let ended = tokio::select! {
            resolution = &mut receiver => return resolution.unwrap_or_else(|_| dropped()),
            () = cancel.cancelled() => Resolution::Cancelled,
            () = tokio::time::sleep(timeout) => Resolution::TimedOut,
            () = handler => Resolution::Failed { message: "unreachable".into() },
        };
        self.broker.finish(&id, &scope, ended);
        receiver.await.unwrap_or_else(|_| dropped())
    }
}

impl Ticket {
    /// Times the request out if it is still waiting, for holders that keep tickets without
    /// waiting on each (a daemon with one timer for all its requests). Returns how the request
    /// ended — by this timeout or earlier — or `None` while a claimed answer is being recorded
    /// (its [`Claim`] delivers it).
    pub fn expire(&mut self) -> Option<Resolution> {
        self.end(Resolution::TimedOut)
    }

    /// Cancels the request if it is still waiting (its requester stopped waiting), as
    /// [`Ticket::expire`] times it out: returns how it ended — by this cancellation or earlier —
    /// or `None` while a claimed answer is being recorded.
    pub fn cancel(&mut self) -> Option<Resolution> {
        self.end(Resolution::Cancelled)
    }

    fn end(&mut self, how: Resolution) -> Option<Resolution> {
        self.broker.finish(self.request.id(), &self.scope, how);
        self.receiver.as_mut()?.try_recv().ok()
    }
}

impl Drop for Ticket {
    /// However a wait ends — even dropped mid-way (a timed-out middleware, a cancelled child
    /// run) — the request does not outlive it.
    fn drop(&mut self) {
        self.broker
            .finish(self.request.id(), &self.scope, Resolution::Cancelled);
    }
}

/// Why [`ApprovalBroker::respond_json`] refused an answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RespondError {
    /// The answer could not be read.
    Invalid(String),
    /// The answer was read but changed nothing.
    Conflict(Conflict),
}

impl fmt::Display for RespondError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RespondError::Invalid(e) => write!(f, "invalid answer: {e}"),
            RespondError::Conflict(c) => c.fmt(f),
        }
    }
}

impl std::error::Error for RespondError {}
