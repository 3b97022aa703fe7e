//! The stdio relay: the client on this process's stdin and stdout, each server a child process
//! with its own stdin and stdout (its stderr is this process's: clients log it). One task reads
//! each side, line by line, through the [`Switch`] — one server's [`Gate`], or the [`Hub`] of
//! many — and one task writes each side, in order.
//!
//! When the client closes its side, the servers' inputs are closed and the servers given a
//! moment to finish. Behind a gate (one server), when its output ends, what it said is delivered and the
//! relay ends with its exit status; behind a hub, a server that ends fails what waits on it,
//! and the relay ends when every server has.

use std::ffi::OsString;
use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::bytes::BytesMut;
use tokio_util::codec::{Decoder, FramedRead};

use toolgate_policy::Call;

use crate::{Daemon, Gate, Hub, Out, Routed, Submitted, Verdict};

/// The longest line read from either side (16 MiB, as rmcp's own transport reads).
const MAX_LINE: usize = 16 * 1024 * 1024;

/// One line read from a side.
#[derive(Debug, PartialEq)]
pub(crate) enum Frame {
    /// A line (without its newline, nor a carriage return before it).
    Line(String),
    /// A line longer than [`MAX_LINE`], dropped.
    TooLong,
    /// A line that is not UTF-8 (so not JSON), dropped.
    NotText,
}

/// Splits a side's bytes into lines. Unlike `LinesCodec`, a line too long or not UTF-8 is
/// reported and the reading goes on (a decoder's error ends a `FramedRead`).
#[derive(Default)]
struct Frames {
    /// Where to look for the next newline (the bytes before hold none).
    scanned: usize,
    /// Dropping the rest of a line that was too long.
    discarding: bool,
}

impl Decoder for Frames {
    type Item = Frame;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, std::io::Error> {
        let found = buf
            .get(self.scanned..)
            .and_then(|rest| rest.iter().position(|b| *b == b'\n'));
        let Some(at) = found.map(|i| i + self.scanned) else {
            // (A line of the longest length may still have its `\r` before the newline.)
            if buf.len() > MAX_LINE + 1 {
                buf.clear();
                self.discarding = true;
            }
            self.scanned = buf.len();
            return Ok(None);
        };
        let mut line = buf.split_to(at + 1);
        self.scanned = 0;
        if std::mem::take(&mut self.discarding) {
            return Ok(Some(Frame::TooLong));
        }
        line.truncate(at);
        if line.last() == Some(&b'\r') {
            line.truncate(at - 1);
        }
        if line.len() > MAX_LINE {
            return Ok(Some(Frame::TooLong));
        }
        Ok(Some(match String::from_utf8(line.to_vec()) {
            Ok(text) => Frame::Line(text),
            Err(_) => Frame::NotText,
        }))
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, std::io::Error> {
        if let Some(frame) = self.decode(buf)? {
            return Ok(Some(frame));
        }
        if buf.is_empty() {
            return Ok(None);
        }
        // A last line without its newline.
        let mut line = buf.split_to(buf.len());
        self.scanned = 0;
        if std::mem::take(&mut self.discarding) || line.len() > MAX_LINE + 1 {
            return Ok(Some(Frame::TooLong));
        }
        if line.last() == Some(&b'\r') {
            line.truncate(line.len() - 1);
        }
        if line.len() > MAX_LINE {
            return Ok(Some(Frame::TooLong));
        }
        Ok(Some(match String::from_utf8(line.to_vec()) {
            Ok(text) => Frame::Line(text),
            Err(_) => Frame::NotText,
        }))
    }
}

/// At most this many frames for the servers wait for room in their full queues at once.
const MAX_OVERFLOW: usize = 4096;

/// How long a server whose client went away has to exit before it is killed.
const GRACE: Duration = Duration::from_secs(5);

/// Why the relay could not run.
#[derive(Debug)]
pub enum RelayError {
    /// The server's program could not be started.
    Spawn(String, std::io::Error),
    /// Reading or writing a side failed.
    Io(std::io::Error),
}

impl fmt::Display for RelayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RelayError::Spawn(program, e) => write!(f, "cannot start the server `{program}`: {e}"),
            RelayError::Io(e) => write!(f, "the relay failed: {e}"),
        }
    }
}

