//! The gateway's Streamable HTTP front (`toolgate mcp --listen 127.0.0.1:PORT`): MCP clients
//! reach the gateway at `/mcp` over HTTP instead of stdio.
//!
//! Each MCP session (an `initialize` without an `Mcp-Session-Id`) gets a relay of its own —
//! its switch (the gate, or the hub of many) and its servers' processes — exactly as one stdio
//! client would: what a session's servers keep (roots, subscriptions, the client's
//! capabilities, an "always" answer) is never another session's. A request's answer comes back
//! on its own POST as an event stream; what the servers send on their own (progress, logging,
//! sampling, elicitation, a gate's question) goes on the newest POST stream still open, else
//! the session's GET stream, else waits there for one (bounded).
//!
//! In front of the relays: the `Host` and `Origin` a request names must be this machine's
//! (loopback names, or names given) — a page on another site that rebinds its DNS name to
//! 127.0.0.1 is refused (403); a bearer token unless told otherwise (401); bodies of at most
//! [`Front::max_body`] bytes nesting at most [`MAX_NESTING`] levels (413, 400); a bounded
//! number of sessions (503), those left idle ended.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use sha2::Digest;
use tokio::sync::mpsc;

use crate::relay::{Frame, ServerCommand, Switch, relay_client};
use crate::{Daemon, INVALID_REQUEST, PARSE_ERROR};

/// The deepest a message may nest (arrays and objects within each other), as the daemon's API
/// takes: what a call holds is wrapped in a few levels more on its way to a person.
pub const MAX_NESTING: usize = 64;

/// The protocol versions the front speaks (the `MCP-Protocol-Version` header a client sends
/// after `initialize`).
const VERSIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

/// The first version whose clients read an event with an id and no data (the "priming"
/// event a stream starts with, which a client resumes from).
const PRIMING_SINCE: &str = "2025-11-25";

/// Messages the servers sent while no stream of the session's was open, kept for the next.
const MAX_BACKLOG: usize = 256;

/// How often sessions left idle are looked for (and open streams sent a comment, which finds
/// a client gone without a word).
const REAP_EVERY: Duration = Duration::from_secs(20);

/// The path the front serves.
pub const PATH: &str = "/mcp";

/// How the front is guarded.
#[derive(Clone, Debug)]
pub struct Front {
    /// The bearer token a request must carry (`Authorization: Bearer …`); `None`: none.
    pub token: Option<String>,
    /// The host names a request's `Host` and `Origin` may name besides the loopback names
    /// (`localhost`, `127.0.0.1`, `[::1]`) and the address the front listens on.
    pub allowed_hosts: Vec<String>,
    /// The largest body taken, in bytes.
    pub max_body: usize,
    /// The most sessions at once.
    pub max_sessions: usize,
    /// How long a session with no stream open and no request waiting is kept.
    pub idle: Duration,
}

impl Default for Front {
    fn default() -> Front {
        Front {
            token: None,
            allowed_hosts: Vec::new(),
            max_body: 4 * 1024 * 1024,
            max_sessions: 32,
            idle: Duration::from_secs(30 * 60),
        }
    }
}

/// Makes a new session's switch and the commands of its servers, given the session's id.
pub type MakeSession<S> =
    dyn Fn(&str) -> Result<(S, Vec<ServerCommand>), String> + Send + Sync + 'static;

