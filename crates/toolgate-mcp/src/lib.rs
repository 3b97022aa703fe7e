//! toolgate on the MCP wire: `toolgate mcp -- SERVER ARGS…` stands between an MCP client and
//! one server over stdio, and judges every `tools/call` with the policy before the server sees
//! it.
//!
//! Frames are relayed as the peers wrote them, byte for byte: initialization and capability
//! negotiation, notifications, progress, pagination, `_meta`, server-to-client requests and
//! methods toolgate does not know all pass unchanged. rmcp's typed peers would not do that
//! (they answer `initialize` themselves, renumber ids, and drop fields their types do not
//! know), so toolgate reads rmcp's protocol types only where it judges: the parameters of a
//! `tools/call`, and the result it answers a refused call with. Two frames are changed:
//!
//! - a `tools/call` the policy refuses never reaches the server; the client gets a tool result
//!   with `isError: true` whose text is the reason and the rule (what clients show the model);
//! - a `tools/list` result leaves out the tools the policy refuses whatever their arguments
//!   ([`Policy::denies_tool`](toolgate_policy::Policy::denies_tool)), so the model never sees them.
//!
//! A call the policy would ask a person about is asked through the client when it offers MCP
//! elicitation (see the `ask` module): the call is held, the person's answer decides, and an
//! "always" answer is remembered for the session. A client that offers no way to ask gets a
//! refusal whose reason says so. Frames that are
//! not JSON-RPC objects (text that is not JSON, batches, which MCP has not had since
//! 2025-06-18) are answered with a JSON-RPC error and never relayed: nothing reaches the
//! server that was not judged.

mod ask;
mod daemon;
pub mod http;
mod hub;
mod pins;
mod relay;
mod remote;
mod stateless;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::Instant;

use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock};
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate_policy::{Call, Decision, SharedPolicy};
use toolgate_runtime::grants::{Effect, GrantContext};

pub use daemon::{Daemon, Submitted, Verdict, stated as stated_reason};
pub use http::{Front, serve as serve_http};
pub use hub::{Hub, Routed};
pub use pins::Pins;
pub use relay::{RelayError, ServerCommand, Switch, relay};
pub use remote::Remote;

/// What the gateway knows of the policy and the server it guards.
#[derive(Clone)]
pub struct Options {
    /// The policy every call is judged by (loaded again while the gate runs, when its files
    /// change).
    pub policy: SharedPolicy,
    /// The server's name: a call's `context.server`, which rules with `server = "…"` match.
    pub server: String,
    /// The workspace root (a call's `context.workspace`).
    pub workspace: Option<String>,
    /// Whether the daemon decides every call (`--daemon`) instead of the policy here.
    pub daemon: bool,
    /// The session the gateway's calls belong to (a call's `context.session`): the daemon
    /// offers "always" answers only for calls that name one, and its grants of "this session"
    /// last as long as the gateway.
    pub session: Option<String>,
    /// The server's pinned tools ([`Pins`]): a tool whose definition changed since is not
    /// offered until a person approves the change. `None`: no pinning.
    pub pins: Option<Pins>,
    /// Whether the server is trusted: its tools' annotations (`readOnlyHint`, …) count as
    /// true. Untrusted, they can only make a decision stricter.
    pub trusted: bool,
    /// Whether the client's roots name the workspace (no workspace was given, and the policy
    /// names no roots): the first root the client lists becomes the workspace.
    pub roots_workspace: bool,
}

impl Options {
    /// The options for a gate in front of server `server` under `policy`, in `workspace`:
    /// the policy here decides, no session, no pins, the server untrusted, the workspace as
    /// given (the client's roots do not name it).
    pub fn new(
        policy: impl Into<SharedPolicy>,
        server: &str,
        workspace: Option<String>,
    ) -> Options {
        Options {
            policy: policy.into(),
            server: server.to_owned(),
            workspace,
            daemon: false,
            session: None,
            pins: None,
            trusted: false,
            roots_workspace: false,
        }
    }
}

/// What routing a frame needs of it, read without building it: its method, its id, and
/// whether it is an answer (it holds a `result` or an `error`, `null` ones too).
#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct Head {
    #[serde(default)]
    pub(crate) method: Option<String>,
    #[serde(default)]
    pub(crate) id: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    result: bool,
    #[serde(default, deserialize_with = "present")]
    error: bool,
}

impl Head {
    /// The head of frame `text` (an empty one when it is no JSON object).
    pub(crate) fn of(text: &str) -> Head {
        serde_json::from_str(text).unwrap_or_default()
    }

    /// Whether the frame answers a request: an id, a result or an error, no method.
    pub(crate) fn is_answer(&self) -> bool {
        self.method.is_none() && self.id.is_some() && (self.result || self.error)
    }
}

/// `true` for a key that is there, whatever its value.
fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(deserializer).map(|_| true)
}

/// Where a frame goes after the gate.
#[derive(Clone, Debug, PartialEq)]
pub enum Out {
    /// To the server, as this text (one line, no newline).
    ToServer(String),
    /// To the client, as this text (one line, no newline).
    ToClient(String),
    /// To the daemon, to decide ([`Options::daemon`]): what it says goes back to the gate
    /// through [`Gate::pending`] and [`Gate::decided`] with this key.
    ToDaemon {
        /// The gate's key for the call.
        key: u64,
        /// The call, in the gateway's context.
        call: Box<Call>,
    },
    /// Withdraw the daemon's pending request with this id: nobody waits for its answer.
    Withdraw(String),
    /// Tell the daemon the result of this call (one it allowed) came back to the client, into
    /// the call's session: a result from a server the policy does not trust taints it.
    Report(Box<Call>),
}

/// The gate between one client and one server: what each frame becomes. It remembers which
/// requests of the client's it must see the answer of (`tools/list`), the client's name (the
/// call's `context.agent`) and the protocol version the server agreed to.
pub struct Gate {
    options: Options,
    /// The ids (as JSON text) of the client's `tools/list` requests not yet answered.
    listing: HashSet<String>,
    /// The calls the daemon allowed whose results are awaited, by id (as JSON text): each
    /// result is reported to the daemon (its session's taint).
    reporting: HashMap<String, Call>,
    /// The id of the client's `initialize`, until the server answers it.
    initializing: Option<String>,
    /// The client's name from `initialize` (`clientInfo.name`).
    client: Option<String>,
    /// The protocol version the server agreed to.
    protocol: Option<String>,
    /// Whether the client declared it can ask its person (`capabilities.elicitation`).
    can_ask: bool,
    /// Calls held while their question is out, by the question's id (as JSON text).
    held: HashMap<String, ask::Held>,
    /// The number of the next question (its id is `toolgate-ask-N`).
    next_question: u64,
    /// The answers "always" of this session.
    grants: ask::SessionGrants,
    /// Whether the client can send its person to a page (`capabilities.elicitation.url`).
    can_open: bool,
    /// Calls the daemon is deciding, by key.
    deciding: HashMap<u64, daemon::Deciding>,
    /// The key of the next call sent to the daemon.
    next_key: u64,
    /// Questions sending a person to the page, not yet answered by the client (their ids as
    /// JSON text), with the key of the call while it is still being decided. Their answers
    /// are toolgate's and go no further.
    pages: HashMap<String, Option<u64>>,
    /// The server's pinned tools.
    pins: Option<Pins>,
    /// Tools whose definition changed since they were pinned, by name: not offered, their
    /// calls refused, until a person approves the change.
    withheld: HashMap<String, Withheld>,
    /// Questions about a changed tool not yet answered (their ids as JSON text), with the
    /// tool's name.
    pin_questions: HashMap<String, String>,
    /// Seals the questions put on the stateless protocol (`None`: no randomness for a key, so
    /// no such questions).
    sealer: Option<stateless::Sealer>,
    /// Each listed tool's annotations, by name (a call carries its tool's).
    annotations: HashMap<String, serde_json::Map<String, Value>>,
    /// Whether the client declared `roots`.
    client_roots: bool,
    /// toolgate's `roots/list` requests not yet answered (their ids as JSON text).
    roots_asked: HashSet<String>,
}

/// How a call the policy asks about can be put to a person.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Asking {
    /// An `elicitation/create` request to the client (it declared elicitation).
    Elicit,
    /// An `InputRequiredResult` the client answers by retrying (the stateless protocol).
    InputRequired,
    /// No way.
    Not,
}

/// A tool withheld because its definition changed since it was pinned.
struct Withheld {
    /// Its definition now.
    tool: Value,
    /// The new definition's hash.
    sha256: String,
    /// What changed.
    diff: String,
    /// Whether a person was asked (or declined): not asked again this session.
    asked: bool,
}

/// The most `tools/list` requests whose answers the gate waits for at once; past it, a new one
/// is refused (never relayed unfiltered).
const MAX_WAITING: usize = 10_000;

/// JSON-RPC's error codes.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;
/// The error a refused request that has no tool result is answered with (JSON-RPC's range for
/// a server's own errors).
const REFUSED: i64 = -32001;