impl std::error::Error for RelayError {}

/// How a server is started.
#[derive(Clone, Debug, Default)]
pub struct ServerCommand {
    /// The program.
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Environment variables added to this process's.
    pub env: Vec<(OsString, OsString)>,
    /// The folder it starts in (default: this process's).
    pub cwd: Option<PathBuf>,
    /// A remote server reached over Streamable HTTP instead of a program started (`program`,
    /// `args`, `env` and `cwd` are then not used).
    pub remote: Option<crate::remote::Remote>,
}

/// What the relay drives: the frames of each side in, where they go out.
pub trait Switch: Send + 'static {
    /// A frame from the client.
    fn client_said(&mut self, line: &str) -> Vec<Routed>;
    /// A frame from server `server`.
    fn server_said(&mut self, server: usize, line: &str) -> Vec<Routed>;
    /// Server `server`'s output ended.
    fn server_ended(&mut self, server: usize) -> Vec<Routed>;
    /// Server `server` was started again after it ended.
    fn server_restarted(&mut self, _server: usize) -> Vec<Routed> {
        Vec::new()
    }
    /// Whether a server that ends is started again (a hub's, however many it serves); if not,
    /// the relay ends with its server.
    fn restarts(&self) -> bool {
        false
    }
    /// Questions nobody answered by `now`.
    fn expire(&mut self, now: Instant) -> Vec<Routed>;
    /// The daemon holds a call for a person (see [`Gate::pending`]).
    fn pending(
        &mut self,
        server: usize,
        key: u64,
        request: &str,
        reason: &str,
        page: &str,
    ) -> Vec<Routed>;
    /// The daemon decided a call (see [`Gate::decided`]).
    fn decided(&mut self, server: usize, key: u64, verdict: &Verdict) -> Vec<Routed>;
    /// The client went away (see [`Gate::abandon_all`]).
    fn abandon_all(&mut self) -> Vec<Routed>;
}

/// A gate's frames, routed (its server is server 0).
fn routed(outs: Vec<Out>) -> Vec<Routed> {
    outs.into_iter()
        .map(|out| match out {
            Out::ToServer(text) => Routed::ToServer(0, text),
            Out::ToClient(text) => Routed::ToClient(text),
            Out::ToDaemon { key, call } => Routed::ToDaemon {
                server: 0,
                key,
                call,
            },
            Out::Withdraw(request) => Routed::Withdraw(request),
            Out::Report(call) => Routed::Report(call),
        })
        .collect()
}

impl Switch for Gate {
    fn client_said(&mut self, line: &str) -> Vec<Routed> {
        routed(Gate::from_client(self, line))
    }
    fn server_said(&mut self, _: usize, line: &str) -> Vec<Routed> {
        routed(Gate::from_server(self, line))
    }
    fn server_ended(&mut self, _: usize) -> Vec<Routed> {
        Vec::new()
    }
    fn expire(&mut self, now: Instant) -> Vec<Routed> {
        routed(Gate::expire(self, now))
    }
    fn pending(
        &mut self,
        _: usize,
        key: u64,
        request: &str,
        reason: &str,
        page: &str,
    ) -> Vec<Routed> {
        routed(Gate::pending(self, key, request, reason, page))
    }
    fn decided(&mut self, _: usize, key: u64, verdict: &Verdict) -> Vec<Routed> {
        routed(Gate::decided(self, key, verdict))
    }
    fn abandon_all(&mut self) -> Vec<Routed> {
        routed(Gate::abandon_all(self))
    }
}