/// Serves MCP over Streamable HTTP on `listener` until `shutdown` completes, each session
/// through a relay of its own (see the module's documentation); with a `daemon`, it decides the
/// calls. When it stops, every session's servers are stopped.
pub async fn serve<S: Switch>(
    listener: tokio::net::TcpListener,
    front: Front,
    make: Arc<MakeSession<S>>,
    daemon: Option<(Arc<dyn Daemon>, Duration)>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let local = listener.local_addr()?;
    let max_body = front.max_body;
    let front = Arc::new(Served {
        front,
        local,
        make,
        daemon,
        sessions: Mutex::new(HashMap::new()),
    });
    let reaper = {
        let front = Arc::clone(&front);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(REAP_EVERY);
            loop {
                tick.tick().await;
                front.reap(Instant::now());
            }
        })
    };
    let app = axum::Router::new()
        .route(PATH, axum::routing::any(endpoint::<S>))
        .fallback(|| async { plain(StatusCode::NOT_FOUND, "not found: MCP is served at /mcp") })
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(Arc::clone(&front));
    // When told to stop: every session ends (its streams close, its servers stop), so the
    // connections they held end too, and what is still open after a while is not waited for.
    let (stopped, mut stopping) = tokio::sync::watch::channel(false);
    let ending = {
        let front = Arc::clone(&front);
        async move {
            shutdown.await;
            let _ = stopped.send(true);
            let ended: Vec<Arc<Session>> = lock(&front.sessions).drain().map(|(_, s)| s).collect();
            let mut ending = tokio::task::JoinSet::new();
            for session in ended {
                ending.spawn(async move { session.end().await });
            }
            while ending.join_next().await.is_some() {}
        }
    };
    let serving = axum::serve(listener, app).with_graceful_shutdown(ending);
    let served = tokio::select! {
        served = serving => served,
        () = async {
            let _ = stopping.wait_for(|stop| *stop).await;
            tokio::time::sleep(Duration::from_secs(20)).await;
        } => Ok(()),
    };
    reaper.abort();
    served
}

/// The front's state.
struct Served<S> {
    front: Front,
    local: SocketAddr,
    make: Arc<MakeSession<S>>,
    daemon: Option<(Arc<dyn Daemon>, Duration)>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
}

/// One MCP session: its relay's input, and the streams its messages go out on.
struct Session {
    /// Frames to the relay (`None` once the session ended).
    input: Mutex<Option<mpsc::Sender<String>>>,
    /// The protocol version the client asked for in `initialize`.
    version: String,
    streams: Mutex<Streams>,
    /// When a request last came.
    touched: Mutex<Instant>,
    /// The relay's task.
    relay: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// One event stream of a session's: a POST's (its request's messages, ending with its answer)
/// or the session's GET stream.
struct Stream {
    /// Where its events go; `None` while the client is away from it (it dropped the stream,
    /// or did not read it): its events are kept for a GET that resumes it (`Last-Event-ID`).
    sender: Option<mpsc::Sender<Bytes>>,
    /// The events sent on it, numbered, kept for a resume (a POST stream's only).
    log: Vec<(u64, String)>,
    /// The number of its next event.
    next: u64,
    /// Whether its request's answer is among its events (it ends once that is delivered).
    answered: bool,
    /// Whether it is the session's GET stream.
    standalone: bool,
    /// When the client went away from it.
    away_since: Option<Instant>,
}

impl Stream {
    fn live(&self) -> bool {
        self.sender.as_ref().is_some_and(|s| !s.is_closed())
    }
}

/// The most events a POST stream keeps for a resume (its request's progress and questions,
/// and its answer).
const MAX_LOG: usize = 48;

/// How long a stream the client went away from is kept for a resume.
const RESUME_WITHIN: Duration = Duration::from_secs(120);

/// A session's streams.
#[derive(Default)]
struct Streams {
    /// The number of the next stream.
    next: u64,
    /// The streams, by number.
    open: BTreeMap<u64, Stream>,
    /// The POST stream each request waits on (its id's key, see [`id_key`] → the stream's
    /// number).
    waiting: HashMap<String, u64>,
    /// The GET stream's number, while it is open.
    standalone: Option<u64>,
    /// Messages of the servers' own sent while no stream was open.
    backlog: VecDeque<String>,
}

impl Streams {
    /// Opens a stream: its number, and what its body reads.
    fn open(&mut self, priming: bool, standalone: bool) -> (u64, mpsc::Receiver<Bytes>) {
        let number = self.next;
        self.next += 1;
        let (sender, receiver) = mpsc::channel(MAX_LOG + 16);
        if priming {
            // An id and no data, sent first: where a client that lost the stream resumes from.
            let _ = sender.try_send(Bytes::from(format!(
                "id: {number}-0\nretry: 1000\ndata: \n\n"
            )));
        }
        self.open.insert(
            number,
            Stream {
                sender: Some(sender),
                log: Vec::new(),
                next: 1,
                answered: false,
                standalone,
                away_since: None,
            },
        );
        if standalone {
            self.standalone = Some(number);
        }
        (number, receiver)
    }