impl Gate {
    /// A gate with nothing seen yet.
    pub fn new(mut options: Options) -> Gate {
        let pins = options.pins.take();
        Gate {
            options,
            listing: HashSet::new(),
            reporting: HashMap::new(),
            initializing: None,
            client: None,
            protocol: None,
            can_ask: false,
            held: HashMap::new(),
            next_question: 0,
            grants: ask::SessionGrants::default(),
            can_open: false,
            deciding: HashMap::new(),
            next_key: 0,
            pages: HashMap::new(),
            pins,
            withheld: HashMap::new(),
            pin_questions: HashMap::new(),
            sealer: stateless::Sealer::new(),
            annotations: HashMap::new(),
            client_roots: false,
            roots_asked: HashSet::new(),
        }
    }

    /// What a frame from the client becomes.
    pub fn from_client(&mut self, line: &str) -> Vec<Out> {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            return Vec::new();
        }
        // A carriage return inside a line is whitespace to JSON, but many servers' readers
        // (Python's text streams, Node's readline) end a line there: what toolgate judged as
        // one message would reach them as two. Nothing judged as one is relayed as two.
        if line.contains('\r') {
            return vec![error(
                &Value::Null,
                INVALID_REQUEST,
                "toolgate relays no message with a carriage return inside it (servers would read \
                 it as two lines): send each message on one line",
            )];
        }
        let message = match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(message)) => message,
            Ok(Value::Array(_)) => {
                return vec![error(
                    &Value::Null,
                    INVALID_REQUEST,
                    "toolgate relays no JSON-RPC batches (MCP has none since 2025-06-18): send \
                     each message on its own",
                )];
            }
            Ok(_) => {
                return vec![error(
                    &Value::Null,
                    INVALID_REQUEST,
                    "a JSON-RPC message is an object",
                )];
            }
            Err(e) => {
                return vec![error(
                    &Value::Null,
                    PARSE_ERROR,
                    &format!("toolgate could not read this message as JSON: {e}"),
                )];
            }
        };
        let method = message.get("method").and_then(Value::as_str);
        let id = message.get("id").filter(|id| !id.is_null());
        // The person's answer to a question of toolgate's: the held call is decided, and the
        // answer goes no further.
        if method.is_none()
            && let Some(held) = id.and_then(|id| self.held.remove(&id.to_string()))
        {
            return self.resolve(held, &message);
        }
        if method.is_none() && id.is_some_and(|id| self.roots_asked.remove(&id.to_string())) {
            self.roots_answered(&message);
            return Vec::new();
        }
        if method.is_none()
            && let Some(tool) = id.and_then(|id| self.pin_questions.remove(&id.to_string()))
        {
            return self.change_answered(&tool, &message);
        }
        if method.is_none()
            && let Some(key) = id.and_then(|id| self.pages.remove(&id.to_string()))
        {
            return self.page_answered(key, &message);
        }
        // The client cancelled a call held for its question: the question is withdrawn, and
        // the server, which never saw the call, hears nothing.
        if method == Some("notifications/cancelled")
            && let Some(call) = message.get("params").and_then(|p| p.get("requestId"))
            && let Some(question) = self
                .held
                .iter()
                .find(|(_, held)| &held.call_id == call)
                .map(|(question, _)| question.clone())
        {
            self.held.remove(&question);
            return vec![withdrawal(&question, "the call was cancelled")];
        }
        // The client cancelled a call the daemon is deciding: its request is withdrawn from
        // the page (or, when the daemon has not named it yet, as soon as it does).
        if method == Some("notifications/cancelled")
            && let Some(call) = message.get("params").and_then(|p| p.get("requestId"))
            && let Some(key) = self
                .deciding
                .iter()
                .find(|(_, deciding)| &deciding.call_id == call)
                .map(|(key, _)| *key)
        {
            return self
                .abandon(key, "the call was cancelled")
                .map(|(_, outs)| outs)
                .unwrap_or_default();
        }
        match (method, id) {
            (Some("tools/call"), Some(id)) => self.judge(id, message.get("params"), line),
            // A call without an id is no request: nothing answers it, and nothing runs.
            (Some("tools/call"), None) => Vec::new(),
            (Some("resources/read"), Some(id)) => self.judge_resource(id, &message, line),
            (Some("tools/list"), Some(id)) => {
                if self.listing.len() >= MAX_WAITING {
                    return vec![error(
                        id,
                        INVALID_REQUEST,
                        "too many tools/list requests are waiting for the server",
                    )];
                }
                self.listing.insert(id.to_string());
                vec![Out::ToServer(line.to_owned())]
            }
            (Some("initialize"), Some(id)) => {
                self.initializing = Some(id.to_string());
                let elicitation = message
                    .get("params")
                    .and_then(|p| p.get("capabilities"))
                    .and_then(|c| c.get("elicitation"));
                self.can_ask = elicitation.is_some_and(Value::is_object);
                self.can_open = elicitation
                    .and_then(|e| e.get("url"))
                    .is_some_and(Value::is_object);
                self.client = message
                    .get("params")
                    .and_then(|p| p.get("clientInfo"))
                    .and_then(|c| c.get("name"))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                self.client_roots = message
                    .get("params")
                    .and_then(|p| p.get("capabilities"))
                    .and_then(|c| c.get("roots"))
                    .is_some_and(Value::is_object);
                vec![Out::ToServer(line.to_owned())]
            }
            // Once the client is ready, and whenever its roots change: toolgate asks for them
            // too, when they name the workspace.
            (Some("notifications/initialized" | "notifications/roots/list_changed"), None) => {
                let mut outs = vec![Out::ToServer(line.to_owned())];
                if self.options.roots_workspace
                    && self.client_roots
                    && self.roots_asked.len() < MAX_WAITING
                {
                    let id = format!("toolgate-roots-{}", self.next_question);
                    self.next_question += 1;
                    self.roots_asked.insert(json!(id).to_string());
                    outs.push(Out::ToClient(
                        json!({"jsonrpc": "2.0", "id": id, "method": "roots/list"}).to_string(),
                    ));
                }
                outs
            }
            _ => vec![Out::ToServer(line.to_owned())],
        }
    }

    /// What a frame from the server becomes.
    pub fn from_server(&mut self, line: &str) -> Vec<Out> {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            return Vec::new();
        }
        // Nothing of the server's is changed now (no listing or initialization is awaited): a
        // well-formed object is relayed as written, checked without building it.
        if self.listing.is_empty() && self.initializing.is_none() && self.reporting.is_empty() {
            let object = line.trim_start().starts_with('{')
                && serde_json::from_str::<serde::de::IgnoredAny>(line).is_ok();
            return if object {
                vec![Out::ToClient(line.to_owned())]
            } else {
                Vec::new()
            };
        }
        let Ok(Value::Object(mut message)) = serde_json::from_str::<Value>(line) else {
            // Not a message the client could read either; said on stderr by the relay.
            return Vec::new();
        };
        let is_answer = message.get("method").is_none();
        let Some(id) = message
            .get("id")
            .filter(|_| is_answer)
            .map(Value::to_string)
        else {
            return vec![Out::ToClient(line.to_owned())];
        };
        if self.initializing.as_deref() == Some(id.as_str()) {
            self.initializing = None;
            self.protocol = message
                .get("result")
                .and_then(|r| r.get("protocolVersion"))
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
        if let Some(call) = self.reporting.remove(&id) {
            // A result (not an error) came into the client's session.
            let reported = message.contains_key("result");
            let mut outs = vec![Out::ToClient(line.to_owned())];
            if reported {
                outs.push(Out::Report(Box::new(call)));
            }
            return outs;
        }
        if !self.listing.remove(&id) {
            return vec![Out::ToClient(line.to_owned())];
        }
        let Some(Value::Array(tools)) = message.get_mut("result").and_then(|r| r.get_mut("tools"))
        else {
            return vec![Out::ToClient(line.to_owned())];
        };
        // Each tool's hints, for its calls (a tool left out below may still be called).
        for tool in tools.iter() {
            if let Some(name) = tool.get("name").and_then(Value::as_str) {
                let annotations = tool
                    .get("annotations")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                if self.annotations.len() < MAX_WAITING || self.annotations.contains_key(name) {
                    self.annotations.insert(name.to_owned(), annotations);
                }
            }
        }
        let before = tools.len();
        tools.retain(|tool| {
            let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
            self.options
                .policy
                .get()
                .denies_tool(name, &self.context())
                .is_none()
        });
        let mut changed = tools.len() != before;
        let mut questions = Vec::new();
        if let Some(pins) = &mut self.pins {
            let mut pinned = false;
            let mut offered = Vec::with_capacity(tools.len());
            for tool in tools.drain(..) {
                let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
                match pins.check(&tool) {
                    pins::Pin::Same => {
                        self.withheld.remove(name);
                        offered.push(tool);
                    }
                    pins::Pin::New => {
                        pinned = true;
                        offered.push(tool);
                    }
                    pins::Pin::Changed { diff, sha256 } => {
                        changed = true;
                        let name = name.to_owned();
                        let asked = self
                            .withheld
                            .get(&name)
                            .is_some_and(|w| w.asked && w.sha256 == sha256);
                        self.withheld.insert(
                            name.clone(),
                            Withheld {
                                tool,
                                sha256,
                                diff,
                                asked,
                            },
                        );
                        if !asked && self.can_ask {
                            questions.push(name);
                        }
                    }
                }
            }
            *tools = offered;
            if pinned && let Err(e) = pins.save() {
                eprintln!("toolgate: the new tools are pinned for this session only: {e}");
            }
        }
        let mut outs = vec![Out::ToClient(if changed {
            Value::Object(message).to_string()
        } else {
            line.to_owned()
        })];
        for name in questions {
            outs.extend(self.ask_about_change(&name));
        }
        outs
    }

    /// The client's roots: the first `file://` root is the workspace from now on. An error or
    /// no root leaves the workspace as it was.
    fn roots_answered(&mut self, message: &serde_json::Map<String, Value>) {
        let first = message
            .get("result")
            .and_then(|r| r.get("roots"))
            .and_then(Value::as_array)
            .and_then(|roots| {
                roots.iter().find_map(|root| {
                    let uri = root.get("uri").and_then(Value::as_str)?;
                    let path = url::Url::parse(uri).ok()?.to_file_path().ok()?;
                    path.to_str().map(str::to_owned)
                })
            });
        if let Some(root) = first {
            self.options.workspace = Some(root);
        }
    }

    /// Asks the client's person whether to offer tool `name`, changed since it was pinned.
    fn ask_about_change(&mut self, name: &str) -> Vec<Out> {
        let (Some(pins), Some(withheld)) = (&self.pins, self.withheld.get_mut(name)) else {
            return Vec::new();
        };
        if self.pin_questions.len() >= MAX_WAITING {
            return Vec::new();
        }
        withheld.asked = true;
        let id = format!("toolgate-pin-{}", self.next_question);
        self.next_question += 1;
        let question = pins::question(&id, &self.options.server, name, &withheld.diff, pins.path());
        self.pin_questions
            .insert(json!(id).to_string(), name.to_owned());
        vec![Out::ToClient(question.to_string())]
    }

    /// The person's answer about a changed tool: approved, the new definition is pinned and
    /// the client told to list the tools again; otherwise it stays withheld this session.
    fn change_answered(
        &mut self,
        name: &str,
        message: &serde_json::Map<String, Value>,
    ) -> Vec<Out> {
        let approved = message
            .get("result")
            .filter(|r| r.get("action").and_then(Value::as_str) == Some("accept"))
            .and_then(|r| r.get("content"))
            .and_then(|c| c.get("decision"))
            .and_then(Value::as_str)
            == Some("offer");
        if !approved {
            return Vec::new();
        }
        let (Some(pins), Some(withheld)) = (&mut self.pins, self.withheld.remove(name)) else {
            return Vec::new();
        };
        pins.accept(&withheld.tool);
        if let Err(e) = pins.save() {
            eprintln!("toolgate: the approved change is pinned for this session only: {e}");
        }
        vec![Out::ToClient(
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}).to_string(),
        )]
    }

    /// The context the gateway judges calls in now: the server's name, the workspace, and the
    /// client's name once it said it.
    pub fn context(&self) -> toolgate_policy::Context {
        toolgate_policy::Context {
            server: Some(self.options.server.clone()),
            workspace: self.options.workspace.clone(),
            agent: self.client.clone(),
            session: self.options.session.clone(),
            ..Default::default()
        }
    }

    /// A `tools/call` request: relayed when the policy allows it, else answered here.
    fn judge(&mut self, id: &Value, params: Option<&Value>, line: &str) -> Vec<Out> {
        let raw = params;
        let params = match params
            .cloned()
            .map(serde_json::from_value::<CallToolRequestParams>)
        {
            Some(Ok(params)) => params,
            Some(Err(e)) => {
                return vec![error(id, INVALID_PARAMS, &format!("tools/call: {e}"))];
            }
            None => return vec![error(id, INVALID_PARAMS, "tools/call has no params")],
        };
        let asking = self.asking(raw);
        if let Some(withheld) = self.withheld.get(params.name.as_ref()) {
            let path = self
                .pins
                .as_ref()
                .map(|p| p.path().display().to_string())
                .unwrap_or_default();
            let reason = format!(
                "toolgate: `{}` changed since it was pinned ({path}) and is withheld until a \
                 person approves the change (asked through the client's elicitation; or delete \
                 its entry from that file to pin it anew). What changed:\n{}",
                params.name,
                withheld.diff.trim_end()
            );
            return vec![self.refusal(id, &reason)];
        }
        let args = Value::Object(params.arguments.clone().unwrap_or_default());
        let mut call = Call::new(params.name.as_ref()).with_args(args.clone());
        call.context = self.context();
        // The tool's hints as the server listed them: loosening only for a trusted server.
        if let Some(annotations) = self.annotations.get(params.name.as_ref()) {
            call.annotations = annotations.clone();
        }
        call.context.trusted_server = self.options.trusted;
        if self.options.daemon {
            return self.hand_to_daemon(id, call, line, false);
        }
        // The retry of a call asked about on the stateless protocol, with the person's answer.
        let sealed = raw
            .and_then(|p| p.get("requestState"))
            .and_then(Value::as_str)
            .filter(|state| stateless::Sealer::is_ours(state));
        let evaluation = self.options.policy.get().evaluate(&call);
        let reason = stated(&evaluation);
        if let Some(sealed) = sealed {
            let answer = raw
                .and_then(|p| p.get("inputResponses"))
                .and_then(|r| r.get(stateless::KEY));
            return self.resume(
                id, line, &call.tool, sealed, answer, &args, evaluation, reason,
            );
        }
        match evaluation.decision {
            // Relayed as the client wrote it.
            Decision::Allow => vec![Out::ToServer(line.to_owned())],
            Decision::Deny => vec![self.refusal(id, &reason)],
            Decision::Ask => self.ask(id, line, &call.tool, &args, evaluation, reason, asking),
        }
    }

    /// How a request's call can be asked about: on the stateless protocol (the request's
    /// `_meta` names its version, its client's capabilities and name), by an input request
    /// if the client can elicit; otherwise by elicitation if the client declared it.
    fn asking(&mut self, params: Option<&Value>) -> Asking {
        let meta = params.and_then(|p| p.get("_meta"));
        let field = |key: &str| meta.and_then(|m| m.get(key));
        if let Some(version) =
            field("io.modelcontextprotocol/protocolVersion").and_then(Value::as_str)
        {
            // One client per gateway: the version it speaks is the session's.
            if self.protocol.is_none() {
                self.protocol = Some(version.to_owned());
            }
            if self.client.is_none() {
                self.client = field("io.modelcontextprotocol/clientInfo")
                    .and_then(|c| c.get("name"))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
            }
        }
        let stateless = self
            .protocol
            .as_deref()
            .is_some_and(|v| v >= stateless::STATELESS);
        if !stateless {
            return if self.can_ask {
                Asking::Elicit
            } else {
                Asking::Not
            };
        }
        let can_elicit = field("io.modelcontextprotocol/clientCapabilities")
            .and_then(|c| c.get("elicitation"))
            .is_some_and(Value::is_object);
        if can_elicit && self.sealer.is_some() {
            Asking::InputRequired
        } else {
            Asking::Not
        }
    }

    /// A retried call carrying the person's answer to toolgate's input request: judged again
    /// (the policy decides first), and when it still asks, the answer decides — if the state
    /// is the one toolgate sealed for this very call, not lapsed and not used before.
    #[allow(clippy::too_many_arguments)]
    fn resume(
        &mut self,
        id: &Value,
        line: &str,
        tool: &str,
        sealed: &str,
        answer: Option<&Value>,
        args: &Value,
        evaluation: toolgate_policy::Evaluation,
        reason: String,
    ) -> Vec<Out> {
        let opened = match self.sealer.as_mut() {
            Some(sealer) => sealer.open(sealed),
            None => Err("the answer's state is not one toolgate gave"),
        };
        let state = match opened {
            Ok(state) if state.tool == tool && state.args == stateless::arguments_hash(args) => {
                state
            }
            Ok(_) => {
                return vec![self.refusal(
                    id,
                    &format!("{reason} — the answer was given for another call"),
                )];
            }
            Err(why) => return vec![self.refusal(id, &format!("{reason} — {why}"))],
        };
        // The server sees the call as the client first sent it: toolgate's answer and state
        // are toolgate's.
        let relayed = || {
            let mut message: Value = serde_json::from_str(line).unwrap_or(Value::Null);
            if let Some(params) = message.get_mut("params").and_then(Value::as_object_mut) {
                params.remove("inputResponses");
                params.remove("requestState");
            }
            Out::ToServer(message.to_string())
        };
        match evaluation.decision {
            Decision::Allow => return vec![relayed()],
            Decision::Deny => return vec![self.refusal(id, &reason)],
            Decision::Ask => {}
        }
        let Some(details) = evaluation.ask.clone() else {
            return vec![self.refusal(id, &reason)];
        };
        let answer = match answer {
            Some(answer) => {
                let mut message = serde_json::Map::new();
                message.insert("result".into(), answer.clone());
                ask::answer(&message, &state.offered)
            }
            None => Err("the retry carries no answer to toolgate's question"),
        };
        match answer {
            Ok(choice) => {
                if choice.is_always() {
                    let held = ask::Held {
                        call_id: id.clone(),
                        line: line.to_owned(),
                        tool: tool.to_owned(),
                        offered: state.offered.clone(),
                        subjects: evaluation.subjects,
                        deadline: Instant::now(),
                        details,
                        reason: reason.clone(),
                    };
                    let by = self.client.clone().unwrap_or_else(|| "mcp client".into());
                    self.grants
                        .remember(&held, choice, &self.grant_context(), &by);
                }
                if choice.allows() {
                    vec![relayed()]
                } else {
                    vec![self.refusal(id, &format!("{reason} — refused by the person asked"))]
                }
            }
            Err(why) => vec![self.refusal(id, &format!("{reason} — {why}"))],
        }
    }

    /// Where "always" answers apply: this gateway's session, in its workspace.
    fn grant_context(&self) -> GrantContext {
        GrantContext {
            session: "mcp".into(),
            branch: "main".into(),
            turn: 0,
            workspace: self.options.workspace.as_ref().map(PathBuf::from),
        }
    }

    /// A call the policy asks about: decided by an "always" answer of the session, else asked
    /// through the client (a request, or on the stateless protocol an input request), else
    /// refused saying why.
    #[allow(clippy::too_many_arguments)]
    fn ask(
        &mut self,
        id: &Value,
        line: &str,
        tool: &str,
        args: &Value,
        evaluation: toolgate_policy::Evaluation,
        reason: String,
        asking: Asking,
    ) -> Vec<Out> {
        match self
            .grants
            .decide(tool, &evaluation.subjects, &self.grant_context())
        {
            Some(Effect::Allow) => return vec![Out::ToServer(line.to_owned())],
            Some(Effect::Deny) => {
                return vec![self.refusal(
                    id,
                    &format!("{reason} — refused: the person answered \"deny for this session\""),
                )];
            }
            None => {}
        }
        let Some(details) = evaluation.ask.clone().filter(|_| asking != Asking::Not) else {
            return vec![self.refusal(
                id,
                &format!(
                    "{reason} — toolgate asks a person before this call, and this client offers \
                     no way to ask (MCP elicitation): allow the call in the policy, or use a \
                     client that supports elicitation"
                ),
            )];
        };
        if self.held.len() >= MAX_WAITING {
            return vec![self.refusal(id, &format!("{reason} — too many questions are waiting"))];
        }
        let question_id = format!("toolgate-ask-{}", self.next_question);
        self.next_question += 1;
        let held = ask::Held {
            call_id: id.clone(),
            line: line.to_owned(),
            tool: tool.to_owned(),
            offered: ask::offered(&details, &evaluation.subjects),
            subjects: evaluation.subjects,
            deadline: Instant::now() + details.timeout,
            details,
            reason,
        };
        let question = ask::question(&question_id, &self.options.server, &held);
        if asking == Asking::InputRequired {
            let sealed = self.sealer.as_mut().and_then(|sealer| {
                sealer.seal(&held.tool, args, &held.offered, held.details.timeout)
            });
            let Some(sealed) = sealed else {
                return vec![self.refusal(
                    id,
                    &format!("{} — too many questions are waiting", held.reason),
                )];
            };
            let mut request = question;
            if let Some(request) = request.as_object_mut() {
                request.remove("jsonrpc");
                request.remove("id");
            }
            let result = json!({
                "resultType": "input_required",
                "inputRequests": {stateless::KEY: request},
                "requestState": sealed,
            });
            return vec![Out::ToClient(
                json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(),
            )];
        }
        self.held.insert(json!(question_id).to_string(), held);
        vec![Out::ToClient(question.to_string())]
    }

    /// The person's answer to a held call's question.
    fn resolve(&mut self, held: ask::Held, message: &serde_json::Map<String, Value>) -> Vec<Out> {
        match ask::answer(message, &held.offered) {
            Ok(choice) => {
                if choice.is_always() {
                    let by = self.client.clone().unwrap_or_else(|| "mcp client".into());
                    self.grants
                        .remember(&held, choice, &self.grant_context(), &by);
                }
                if choice.allows() {
                    vec![Out::ToServer(held.line)]
                } else {
                    vec![self.refusal(
                        &held.call_id,
                        &format!("{} — refused by the person asked", held.reason),
                    )]
                }
            }
            Err(why) => vec![self.refusal(&held.call_id, &format!("{} — {why}", held.reason))],
        }
    }

    /// The held calls whose question was not answered by `now`: refused, their questions
    /// withdrawn.
    pub fn expire(&mut self, now: Instant) -> Vec<Out> {
        let expired: Vec<String> = self
            .held
            .iter()
            .filter(|(_, held)| held.deadline <= now)
            .map(|(question, _)| question.clone())
            .collect();
        let mut outs = Vec::new();
        for question in expired {
            let Some(held) = self.held.remove(&question) else {
                continue;
            };
            let why = format!(
                "nobody answered within {} s",
                held.details.timeout.as_secs()
            );
            outs.push(withdrawal(&question, &why));
            outs.push(self.refusal(&held.call_id, &format!("{} — {why}", held.reason)));
        }
        outs
    }

    /// A `resources/read` request: a `file://` URI is a read of the file it names, judged as
    /// one (the built-in profile `resources/read`); other URIs name the server's own resources
    /// and are relayed. A refusal is a JSON-RPC error (a resource has no `isError` result).
    fn judge_resource(
        &mut self,
        id: &Value,
        message: &serde_json::Map<String, Value>,
        line: &str,
    ) -> Vec<Out> {
        let uri = message
            .get("params")
            .and_then(|p| p.get("uri"))
            .and_then(Value::as_str);
        let Some(uri) = uri else {
            return vec![error(id, INVALID_PARAMS, "resources/read has no `uri`")];
        };
        // As a URL parser reads it (it trims spaces and control characters, and takes
        // `file:/x` and `FILE:///x` alike): a file URI is judged, whatever its spelling; one
        // that does not parse but says `file:` is refused.
        let parsed = url::Url::parse(uri);
        let says_file = uri
            .trim_start_matches(|c: char| c.is_ascii_whitespace() || c.is_ascii_control())
            .get(..5)
            .is_some_and(|s| s.eq_ignore_ascii_case("file:"));
        let is_file = match &parsed {
            Ok(url) => url.scheme() == "file",
            Err(_) => says_file,
        };
        if !is_file {
            return vec![Out::ToServer(line.to_owned())];
        }
        let path = parsed
            .ok()
            .and_then(|u| u.to_file_path().ok())
            .and_then(|p| p.to_str().map(str::to_owned));
        let Some(path) = path else {
            return vec![error(
                id,
                REFUSED,
                &format!("toolgate: `{uri}` names no file it can judge"),
            )];
        };
        let mut call = Call::new("resources/read").with_args(json!({ "path": path }));
        call.context = self.context();
        if self.options.daemon {
            return self.hand_to_daemon(id, call, line, true);
        }
        let evaluation = self.options.policy.get().evaluate(&call);
        if evaluation.decision == Decision::Allow {
            return vec![Out::ToServer(line.to_owned())];
        }
        vec![error(id, REFUSED, &stated(&evaluation))]
    }

    /// A call for the daemon to decide: held until it does.
    fn hand_to_daemon(&mut self, id: &Value, call: Call, line: &str, resource: bool) -> Vec<Out> {
        if self.deciding.len() >= MAX_WAITING {
            let reason = "toolgate: too many calls wait for the daemon";
            return vec![self.refused(id, resource, reason)];
        }
        let key = self.next_key;
        self.next_key += 1;
        self.deciding.insert(
            key,
            daemon::Deciding {
                call_id: id.clone(),
                line: line.to_owned(),
                resource,
                request: None,
                question: None,
                call: self.options.session.is_some().then(|| call.clone()),
            },
        );
        vec![Out::ToDaemon {
            key,
            call: Box::new(call),
        }]
    }

    /// The daemon holds call `key` for a person on its page as `request`, for `reason`: a
    /// client that can open a page is sent to it (`page`, its address). A call no longer
    /// waited for (its client cancelled it meanwhile) is withdrawn at once.
    pub fn pending(&mut self, key: u64, request: &str, reason: &str, page: &str) -> Vec<Out> {
        let Some(deciding) = self.deciding.get_mut(&key) else {
            return vec![Out::Withdraw(request.to_owned())];
        };
        deciding.request = Some(request.to_owned());
        if !self.can_open || self.pages.len() >= MAX_WAITING {
            return Vec::new();
        }
        let tool = serde_json::from_str::<Value>(&deciding.line)
            .ok()
            .and_then(|m| {
                m.get("params")
                    .and_then(|p| p.get("name").or_else(|| p.get("uri")))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .unwrap_or_default();
        let question_id = format!("toolgate-page-{key}");
        let question = daemon::page_question(
            &question_id,
            &self.options.server,
            &tool,
            request,
            reason,
            page,
        );
        let question_id = json!(question_id).to_string();
        deciding.question = Some(question_id.clone());
        self.pages.insert(question_id, Some(key));
        vec![Out::ToClient(question.to_string())]
    }

    /// What the daemon decided about call `key`: allowed, it is relayed as the client wrote
    /// it; refused or undecided, it is answered with the reason. A person sent to the page
    /// hears that the question is done.
    pub fn decided(&mut self, key: u64, verdict: &Verdict) -> Vec<Out> {
        let Some(deciding) = self.deciding.remove(&key) else {
            return Vec::new();
        };
        let mut outs = Vec::new();
        if let Some(question) = &deciding.question {
            if let Some(page) = self.pages.get_mut(question) {
                *page = None;
            }
            let id: Value = serde_json::from_str(question).unwrap_or(Value::Null);
            let id = id.as_str().unwrap_or_default();
            outs.push(Out::ToClient(daemon::page_done(id).to_string()));
        }
        outs.push(match verdict.decision {
            Some(Decision::Allow) => {
                // Its result is told to the daemon when it comes (bounded: past the most
                // awaited, a result goes untold — the session stays as the daemon has it).
                if let Some(call) = deciding.call
                    && self.reporting.len() < MAX_WAITING
                {
                    self.reporting.insert(deciding.call_id.to_string(), call);
                }
                Out::ToServer(deciding.line)
            }
            Some(Decision::Deny) => {
                self.refused(&deciding.call_id, deciding.resource, &verdict.reason)
            }
            _ => self.refused(
                &deciding.call_id,
                deciding.resource,
                &format!("{} — refused: the daemon did not allow it", verdict.reason),
            ),
        });
        outs
    }

    /// The client's answer to a question that sent its person to the page: declining (or
    /// cancelling) refuses the call and withdraws its request; accepting waits on.
    fn page_answered(
        &mut self,
        key: Option<u64>,
        message: &serde_json::Map<String, Value>,
    ) -> Vec<Out> {
        let Some(key) = key else { return Vec::new() };
        let action = message
            .get("result")
            .and_then(|r| r.get("action"))
            .and_then(Value::as_str);
        if action == Some("accept") {
            return Vec::new();
        }
        let Some(deciding) = self.deciding.get_mut(&key) else {
            return Vec::new();
        };
        // The question is answered: nothing to withdraw or complete on the client's side.
        deciding.question = None;
        let why = if action == Some("decline") {
            "the person declined to open the approval page"
        } else {
            "the question sending the person to the approval page was cancelled"
        };
        let Some((deciding, mut outs)) = self.abandon(key, why) else {
            return Vec::new();
        };
        outs.push(self.refused(
            &deciding.call_id,
            deciding.resource,
            &format!("toolgate: refused: {why}"),
        ));
        outs
    }

    /// Stops deciding call `key` (nobody waits for it): the call, and what withdraws its
    /// request from the page and a question sent about it from the client.
    fn abandon(&mut self, key: u64, why: &str) -> Option<(daemon::Deciding, Vec<Out>)> {
        let mut deciding = self.deciding.remove(&key)?;
        let mut outs = Vec::new();
        if let Some(question) = deciding.question.take() {
            self.pages.remove(&question);
            outs.push(withdrawal(&question, why));
        }
        if let Some(request) = deciding.request.take() {
            outs.push(Out::Withdraw(request));
        }
        Some((deciding, outs))
    }

    /// The server went away (it is being started again): the calls held for a person are
    /// dropped — their questions withdrawn, their daemon requests too — so none reaches the
    /// next server after its client was told it failed; listings and initialization awaited
    /// are forgotten.
    pub fn server_gone(&mut self) -> Vec<Out> {
        let mut outs = Vec::new();
        for (question, _) in std::mem::take(&mut self.held) {
            outs.push(withdrawal(&question, "the server ended"));
        }
        outs.extend(self.abandon_all());
        self.listing.clear();
        self.reporting.clear();
        self.initializing = None;
        outs
    }

    /// The client went away: every request the daemon holds for it is withdrawn.
    pub fn abandon_all(&mut self) -> Vec<Out> {
        let keys: Vec<u64> = self.deciding.keys().copied().collect();
        keys.into_iter()
            .filter_map(|key| self.abandon(key, "the client went away"))
            .flat_map(|(_, outs)| outs)
            .filter(|out| matches!(out, Out::Withdraw(_)))
            .collect()
    }

    /// A refused call's answer: a tool result with `isError`, or for a resource read a
    /// JSON-RPC error.
    fn refused(&self, id: &Value, resource: bool, reason: &str) -> Out {
        if resource {
            error(id, REFUSED, reason)
        } else {
            self.refusal(id, reason)
        }
    }

    /// A refused call's answer: a tool result with `isError` whose text is the reason.
    fn refusal(&self, id: &Value, reason: &str) -> Out {
        let mut result = CallToolResult::error(vec![ContentBlock::text(reason)]);
        // `resultType` exists from the stateless protocol on; older clients never saw it.
        if self.protocol.as_deref().is_none_or(|v| v < "2026-07-28") {
            result.result_type = None;
        }
        Out::ToClient(json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string())
    }
}

/// An evaluation's reason as the client shows it: `toolgate (RULE): REASON`.
fn stated(evaluation: &toolgate_policy::Evaluation) -> String {
    daemon::stated(evaluation.rule_name(), &evaluation.reason)
}

/// The notice that withdraws a question of toolgate's (`question` is its id as JSON text).
fn withdrawal(question: &str, reason: &str) -> Out {
    let id: Value = serde_json::from_str(question).unwrap_or(Value::Null);
    Out::ToClient(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
               "params": {"requestId": id, "reason": reason}})
        .to_string(),
    )
}