impl Switch for Hub {
    fn client_said(&mut self, line: &str) -> Vec<Routed> {
        Hub::from_client(self, line)
    }
    fn server_said(&mut self, server: usize, line: &str) -> Vec<Routed> {
        Hub::from_server(self, server, line)
    }
    fn server_ended(&mut self, server: usize) -> Vec<Routed> {
        Hub::server_ended(self, server)
    }
    fn server_restarted(&mut self, server: usize) -> Vec<Routed> {
        Hub::server_restarted(self, server)
    }
    fn restarts(&self) -> bool {
        true
    }
    fn expire(&mut self, now: Instant) -> Vec<Routed> {
        Hub::expire(self, now)
    }
    fn pending(
        &mut self,
        server: usize,
        key: u64,
        request: &str,
        reason: &str,
        page: &str,
    ) -> Vec<Routed> {
        Hub::pending(self, server, key, request, reason, page)
    }
    fn decided(&mut self, server: usize, key: u64, verdict: &Verdict) -> Vec<Routed> {
        Hub::decided(self, server, key, verdict)
    }
    fn abandon_all(&mut self) -> Vec<Routed> {
        Hub::abandon_all(self)
    }
}

/// What the relay's tasks share: the switch, the client's queue, and the daemon that decides
/// (with `--daemon`) with the tasks asking it.
struct Shared<S> {
    switch: Mutex<S>,
    to_client: mpsc::Sender<String>,
    daemon: Option<Arc<dyn Daemon>>,
    /// How long a call waits for a person on the daemon's page.
    wait: Duration,
    /// The tasks waiting for the daemon (ended when the relay ends).
    asking: Mutex<JoinSet<()>>,
    /// Frames for the servers waiting for room in a full queue (see [`Shared::deliver`]).
    overflow: AtomicUsize,
}

/// The servers' queues: only the client's task and those asking the daemon hold them, so when
/// they end, the servers' inputs close.
type ToServers = Arc<Vec<mpsc::Sender<String>>>;

impl<S: Switch> Shared<S> {
    /// Sends each frame where it goes. `false` when the client is gone.
    ///
    /// Only the client's task waits for room in a server's queue (the client waits with it).
    /// Any other task — a server's reader answering that server, the expiry, a daemon's
    /// answer — hands a frame that does not fit to a task of its own: a server that writes
    /// requests without reading its answers must not stop its own output being read.
    async fn deliver(self: &Arc<Self>, to_servers: Option<&ToServers>, outs: Vec<Routed>) -> bool {
        self.deliver_from(to_servers, outs, false).await
    }

    /// [`Shared::deliver`] from the client's task: it waits for room in a server's queue.
    async fn deliver_from_client(
        self: &Arc<Self>,
        to_servers: &ToServers,
        outs: Vec<Routed>,
    ) -> bool {
        self.deliver_from(Some(to_servers), outs, true).await
    }