    /// Closes stream `number` (its body ends once what was queued is read).
    fn close(&mut self, number: u64) {
        self.open.remove(&number);
        if self.standalone == Some(number) {
            self.standalone = None;
        }
    }

    /// Where a message of the servers' own goes: the newest POST stream still open and not
    /// answered, else the GET stream.
    fn own_messages_stream(&self) -> Option<u64> {
        let post = self
            .open
            .iter()
            .rev()
            .find(|(_, s)| !s.standalone && !s.answered && s.live())
            .map(|(n, _)| *n);
        post.or(self
            .standalone
            .filter(|n| self.open.get(n).is_some_and(Stream::live)))
    }

    /// Sends `text` as the next event of stream `number`: `false` when the client is away
    /// from it (the event is kept for a resume of a POST stream).
    fn send(&mut self, number: u64, text: &str, answer: bool) -> bool {
        let Some(stream) = self.open.get_mut(&number) else {
            return false;
        };
        let event = stream.next;
        stream.next += 1;
        // A message is one line: a carriage return or newline in it (JSON whitespace) would
        // end the event's data.
        let text = text.replace(['\r', '\n'], " ");
        let frame = Bytes::from(format!("id: {number}-{event}\ndata: {text}\n\n"));
        if !stream.standalone && stream.log.len() < MAX_LOG {
            stream.log.push((event, text));
        }
        stream.answered |= answer;
        let sent = stream
            .sender
            .as_ref()
            .is_some_and(|sender| sender.try_send(frame).is_ok());
        if !sent {
            // Gone, or not read: the client is away from it (a stream not read is not
            // waited for, so one client cannot stall the session).
            stream.sender = None;
            stream.away_since.get_or_insert_with(Instant::now);
        }
        sent
    }

    /// Attaches a new body to POST stream `number` from after event `after`: its events since
    /// are sent again, and it ends there if its answer is among them.
    fn resume(&mut self, number: u64, after: u64) -> Option<mpsc::Receiver<Bytes>> {
        let stream = self.open.get_mut(&number).filter(|s| !s.standalone)?;
        let (sender, receiver) = mpsc::channel(MAX_LOG + 16);
        for (event, text) in stream.log.iter().filter(|(e, _)| *e > after) {
            let _ = sender.try_send(Bytes::from(format!(
                "id: {number}-{event}\ndata: {text}\n\n"
            )));
        }
        if stream.answered {
            self.open.remove(&number);
        } else {
            stream.sender = Some(sender);
            stream.away_since = None;
        }
        Some(receiver)
    }

