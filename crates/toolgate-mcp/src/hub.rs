//! Many servers as one (`toolgate mcp --servers FILE`): the hub stands between one client and
//! several servers, each behind a [`Gate`] of its own, and serves them as a single server.
//!
//! - The client's `initialize` goes to every server (with the client's capabilities and name,
//!   so each gate knows how to ask); the hub answers with the union of their capabilities.
//! - Listings (`tools/list`, `prompts/list`, `resources/list`, `resources/templates/list`) go to
//!   every server and come back merged, each gate's filtering and pinning done; tool and prompt
//!   names, and resource names, are prefixed by the server's name and the separator
//!   (`fs__read_file`). Server names may not contain the separator, so no two names collide and
//!   each name leads back to one server. Pagination cursors are the hub's own, holding each
//!   server's.
//! - `tools/call`, `prompts/get` and `completion/complete` go to the server the name names, its
//!   prefix removed; `resources/read` and subscriptions go to the server that listed the URI (or
//!   whose template it matches, or the only server).
//! - Request ids are the hub's toward the servers (`hub-N`), and the server's requests to the
//!   client (sampling, roots, elicitation — toolgate's own questions too) get ids of the hub's
//!   toward the client: the answers find their way back. Notifications pass as they are;
//!   `notifications/cancelled` finds the request it cancels.
//! - `ping` and `logging/setLevel` are answered by the hub (the latter sent to every server).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Instant;

use serde_json::{Map, Value, json};

use crate::{Gate, Out, Verdict};

/// JSON-RPC's "method not found".
const METHOD_NOT_FOUND: i64 = -32601;

/// The most requests the hub waits for at once; past it, a new one is refused.
const MAX_WAITING: usize = 10_000;

/// Where a frame goes after the hub.
#[derive(Clone, Debug, PartialEq)]
pub enum Routed {
    /// To the client.
    ToClient(String),
    /// To server `N` (its index in the servers file's order).
    ToServer(usize, String),
    /// To the daemon, to decide for server `N`'s gate (see [`Out::ToDaemon`]).
    ToDaemon {
        /// The server.
        server: usize,
        /// The gate's key for the call.
        key: u64,
        /// The call.
        call: Box<toolgate_policy::Call>,
    },
    /// Withdraw the daemon's request with this id.
    Withdraw(String),
    /// Tell the daemon this call's result came into its session (see [`Out::Report`]).
    Report(Box<toolgate_policy::Call>),
    /// Answer the daemon's request with this id, as a person did elsewhere (an ACP editor's
    /// person): the daemon records it, and its waiter hears the verdict.
    Answer {
        /// The daemon's request id.
        request: String,
        /// The person's answer.
        choice: toolgate_policy::Choice,
        /// Where they answered.
        by: String,
    },
}

/// One server behind the hub.
struct Backend {
    name: String,
    gate: Gate,
}

/// What the hub does with a server's answer to one of its requests.
#[derive(Clone, Debug)]
enum Route {
    /// The answer to the client's request with this id (as it was, JSON).
    Direct(Value),
    /// One part of a fanned-out request of the client's (its id as JSON text).
    Part(String),
    /// Nobody's (the hub's own `logging/setLevel` copies): dropped.
    Dropped,
}

/// A client's request sent to several servers, collecting their answers.
struct FanOut {
    /// The client's id.
    id: Value,
    method: String,
    /// The answers still awaited, by server.
    waiting: usize,
    /// Each server's answer (its `result`, or its error).
    answers: BTreeMap<usize, Result<Value, Value>>,
    /// The protocol version the client asked for (`initialize`).
    requested: Option<String>,
    /// When it was sent: a server that has not answered within [`FAN_OUT_WAIT`] is left out.
    started: Instant,
}

/// How long a fanned-out request waits for each server's part: one server that hangs does not
/// hang the hub's listings.
const FAN_OUT_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// The hub: one client, many servers.
pub struct Hub {
    backends: Vec<Backend>,
    separator: String,
    /// The servers' answers awaited: (server, the hub's id as JSON text) → where it goes.
    routes: HashMap<(usize, String), Route>,
    /// Fanned-out requests, by the client's id as JSON text.
    fanouts: HashMap<String, FanOut>,
    /// The servers' requests to the client, by the hub's id (JSON text) toward the client:
    /// the server and its own id.
    asked: HashMap<String, (usize, Value)>,
    /// The server each listed resource URI belongs to.
    uris: HashMap<String, usize>,
    /// Each server's resource templates' fixed beginnings (`file:///{path}` → `file:///`).
    templates: Vec<(String, usize)>,
    /// The servers that ended and are not started again yet.
    down: HashSet<usize>,
    /// The client's `initialize` (what a server started again is initialized with).
    initialize: Option<Map<String, Value>>,
    /// Whether the client said it is ready (`notifications/initialized`).
    ready: bool,
    next: u64,
}

/// The hub's version of a pagination cursor: each server's cursor, by index.
fn cursor_of(text: &str) -> Option<BTreeMap<usize, String>> {
    let hex = text.strip_prefix("toolgate:")?;
    let bytes = hex::decode(hex).ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn cursor_text(cursors: &BTreeMap<usize, String>) -> String {
    format!(
        "toolgate:{}",
        hex::encode(serde_json::to_vec(cursors).unwrap_or_default())
    )
}

/// The key of each listing's items, by method.
fn items_key(method: &str) -> Option<&'static str> {
    match method {
        "tools/list" => Some("tools"),
        "prompts/list" => Some("prompts"),
        "resources/list" => Some("resources"),
        "resources/templates/list" => Some("resourceTemplates"),
        _ => None,
    }
}