    async fn deliver_from(
        self: &Arc<Self>,
        to_servers: Option<&ToServers>,
        outs: Vec<Routed>,
        wait_for_room: bool,
    ) -> bool {
        for out in outs {
            match out {
                Routed::ToServer(i, text) => {
                    // A server that is gone drops what was meant for it (the hub fails what
                    // waits on it).
                    let Some(queue) = to_servers.and_then(|queues| queues.get(i)) else {
                        continue;
                    };
                    match queue.try_send(text) {
                        Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => {}
                        Err(mpsc::error::TrySendError::Full(text)) if wait_for_room => {
                            let _ = queue.send(text).await;
                        }
                        Err(mpsc::error::TrySendError::Full(text)) => {
                            // Bounded: a server that reads none of thousands of answers is not
                            // answered any more.
                            if self.overflow.fetch_add(1, Ordering::AcqRel) >= MAX_OVERFLOW {
                                self.overflow.fetch_sub(1, Ordering::AcqRel);
                                eprintln!(
                                    "toolgate: a server reads none of its answers; one dropped"
                                );
                                continue;
                            }
                            let queue = queue.clone();
                            let shared = Arc::clone(self);
                            tokio::spawn(async move {
                                let _ = queue.send(text).await;
                                shared.overflow.fetch_sub(1, Ordering::AcqRel);
                            });
                        }
                    }
                }
                Routed::ToClient(text) => {
                    if self.to_client.send(text).await.is_err() {
                        return false;
                    }
                }
                Routed::ToDaemon { server, key, call } => {
                    if let Some(queues) = to_servers {
                        let task = Arc::clone(self).ask(Arc::clone(queues), server, key, *call);
                        let mut asking = lock(&self.asking);
                        // The tasks that ended are let go of (a long session asks many times).
                        while asking.try_join_next().is_some() {}
                        asking.spawn(task);
                    }
                }
                Routed::Withdraw(request) => {
                    if let Some(daemon) = self.daemon.clone() {
                        // Not awaited: the page learns it as soon as the daemon does.
                        tokio::task::spawn_blocking(move || daemon.withdraw(&request));
                    }
                }
                Routed::Report(call) => {
                    if let Some(daemon) = self.daemon.clone() {
                        // Not awaited: the result is the client's already.
                        tokio::task::spawn_blocking(move || daemon.report(&call, None));
                    }
                }
                Routed::Answer {
                    request,
                    choice,
                    by,
                } => {
                    if let Some(daemon) = self.daemon.clone() {
                        // Not awaited: the task waiting on the request hears the verdict.
                        tokio::task::spawn_blocking(move || daemon.answer(&request, choice, &by));
                    }
                }
            }
        }
        true
    }

    /// Asks the daemon about call `key` of server `server` and delivers what came of it.
    fn ask(
        self: Arc<Self>,
        to_servers: ToServers,
        server: usize,
        key: u64,
        call: Call,
    ) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async move {
            let Some(daemon) = self.daemon.clone() else {
                let verdict = Verdict::undecided("toolgate: no daemon to decide");
                let outs = lock(&self.switch).decided(server, key, &verdict);
                self.deliver(Some(&to_servers), outs).await;
                return;
            };
            let deadline = Instant::now() + self.wait;
            let asking = Arc::clone(&daemon);
            let submitted = tokio::task::spawn_blocking(move || asking.submit(&call)).await;
            let verdict = match submitted {
                Ok(Submitted::Decided(verdict)) => verdict,
                Ok(Submitted::Pending { id, reason }) => {
                    let outs =
                        lock(&self.switch).pending(server, key, &id, &reason, &daemon.page());
                    let withdrawn = outs.iter().any(|o| matches!(o, Routed::Withdraw(_)));
                    if !self.deliver(Some(&to_servers), outs).await || withdrawn {
                        return;
                    }
                    let waiting = Arc::clone(&daemon);
                    match tokio::task::spawn_blocking(move || waiting.wait(&id, deadline)).await {
                        Ok(mut verdict) => {
                            if verdict.decision.is_none() {
                                verdict.reason = format!("{reason} — {}", verdict.reason);
                            }
                            verdict
                        }
                        Err(e) => Verdict::undecided(format!("{reason} — toolgate: {e}")),
                    }
                }
                Err(e) => Verdict::undecided(format!("toolgate: asking the daemon failed: {e}")),
            };
            let outs = lock(&self.switch).decided(server, key, &verdict);
            self.deliver(Some(&to_servers), outs).await;
        })
    }
}

/// A server's queue of lines to write, shared by the writers of its successive processes.
type Queue = Arc<tokio::sync::Mutex<mpsc::Receiver<String>>>;

/// A server's running process (or link to a remote server).
struct Running {
    /// The process (`None`: a remote server).
    child: Option<tokio::process::Child>,
    output: Box<dyn tokio::io::AsyncRead + Unpin + Send>,
    writer: tokio::task::JoinHandle<()>,
}