    /// Lets go of streams the client left more than [`RESUME_WITHIN`] before `now` (a POST
    /// stream still waiting for its answer stays), and keeps the live ones' connections
    /// checked: a comment sent on each finds a client gone without a word.
    fn tidy(&mut self, now: Instant) {
        let stale: Vec<u64> = self
            .open
            .iter()
            .filter(|(_, s)| {
                !s.live()
                    && (s.standalone || s.answered)
                    && s.away_since
                        .is_none_or(|t| now.saturating_duration_since(t) > RESUME_WITHIN)
            })
            .map(|(n, _)| *n)
            .collect();
        for number in stale {
            self.close(number);
        }
        for stream in self.open.values_mut() {
            if let Some(sender) = &stream.sender
                && sender.try_send(Bytes::from_static(b": ping\n\n")).is_err()
            {
                stream.sender = None;
                stream.away_since.get_or_insert(now);
            }
        }
    }
}

/// A request id as the key of what waits on it: a number by its value (`1` and `1.0` are one
/// id, as a JavaScript peer writes them), anything else by its JSON text.
fn id_key(id: &Value) -> String {
    match id.as_f64() {
        #[allow(clippy::cast_possible_truncation, clippy::float_cmp)]
        Some(n) if n.fract() == 0.0 && n.abs() < 9.0e15 => format!("{}", n as i64),
        _ => id.to_string(),
    }
}

impl Session {
    /// Ends the session: its relay's input closes (its servers are stopped, or killed when
    /// they do not stop in time), and its streams end.
    async fn end(&self) {
        let input = lock(&self.input).take();
        drop(input);
        let relay = lock(&self.relay).take();
        if let Some(mut relay) = relay
            && tokio::time::timeout(Duration::from_secs(15), &mut relay)
                .await
                .is_err()
        {
            // Dropping the relay kills its servers' processes.
            relay.abort();
        }
        let mut streams = lock(&self.streams);
        streams.open.clear();
        streams.standalone = None;
    }

    /// Sends `text` (one of the relay's frames to the client) where it goes.
    fn deliver(&self, text: String) {
        let head = crate::Head::of(&text);
        let mut streams = lock(&self.streams);
        if head.is_answer() {
            let key = head.id.as_ref().map(id_key).unwrap_or_default();
            let Some(number) = streams.waiting.remove(&key) else {
                eprintln!("toolgate: an answer to no request the client waits on; dropped");
                return;
            };
            if streams.send(number, &text, true) {
                // A request's stream ends with its answer.
                streams.close(number);
            }
            return;
        }
        loop {
            let Some(number) = streams.own_messages_stream() else {
                if streams.backlog.len() >= MAX_BACKLOG {
                    streams.backlog.pop_front();
                    eprintln!(
                        "toolgate: no stream open for the servers' messages; the oldest dropped"
                    );
                }
                streams.backlog.push_back(text);
                return;
            };
            if streams.send(number, &text, false) {
                return;
            }
        }
    }

    /// Answers every request still waiting with an error (the session's relay ended).
    fn fail_waiting(&self, why: &str) {
        let mut streams = lock(&self.streams);
        let waiting: Vec<(String, u64)> = streams.waiting.drain().collect();
        for (id, number) in waiting {
            let id: Value = serde_json::from_str(&id).unwrap_or(Value::Null);
            let text =
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": why}})
                    .to_string();
            streams.send(number, &text, true);
        }
        streams.open.clear();
        streams.standalone = None;
    }
}

impl<S: Switch> Served<S> {
    /// Ends the sessions left idle since before `now - idle`.
    fn reap(&self, now: Instant) {
        let idle = self.front.idle;
        let ended: Vec<Arc<Session>> = {
            let mut sessions = lock(&self.sessions);
            let idle_ids: Vec<String> = sessions
                .iter()
                .filter(|(_, s)| {
                    let mut streams = lock(&s.streams);
                    streams.tidy(now);
                    streams.open.values().all(|s| !s.live())
                        && streams.waiting.is_empty()
                        && now.saturating_duration_since(*lock(&s.touched)) > idle
                })
                .map(|(id, _)| id.clone())
                .collect();
            idle_ids
                .iter()
                .filter_map(|id| sessions.remove(id))
                .collect()
        };
        for session in ended {
            tokio::spawn(async move { session.end().await });
        }
    }

    /// Whether `host` (a `Host` header's or an origin's host, without its port) is this
    /// machine's.
    fn host_allowed(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        let local = self.local.ip();
        matches!(host.as_str(), "localhost" | "127.0.0.1" | "[::1]")
            || (!local.is_unspecified()
                && (host == local.to_string() || host == format!("[{local}]")))
            || self
                .front
                .allowed_hosts
                .iter()
                .any(|allowed| allowed.eq_ignore_ascii_case(&host))
    }

