//! The stdio relay: the client on this process's stdin and stdout, the server a child process
//! with its own stdin and stdout (its stderr is this process's: clients log it). One task reads
//! each side, line by line, through the [`Gate`]; one task writes each side, in order.
//!
//! When the client closes its side, the server's input is closed and the server given a moment
//! to finish; when the server's output ends, what it said is delivered and the relay ends with
//! the server's exit status.

use std::ffi::OsString;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};

use toolgate_policy::Call;

use crate::{Daemon, Gate, Options, Out, Submitted, Verdict};

/// The longest line read from either side (16 MiB, as rmcp's own transport reads).
const MAX_LINE: usize = 16 * 1024 * 1024;

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

/// What the relay's tasks share: the gate, the client's queue, and the daemon that decides
/// (with `--daemon`) with the tasks asking it.
struct Shared {
    gate: Mutex<Gate>,
    to_client: mpsc::Sender<String>,
    daemon: Option<Arc<dyn Daemon>>,
    /// How long a call waits for a person on the daemon's page.
    wait: Duration,
    /// The tasks waiting for the daemon (ended when the relay ends).
    asking: Mutex<JoinSet<()>>,
}

impl Shared {
    /// Sends each frame where it goes. `false` when a side is gone.
    async fn deliver(self: &Arc<Self>, to_server: &mpsc::Sender<String>, outs: Vec<Out>) -> bool {
        for out in outs {
            let sent = match out {
                Out::ToServer(text) => to_server.send(text).await.is_ok(),
                Out::ToClient(text) => self.to_client.send(text).await.is_ok(),
                Out::ToDaemon { key, call } => {
                    let task = Arc::clone(self).ask(to_server.clone(), key, *call);
                    let mut asking = lock(&self.asking);
                    // The tasks that ended are let go of (a long session asks many times).
                    while asking.try_join_next().is_some() {}
                    asking.spawn(task);
                    true
                }
                Out::Withdraw(request) => {
                    if let Some(daemon) = self.daemon.clone() {
                        // Not awaited: the page learns it as soon as the daemon does.
                        tokio::task::spawn_blocking(move || daemon.withdraw(&request));
                    }
                    true
                }
            };
            if !sent {
                return false;
            }
        }
        true
    }

    /// Asks the daemon about call `key` and delivers what came of it.
    fn ask(
        self: Arc<Self>,
        to_server: mpsc::Sender<String>,
        key: u64,
        call: Call,
    ) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async move {
            let Some(daemon) = self.daemon.clone() else {
                let verdict = Verdict::undecided("toolgate: no daemon to decide");
                let outs = lock(&self.gate).decided(key, &verdict);
                self.deliver(&to_server, outs).await;
                return;
            };
            let deadline = std::time::Instant::now() + self.wait;
            let asking = Arc::clone(&daemon);
            let submitted = tokio::task::spawn_blocking(move || asking.submit(&call)).await;
            let verdict = match submitted {
                Ok(Submitted::Decided(verdict)) => verdict,
                Ok(Submitted::Pending { id, reason }) => {
                    let outs = lock(&self.gate).pending(key, &id, &reason, &daemon.page());
                    let withdrawn = outs.iter().any(|o| matches!(o, Out::Withdraw(_)));
                    if !self.deliver(&to_server, outs).await || withdrawn {
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
            let outs = lock(&self.gate).decided(key, &verdict);
            self.deliver(&to_server, outs).await;
        })
    }
}

/// Runs `program args…` as the server and relays between it and this process's stdin and
/// stdout until either side ends; with a `daemon`, it decides the calls (waiting up to `wait`
/// for a person on its page). Returns the server's exit code (1 when a signal ended it).
pub async fn relay_stdio(
    options: Options,
    daemon: Option<(Arc<dyn Daemon>, Duration)>,
    program: OsString,
    args: Vec<OsString>,
) -> Result<i32, RelayError> {
    let mut child = tokio::process::Command::new(&program)
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| RelayError::Spawn(program.to_string_lossy().into_owned(), e))?;
    let (Some(server_in), Some(server_out)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(RelayError::Io(std::io::Error::other(
            "the server's stdin and stdout were not piped",
        )));
    };
    let (to_client, client_queue) = mpsc::channel::<String>(256);
    let (to_server, server_queue) = mpsc::channel::<String>(256);
    let client_writer = tokio::spawn(write_lines(client_output(), client_queue));
    let server_writer = tokio::spawn(write_lines(server_in, server_queue));
    let (daemon, wait) = match daemon {
        Some((daemon, wait)) => (Some(daemon), wait),
        None => (None, Duration::ZERO),
    };
    let shared = Arc::new(Shared {
        gate: Mutex::new(Gate::new(options)),
        to_client,
        daemon,
        wait,
        asking: Mutex::new(JoinSet::new()),
    });