impl Running {
    /// Waits for the process to exit (at most [`GRACE`]; then it is killed).
    async fn ended(&mut self) -> Option<std::process::ExitStatus> {
        let child = self.child.as_mut()?;
        match tokio::time::timeout(GRACE, child.wait()).await {
            Ok(status) => status.ok(),
            Err(_) => {
                let _ = child.kill().await;
                child.wait().await.ok()
            }
        }
    }
}

/// The first wait before a server that ended is started again; it doubles each time, up to
/// [`MOST_BACKOFF`], and starts over once a server ran a minute.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MOST_BACKOFF: Duration = Duration::from_secs(30);

/// Starts a server's process, its input written from `queue`.
fn start(command: &ServerCommand, queue: &Queue) -> Result<Running, RelayError> {
    if let Some(remote) = &command.remote {
        let (output, link_side) = tokio::io::duplex(64 * 1024);
        let writer = tokio::spawn(crate::remote::run(
            remote.clone(),
            Arc::clone(queue),
            link_side,
        ));
        return Ok(Running {
            child: None,
            output: Box::new(output),
            writer,
        });
    }
    let mut process = tokio::process::Command::new(&command.program);
    process
        .args(&command.args)
        .envs(command.env.iter().cloned())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    if let Some(cwd) = &command.cwd {
        process.current_dir(cwd);
    }
    let mut child = process
        .spawn()
        .map_err(|e| RelayError::Spawn(command.program.to_string_lossy().into_owned(), e))?;
    let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(RelayError::Io(std::io::Error::other(
            "the server's stdin and stdout were not piped",
        )));
    };
    let writer = tokio::spawn(write_queue(input, Arc::clone(queue)));
    Ok(Running {
        child: Some(child),
        output: Box::new(output),
        writer,
    })
}

/// Writes a server's queued lines to one of its processes, until the queue closes (the client
/// ended) or the process stops reading.
async fn write_queue(out: tokio::process::ChildStdin, queue: Queue) {
    let mut queue = queue.lock().await;
    write_lines(out, &mut queue).await;
}

/// How reading a server's output ended.
enum Ended {
    /// Its output ended.
    Output,
    /// The relay is stopping (or the client is gone).
    Stop,
}

/// Reads server `i`'s output through the switch, until it ends or the relay stops. What the
/// switch answers a server with goes to the servers' queues while the relay holds them.
async fn read_server<S: Switch>(
    i: usize,
    shared: &Arc<Shared<S>>,
    output: &mut Box<dyn tokio::io::AsyncRead + Unpin + Send>,
    to_servers: &std::sync::Weak<Vec<mpsc::Sender<String>>>,
    stop: &mut tokio::sync::watch::Receiver<bool>,
) -> Ended {
    let mut lines = FramedRead::new(output, Frames::default());
    // One wait for the stop, for the whole read (not one per line).
    let stopped = stop.wait_for(|stop| *stop);
    tokio::pin!(stopped);
    loop {
        let line = tokio::select! {
            line = lines.next() => line,
            _ = &mut stopped => return Ended::Stop,
        };
        let line = match line {
            Some(Ok(Frame::Line(line))) => line,
            Some(Ok(Frame::TooLong)) => {
                eprintln!("toolgate: a server wrote a line longer than 16 MiB; dropped");
                continue;
            }
            Some(Ok(Frame::NotText)) => {
                eprintln!("toolgate: a server wrote a line that is not UTF-8; dropped");
                continue;
            }
            Some(Err(_)) | None => return Ended::Output,
        };
        let outs = lock(&shared.switch).server_said(i, &line);
        if outs.is_empty() && !line.trim().is_empty() {
            eprintln!(
                "toolgate: a server wrote a line that is not a JSON-RPC message; not relayed"
            );
        }
        let queues = to_servers.upgrade();
        if !shared.deliver(queues.as_ref(), outs).await {
            return Ended::Stop;
        }
    }
}