    /// Refuses a request whose `Host` or `Origin` is not this machine's, or that does not
    /// carry the token.
    fn guard(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or_default();
        let (name, port) = split_host(host);
        let port_ok = port.is_none_or(|port| port == self.local.port());
        if host.is_empty() || !self.host_allowed(name) || !port_ok {
            return Err(Refusal::new(
                StatusCode::FORBIDDEN,
                format!(
                    "the Host header ({host:?}) does not name this machine: refused (a page \
                     whose name was made to point here is refused, DNS rebinding)"
                ),
            ));
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let allowed = origin
                .to_str()
                .ok()
                .and_then(|o| url::Url::parse(o).ok())
                .filter(|o| matches!(o.scheme(), "http" | "https"))
                .and_then(|o| o.host_str().map(str::to_owned))
                .is_some_and(|h| self.host_allowed(&h));
            if !allowed {
                return Err(Refusal::new(
                    StatusCode::FORBIDDEN,
                    "the Origin header does not name this machine: refused (a page of another \
                     site may not reach the gateway)",
                ));
            }
        }
        if let Some(token) = &self.front.token {
            let given = headers
                .get(header::AUTHORIZATION)
                .and_then(|h| h.to_str().ok())
                .and_then(|h| h.split_once(' '))
                .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
                .map_or("", |(_, token)| token);
            if !same(token, given.trim()) {
                return Err(Refusal::new(
                    StatusCode::UNAUTHORIZED,
                    "no token, or not the gateway's: send `Authorization: Bearer TOKEN`",
                ));
            }
        }
        Ok(())
    }

    /// The session a request names (400 when it names none, 404 when it is not one).
    fn session_of(&self, headers: &HeaderMap) -> Result<Arc<Session>, Refusal> {
        let Some(id) = headers.get("mcp-session-id").and_then(|h| h.to_str().ok()) else {
            return Err(Refusal::new(
                StatusCode::BAD_REQUEST,
                "no Mcp-Session-Id: send `initialize` first, and its answer's session id with \
                 every request after",
            ));
        };
        let session = lock(&self.sessions).get(id).cloned();
        let session = session.ok_or_else(|| {
            Refusal::new(
                StatusCode::NOT_FOUND,
                "no such session (it ended, or the gateway started again): initialize again",
            )
        })?;
        *lock(&session.touched) = Instant::now();
        Ok(session)
    }

    /// Starts a session: its relay, and the task that sends what it says where it goes.
    fn start(self: &Arc<Self>, version: String) -> Result<(String, Arc<Session>), Refusal> {
        // Held until the session is in: two at once cannot both take the last place.
        let mut sessions = lock(&self.sessions);
        if sessions.len() >= self.front.max_sessions {
            return Err(Refusal::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "the gateway holds its most sessions ({}): end one (DELETE) or try later",
                    self.front.max_sessions
                ),
            ));
        }
        let id = session_id().ok_or_else(|| {
            Refusal::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "no randomness for a session id",
            )
        })?;
        // The daemon and the logs know the session by a digest of its id: the id is what
        // keeps one client's session from another's.
        let label = hex::encode(sha2::Sha256::digest(id.as_bytes()))
            .get(..16)
            .unwrap_or_default()
            .to_owned();
        let (switch, servers) =
            (self.make)(&label).map_err(|e| Refusal::new(StatusCode::INTERNAL_SERVER_ERROR, e))?;
        let (input, mut inputs) = mpsc::channel::<String>(256);
        let (to_client, mut outputs) = mpsc::channel::<String>(256);
        let session = Arc::new(Session {
            input: Mutex::new(Some(input)),
            version,
            streams: Mutex::new(Streams::default()),
            touched: Mutex::new(Instant::now()),
            relay: Mutex::new(None),
        });
        let frames = futures_util::stream::poll_fn(move |cx| {
            inputs
                .poll_recv(cx)
                .map(|line| line.map(|line| Ok::<_, std::io::Error>(Frame::Line(line))))
        });
        let daemon = self.daemon.clone();
        let relay = tokio::spawn(async move {
            if let Err(e) = relay_client(switch, servers, daemon, frames, to_client).await {
                eprintln!("toolgate: {e}");
            }
        });
        *lock(&session.relay) = Some(relay);
        {
            let session = Arc::clone(&session);
            let served = Arc::clone(self);
            let id = id.clone();
            tokio::spawn(async move {
                while let Some(text) = outputs.recv().await {
                    session.deliver(text);
                }
                // The relay ended (its server did, or the session was ended).
                session.fail_waiting("the MCP server behind the gateway ended");
                let mut sessions = lock(&served.sessions);
                if sessions.get(&id).is_some_and(|s| Arc::ptr_eq(s, &session)) {
                    sessions.remove(&id);
                }
            });
        }
        sessions.insert(id.clone(), Arc::clone(&session));
        Ok((id, session))
    }
}