/// A JSON-RPC error answer to the client.
fn error(id: &Value, code: i64, message: &str) -> Out {
    Out::ToClient(
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
            .to_string(),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use proptest::prelude::*;
    use std::sync::Arc;
    use toolgate_policy::Policy;

    fn gate(rules: &str) -> Gate {
        gate_with(rules, false)
    }

    fn gate_with(rules: &str, daemon: bool) -> Gate {
        let policy = Policy::from_toml("p.toml", &format!("version = 1\n{rules}")).unwrap();
        Gate::new(Options {
            daemon,
            ..Options::new(Arc::new(policy), "srv", Some("/ws".into()))
        })
    }

    const RULES: &str = "\n[[rule]]\nname = \"ok\"\ndecision = \"allow\"\n\
                         tool = \"ok\"\n\n[[rule]]\nname = \"never\"\ndecision = \"deny\"\n\
                         server = \"srv\"\ntool = \"never\"\n";

    #[test]
    fn an_allowed_call_is_relayed_as_written_and_a_refused_one_answered() {
        let mut gate = gate(RULES);
        let line = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ok","arguments":{"a":1},"task":{"ttl":5},"_meta":{"k":"v"}}}"#;
        assert_eq!(gate.from_client(line), [Out::ToServer(line.to_owned())]);
        let refused = gate.from_client(
            r#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"never"}}"#,
        );
        let [Out::ToClient(text)] = refused.as_slice() else {
            panic!("{refused:?}")
        };
        let answer: Value = serde_json::from_str(text).unwrap();
        assert_eq!(answer["id"], "x");
        assert_eq!(answer["result"]["isError"], true);
        assert!(answer["result"].get("resultType").is_none(), "{answer}");
        assert!(
            answer["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .starts_with("toolgate (never):")
        );
    }

    #[test]
    fn a_message_with_a_carriage_return_inside_is_refused_not_relayed() {
        let mut gate = gate(RULES);
        // JSON reads one ping; a reader that ends lines at `\r` would read a tool call.
        let smuggled = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":\r            {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"never\"}}\r}";
        let outs = gate.from_client(smuggled);
        assert!(
            matches!(outs.as_slice(), [Out::ToClient(text)] if text.contains("carriage return")),
            "{outs:?}"
        );
        // A line ending in `\r\n` is as good as one ending in `\n`.
        let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        assert_eq!(
            gate.from_client(&format!("{ping}\r")),
            [Out::ToServer(ping.to_owned())]
        );
    }

    #[test]
    fn a_tools_list_answer_leaves_out_the_tools_refused_outright() {
        let mut gate = gate(RULES);
        gate.from_client(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
        let answer = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"ok","x-extra":1},{"name":"never"},{"name":"other"}],"nextCursor":"c"}}"#;
        let outs = gate.from_server(answer);
        let [Out::ToClient(text)] = outs.as_slice() else {
            panic!("{outs:?}")
        };
        assert_eq!(
            text,
            r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"ok","x-extra":1},{"name":"other"}],"nextCursor":"c"}}"#
        );
        // Another answer with the same id is not a listing any more: relayed as written.
        assert_eq!(gate.from_server(answer), [Out::ToClient(answer.to_owned())]);
    }

    #[test]
    fn a_file_resource_is_judged_as_a_read_of_its_file() {
        let mut gate =
            gate("\n[[rule]]\nname = \"no-env\"\ndecision = \"deny\"\npath = \"**/.env\"\n");
        let read = |uri: &str| {
            json!({"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": uri}})
                .to_string()
        };
        let allowed = read("file:///ws/src/main.rs");
        assert_eq!(gate.from_client(&allowed), [Out::ToServer(allowed.clone())]);
        let own = read("test://static/resource/1");
        assert_eq!(gate.from_client(&own), [Out::ToServer(own.clone())]);
        for uri in [
            "file:///ws/.env",
            "FILE:///ws/config/.env",
            "file:///ws/%2Eenv",
            "file:/ws/.env",
            " file:///ws/.env",
            "\tfile:/ws/.env",
        ] {
            let outs = gate.from_client(&read(uri));
            let [Out::ToClient(text)] = outs.as_slice() else {
                panic!("{uri}: {outs:?}")
            };
            let answer: Value = serde_json::from_str(text).unwrap();
            assert_eq!(answer["error"]["code"], REFUSED, "{uri}");
            assert!(
                answer["error"]["message"]
                    .as_str()
                    .unwrap()
                    .starts_with("toolgate (no-env):"),
                "{uri}: {answer}"
            );
        }
        // Outside the workspace: refused by the workspace's guard.
        let outs = gate.from_client(&read("file:///etc/passwd"));
        assert!(matches!(outs.as_slice(), [Out::ToClient(_)]), "{outs:?}");
    }

    const ASKING: &str = "\n[[rule]]\nname = \"risky\"\ndecision = \"ask\"\n\
                          reason = \"risky business\"\ntool = \"risky\"\n";

    fn initialize(gate: &mut Gate, elicitation: bool) {
        let capabilities = if elicitation {
            json!({"elicitation": {}})
        } else {
            json!({})
        };
        gate.from_client(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                    "params": {"protocolVersion": "2025-11-25", "capabilities": capabilities,
                               "clientInfo": {"name": "client", "version": "1"}}})
            .to_string(),
        );
        gate.from_server(
            r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}"#,
        );
    }

    fn risky(id: u64) -> String {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "risky", "arguments": {"n": id}}})
        .to_string()
    }

    /// The question a frame list holds, and its id.
    fn question(outs: &[Out]) -> (Value, Value) {
        let [Out::ToClient(text)] = outs else {
            panic!("{outs:?}")
        };
        let question: Value = serde_json::from_str(text).unwrap();
        assert_eq!(question["method"], "elicitation/create", "{question}");
        (question["id"].clone(), question)
    }

    fn answer(id: &Value, action: &str, decision: Option<&str>) -> String {
        let mut result = json!({"action": action});
        if let Some(decision) = decision {
            result["content"] = json!({"decision": decision});
        }
        json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
    }

    fn refused(outs: &[Out]) -> String {
        let refusal = outs
            .iter()
            .find_map(|o| match o {
                Out::ToClient(text) if text.contains("isError") => Some(text.clone()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no refusal in {outs:?}"));
        let refusal: Value = serde_json::from_str(&refusal).unwrap();
        refusal["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    #[test]
    fn an_ask_is_put_to_the_person_through_the_client() {
        let mut gate = gate(ASKING);
        initialize(&mut gate, true);
        // Allow once: the held call is relayed as written; the next one asks again.
        let (id, asked) = question(&gate.from_client(&risky(1)));
        let text = asked["params"]["message"].as_str().unwrap();
        assert!(text.contains("`risky` on the `srv` server"), "{text}");
        assert!(text.contains("risky business"), "{text}");
        assert_eq!(
            asked["params"]["requestedSchema"]["properties"]["decision"]["enum"],
            json!(["allow-once", "allow-always", "reject-once", "reject-always"])
        );
        assert_eq!(
            gate.from_client(&answer(&id, "accept", Some("allow-once"))),
            [Out::ToServer(risky(1))]
        );
        // Declined, cancelled, or an answer not offered: refused.
        for (action, decision, why) in [
            ("decline", None, "the person declined"),
            ("cancel", None, "the question was cancelled"),
            ("accept", Some("maybe"), "none of the ones offered"),
            ("accept", Some("reject-once"), "refused by the person asked"),
        ] {
            let (id, _) = question(&gate.from_client(&risky(2)));
            let reason = refused(&gate.from_client(&answer(&id, action, decision)));
            assert!(reason.contains(why), "{action}: {reason}");
            assert!(
                reason.starts_with("toolgate (risky): risky business"),
                "{reason}"
            );
        }
        // Allow always: this call and the next run without asking.
        let (id, _) = question(&gate.from_client(&risky(3)));
        assert_eq!(
            gate.from_client(&answer(&id, "accept", Some("allow-always"))),
            [Out::ToServer(risky(3))]
        );
        assert_eq!(gate.from_client(&risky(4)), [Out::ToServer(risky(4))]);
    }

    #[test]
    fn deny_always_refuses_the_next_call_without_asking() {
        let mut gate = gate(ASKING);
        initialize(&mut gate, true);
        let (id, _) = question(&gate.from_client(&risky(1)));
        let reason = refused(&gate.from_client(&answer(&id, "accept", Some("reject-always"))));
        assert!(reason.contains("refused by the person asked"), "{reason}");
        let reason = refused(&gate.from_client(&risky(2)));
        assert!(reason.contains("deny for this session"), "{reason}");
    }

    #[test]
    fn an_unanswered_question_is_withdrawn_and_its_call_refused() {
        let mut gate = gate(ASKING);
        initialize(&mut gate, true);
        let (id, _) = question(&gate.from_client(&risky(1)));
        assert!(gate.expire(Instant::now()).is_empty());
        let outs = gate.expire(Instant::now() + std::time::Duration::from_secs(3600));
        assert!(
            refused(&outs).contains("nobody answered within"),
            "{outs:?}"
        );
        assert!(
            outs.iter().any(|o| matches!(o, Out::ToClient(t)
                if t.contains("notifications/cancelled") && t.contains(id.as_str().unwrap()))),
            "{outs:?}"
        );
        // The client cancelling a held call withdraws its question and tells the server nothing.
        let (id, _) = question(&gate.from_client(&risky(2)));
        let outs = gate.from_client(
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}"#,
        );
        let [Out::ToClient(text)] = outs.as_slice() else {
            panic!("{outs:?}")
        };
        assert!(text.contains(id.as_str().unwrap()), "{text}");
    }

    #[test]
    fn a_client_that_cannot_ask_gets_a_refusal_that_says_so() {
        let mut gate = gate(ASKING);
        initialize(&mut gate, false);
        let reason = refused(&gate.from_client(&risky(1)));
        assert!(reason.contains("offers no way to ask"), "{reason}");
    }

    /// A gate whose calls the daemon decides, its client offering URL-mode elicitation.
    fn daemon_gate(open: bool) -> Gate {
        let mut gate = gate_with(RULES, true);
        let elicitation = if open {
            json!({"form": {}, "url": {}})
        } else {
            json!({})
        };
        gate.from_client(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                    "params": {"protocolVersion": "2025-11-25",
                               "capabilities": {"elicitation": elicitation},
                               "clientInfo": {"name": "client", "version": "1"}}})
            .to_string(),
        );
        gate.from_server(r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25"}}"#);
        gate
    }

    fn to_daemon(outs: &[Out]) -> (u64, Call) {
        let [Out::ToDaemon { key, call }] = outs else {
            panic!("{outs:?}")
        };
        (*key, (**call).clone())
    }

    fn verdict(decision: Option<Decision>, reason: &str) -> Verdict {
        Verdict {
            decision,
            reason: reason.into(),
            body: Value::Null,
        }
    }

    /// A call the daemon allowed: its result is reported to the daemon (into the gateway's
    /// session) once it reaches the client; an error is not a result; without a session,
    /// nothing is reported.
    #[test]
    fn with_the_daemon_the_results_of_allowed_calls_are_reported() {
        for session in [Some("mcp-s"), None] {
            let mut gate = daemon_gate(false);
            gate.options.session = session.map(str::to_owned);
            let call_line = |id: u64| {
                format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"ok","arguments":{{}}}}}}"#
                )
            };
            for id in [1, 2] {
                let (key, _) = to_daemon(&gate.from_client(&call_line(id)));
                let outs = gate.decided(key, &verdict(Some(Decision::Allow), "fine"));
                assert_eq!(outs, [Out::ToServer(call_line(id))]);
            }
            let result = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#;
            let outs = gate.from_server(result);
            match session {
                Some(_) => {
                    let [Out::ToClient(text), Out::Report(call)] = outs.as_slice() else {
                        panic!("{outs:?}")
                    };
                    assert_eq!(text, result);
                    assert_eq!(call.tool, "ok");
                }
                None => assert_eq!(outs, [Out::ToClient(result.to_owned())]),
            }
            // Reported once; an error reports nothing.
            assert_eq!(gate.from_server(result), [Out::ToClient(result.to_owned())]);
            let error = r#"{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"no"}}"#;
            assert_eq!(gate.from_server(error), [Out::ToClient(error.to_owned())]);
        }
    }

    #[test]
    fn with_the_daemon_every_call_is_its_to_decide() {
        let mut gate = daemon_gate(false);
        // Even a call the policy here refuses: the daemon decides (and records) it.
        let line = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"never","arguments":{"a":1}}}"#;
        let (key, call) = to_daemon(&gate.from_client(line));
        assert_eq!(call.tool, "never");
        assert_eq!(call.context.server.as_deref(), Some("srv"));
        assert_eq!(call.context.workspace.as_deref(), Some("/ws"));
        assert_eq!(call.context.agent.as_deref(), Some("client"));
        assert_eq!(
            gate.decided(key, &verdict(Some(Decision::Allow), "fine")),
            [Out::ToServer(line.to_owned())]
        );
        // Told twice: the second is nobody's.
        assert!(
            gate.decided(key, &verdict(Some(Decision::Allow), "fine"))
                .is_empty()
        );
        let (key, _) = to_daemon(&gate.from_client(&risky(6)));
        let reason =
            refused(&gate.decided(key, &verdict(Some(Decision::Deny), "toolgate (r): no")));
        assert_eq!(reason, "toolgate (r): no");
        let (key, _) = to_daemon(&gate.from_client(&risky(7)));
        let reason = refused(&gate.decided(key, &verdict(None, "toolgate: gone")));
        assert!(reason.starts_with("toolgate: gone — refused"), "{reason}");
        // A file resource is the daemon's too; refused, it is a JSON-RPC error.
        let (key, call) = to_daemon(&gate.from_client(
            r#"{"jsonrpc":"2.0","id":8,"method":"resources/read","params":{"uri":"file:///ws/.env"}}"#,
        ));
        assert_eq!(call.tool, "resources/read");
        let outs = gate.decided(key, &verdict(Some(Decision::Deny), "toolgate (env): no"));
        let [Out::ToClient(text)] = outs.as_slice() else {
            panic!("{outs:?}")
        };
        assert!(
            text.contains(r#""code":-32001"#) && text.contains("toolgate (env): no"),
            "{text}"
        );
    }

    #[test]
    fn a_call_waiting_on_the_page_sends_the_person_there() {
        let mut gate = daemon_gate(true);
        let (key, _) = to_daemon(&gate.from_client(&risky(1)));
        let outs = gate.pending(
            key,
            "req-1",
            "toolgate (risky): risky business",
            "http://127.0.0.1:9/",
        );
        let (qid, asked) = question(&outs);
        assert_eq!(asked["params"]["mode"], "url");
        assert_eq!(asked["params"]["url"], "http://127.0.0.1:9/");
        assert_eq!(asked["params"]["elicitationId"], qid);
        let message = asked["params"]["message"].as_str().unwrap();
        assert!(
            message.contains("`risky` on the `srv` server") && message.contains("req-1"),
            "{message}"
        );
        // Accepting (the page is open) waits on; the answer reaches neither the server nor
        // anyone else.
        let accept =
            json!({"jsonrpc": "2.0", "id": qid, "result": {"action": "accept"}}).to_string();
        assert!(gate.from_client(&accept).is_empty());
        // The daemon's answer: the call runs, and the client hears the question is done.
        let outs = gate.decided(key, &verdict(Some(Decision::Allow), "ok"));
        assert_eq!(outs.len(), 2, "{outs:?}");
        assert!(
            matches!(&outs[0], Out::ToClient(t) if t.contains("notifications/elicitation/complete")
            && t.contains(qid.as_str().unwrap())),
            "{outs:?}"
        );
        assert_eq!(outs[1], Out::ToServer(risky(1)));

        // Declined: refused, and withdrawn from the page.
        let (key, _) = to_daemon(&gate.from_client(&risky(2)));
        let (qid, _) = question(&gate.pending(key, "req-2", "why", "http://127.0.0.1:9/"));
        let decline =
            json!({"jsonrpc": "2.0", "id": qid, "result": {"action": "decline"}}).to_string();
        let outs = gate.from_client(&decline);
        assert!(outs.contains(&Out::Withdraw("req-2".into())), "{outs:?}");
        assert!(
            refused(&outs).contains("declined to open the approval page"),
            "{outs:?}"
        );
        assert!(
            gate.decided(key, &verdict(Some(Decision::Allow), "late"))
                .is_empty()
        );
        // A late answer to a question already done is toolgate's: it goes nowhere.
        let (key, _) = to_daemon(&gate.from_client(&risky(3)));
        let (qid, _) = question(&gate.pending(key, "req-3", "why", "http://127.0.0.1:9/"));
        gate.decided(key, &verdict(Some(Decision::Deny), "no"));
        let late = json!({"jsonrpc": "2.0", "id": qid, "result": {"action": "cancel"}}).to_string();
        assert!(gate.from_client(&late).is_empty());
    }

    #[test]
    fn a_cancelled_call_is_withdrawn_from_the_page() {
        let mut gate = daemon_gate(false);
        let cancel = |id: u64| {
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": id}})
            .to_string()
        };
        // Waiting on the page: withdrawn; the server never heard of it.
        let (key, _) = to_daemon(&gate.from_client(&risky(1)));
        assert!(gate.pending(key, "req-1", "why", "http://x/").is_empty());
        assert_eq!(
            gate.from_client(&cancel(1)),
            [Out::Withdraw("req-1".into())]
        );
        assert!(
            gate.decided(key, &verdict(Some(Decision::Deny), "withdrawn"))
                .is_empty()
        );
        // Cancelled before the daemon named its request: withdrawn as soon as it does.
        let (key, _) = to_daemon(&gate.from_client(&risky(2)));
        assert!(gate.from_client(&cancel(2)).is_empty());
        assert_eq!(
            gate.pending(key, "req-2", "why", "http://x/"),
            [Out::Withdraw("req-2".into())]
        );
        // The client going away withdraws what still waits.
        let (key, _) = to_daemon(&gate.from_client(&risky(3)));
        gate.pending(key, "req-3", "why", "http://x/");
        to_daemon(&gate.from_client(&risky(4)));
        assert_eq!(gate.abandon_all(), [Out::Withdraw("req-3".into())]);
    }

    #[test]
    fn a_changed_tool_declined_stays_withheld_and_is_not_asked_again() {
        let dir = tempfile::tempdir().unwrap();
        let listing = |description: &str| {
            json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [
                {"name": "ok", "description": description}, {"name": "other"}]}})
            .to_string()
        };
        let list = |gate: &mut Gate, description: &str| {
            gate.from_client(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
            gate.from_server(&listing(description))
        };
        let with_pins = |elicitation: bool| {
            let mut gate = gate(RULES);
            gate.pins = Some(Pins::load(dir.path(), "srv").unwrap());
            initialize(&mut gate, elicitation);
            gate
        };
        let mut first = with_pins(true);
        assert_eq!(list(&mut first, "Adds."), [Out::ToClient(listing("Adds."))]);
        // Changed: withheld, and asked about once.
        let mut gate = with_pins(true);
        let outs = list(&mut gate, "Adds. Also mails ~/.ssh away.");
        let [Out::ToClient(offered), Out::ToClient(asked)] = outs.as_slice() else {
            panic!("{outs:?}")
        };
        assert!(!offered.contains(r#""name":"ok""#), "{offered}");
        let asked: Value = serde_json::from_str(asked).unwrap();
        let decline = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "decline"}});
        assert!(gate.from_client(&decline.to_string()).is_empty());
        let outs = list(&mut gate, "Adds. Also mails ~/.ssh away.");
        assert_eq!(outs.len(), 1, "asked again: {outs:?}");
        let reason = refused(&gate.from_client(
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"ok"}}"#,
        ));
        assert!(
            reason.contains("+ Adds. Also mails ~/.ssh away."),
            "{reason}"
        );
        // Changed back: offered again.
        assert_eq!(list(&mut gate, "Adds."), [Out::ToClient(listing("Adds."))]);
        // A client that cannot ask: withheld, nothing asked.
        let mut mute = with_pins(false);
        let outs = list(&mut mute, "Adds, differently.");
        assert_eq!(outs.len(), 1, "{outs:?}");
    }

    /// A stateless (2026-07-28) call: its `_meta` says the version, what the client can do
    /// and who it is; with `state` and `answer`, the retry carrying the person's answer.
    fn modern(id: u64, n: u64, elicit: bool, retry: Option<(&Value, Value)>) -> String {
        let capabilities = if elicit {
            json!({"elicitation": {}})
        } else {
            json!({})
        };
        let mut params = json!({"name": "risky", "arguments": {"n": n},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": capabilities,
                      "io.modelcontextprotocol/clientInfo": {"name": "py", "version": "1"}}});
        if let Some((state, answer)) = retry {
            params["requestState"] = state.clone();
            params["inputResponses"] = json!({"toolgate": answer});
        }
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string()
    }

    /// The input request a frame list answers a stateless call with, and its state.
    fn input_required(outs: &[Out]) -> (Value, Value) {
        let [Out::ToClient(text)] = outs else {
            panic!("{outs:?}")
        };
        let answer: Value = serde_json::from_str(text).unwrap();
        let result = &answer["result"];
        assert_eq!(result["resultType"], "input_required", "{answer}");
        (
            result["inputRequests"]["toolgate"].clone(),
            result["requestState"].clone(),
        )
    }

    #[test]
    fn on_the_stateless_protocol_an_ask_is_an_input_request_answered_by_a_retry() {
        let mut gate = gate(ASKING);
        let accept =
            |decision: &str| json!({"action": "accept", "content": {"decision": decision}});
        let (request, state) = input_required(&gate.from_client(&modern(1, 1, true, None)));
        assert_eq!(request["method"], "elicitation/create", "{request}");
        assert!(request.get("id").is_none(), "{request}");
        assert!(
            request["params"]["message"]
                .as_str()
                .unwrap()
                .contains("risky business"),
            "{request}"
        );
        // Answered: the call reaches the server as first sent, without toolgate's part.
        let outs = gate.from_client(&modern(2, 1, true, Some((&state, accept("allow-once")))));
        let [Out::ToServer(relayed)] = outs.as_slice() else {
            panic!("{outs:?}")
        };
        let relayed: Value = serde_json::from_str(relayed).unwrap();
        assert!(relayed["params"].get("requestState").is_none(), "{relayed}");
        assert!(
            relayed["params"].get("inputResponses").is_none(),
            "{relayed}"
        );
        assert_eq!(relayed["params"]["arguments"], json!({"n": 1}));
        assert!(relayed["params"]["_meta"].is_object(), "{relayed}");
        // The same answer again, for other arguments, forged, or refused by the person.
        let reason =
            refused(&gate.from_client(&modern(3, 1, true, Some((&state, accept("allow-once"))))));
        assert!(reason.contains("used already"), "{reason}");
        let (_, state) = input_required(&gate.from_client(&modern(4, 1, true, None)));
        let reason =
            refused(&gate.from_client(&modern(5, 2, true, Some((&state, accept("allow-once"))))));
        assert!(reason.contains("another call"), "{reason}");
        let forged = json!("toolgate1.7b7d.00");
        let reason =
            refused(&gate.from_client(&modern(6, 1, true, Some((&forged, accept("allow-once"))))));
        assert!(reason.contains("not one toolgate gave"), "{reason}");
        let (_, state) = input_required(&gate.from_client(&modern(7, 1, true, None)));
        let reason = refused(&gate.from_client(&modern(
            8,
            1,
            true,
            Some((&state, json!({"action": "decline"}))),
        )));
        assert!(reason.contains("the person declined"), "{reason}");
        // "Always": the next call runs without a question.
        let (_, state) = input_required(&gate.from_client(&modern(9, 1, true, None)));
        let outs = gate.from_client(&modern(10, 1, true, Some((&state, accept("allow-always")))));
        assert!(matches!(outs.as_slice(), [Out::ToServer(_)]), "{outs:?}");
        assert!(matches!(
            gate.from_client(&modern(11, 5, true, None)).as_slice(),
            [Out::ToServer(_)]
        ));
        // A client that cannot elicit is told so.
        let mut mute = gate_with(ASKING, false);
        let reason = refused(&mute.from_client(&modern(1, 1, false, None)));
        assert!(reason.contains("offers no way to ask"), "{reason}");
    }

    #[test]
    fn a_tools_annotations_loosen_only_for_a_trusted_server() {
        let rules = "\n[[rule]]\nname = \"destroys\"\ndecision = \"deny\"\n\
                     annotations = { destructiveHint = true }\n\n[[rule]]\n\
                     name = \"hinted-reads\"\ndecision = \"allow\"\n\
                     annotations = { readOnlyHint = true }\n";
        let listing = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[
            {"name":"list_notes","annotations":{"readOnlyHint":true}},
            {"name":"wipe","annotations":{"destructiveHint":true,"readOnlyHint":true}}]}}"#
            .replace('\n', "");
        let call = |name: &str| {
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": name}})
                .to_string()
        };
        for trusted in [false, true] {
            let policy = Policy::from_toml("p.toml", &format!("version = 1\n{rules}")).unwrap();
            let mut gate = Gate::new(Options {
                trusted,
                ..Options::new(Arc::new(policy), "notes", Some("/ws".into()))
            });
            initialize(&mut gate, false);
            gate.from_client(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
            gate.from_server(&listing);
            let outs = gate.from_client(&call("list_notes"));
            assert_eq!(
                matches!(outs.as_slice(), [Out::ToServer(_)]),
                trusted,
                "trusted {trusted}: {outs:?}"
            );
            // A hint that makes a decision stricter counts either way.
            let reason = refused(&gate.from_client(&call("wipe")));
            assert!(reason.starts_with("toolgate (destroys)"), "{reason}");
        }
    }

    #[test]
    fn the_clients_first_root_is_the_workspace_when_none_was_given() {
        let mut gate = gate(RULES);
        gate.options.roots_workspace = true;
        gate.from_client(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                    "params": {"protocolVersion": "2025-11-25",
                               "capabilities": {"roots": {"listChanged": true}},
                               "clientInfo": {"name": "client", "version": "1"}}})
            .to_string(),
        );
        let ready = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        let outs = gate.from_client(ready);
        let [Out::ToServer(relayed), Out::ToClient(asked)] = outs.as_slice() else {
            panic!("{outs:?}")
        };
        assert_eq!(relayed, ready);
        let asked: Value = serde_json::from_str(asked).unwrap();
        assert_eq!(asked["method"], "roots/list");
        // The answer is toolgate's: it goes no further.
        let answer = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": [
            {"uri": "https://example.com/x"}, {"uri": "file:///home/me/app", "name": "app"},
            {"uri": "file:///home/me/lib"}]}});
        assert!(gate.from_client(&answer.to_string()).is_empty());
        assert_eq!(gate.context().workspace.as_deref(), Some("/home/me/app"));
        // Changed roots are asked for again; an error leaves the workspace as it was.
        let outs =
            gate.from_client(r#"{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}"#);
        let [_, Out::ToClient(asked)] = outs.as_slice() else {
            panic!("{outs:?}")
        };
        let asked: Value = serde_json::from_str(asked).unwrap();
        let failed =
            json!({"jsonrpc": "2.0", "id": asked["id"], "error": {"code": -1, "message": "no"}});
        assert!(gate.from_client(&failed.to_string()).is_empty());
        assert_eq!(gate.context().workspace.as_deref(), Some("/home/me/app"));
        // Without the option (a workspace was given), nothing is asked.
        let mut given = gate_with(RULES, false);
        initialize(&mut given, false);
        assert_eq!(given.from_client(ready).len(), 1);
    }

    fn frame() -> impl Strategy<Value = String> {
        let id = prop_oneof![
            Just(json!(1)),
            Just(json!("a")),
            Just(Value::Null),
            any::<i64>().prop_map(|n| json!(n)),
        ];
        let method = prop::sample::select(vec![
            "tools/call",
            "tools/list",
            "initialize",
            "ping",
            "resources/read",
            "notifications/cancelled",
        ]);
        let name = prop::sample::select(vec!["ok", "never", "other", ""]);
        let arguments = prop_oneof![
            Just(json!({})),
            Just(json!([])),
            Just(json!("x")),
            Just(json!({"path": "/etc/passwd"})),
        ];
        let message = (id, method, name, arguments, any::<bool>(), any::<bool>()).prop_map(
            |(id, method, name, arguments, with_id, with_params)| {
                let mut m = json!({"jsonrpc": "2.0", "method": method});
                if with_id {
                    m["id"] = id;
                }
                if with_params {
                    m["params"] = json!({"name": name, "arguments": arguments});
                }
                m.to_string()
            },
        );
        prop_oneof![
            message,
            ".{0,40}",
            Just("[]".to_owned()),
            Just("{}".to_owned())
        ]
    }

    proptest! {
        /// Whatever either side sends: no panic, and nothing reaches the server as a tool call
        /// that the policy did not allow.
        #[test]
        fn nothing_reaches_the_server_unjudged(
            frames in prop::collection::vec((frame(), any::<bool>()), 0..20),
        ) {
            let mut gate = gate(RULES);
            for (frame, from_client) in frames {
                let outs = if from_client {
                    gate.from_client(&frame)
                } else {
                    gate.from_server(&frame)
                };
                for out in outs {
                    let Out::ToServer(text) = out else { continue };
                    let message: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                    if message.get("method").and_then(Value::as_str) == Some("tools/call") {
                        prop_assert_eq!(&message["params"]["name"], "ok", "{}", text);
                    }
                }
            }
        }

        /// With the daemon deciding: a call reaches the server only when the daemon allowed
        /// it, whatever else either side sends meanwhile.
        #[test]
        fn with_the_daemon_only_what_it_allowed_reaches_the_server(
            frames in prop::collection::vec((frame(), any::<bool>()), 0..20),
            verdicts in prop::collection::vec(prop::option::of(any::<bool>()), 20),
        ) {
            let mut gate = gate_with(RULES, true);
            let mut allowed = HashSet::new();
            for (n, (frame, from_client)) in frames.into_iter().enumerate() {
                let mut outs = if from_client {
                    gate.from_client(&frame)
                } else {
                    gate.from_server(&frame)
                };
                let mut i = 0;
                while let Some(out) = outs.get(i).cloned() {
                    i += 1;
                    match out {
                        Out::ToDaemon { key, call } => {
                            let decision = match verdicts[n] {
                                Some(true) => Some(Decision::Allow),
                                Some(false) => Some(Decision::Deny),
                                None => None,
                            };
                            if decision == Some(Decision::Allow) {
                                allowed.insert(call.args.to_string());
                            }
                            outs.extend(gate.pending(key, "r", "why", "http://x/"));
                            outs.extend(gate.decided(key, &verdict(decision, "v")));
                        }
                        Out::ToServer(text) => {
                            let message: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                            if message.get("method").and_then(Value::as_str) == Some("tools/call") {
                                let args = &message["params"]["arguments"];
                                prop_assert!(allowed.contains(&args.to_string()), "{}", text);
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
    }
}