/// Ends a server's process: its input closes once the client's queue does (bounded), then it
/// has [`GRACE`] to exit before it is killed.
async fn finish(mut running: Running) -> Option<std::process::ExitStatus> {
    let _ = tokio::time::timeout(GRACE, &mut running.writer).await;
    running.writer.abort();
    running.ended().await
}

/// Runs server `i` for the relay: relays its output, and when it ends, fails what waited on
/// it and — behind a hub — starts it again after a backoff, initialized as the client
/// initialized the hub. Returns its last exit status.
#[allow(clippy::too_many_arguments)]
async fn supervise<S: Switch>(
    i: usize,
    command: ServerCommand,
    shared: Arc<Shared<S>>,
    queue: Queue,
    to_servers: std::sync::Weak<Vec<mpsc::Sender<String>>>,
    mut running: Running,
    restart: bool,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> Option<std::process::ExitStatus> {
    let mut backoff = FIRST_BACKOFF;
    loop {
        let started = Instant::now();
        if let Ended::Stop =
            read_server(i, &shared, &mut running.output, &to_servers, &mut stop).await
        {
            return finish(running).await;
        }
        let outs = lock(&shared.switch).server_ended(i);
        let client_there = shared.deliver(None, outs).await;
        running.writer.abort();
        let status = running.ended().await;
        if !restart || !client_there {
            return status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            backoff = FIRST_BACKOFF;
        }
        // Started again, after a wait that grows while it keeps ending.
        running = loop {
            eprintln!(
                "toolgate: server {} of the hub ended; starting it again in {} ms",
                i + 1,
                backoff.as_millis()
            );
            tokio::select! {
                () = tokio::time::sleep(backoff) => {}
                _ = stop.wait_for(|stop| *stop) => return status,
            }
            backoff = (backoff * 2).min(MOST_BACKOFF);
            // What was queued for the process that ended is not for the next.
            {
                let mut queued = queue.lock().await;
                while queued.try_recv().is_ok() {}
            }
            match start(&command, &queue) {
                Ok(running) => break running,
                Err(e) => eprintln!("toolgate: {e}"),
            }
        };
        let outs = lock(&shared.switch).server_restarted(i);
        let queues = to_servers.upgrade();
        if !shared.deliver(queues.as_ref(), outs).await {
            return finish(running).await;
        }
    }
}

/// Starts the servers and relays between them and this process's stdin and stdout through
/// `switch`, until the client ends, or the servers do; with a `daemon`, it decides the calls
/// (waiting up to its duration for a person on its page). With one server, the relay ends
/// when it does, with its exit code (1 when a signal ended it); behind a hub, a server that
/// ends is started again (after a backoff), and the relay ends with the client, with 0.
pub async fn relay<S: Switch>(
    switch: S,
    servers: Vec<ServerCommand>,
    daemon: Option<(Arc<dyn Daemon>, Duration)>,
) -> Result<i32, RelayError> {
    let (to_client, client_queue) = mpsc::channel::<String>(256);
    let client_writer = tokio::spawn(async move {
        let mut client_queue = client_queue;
        write_lines(client_output(), &mut client_queue).await;
    });
    let input = FramedRead::new(client_input(), Frames::default());
    let relayed = relay_client(switch, servers, daemon, input, to_client).await;
    // Whatever is queued for the client is written before the relay ends.
    let _ = tokio::time::timeout(GRACE, client_writer).await;
    relayed
}

/// [`relay`] for a client that speaks through `input` and is written to through `to_client`
/// (the relay ends when `input` does; what it says to the client is in `to_client` when it
/// returns).
pub(crate) async fn relay_client<S: Switch>(
    switch: S,
    servers: Vec<ServerCommand>,
    daemon: Option<(Arc<dyn Daemon>, Duration)>,
    input: impl futures_util::Stream<Item = Result<Frame, std::io::Error>> + Send + Unpin + 'static,
    to_client: mpsc::Sender<String>,
) -> Result<i32, RelayError> {
    // One server behind a gate: the relay ends with it. Behind a hub: with the client.
    let one = !switch.restarts();
    let mut senders = Vec::new();
    let mut started = Vec::new();
    for server in &servers {
        let (sender, queued) = mpsc::channel::<String>(256);
        let queue: Queue = Arc::new(tokio::sync::Mutex::new(queued));
        let running = start(server, &queue)?;
        senders.push(sender);
        started.push((queue, running));
    }
    let to_servers: ToServers = Arc::new(senders);
    let (daemon, wait) = match daemon {
        Some((daemon, wait)) => (Some(daemon), wait),
        None => (None, Duration::ZERO),
    };
    let shared = Arc::new(Shared {
        switch: Mutex::new(switch),
        to_client,
        daemon,
        wait,
        asking: Mutex::new(JoinSet::new()),
        overflow: AtomicUsize::new(0),
    });
    let (stop, stopping) = tokio::sync::watch::channel(false);
    let mut supervisors = JoinSet::new();
    for (i, ((queue, running), command)) in started.into_iter().zip(servers).enumerate() {
        let task = supervise(
            i,
            command,
            Arc::clone(&shared),
            queue,
            Arc::downgrade(&to_servers),
            running,
            !one,
            stopping.clone(),
        );
        supervisors.spawn(async move { (i, task.await) });
    }

    // The client's side: judged, then to the servers (or answered here, or to the daemon).
    // Only this task and those asking the daemon hold the servers' queues: when they end, the
    // servers' inputs close.
    let servers_weak = Arc::downgrade(&to_servers);
    let mut from_client = {
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let mut lines = input;
            while let Some(line) = lines.next().await {
                let outs = match line {
                    Ok(Frame::Line(line)) => lock(&shared.switch).client_said(&line),
                    Ok(Frame::TooLong) => routed(vec![crate::error(
                        &serde_json::Value::Null,
                        crate::INVALID_REQUEST,
                        "the message is longer than 16 MiB",
                    )]),
                    Ok(Frame::NotText) => routed(vec![crate::error(
                        &serde_json::Value::Null,
                        crate::PARSE_ERROR,
                        "the message is not UTF-8",
                    )]),
                    Err(_) => break,
                };
                if !shared.deliver_from_client(&to_servers, outs).await {
                    return;
                }
            }
            // The client is gone: the servers' inputs close when these senders drop.
        })
    };

    // Questions nobody answers in time: their calls refused, the questions withdrawn (the
    // servers told, while the relay holds their queues).
    let expiry = {
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(500));
            loop {
                tick.tick().await;
                let outs = lock(&shared.switch).expire(Instant::now());
                let queues = servers_weak.upgrade();
                if !shared.deliver(queues.as_ref(), outs).await {
                    return;
                }
            }
        })
    };

    // Whatever happens, the requests still on the daemon's page are withdrawn (nobody waits
    // for them), and the tasks waiting on them end.
    let withdraw_all = |shared: &Arc<Shared<S>>| {
        let outs = lock(&shared.switch).abandon_all();
        lock(&shared.asking).abort_all();
        let daemon = shared.daemon.clone();
        async move {
            let Some(daemon) = daemon else { return };
            let requests: Vec<String> = outs
                .into_iter()
                .filter_map(|out| match out {
                    Routed::Withdraw(request) => Some(request),
                    _ => None,
                })
                .collect();
            if requests.is_empty() {
                return;
            }
            let withdrawing = tokio::task::spawn_blocking(move || {
                for request in requests {
                    daemon.withdraw(&request);
                }
            });
            let _ = tokio::time::timeout(GRACE, withdrawing).await;
        }
    };

    // One server: the relay ends with it. Many: with the client (their supervisors end only
    // when the client is gone).
    let mut statuses = Vec::new();
    tokio::select! {
        ended = supervisors.join_next() => {
            if let Some(Ok((_, status))) = ended {
                statuses.push(status);
            }
            from_client.abort();
        }
        _ = &mut from_client => {}
    }
    withdraw_all(&shared).await;
    let _ = stop.send(true);
    // Each server's input closes (the client's queue did), and each ends, or is killed.
    let _ = tokio::time::timeout(GRACE * 3, async {
        while let Some(ended) = supervisors.join_next().await {
            if let Ok((_, status)) = ended {
                statuses.push(status);
            }
        }
    })
    .await;
    supervisors.abort_all();
    expiry.abort();
    drop(shared);
    Ok(match (one, statuses.first()) {
        (true, Some(Some(status))) => status.code().unwrap_or(1),
        _ => 0,
    })
}