/// `/mcp`: POST a message, GET the session's stream, DELETE the session.
async fn endpoint<S: Switch>(State(served): State<Arc<Served<S>>>, request: Request) -> Response {
    let headers = request.headers().clone();
    if let Err(refused) = served.guard(&headers) {
        return refused.into_response();
    }
    if let Some(version) = headers
        .get("mcp-protocol-version")
        .and_then(|h| h.to_str().ok())
        && !VERSIONS.contains(&version)
    {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            INVALID_REQUEST,
            &format!(
                "unsupported MCP-Protocol-Version {version:?}: one of {}",
                VERSIONS.join(", ")
            ),
        );
    }
    match *request.method() {
        Method::POST => post(served, headers, request).await,
        Method::GET => get(&served, &headers),
        Method::DELETE => match served.session_of(&headers) {
            Ok(session) => {
                let id = headers
                    .get("mcp-session-id")
                    .and_then(|h| h.to_str().ok())
                    .unwrap_or_default()
                    .to_owned();
                lock(&served.sessions).remove(&id);
                session.end().await;
                StatusCode::OK.into_response()
            }
            Err(refused) => refused.into_response(),
        },
        _ => {
            let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "POST, GET or DELETE");
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
            response
        }
    }
}

/// A message from the client.
async fn post<S: Switch>(served: Arc<Served<S>>, headers: HeaderMap, request: Request) -> Response {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.split(';').next())
        .is_some_and(|h| h.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return rpc_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            INVALID_REQUEST,
            "a message is sent as Content-Type: application/json",
        );
    }
    if !accepts(&headers, "text/event-stream") {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            INVALID_REQUEST,
            "the client must accept text/event-stream (and application/json): answers come \
             as an event stream",
        );
    }
    let bytes = match axum::body::to_bytes(request.into_body(), served.front.max_body).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return rpc_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                INVALID_REQUEST,
                &format!("the message is over {} bytes", served.front.max_body),
            );
        }
    };
    if let Some(depth) = toolgate_runtime::nesting::nests_deeper(&bytes, MAX_NESTING) {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            INVALID_REQUEST,
            &format!("the message nests {depth} levels deep; at most {MAX_NESTING} are taken"),
        );
    }
    let message: Value = match serde_json::from_slice(&bytes) {
        Ok(message) => message,
        Err(e) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                PARSE_ERROR,
                &format!("not JSON: {e}"),
            );
        }
    };
    let Some(object) = message.as_object() else {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            INVALID_REQUEST,
            "a message is one JSON-RPC object (MCP has no batches since 2025-06-18)",
        );
    };
    let method = object.get("method").and_then(Value::as_str);
    let id = object
        .get("id")
        .filter(|id| id.is_string() || id.is_number());
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0")
        || (method.is_none() && id.is_none())
    {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            INVALID_REQUEST,
            "not a JSON-RPC 2.0 request, notification or answer",
        );
    }
    let text = String::from_utf8_lossy(&bytes)
        .trim()
        .replace(['\n', '\r'], " ");
    let (session, fresh) = if method == Some("initialize") {
        if id.is_none() {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                "`initialize` is a request: it has an id (a string or a number)",
            );
        }
        if headers.contains_key("mcp-session-id") {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                "`initialize` starts a session: send it without an Mcp-Session-Id",
            );
        }
        let version = message
            .pointer("/params/protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        match served.start(version) {
            Ok((id, session)) => (session, Some(id)),
            Err(refused) => return refused.into_response(),
        }
    } else {
        match served.session_of(&headers) {
            Ok(session) => (session, None),
            Err(refused) => {
                // A client that looks for a stateless server first (`server/discover`) is
                // told at once that this one is not, and initializes.
                if method == Some("server/discover") && !headers.contains_key("mcp-session-id") {
                    let answer = json!({"jsonrpc": "2.0", "id": id.cloned().unwrap_or(Value::Null),
                        "error": {"code": -32601, "message": "Method not found: initialize a session"}});
                    return (
                        StatusCode::OK,
                        [(header::CONTENT_TYPE, "application/json")],
                        answer.to_string(),
                    )
                        .into_response();
                }
                return refused.into_response();
            }
        }
    };
    let input = lock(&session.input).clone();
    let Some(input) = input else {
        return rpc_error(StatusCode::NOT_FOUND, INVALID_REQUEST, "the session ended");
    };
    let (Some(_), Some(id)) = (method, id) else {
        // A notification, or the client's answer to a server's request: taken.
        if input.send(text).await.is_err() {
            return rpc_error(StatusCode::NOT_FOUND, INVALID_REQUEST, "the session ended");
        }
        return StatusCode::ACCEPTED.into_response();
    };
    let receiver = {
        let mut streams = lock(&session.streams);
        let key = id_key(id);
        if streams.waiting.contains_key(&key) {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                &format!("request id {key} is already waiting for its answer"),
            );
        }
        let (number, receiver) = streams.open(session.version.as_str() >= PRIMING_SINCE, false);
        streams.waiting.insert(key, number);
        receiver
    };
    if input.send(text).await.is_err() {
        return rpc_error(StatusCode::NOT_FOUND, INVALID_REQUEST, "the session ended");
    }
    let mut response = event_stream(receiver);
    if let Some(id) = fresh
        && let Ok(value) = HeaderValue::from_str(&id)
    {
        response.headers_mut().insert("mcp-session-id", value);
    }
    response
}