fn error(id: &Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

impl Hub {
    /// A hub for these servers (name and gate, in order). Names must be unique, non-empty
    /// and free of the separator; [`Hub::check_name`] says why one is not.
    pub fn new(servers: Vec<(String, Gate)>, separator: &str) -> Hub {
        Hub {
            backends: servers
                .into_iter()
                .map(|(name, gate)| Backend { name, gate })
                .collect(),
            separator: separator.to_owned(),
            routes: HashMap::new(),
            fanouts: HashMap::new(),
            asked: HashMap::new(),
            uris: HashMap::new(),
            templates: Vec::new(),
            down: HashSet::new(),
            initialize: None,
            ready: false,
            next: 0,
        }
    }

    /// Why a server name cannot be one behind a hub with this separator, if it cannot.
    pub fn check_name(name: &str, separator: &str) -> Option<String> {
        if name.is_empty() {
            return Some("a server's name is empty".into());
        }
        if separator.is_empty() {
            return Some("the separator is empty".into());
        }
        if name.contains(separator) {
            return Some(format!(
                "the server name `{name}` holds the separator `{separator}`: a prefixed name \
                 would not say which server it is (rename it, or choose another --separator)"
            ));
        }
        None
    }

    fn next_id(&mut self) -> String {
        self.next += 1;
        format!("hub-{}", self.next)
    }

    /// A frame of the client's, through server `i`'s gate. A server that is down answers a
    /// request with an error at once, and hears nothing.
    fn through(&mut self, i: usize, text: &str) -> Vec<Routed> {
        if self.down.contains(&i) {
            let message: Value = serde_json::from_str(text).unwrap_or(Value::Null);
            let (Some(_), Some(id)) = (message.get("method"), message.get("id")) else {
                return Vec::new();
            };
            let answer = json!({"jsonrpc": "2.0", "id": id,
                                "error": {"code": crate::INVALID_REQUEST,
                                          "message": format!("the server `{}` ended and is being started again", self.name(i))}});
            return self.toward_client(i, &answer.to_string());
        }
        let Some(backend) = self.backends.get_mut(i) else {
            return Vec::new();
        };
        let outs = backend.gate.from_client(text);
        self.gated(i, outs)
    }

    /// Server `i`'s name.
    fn name(&self, i: usize) -> String {
        self.backends
            .get(i)
            .map(|b| b.name.clone())
            .unwrap_or_default()
    }

    /// Server `i`'s gate's outputs, routed.
    fn gated(&mut self, i: usize, outs: Vec<Out>) -> Vec<Routed> {
        let mut routed = Vec::new();
        for out in outs {
            match out {
                Out::ToServer(text) => routed.push(Routed::ToServer(i, text)),
                Out::ToClient(text) => routed.extend(self.toward_client(i, &text)),
                Out::ToDaemon { key, call } => routed.push(Routed::ToDaemon {
                    server: i,
                    key,
                    call,
                }),
                Out::Withdraw(request) => routed.push(Routed::Withdraw(request)),
                Out::Report(call) => routed.push(Routed::Report(call)),
            }
        }
        routed
    }

    /// A message from server `i`'s side to the client (the server's, or its gate's): an
    /// answer goes back to the request it answers, a request gets an id of the hub's.
    fn toward_client(&mut self, i: usize, text: &str) -> Vec<Routed> {
        let Ok(Value::Object(mut message)) = serde_json::from_str::<Value>(text) else {
            return Vec::new();
        };
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let id = message.get("id").filter(|id| !id.is_null()).cloned();
        match (method, id) {
            // An answer.
            (None, Some(id)) => {
                let Some(route) = self.routes.remove(&(i, id.to_string())) else {
                    return Vec::new();
                };
                match route {
                    Route::Direct(client_id) => {
                        message.insert("id".into(), client_id);
                        vec![Routed::ToClient(Value::Object(message).to_string())]
                    }
                    Route::Part(fanout) => self.part_answered(&fanout, i, message),
                    Route::Dropped => Vec::new(),
                }
            }
            // A request of the server's (or its gate's) to the client.
            (Some(_), Some(id)) => {
                if self.asked.len() >= MAX_WAITING {
                    return Vec::new();
                }
                let ours = self.next_id();
                self.asked.insert(json!(ours).to_string(), (i, id));
                message.insert("id".into(), json!(ours));
                vec![Routed::ToClient(Value::Object(message).to_string())]
            }
            // A notification. One that cancels a request of the server's names the hub's id.
            (Some(method), None) => {
                if method == "notifications/cancelled"
                    && let Some(request) = message
                        .get("params")
                        .and_then(|p| p.get("requestId"))
                        .cloned()
                    && let Some(ours) = self
                        .asked
                        .iter()
                        .find(|(_, (server, id))| *server == i && *id == request)
                        .map(|(ours, _)| ours.clone())
                {
                    self.asked.remove(&ours);
                    let ours: Value = serde_json::from_str(&ours).unwrap_or(Value::Null);
                    if let Some(params) = message.get_mut("params").and_then(Value::as_object_mut) {
                        params.insert("requestId".into(), ours);
                    }
                }
                vec![Routed::ToClient(Value::Object(message).to_string())]
            }
            (None, None) => Vec::new(),
        }
    }

    /// What a frame from the client becomes.
    pub fn from_client(&mut self, line: &str) -> Vec<Routed> {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            return Vec::new();
        }
        let message = match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(message)) => message,
            // Not a message: the first gate says why, as it says it alone.
            _ => {
                let outs = match self.backends.first_mut() {
                    Some(backend) => backend.gate.from_client(line),
                    None => Vec::new(),
                };
                return outs
                    .into_iter()
                    .filter_map(|o| match o {
                        Out::ToClient(text) => Some(Routed::ToClient(text)),
                        _ => None,
                    })
                    .collect();
            }
        };
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let id = message.get("id").filter(|id| !id.is_null()).cloned();
        match (method.as_deref(), id) {
            // The client's answer to a server's request.
            (None, Some(id)) => {
                let Some((i, theirs)) = self.asked.remove(&id.to_string()) else {
                    return Vec::new();
                };
                let mut message = message;
                message.insert("id".into(), theirs);
                let text = Value::Object(message).to_string();
                self.through(i, &text)
            }
            (None, None) => Vec::new(),
            (Some(method), None) => {
                if method == "notifications/initialized" {
                    self.ready = true;
                }
                self.notification(method, message)
            }
            (Some(method), Some(id)) => self.request(method, id, message),
        }
    }

    /// A notification of the client's: to every server, or, cancelling a request, to the one
    /// that has it.
    fn notification(&mut self, method: &str, message: Map<String, Value>) -> Vec<Routed> {
        if method == "notifications/cancelled" {
            return self.cancelled(message);
        }
        let text = Value::Object(message).to_string();
        let mut routed = Vec::new();
        for i in 0..self.backends.len() {
            routed.extend(self.through(i, &text));
        }
        routed
    }

    /// The client cancelled a request: each server that has it (one, or every part of a
    /// fanned-out request) is told under the hub's id, and the hub stops waiting for it (a
    /// server need not answer a cancelled request).
    fn cancelled(&mut self, message: Map<String, Value>) -> Vec<Routed> {
        let Some(request) = message
            .get("params")
            .and_then(|p| p.get("requestId"))
            .cloned()
        else {
            return Vec::new();
        };
        let fanout = request.to_string();
        let targets: Vec<(usize, String)> = self
            .routes
            .iter()
            .filter(|(_, route)| match route {
                Route::Direct(client) => *client == request,
                Route::Part(key) => *key == fanout,
                Route::Dropped => false,
            })
            .map(|((i, ours), _)| (*i, ours.clone()))
            .collect();
        self.fanouts.remove(&fanout);
        let mut routed = Vec::new();
        for (i, ours) in targets {
            self.routes.remove(&(i, ours.clone()));
            let mut message = message.clone();
            let ours: Value = serde_json::from_str(&ours).unwrap_or(Value::Null);
            if let Some(params) = message.get_mut("params").and_then(Value::as_object_mut) {
                params.insert("requestId".into(), ours);
            }
            routed.extend(self.through(i, &Value::Object(message).to_string()));
        }
        routed
    }

    /// Sends the client's request to server `i` under an id of the hub's.
    fn send(&mut self, i: usize, mut message: Map<String, Value>, route: Route) -> Vec<Routed> {
        let ours = self.next_id();
        self.routes.insert((i, json!(ours).to_string()), route);
        message.insert("id".into(), json!(ours));
        let text = Value::Object(message).to_string();
        self.through(i, &text)
    }

    /// A request of the client's.
    fn request(&mut self, method: &str, id: Value, message: Map<String, Value>) -> Vec<Routed> {
        if self.routes.len() + self.fanouts.len() >= MAX_WAITING {
            return vec![Routed::ToClient(error(
                &id,
                crate::INVALID_REQUEST,
                "too many requests are waiting for the servers",
            ))];
        }
        match method {
            "ping" => vec![Routed::ToClient(
                json!({"jsonrpc": "2.0", "id": id, "result": {}}).to_string(),
            )],
            "logging/setLevel" => {
                let mut routed = Vec::new();
                for i in 0..self.backends.len() {
                    routed.extend(self.send(i, message.clone(), Route::Dropped));
                }
                routed.push(Routed::ToClient(
                    json!({"jsonrpc": "2.0", "id": id, "result": {}}).to_string(),
                ));
                routed
            }
            "initialize" => {
                self.initialize = Some(message.clone());
                let requested = message
                    .get("params")
                    .and_then(|p| p.get("protocolVersion"))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                self.fan_out(id, method, message, None, requested)
            }
            "tools/list" | "prompts/list" | "resources/list" | "resources/templates/list" => {
                let cursor = message
                    .get("params")
                    .and_then(|p| p.get("cursor"))
                    .and_then(Value::as_str);
                let cursors = match cursor {
                    None => None,
                    Some(text) => match cursor_of(text) {
                        Some(cursors) => Some(cursors),
                        None => {
                            return vec![Routed::ToClient(error(
                                &id,
                                crate::INVALID_PARAMS,
                                "the cursor is not one toolgate gave",
                            ))];
                        }
                    },
                };
                self.fan_out(id, method, message, cursors, None)
            }
            "tools/call" | "prompts/get" => self.by_name(id, message, &["params", "name"]),
            "completion/complete" => {
                let by_prompt = message
                    .get("params")
                    .and_then(|p| p.get("ref"))
                    .and_then(|r| r.get("type"))
                    .and_then(Value::as_str)
                    == Some("ref/prompt");
                if by_prompt {
                    self.by_name(id, message, &["params", "ref", "name"])
                } else {
                    self.by_uri(id, message, &["params", "ref", "uri"])
                }
            }
            "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
                self.by_uri(id, message, &["params", "uri"])
            }
            _ => vec![Routed::ToClient(error(
                &id,
                METHOD_NOT_FOUND,
                &format!("toolgate's hub of servers does not relay `{method}`"),
            ))],
        }
    }

    /// A request naming a prefixed tool or prompt: to its server, the prefix removed.
    fn by_name(&mut self, id: Value, mut message: Map<String, Value>, at: &[&str]) -> Vec<Routed> {
        let mut slot: Option<&mut Value> = None;
        for (n, key) in at.iter().enumerate() {
            slot = if n == 0 {
                message.get_mut(*key)
            } else {
                slot.and_then(|v| v.get_mut(*key))
            };
        }
        let Some(slot) = slot else {
            return vec![Routed::ToClient(error(
                &id,
                crate::INVALID_PARAMS,
                "the request names no tool or prompt",
            ))];
        };
        let name = slot.as_str().unwrap_or_default().to_owned();
        let found = name
            .split_once(self.separator.as_str())
            .and_then(|(server, rest)| {
                self.backends
                    .iter()
                    .position(|b| b.name == server)
                    .map(|i| (i, rest.to_owned()))
            });
        let Some((i, rest)) = found else {
            return vec![Routed::ToClient(error(
                &id,
                crate::INVALID_PARAMS,
                &format!(
                    "`{name}` names no server's tool or prompt (names are SERVER{}NAME)",
                    self.separator
                ),
            ))];
        };
        *slot = Value::String(rest);
        self.send(i, message, Route::Direct(id))
    }

    /// A request naming a resource URI: to the server that listed it, or whose template it
    /// matches, or the only server.
    fn by_uri(&mut self, id: Value, message: Map<String, Value>, at: &[&str]) -> Vec<Routed> {
        let mut keys = at.iter();
        let first = keys.next().and_then(|key| message.get(*key));
        let slot = keys.fold(first, |slot, key| slot.and_then(|v| v.get(*key)));
        let uri = slot.and_then(Value::as_str).unwrap_or_default().to_owned();
        let uri = uri.as_str();
        let server = self.uris.get(uri).copied().or_else(|| {
            self.templates
                .iter()
                .filter(|(start, _)| uri.starts_with(start.as_str()))
                .max_by_key(|(start, _)| start.len())
                .map(|(_, i)| *i)
        });
        let server = server.or((self.backends.len() == 1).then_some(0));
        let Some(i) = server else {
            return vec![Routed::ToClient(error(
                &id,
                crate::INVALID_PARAMS,
                &format!("no server listed the resource `{uri}`"),
            ))];
        };
        self.send(i, message, Route::Direct(id))
    }

    /// A request every server answers (those a cursor names, when it names some).
    fn fan_out(
        &mut self,
        id: Value,
        method: &str,
        message: Map<String, Value>,
        cursors: Option<BTreeMap<usize, String>>,
        requested: Option<String>,
    ) -> Vec<Routed> {
        let targets: Vec<(usize, Option<String>)> = match cursors {
            None => (0..self.backends.len()).map(|i| (i, None)).collect(),
            Some(cursors) => cursors
                .into_iter()
                .filter(|(i, _)| *i < self.backends.len())
                .map(|(i, c)| (i, Some(c)))
                .collect(),
        };
        let key = id.to_string();
        if self.fanouts.contains_key(&key) {
            return vec![Routed::ToClient(error(
                &id,
                crate::INVALID_REQUEST,
                "a request with this id is still waiting",
            ))];
        }
        self.fanouts.insert(
            key.clone(),
            FanOut {
                id: id.clone(),
                method: method.to_owned(),
                waiting: targets.len(),
                answers: BTreeMap::new(),
                requested,
                started: Instant::now(),
            },
        );
        if targets.is_empty() {
            return self.finish(&key);
        }
        let mut routed = Vec::new();
        for (i, cursor) in targets {
            let mut part = message.clone();
            if let Some(params) = part.get_mut("params").and_then(Value::as_object_mut) {
                match cursor {
                    Some(cursor) => params.insert("cursor".into(), Value::String(cursor)),
                    None => params.remove("cursor"),
                };
            }
            routed.extend(self.send(i, part, Route::Part(key.clone())));
        }
        routed
    }

    /// Server `i`'s answer to its part of a fanned-out request.
    fn part_answered(&mut self, key: &str, i: usize, message: Map<String, Value>) -> Vec<Routed> {
        let Some(fanout) = self.fanouts.get_mut(key) else {
            return Vec::new();
        };
        let answer = match (message.get("result"), message.get("error")) {
            (Some(result), _) => Ok(result.clone()),
            (None, Some(error)) => Err(error.clone()),
            (None, None) => Err(json!({"code": crate::INVALID_REQUEST, "message": "no result"})),
        };
        if fanout.answers.insert(i, answer).is_none() {
            fanout.waiting = fanout.waiting.saturating_sub(1);
        }
        if fanout.waiting > 0 {
            return Vec::new();
        }
        self.finish(key)
    }

    /// A fanned-out request's merged answer.
    fn finish(&mut self, key: &str) -> Vec<Routed> {
        let Some(fanout) = self.fanouts.remove(key) else {
            return Vec::new();
        };
        let result = if fanout.method == "initialize" {
            self.initialized(&fanout)
        } else {
            self.merged(&fanout)
        };
        let answer = match result {
            Ok(result) => json!({"jsonrpc": "2.0", "id": fanout.id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": fanout.id, "error": error}),
        };
        vec![Routed::ToClient(answer.to_string())]
    }

    /// The hub's `initialize` answer: the servers' capabilities together.
    fn initialized(&self, fanout: &FanOut) -> Result<Value, Value> {
        let mut capabilities = Map::new();
        let mut versions = Vec::new();
        let mut instructions = Vec::new();
        for (i, answer) in &fanout.answers {
            let name = self.name(*i);
            let result = answer.as_ref().map_err(|error| {
                json!({"code": crate::INVALID_REQUEST,
                       "message": format!("the server `{name}` could not start its session: {}",
                                          error.get("message").and_then(Value::as_str).unwrap_or("an error"))})
            })?;
            if let Some(version) = result.get("protocolVersion").and_then(Value::as_str) {
                versions.push(version.to_owned());
            }
            if let Some(text) = result.get("instructions").and_then(Value::as_str) {
                instructions.push(format!("{name}: {text}"));
            }
            let Some(theirs) = result.get("capabilities").and_then(Value::as_object) else {
                continue;
            };
            for kind in ["tools", "prompts", "resources", "logging", "completions"] {
                if let Some(their) = theirs.get(kind) {
                    let ours = capabilities
                        .entry(kind.to_owned())
                        .or_insert_with(|| json!({}));
                    if let (Some(ours), Some(their)) = (ours.as_object_mut(), their.as_object()) {
                        for flag in ["listChanged", "subscribe"] {
                            if their.get(flag) == Some(&Value::Bool(true)) {
                                ours.insert(flag.into(), Value::Bool(true));
                            }
                        }
                    }
                }
            }
        }
        // The version every server agreed to: the client's when all took it, else the oldest.
        let version = match &fanout.requested {
            Some(requested) if versions.iter().all(|v| v == requested) => requested.clone(),
            _ => versions.iter().min().cloned().unwrap_or_default(),
        };
        let mut result = Map::new();
        result.insert("protocolVersion".into(), Value::String(version));
        result.insert("capabilities".into(), Value::Object(capabilities));
        result.insert(
            "serverInfo".into(),
            json!({"name": "toolgate", "version": env!("CARGO_PKG_VERSION")}),
        );
        if !instructions.is_empty() {
            result.insert(
                "instructions".into(),
                Value::String(instructions.join("\n\n")),
            );
        }
        Ok(Value::Object(result))
    }

    /// A listing's answers merged: each item's name prefixed by its server's, the resources'
    /// URIs remembered, the servers' next cursors in one of the hub's.
    fn merged(&mut self, fanout: &FanOut) -> Result<Value, Value> {
        let key = items_key(&fanout.method).unwrap_or("items");
        let mut items = Vec::new();
        let mut next = BTreeMap::new();
        let mut failures = Vec::new();
        for (i, answer) in &fanout.answers {
            let name = self.name(*i);
            let result = match answer {
                Ok(result) => result,
                // A server that cannot list (or does not offer this kind) adds nothing.
                Err(error) => {
                    failures.push(format!(
                        "{name}: {}",
                        error
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("an error")
                    ));
                    continue;
                }
            };
            for item in result
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let mut item = item.clone();
                if let Some(object) = item.as_object_mut() {
                    if let Some(uri) = object.get("uri").and_then(Value::as_str)
                        && (self.uris.len() < MAX_WAITING || self.uris.contains_key(uri))
                    {
                        self.uris.insert(uri.to_owned(), *i);
                    }
                    if let Some(template) = object.get("uriTemplate").and_then(Value::as_str) {
                        let start = template.split('{').next().unwrap_or_default().to_owned();
                        if !self.templates.contains(&(start.clone(), *i))
                            && self.templates.len() < MAX_WAITING
                        {
                            self.templates.push((start, *i));
                        }
                    }
                    if let Some(own) = object.get("name").and_then(Value::as_str) {
                        let prefixed = format!("{name}{}{own}", self.separator);
                        object.insert("name".into(), Value::String(prefixed));
                    }
                }
                items.push(item);
            }
            if let Some(cursor) = result.get("nextCursor").and_then(Value::as_str) {
                next.insert(*i, cursor.to_owned());
            }
        }
        if items.is_empty() && failures.len() == fanout.answers.len() && !failures.is_empty() {
            return Err(json!({"code": METHOD_NOT_FOUND, "message": failures.join("; ")}));
        }
        let mut result = Map::new();
        result.insert(key.to_owned(), Value::Array(items));
        if !next.is_empty() {
            result.insert("nextCursor".into(), Value::String(cursor_text(&next)));
        }
        Ok(Value::Object(result))
    }

    /// What a frame from server `i` becomes.
    pub fn from_server(&mut self, i: usize, line: &str) -> Vec<Routed> {
        let Some(backend) = self.backends.get_mut(i) else {
            return Vec::new();
        };
        let outs = backend.gate.from_server(line);
        self.gated(i, outs)
    }

    /// Server `i` went away: what waits on it is answered with an error, its gate forgets the
    /// calls it held (their questions withdrawn), and until it is started again its requests
    /// are answered with an error at once.
    pub fn server_ended(&mut self, i: usize) -> Vec<Routed> {
        if i >= self.backends.len() {
            return Vec::new();
        }
        let gone: Vec<String> = self
            .routes
            .keys()
            .filter(|(server, _)| *server == i)
            .map(|(_, ours)| ours.clone())
            .collect();
        let name = self.name(i);
        let mut routed = Vec::new();
        for ours in gone {
            let answer = json!({"jsonrpc": "2.0", "id": serde_json::from_str::<Value>(&ours).unwrap_or(Value::Null),
                                "error": {"code": crate::INVALID_REQUEST,
                                          "message": format!("the server `{name}` ended")}});
            routed.extend(self.toward_client(i, &answer.to_string()));
        }
        // Its gate's questions are withdrawn under the ids the client knows them by; then its
        // requests to the client are nobody's.
        let outs = match self.backends.get_mut(i) {
            Some(backend) => backend.gate.server_gone(),
            None => Vec::new(),
        };
        routed.extend(self.gated(i, outs));
        self.asked.retain(|_, (server, _)| *server != i);
        self.uris.retain(|_, server| *server != i);
        self.templates.retain(|(_, server)| *server != i);
        self.down.insert(i);
        routed
    }

    /// Server `i` was started again: it is initialized as the client initialized the hub,
    /// and the client is told to list again.
    pub fn server_restarted(&mut self, i: usize) -> Vec<Routed> {
        if !self.down.remove(&i) {
            return Vec::new();
        }
        let mut routed = Vec::new();
        if let Some(initialize) = self.initialize.clone() {
            routed.extend(self.send(i, initialize, Route::Dropped));
            if self.ready {
                let ready = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
                routed.extend(self.through(i, &ready.to_string()));
            }
        }
        for kind in ["tools", "prompts", "resources"] {
            routed.push(Routed::ToClient(
                json!({"jsonrpc": "2.0", "method": format!("notifications/{kind}/list_changed")})
                    .to_string(),
            ));
        }
        routed
    }

    /// The questions nobody answered by `now`, on every server's gate; and the fanned-out
    /// requests some server did not answer within 60 seconds, answered with the parts that
    /// came (a missing part counts as that server's error).
    pub fn expire(&mut self, now: Instant) -> Vec<Routed> {
        let mut routed = Vec::new();
        let late: Vec<String> = self
            .fanouts
            .iter()
            .filter(|(_, f)| f.started + FAN_OUT_WAIT <= now)
            .map(|(key, _)| key.clone())
            .collect();
        for key in late {
            let missing: Vec<(usize, String)> = self
                .routes
                .iter()
                .filter(|(_, route)| matches!(route, Route::Part(k) if *k == key))
                .map(|((i, ours), _)| (*i, ours.clone()))
                .collect();
            for (i, ours) in missing {
                // A late answer is nobody's.
                self.routes.insert((i, ours), Route::Dropped);
                let name = self.name(i);
                let late = json!({"code": crate::INVALID_REQUEST,
                                  "message": format!("the server `{name}` did not answer within {} s",
                                                     FAN_OUT_WAIT.as_secs())});
                if let Some(fanout) = self.fanouts.get_mut(&key) {
                    fanout.answers.insert(i, Err(late));
                }
            }
            routed.extend(self.finish(&key));
        }
        for i in 0..self.backends.len() {
            let outs = match self.backends.get_mut(i) {
                Some(backend) => backend.gate.expire(now),
                None => Vec::new(),
            };
            routed.extend(self.gated(i, outs));
        }
        routed
    }

    /// See [`Gate::pending`].
    pub fn pending(
        &mut self,
        i: usize,
        key: u64,
        request: &str,
        reason: &str,
        page: &str,
    ) -> Vec<Routed> {
        let Some(backend) = self.backends.get_mut(i) else {
            return vec![Routed::Withdraw(request.to_owned())];
        };
        let outs = backend.gate.pending(key, request, reason, page);
        self.gated(i, outs)
    }

    /// See [`Gate::decided`].
    pub fn decided(&mut self, i: usize, key: u64, verdict: &Verdict) -> Vec<Routed> {
        let Some(backend) = self.backends.get_mut(i) else {
            return Vec::new();
        };
        let outs = backend.gate.decided(key, verdict);
        self.gated(i, outs)
    }

    /// See [`Gate::abandon_all`].
    pub fn abandon_all(&mut self) -> Vec<Routed> {
        let mut routed = Vec::new();
        for i in 0..self.backends.len() {
            let outs = match self.backends.get_mut(i) {
                Some(backend) => backend.gate.abandon_all(),
                None => Vec::new(),
            };
            routed.extend(self.gated(i, outs));
        }
        routed
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use crate::Options;
    use proptest::prelude::*;
    use std::sync::Arc;
    use toolgate_policy::Policy;

    const RULES: &str = "version = 1\n[[rule]]\nname = \"ok\"\ndecision = \"allow\"\n\
                         tool = \"ok\"\n\n[[rule]]\nname = \"never\"\ndecision = \"deny\"\n\
                         tool = \"never\"\n";

    fn hub() -> Hub {
        let policy = Arc::new(Policy::from_toml("p.toml", RULES).unwrap());
        let gate = |server: &str| {
            Gate::new(Options::new(
                Arc::clone(&policy),
                server,
                Some("/ws".into()),
            ))
        };
        Hub::new(vec![("a".into(), gate("a")), ("b".into(), gate("b"))], "__")
    }

    fn to_server(routed: &[Routed]) -> (usize, Value) {
        let [Routed::ToServer(i, text)] = routed else {
            panic!("{routed:?}")
        };
        (*i, serde_json::from_str(text).unwrap())
    }

    fn to_client(routed: &[Routed]) -> Value {
        let [Routed::ToClient(text)] = routed else {
            panic!("{routed:?}")
        };
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn a_call_goes_to_its_server_and_its_answer_back_under_the_clients_id() {
        let mut hub = hub();
        let (i, sent) = to_server(&hub.from_client(
            r#"{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"b__ok","arguments":{}}}"#,
        ));
        assert_eq!(i, 1);
        assert_eq!(sent["params"]["name"], "ok");
        let ours = sent["id"].clone();
        assert_ne!(ours, json!("c1"));
        let answer = json!({"jsonrpc": "2.0", "id": ours, "result": {"content": []}});
        let back = to_client(&hub.from_server(1, &answer.to_string()));
        assert_eq!(back["id"], "c1");
        // The same answer again is nobody's.
        assert!(hub.from_server(1, &answer.to_string()).is_empty());
        // Refused by server a's gate: answered under the client's id, the server told nothing.
        let refused = to_client(&hub.from_client(
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a__never"}}"#,
        ));
        assert_eq!(refused["id"], 7);
        assert_eq!(refused["result"]["isError"], true);
        // A name that names no server, or no name.
        for line in [
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"c__ok"}}"#,
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"ok"}}"#,
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/call"}"#,
        ] {
            let refused = to_client(&hub.from_client(line));
            assert_eq!(refused["error"]["code"], crate::INVALID_PARAMS, "{line}");
        }
    }

    #[test]
    fn a_servers_request_gets_the_hubs_id_and_its_answer_goes_back() {
        let mut hub = hub();
        let asked = to_client(&hub.from_server(
            0,
            r#"{"jsonrpc":"2.0","id":0,"method":"sampling/createMessage","params":{}}"#,
        ));
        let ours = asked["id"].clone();
        assert_ne!(ours, json!(0));
        // Server b asks with the same id: another of the hub's.
        let other =
            to_client(&hub.from_server(1, r#"{"jsonrpc":"2.0","id":0,"method":"roots/list"}"#));
        assert_ne!(other["id"], ours);
        let answer = json!({"jsonrpc": "2.0", "id": ours, "result": {"x": 1}});
        let (i, relayed) = to_server(&hub.from_client(&answer.to_string()));
        assert_eq!((i, relayed["id"].clone()), (0, json!(0)));
        // Cancelling it names the hub's id to the client.
        let cancelled = to_client(&hub.from_server(
            1,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0}}"#,
        ));
        assert_eq!(cancelled["params"]["requestId"], other["id"]);
    }

    #[test]
    fn listings_are_merged_prefixed_and_paged_with_the_hubs_cursors() {
        let mut hub = hub();
        let sent = hub.from_client(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#);
        assert_eq!(sent.len(), 2);
        let ids: Vec<Value> = sent
            .iter()
            .map(|r| match r {
                Routed::ToServer(_, text) => {
                    serde_json::from_str::<Value>(text).unwrap()["id"].clone()
                }
                other => panic!("{other:?}"),
            })
            .collect();
        let page = |id: &Value, tools: Value, next: Option<&str>| {
            let mut result = json!({"tools": tools});
            if let Some(next) = next {
                result["nextCursor"] = json!(next);
            }
            json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
        };
        assert!(
            hub.from_server(
                0,
                &page(
                    &ids[0],
                    json!([{"name": "ok"}, {"name": "never"}]),
                    Some("a2")
                )
            )
            .is_empty()
        );
        let merged = to_client(&hub.from_server(1, &page(&ids[1], json!([{"name": "ok"}]), None)));
        assert_eq!(merged["id"], 1);
        let names: Vec<&str> = merged["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        // Server a's refused tool is left out by its gate.
        assert_eq!(names, ["a__ok", "b__ok"]);
        // The next page asks server a alone, with its own cursor.
        let cursor = merged["result"]["nextCursor"].clone();
        let (i, sent) = to_server(&hub.from_client(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": cursor}})
                .to_string(),
        ));
        assert_eq!((i, sent["params"]["cursor"].clone()), (0, json!("a2")));
        let forged = to_client(&hub.from_client(
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"a2"}}"#,
        ));
        assert_eq!(forged["error"]["code"], crate::INVALID_PARAMS);
    }

    #[test]
    fn a_server_that_ends_fails_what_waits_on_it() {
        let mut hub = hub();
        hub.from_client(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__ok"}}"#,
        );
        hub.from_client(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
        let failed = hub.server_ended(0);
        let texts: Vec<String> = failed
            .iter()
            .map(|r| match r {
                Routed::ToClient(text) => text.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(texts.len(), 1, "{texts:?}");
        assert!(texts[0].contains("the server `a` ended") && texts[0].contains(r#""id":1"#));
        assert!(Hub::check_name("a__b", "__").is_some());
        assert!(Hub::check_name("ab", "__").is_none());
    }

    #[test]
    fn a_server_started_again_is_initialized_as_the_client_initialized_the_hub() {
        let mut hub = hub();
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"c","version":"1"}}}"#;
        assert_eq!(hub.from_client(init).len(), 2);
        hub.from_client(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        hub.server_ended(1);
        // Down: its calls fail at once; the other server's go on.
        let failed = to_client(&hub.from_client(
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"b__ok"}}"#,
        ));
        assert_eq!(failed["id"], 5);
        assert!(
            failed["error"]["message"]
                .as_str()
                .unwrap()
                .contains("started again")
        );
        let (i, _) = to_server(&hub.from_client(
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"a__ok"}}"#,
        ));
        assert_eq!(i, 0);
        // Started again: initialized as before, told it is ready, and the client told to
        // list again.
        let routed = hub.server_restarted(1);
        let to_b: Vec<Value> = routed
            .iter()
            .filter_map(|r| match r {
                Routed::ToServer(1, text) => serde_json::from_str(text).ok(),
                _ => None,
            })
            .collect();
        assert_eq!(to_b[0]["method"], "initialize");
        assert_eq!(to_b[0]["params"]["clientInfo"]["name"], "c");
        assert_eq!(to_b[1]["method"], "notifications/initialized");
        assert!(routed.iter().any(
            |r| matches!(r, Routed::ToClient(t) if t.contains("notifications/tools/list_changed"))
        ));
        // Its answer to that initialize is the hub's alone.
        let answer = json!({"jsonrpc": "2.0", "id": to_b[0]["id"], "result": {"protocolVersion": "2025-11-25"}});
        assert!(hub.from_server(1, &answer.to_string()).is_empty());
        let (i, _) = to_server(&hub.from_client(
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"b__ok"}}"#,
        ));
        assert_eq!(i, 1);
    }

    #[test]
    fn a_cancelled_request_is_forgotten_and_a_silent_server_does_not_hang_a_listing() {
        let mut hub = hub();
        let (i, sent) = to_server(&hub.from_client(
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"a__ok"}}"#,
        ));
        let cancel = hub.from_client(
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}"#,
        );
        let (j, told) = to_server(&cancel);
        assert_eq!((i, j), (0, 0));
        assert_eq!(told["params"]["requestId"], sent["id"]);
        assert!(hub.routes.is_empty(), "{:?}", hub.routes);
        // A listing one server never answers: answered after the wait with what came.
        let parts = hub.from_client(r#"{"jsonrpc":"2.0","id":10,"method":"tools/list"}"#);
        let first = match &parts[0] {
            Routed::ToServer(0, text) => serde_json::from_str::<Value>(text).unwrap()["id"].clone(),
            other => panic!("{other:?}"),
        };
        let answer = json!({"jsonrpc": "2.0", "id": first, "result": {"tools": [{"name": "ok"}]}});
        assert!(hub.from_server(0, &answer.to_string()).is_empty());
        assert!(hub.expire(Instant::now()).is_empty());
        let merged = to_client(&hub.expire(Instant::now() + FAN_OUT_WAIT));
        assert_eq!(merged["id"], 10);
        assert_eq!(merged["result"]["tools"][0]["name"], "a__ok", "{merged}");
        // Its late answer is nobody's.
        let late = hub.routes.keys().next().cloned().unwrap();
        let late = json!({"jsonrpc": "2.0", "id": serde_json::from_str::<Value>(&late.1).unwrap(),
                          "result": {"tools": []}});
        assert!(hub.from_server(1, &late.to_string()).is_empty());
    }

    fn frame() -> impl Strategy<Value = String> {
        let name = prop::sample::select(vec![
            "a__ok", "b__ok", "a__never", "b__never", "ok", "", "a__",
        ]);
        let method = prop::sample::select(vec![
            "tools/call",
            "tools/list",
            "initialize",
            "ping",
            "resources/read",
            "notifications/cancelled",
            "prompts/get",
            "sampling/createMessage",
        ]);
        let id = prop_oneof![
            Just(json!(1)),
            Just(json!("hub-1")),
            Just(json!("hub-2")),
            Just(Value::Null)
        ];
        let message = (id, method, name, any::<bool>(), any::<bool>()).prop_map(
            |(id, method, name, with_id, with_method)| {
                let mut m = json!({"jsonrpc": "2.0", "params": {"name": name, "requestId": 1,
                                                              "uri": "x://y"}});
                if with_method {
                    m["method"] = json!(method);
                } else {
                    m["result"] = json!({"tools": [{"name": "never"}]});
                }
                if with_id {
                    m["id"] = id;
                }
                m.to_string()
            },
        );
        prop_oneof![message, ".{0,30}", Just("[]".to_owned())]
    }

    proptest! {
        /// Whatever either side sends: no panic, and no tool call reaches a server unless its
        /// gate's policy allows it.
        #[test]
        fn nothing_reaches_a_server_unjudged(
            frames in prop::collection::vec((frame(), 0usize..3), 0..24),
        ) {
            let mut hub = hub();
            for (frame, side) in frames {
                let routed = if side == 2 { hub.from_client(&frame) } else { hub.from_server(side, &frame) };
                for out in routed {
                    let Routed::ToServer(_, text) = out else { continue };
                    let message: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                    if message.get("method").and_then(Value::as_str) == Some("tools/call") {
                        prop_assert_eq!(&message["params"]["name"], "ok", "{}", text);
                    }
                }
            }
        }
    }
}
