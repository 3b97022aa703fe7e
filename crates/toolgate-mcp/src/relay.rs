//! The stdio relay: the client on this process's stdin and stdout, the server a child process
//! with its own stdin and stdout (its stderr is this process's: clients log it). One task reads
//! each side, line by line, through the [`Gate`]; one task writes each side, in order.
//!
//! When the client closes its side, the server's input is closed and the server given a moment
//! to finish; when the server's output ends, what it said is delivered and the relay ends with
//! the server's exit status.

use std::ffi::OsString;
use std::fmt;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};

use crate::{Gate, Options, Out};

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

/// Runs `program args…` as the server and relays between it and this process's stdin and
/// stdout until either side ends. Returns the server's exit code (1 when a signal ended it).
pub async fn relay_stdio(
    options: Options,
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
    let gate = Arc::new(Mutex::new(Gate::new(options)));
    let (to_client, client_queue) = mpsc::channel::<String>(256);
    let (to_server, server_queue) = mpsc::channel::<String>(256);
    let client_writer = tokio::spawn(write_lines(client_output(), client_queue));
    let server_writer = tokio::spawn(write_lines(server_in, server_queue));

    // The client's side: judged, then to the server (or answered here).
    let to_client_for_expiry = to_client.clone();
    let mut from_client = {
        let gate = Arc::clone(&gate);
        let to_client = to_client.clone();
        tokio::spawn(async move {
            let mut lines =
                FramedRead::new(client_input(), LinesCodec::new_with_max_length(MAX_LINE));
            while let Some(line) = lines.next().await {
                let outs = match line {
                    Ok(line) => lock(&gate).from_client(&line),
                    Err(LinesCodecError::MaxLineLengthExceeded) => {
                        vec![crate::error(
                            &serde_json::Value::Null,
                            crate::INVALID_REQUEST,
                            "the message is longer than 16 MiB",
                        )]
                    }
                    Err(LinesCodecError::Io(_)) => break,
                };
                for out in outs {
                    let sent = match out {
                        Out::ToServer(text) => to_server.send(text).await.is_ok(),
                        Out::ToClient(text) => to_client.send(text).await.is_ok(),
                    };
                    if !sent {
                        return;
                    }
                }
            }
            // The client is gone: the server's input closes when this sender drops.
        })
    };

    // The server's side: to the client, `tools/list` answers filtered.
    let mut from_server = {
        let gate = Arc::clone(&gate);
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
                let outs = lock(&gate).from_server(&line);
                if outs.is_empty() && !line.trim().is_empty() {
                    eprintln!(
                        "toolgate: the server wrote a line that is not a JSON-RPC message; not \
                         relayed"
                    );
                }
                for out in outs {
                    if let Out::ToClient(text) = out
                        && to_client.send(text).await.is_err()
                    {
                        return;
                    }
                }
            }
        })
    };

    // Questions nobody answers in time: their calls refused, the questions withdrawn.
    let expiry = {
        let gate = Arc::clone(&gate);
        let to_client = to_client_for_expiry;
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(500));
            loop {
                tick.tick().await;
                let outs = lock(&gate).expire(std::time::Instant::now());
                for out in outs {
                    if let Out::ToClient(text) = out
                        && to_client.send(text).await.is_err()
                    {
                        return;
                    }
                }
            }
        })
    };

    let status = tokio::select! {
        // The server ended (or closed its output): deliver what it said.
        _ = &mut from_server => {
            from_client.abort();
            child.wait().await.map_err(RelayError::Io)?
        }
        // The client ended: the server's input is closed; it finishes, or is killed.
        _ = &mut from_client => {
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
    // Whatever is queued for the client is written before the relay ends.
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

fn lock(gate: &Mutex<Gate>) -> std::sync::MutexGuard<'_, Gate> {
    gate.lock()
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