/// The session's own stream, for what the servers send on their own.
fn get<S: Switch>(served: &Served<S>, headers: &HeaderMap) -> Response {
    if !accepts(headers, "text/event-stream") {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            INVALID_REQUEST,
            "the session's stream is text/event-stream",
        );
    }
    let session = match served.session_of(headers) {
        Ok(session) => session,
        Err(refused) => return refused.into_response(),
    };
    let mut streams = lock(&session.streams);
    // A client that lost a request's stream resumes it from the last event it saw.
    if let Some((number, after)) = headers
        .get("last-event-id")
        .and_then(|h| h.to_str().ok())
        .and_then(|id| id.split_once('-'))
        .and_then(|(n, e)| Some((n.parse::<u64>().ok()?, e.parse::<u64>().ok()?)))
        && let Some(receiver) = streams.resume(number, after)
    {
        drop(streams);
        return event_stream(receiver);
    }
    if let Some(open) = streams.standalone {
        if streams.open.get(&open).is_some_and(Stream::live) {
            return rpc_error(
                StatusCode::CONFLICT,
                INVALID_REQUEST,
                "the session's stream is open already (one GET stream a session)",
            );
        }
        streams.close(open);
    }
    let (number, receiver) = streams.open(session.version.as_str() >= PRIMING_SINCE, true);
    let backlog: Vec<String> = streams.backlog.drain(..).collect();
    for text in backlog {
        if !streams.send(number, &text, false) {
            eprintln!("toolgate: a message kept for the session's stream was dropped");
        }
    }
    drop(streams);
    event_stream(receiver)
}