/// This process's stdin. A pipe (as MCP clients give) is read without blocking, in the
/// runtime itself; anything else through tokio's blocking stdin, which hands each read to a
/// thread of its own.
fn client_input() -> Box<dyn tokio::io::AsyncRead + Unpin + Send> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        if let Ok(fd) = std::io::stdin().as_fd().try_clone_to_owned()
            && let Ok(pipe) = tokio::net::unix::pipe::Receiver::from_file(std::fs::File::from(fd))
        {
            return Box::new(pipe);
        }
    }
    Box::new(tokio::io::stdin())
}

/// This process's stdout, as [`client_input`] reads stdin.
fn client_output() -> Box<dyn AsyncWrite + Unpin + Send> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        if let Ok(fd) = std::io::stdout().as_fd().try_clone_to_owned()
            && let Ok(pipe) = tokio::net::unix::pipe::Sender::from_file(std::fs::File::from(fd))
        {
            return Box::new(pipe);
        }
    }
    Box::new(tokio::io::stdout())
}

fn lock<T>(shared: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    shared
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Writes each queued line and a newline, flushing when the queue is momentarily empty.
async fn write_lines(mut out: impl AsyncWrite + Unpin, queue: &mut mpsc::Receiver<String>) {
    while let Some(line) = queue.recv().await {
        if out.write_all(line.as_bytes()).await.is_err() || out.write_all(b"\n").await.is_err() {
            return;
        }
        if queue.is_empty() && out.flush().await.is_err() {
            return;
        }
    }
    let _ = out.flush().await;
    let _ = out.shutdown().await;
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn frames(input: &[u8]) -> Vec<Frame> {
        let mut decoder = Frames::default();
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        // Fed in small pieces, as a pipe may give them.
        for piece in input.chunks(7) {
            buf.extend_from_slice(piece);
            while let Some(frame) = decoder.decode(&mut buf).unwrap() {
                out.push(frame);
            }
        }
        while let Some(frame) = decoder.decode_eof(&mut buf).unwrap() {
            out.push(frame);
        }
        out
    }

    #[test]
    fn lines_that_are_not_text_or_too_long_are_reported_and_reading_goes_on() {
        let mut input = b"{\"a\":1}\r\n\xff\xfe\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', MAX_LINE + 10));
        input.extend(b"\nlast\nno newline");
        assert_eq!(
            frames(&input),
            vec![
                Frame::Line("{\"a\":1}".into()),
                Frame::NotText,
                Frame::TooLong,
                Frame::Line("last".into()),
                Frame::Line("no newline".into()),
            ]
        );
        assert_eq!(frames(b""), vec![]);
        assert_eq!(frames(b"last\r"), vec![Frame::Line("last".into())]);
        // The longest line, its carriage return arriving before its newline.
        let mut longest = vec![b'y'; MAX_LINE];
        longest.extend(b"\r\n");
        assert!(matches!(frames(&longest).as_slice(), [Frame::Line(l)] if l.len() == MAX_LINE));
        assert_eq!(frames(b"\n"), vec![Frame::Line(String::new())]);
    }
}