    // The client's side: judged, then to the server (or answered here, or to the daemon).
    // Only this task and those asking the daemon hold the server's queue: when they end, the
    // server's input closes.
    let mut from_client = {
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let mut lines =
                FramedRead::new(client_input(), LinesCodec::new_with_max_length(MAX_LINE));
            while let Some(line) = lines.next().await {
                let outs = match line {
                    Ok(line) => lock(&shared.gate).from_client(&line),
                    Err(LinesCodecError::MaxLineLengthExceeded) => {
                        vec![crate::error(
                            &serde_json::Value::Null,
                            crate::INVALID_REQUEST,
                            "the message is longer than 16 MiB",
                        )]
                    }
                    Err(LinesCodecError::Io(_)) => break,
                };
                if !shared.deliver(&to_server, outs).await {
                    return;
                }
            }
            // The client is gone: the server's input closes when this sender drops.
        })
    };

    // The server's side: to the client, `tools/list` answers filtered.
    let mut from_server = {
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let mut lines = FramedRead::new(server_out, LinesCodec::new_with_max_length(MAX_LINE));
            while let Some(line) = lines.next().await {
                let line = match line {
                    Ok(line) => line,
                    Err(LinesCodecError::MaxLineLengthExceeded) => {
                        eprintln!("toolgate: the server wrote a line longer than 16 MiB; dropped");
                        continue;
                    }
                    Err(LinesCodecError::Io(_)) => break,
                };
                let outs = lock(&shared.gate).from_server(&line);
                if outs.is_empty() && !line.trim().is_empty() {
                    eprintln!(
                        "toolgate: the server wrote a line that is not a JSON-RPC message; not \
                         relayed"
                    );
                }
                for out in outs {
                    if let Out::ToClient(text) = out
                        && shared.to_client.send(text).await.is_err()
                    {
                        return;
                    }
                }
            }
        })
    };

    // Questions nobody answers in time: their calls refused, the questions withdrawn.
    let expiry = {
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(500));
            loop {
                tick.tick().await;
                let outs = lock(&shared.gate).expire(std::time::Instant::now());
                for out in outs {
                    if let Out::ToClient(text) = out
                        && shared.to_client.send(text).await.is_err()
                    {
                        return;
                    }
                }
            }
        })
    };

    // Whatever happens, the requests still on the daemon's page are withdrawn (nobody waits
    // for them), and the tasks waiting on them end.
    let withdraw_all = |shared: &Arc<Shared>| {
        let outs = lock(&shared.gate).abandon_all();
        lock(&shared.asking).abort_all();
        let daemon = shared.daemon.clone();
        async move {
            let Some(daemon) = daemon else { return };
            let requests: Vec<String> = outs
                .into_iter()
                .filter_map(|out| match out {
                    Out::Withdraw(request) => Some(request),
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

    let status = tokio::select! {
        // The server ended (or closed its output): deliver what it said.
        _ = &mut from_server => {
            from_client.abort();
            withdraw_all(&shared).await;
            child.wait().await.map_err(RelayError::Io)?
        }
        // The client ended: the server's input is closed; it finishes, or is killed.
        _ = &mut from_client => {
            withdraw_all(&shared).await;
            let _ = server_writer.await;
            match tokio::time::timeout(GRACE, child.wait()).await {
                Ok(status) => status.map_err(RelayError::Io)?,
                Err(_) => {
                    let _ = child.kill().await;
                    child.wait().await.map_err(RelayError::Io)?
                }
            }
        }
    };
    expiry.abort();
    from_server.abort();
    // Whatever is queued for the client is written before the relay ends.
    drop(shared);
    let _ = tokio::time::timeout(GRACE, client_writer).await;
    Ok(status.code().unwrap_or(1))
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
async fn write_lines(mut out: impl AsyncWrite + Unpin, mut queue: mpsc::Receiver<String>) {
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