/// An event-stream response whose body is what `receiver` gets.
fn event_stream(mut receiver: mpsc::Receiver<Bytes>) -> Response {
    let body = Body::from_stream(futures_util::stream::poll_fn(move |cx| {
        receiver
            .poll_recv(cx)
            .map(|frame| frame.map(Ok::<_, Infallible>))
    }));
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// Whether the request's `Accept` takes `media` (or anything: `*/*`, or no `Accept`).
fn accepts(headers: &HeaderMap, media: &str) -> bool {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|h| h.to_str().ok()) else {
        return false;
    };
    accept.split(',').any(|part| {
        let kind = part.split(';').next().unwrap_or_default().trim();
        kind.eq_ignore_ascii_case(media) || kind == "*/*"
    })
}

/// A `Host` header's name and port (`[::1]:8080` → `[::1]`, 8080).
fn split_host(host: &str) -> (&str, Option<u16>) {
    let (name, port) = match host.rfind(':') {
        Some(colon) if !host[colon..].contains(']') => (&host[..colon], host.get(colon + 1..)),
        _ => (host, None),
    };
    // A port that is not a number is no port of ours (`u16::MAX` + 1 cannot match).
    let port = port.map(|p| p.parse::<u16>().unwrap_or(0));
    (name, port)
}

/// Compares tokens in time that does not depend on where they differ.
fn same(expected: &str, given: &str) -> bool {
    use subtle::ConstantTimeEq;
    expected.len() == given.len() && bool::from(expected.as_bytes().ct_eq(given.as_bytes()))
}

/// A new bearer token for the front: 256 random bits, as hex.
pub fn new_token() -> Option<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).ok()?;
    Some(hex::encode(bytes))
}

/// A new session's id: 128 random bits, as hex.
fn session_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(hex::encode(bytes))
}

/// A request refused before it reached a session: its status and why.
struct Refusal {
    status: StatusCode,
    message: String,
}

impl Refusal {
    fn new(status: StatusCode, message: impl Into<String>) -> Refusal {
        Refusal {
            status,
            message: message.into(),
        }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let mut response = rpc_error(self.status, INVALID_REQUEST, &self.message);
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"toolgate\""),
            );
        }
        response
    }
}

/// A JSON-RPC error (with no id) as the body of an HTTP error.
fn rpc_error(status: StatusCode, code: i64, message: &str) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// A plain-text answer.
fn plain(status: StatusCode, text: &'static str) -> Response {
    (status, text).into_response()
}

fn lock<T>(shared: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    shared
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frames_head_says_whether_it_answers_without_building_it() {
        assert!(crate::Head::of(r#"{"jsonrpc":"2.0","id":1,"result":null}"#).is_answer());
        assert!(crate::Head::of(r#"{"id":"a","error":{"code":1}}"#).is_answer());
        assert!(!crate::Head::of(r#"{"id":1,"method":"ping"}"#).is_answer());
        assert!(!crate::Head::of(r#"{"method":"notifications/progress"}"#).is_answer());
        assert!(!crate::Head::of("not json").is_answer());
        assert_eq!(id_key(&json!(1.0)), id_key(&json!(1)));
    }

    #[test]
    fn a_host_header_splits_into_its_name_and_port() {
        assert_eq!(split_host("localhost:8080"), ("localhost", Some(8080)));
        assert_eq!(split_host("[::1]:9"), ("[::1]", Some(9)));
        assert_eq!(split_host("[::1]"), ("[::1]", None));
        assert_eq!(split_host("example.com"), ("example.com", None));
        assert_eq!(split_host("evil.com:x"), ("evil.com", Some(0)));
    }

    #[test]
    fn accept_headers_are_read_by_media_type() {
        let mut headers = HeaderMap::new();
        assert!(!accepts(&headers, "text/event-stream"));
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream;q=0.9"),
        );
        assert!(accepts(&headers, "text/event-stream"));
        headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        assert!(!accepts(&headers, "text/event-stream"));
        headers.insert(header::ACCEPT, HeaderValue::from_static("*/*"));
        assert!(accepts(&headers, "text/event-stream"));
    }
}
