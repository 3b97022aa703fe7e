//! A remote server behind the gateway (an `mcpServers` entry with `url` and `headers`), reached
//! over Streamable HTTP. To the relay it is one more server that reads lines and writes lines:
//! each message queued for it is POSTed (in order: the next is sent once the server has taken
//! the one before), its answers — a JSON body, or an event stream that may carry the server's
//! own requests and notifications before the answer — come back as lines, and the session's
//! GET stream is read for what the server sends on its own. The session id and protocol version
//! the server gave at `initialize` go with every request after; when the client ends, the
//! session is ended (DELETE).
//!
//! A request the server cannot take (a refused connection, an HTTP error) is answered at once
//! with a JSON-RPC error, so nothing waits on it; a session the server no longer knows (404)
//! ends the link, as a server process that ends (behind a hub it is started again).

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

/// A remote server: where it is, and the headers every request carries.
#[derive(Clone, Debug, Default)]
pub struct Remote {
    /// Its Streamable HTTP endpoint (`http://` or `https://`).
    pub url: String,
    /// Headers sent with every request (`Authorization`, …).
    pub headers: Vec<(String, String)>,
}

/// The longest an answer's body is read for (an event stream may stay open while a tool works).
const ANSWER_WAIT: Duration = Duration::from_secs(3600);

/// How long connecting, and a server's taking a message, may take.
const SEND_WAIT: Duration = Duration::from_secs(30);

/// The largest event or JSON body read from a server (as the relay's line limit).
const MAX_MESSAGE: usize = 16 * 1024 * 1024;

/// What the link knows of its session.
#[derive(Default)]
struct Link {
    session: Option<String>,
    version: Option<String>,
}

/// Runs the link to `remote`: messages from `queue` are sent to it, and what it sends is
/// written as lines to `output`, until the queue closes (then the session is ended) or the
/// server no longer knows the session.
pub(crate) async fn run(
    remote: Remote,
    queue: Arc<tokio::sync::Mutex<mpsc::Receiver<String>>>,
    mut output: tokio::io::DuplexStream,
) {
    let client = match client(&remote) {
        Ok(client) => client,
        Err(e) => {
            eprintln!("toolgate: the remote server {}: {e}", remote.url);
            return;
        }
    };
    // One writer of lines, fed by the POSTs' readers and the GET stream's.
    let (lines, mut to_write) = mpsc::channel::<String>(256);
    let writer = tokio::spawn(async move {
        while let Some(line) = to_write.recv().await {
            if output.write_all(line.as_bytes()).await.is_err()
                || output.write_all(b"\n").await.is_err()
            {
                return;
            }
        }
        let _ = output.shutdown().await;
    });
    let mut link = Link::default();
    // The tasks reading answers and the session's GET stream (ended with the link).
    let mut readers = tokio::task::JoinSet::new();
    let mut listening = false;
    let (gone, mut lost) = mpsc::channel::<()>(1);
    let mut queue = queue.lock().await;
    loop {
        let message = tokio::select! {
            message = queue.recv() => message,
            _ = lost.recv() => break,
        };
        let Some(message) = message else {
            end_session(&client, &remote, &link).await;
            break;
        };
        while readers.try_join_next().is_some() {}
        let crate::Head { method, id, .. } = crate::Head::of(&message);
        let request = method.is_some() && id.is_some();
        if request && method.as_deref() != Some("initialize") {
            // A request is sent and its answer read by a task of its own: a long call does not
            // hold up the messages after it.
            let (client, remote, lines) = (client.clone(), remote.clone(), lines.clone());
            let headers = session_headers(link.session.as_deref(), link.version.as_deref());
            let gone = gone.clone();
            readers.spawn(async move {
                let answered = match post(&client, &remote, headers, message, ANSWER_WAIT).await {
                    Ok(response) if response.status() == reqwest::StatusCode::NOT_FOUND => {
                        let _ = gone.try_send(());
                        Err("the remote server ended the session".to_owned())
                    }
                    Ok(response) if response.status().is_success() => {
                        let mut answers = Vec::new();
                        read_answer(response, id.as_ref(), &mut answers, &lines).await;
                        if answers.iter().any(|a| answers_id(a, id.as_ref())) {
                            Ok(())
                        } else {
                            Err("the remote server ended its answer without one".to_owned())
                        }
                    }
                    Ok(response) => Err(format!(
                        "the remote server answered HTTP {}",
                        response.status()
                    )),
                    Err(why) => Err(why),
                };
                // Whatever went wrong, the request is answered: nothing waits on it forever.
                if let Err(why) = answered {
                    let _ = lines.send(failure(id.as_ref(), &why)).await;
                }
            });
            continue;
        }
        let headers = session_headers(link.session.as_deref(), link.version.as_deref());
        let response = match post(&client, &remote, headers, message, SEND_WAIT).await {
            Ok(response) => response,
            Err(why) => {
                if request {
                    let _ = lines.send(failure(id.as_ref(), &why)).await;
                } else {
                    eprintln!("toolgate: the remote server {}: {why}", remote.url);
                }
                continue;
            }
        };
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND && link.session.is_some() {
            eprintln!(
                "toolgate: the remote server {} no longer knows the session; the link ends",
                remote.url
            );
            break;
        }
        if !status.is_success() {
            let why = format!("the remote server answered HTTP {status}");
            if request {
                let _ = lines.send(failure(id.as_ref(), &why)).await;
            } else {
                eprintln!("toolgate: {}: {why}", remote.url);
            }
            continue;
        }
        if request {
            // `initialize`: its answer is read before anything else is sent (its protocol
            // version goes with every request after).
            link.session = response
                .headers()
                .get("mcp-session-id")
                .and_then(|h| h.to_str().ok())
                .map(str::to_owned);
            let mut answers = Vec::new();
            read_answer(response, id.as_ref(), &mut answers, &lines).await;
            link.version = answers.iter().find_map(|a| {
                a.pointer("/result/protocolVersion")?
                    .as_str()
                    .map(str::to_owned)
            });
            if !answers.iter().any(|a| answers_id(a, id.as_ref())) {
                let why = "the remote server ended its answer without one";
                let _ = lines.send(failure(id.as_ref(), why)).await;
            }
            continue;
        }
        if method.as_deref() == Some("notifications/initialized") && !listening {
            listening = true;
            readers.spawn(listen(
                client.clone(),
                remote.clone(),
                session_headers(link.session.as_deref(), link.version.as_deref()),
                lines.clone(),
                gone.clone(),
            ));
        }
    }
    readers.abort_all();
    drop(lines);
    let _ = writer.await;
}

/// Whether `message` is the answer to request `id`.
fn answers_id(message: &Value, id: Option<&Value>) -> bool {
    message.get("method").is_none()
        && id.is_some_and(|id| message.get("id") == Some(id))
        && (message.get("result").is_some() || message.get("error").is_some())
}

/// The HTTP client for `remote`: its headers on every request, TLS with this machine's roots.
fn client(remote: &Remote) -> Result<reqwest::Client, String> {
    let mut headers = HeaderMap::new();
    for (name, value) in &remote.headers {
        let name =
            HeaderName::from_bytes(name.as_bytes()).map_err(|e| format!("header {name:?}: {e}"))?;
        let value = HeaderValue::from_str(value).map_err(|e| format!("header {name}: {e}"))?;
        headers.insert(name, value);
    }
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(cert);
    }
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| format!("TLS: {e}"))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    reqwest::Client::builder()
        .default_headers(headers)
        // A redirect would carry the headers (credentials among them) to another host.
        .redirect(reqwest::redirect::Policy::none())
        .tls_backend_preconfigured(tls)
        .connect_timeout(SEND_WAIT)
        .no_proxy()
        .build()
        .map_err(|e| e.to_string())
}

/// The headers of the link's session.
fn session_headers(link_session: Option<&str>, version: Option<&str>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Some(session) = link_session.and_then(|s| HeaderValue::from_str(s).ok()) {
        headers.insert("mcp-session-id", session);
    }
    if let Some(version) = version.and_then(|v| HeaderValue::from_str(v).ok()) {
        headers.insert("mcp-protocol-version", version);
    }
    headers
}

/// POSTs one message with the session's `headers`; the response once its head arrived
/// (within `wait`).
async fn post(
    client: &reqwest::Client,
    remote: &Remote,
    headers: HeaderMap,
    message: String,
    wait: Duration,
) -> Result<reqwest::Response, String> {
    let sent = client
        .post(&remote.url)
        .headers(headers)
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json, text/event-stream")
        .body(message)
        .send();
    match tokio::time::timeout(wait, sent).await {
        Ok(Ok(response)) => Ok(response),
        Ok(Err(e)) => Err(format!("the remote server could not be reached: {e}")),
        Err(_) => Err(format!(
            "the remote server did not answer within {} s",
            wait.as_secs()
        )),
    }
}

/// Reads an answer's body — one JSON message, or an event stream of them (up to the answer
/// to `id`) — as lines, keeping each message in `answers` too.
async fn read_answer(
    response: reqwest::Response,
    id: Option<&Value>,
    answers: &mut Vec<Value>,
    lines: &mpsc::Sender<String>,
) {
    let stream = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|t| t.starts_with("text/event-stream"));
    let read = async {
        if stream {
            read_events(response, id, answers, lines).await;
        } else if let Ok(body) = response.bytes().await
            && body.len() <= MAX_MESSAGE
            && let Some(line) = one_line(&String::from_utf8_lossy(&body))
        {
            answers.extend(serde_json::from_str::<Value>(&line).ok());
            let _ = lines.send(line).await;
        }
    };
    let _ = tokio::time::timeout(ANSWER_WAIT, read).await;
}

/// Reads an event stream's messages as lines until it ends (or brings the answer to `id`).
/// Lines are split on bytes and decoded whole (a character split between two chunks stays
/// whole); an event over [`MAX_MESSAGE`] ends the stream.
async fn read_events(
    response: reqwest::Response,
    id: Option<&Value>,
    answers: &mut Vec<Value>,
    lines: &mpsc::Sender<String>,
) {
    let mut body = response.bytes_stream();
    let mut pending: Vec<u8> = Vec::new();
    let mut data = String::new();
    while let Some(Ok(chunk)) = body.next().await {
        pending.extend_from_slice(&chunk);
        while let Some(end) = pending.iter().position(|b| *b == b'\n' || *b == b'\r') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            // A CR LF ends one line, not two.
            if line.last() == Some(&b'\r') && pending.first() == Some(&b'\n') {
                pending.remove(0);
            }
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                // An event ends: its data is a message (a priming event has none).
                if let Some(message) = one_line(&data) {
                    let parsed = serde_json::from_str::<Value>(&message).ok();
                    let done = parsed.as_ref().is_some_and(|m| answers_id(m, id));
                    answers.extend(parsed);
                    if lines.send(message).await.is_err() || done {
                        return;
                    }
                }
                data.clear();
            } else if let Some(value) = line.strip_prefix("data:") {
                if !data.is_empty() {
                    data.push('\n');
                }
                data.push_str(value.strip_prefix(' ').unwrap_or(value));
            }
            if data.len() > MAX_MESSAGE {
                eprintln!(
                    "toolgate: a remote server's event is over 16 MiB; the stream is dropped"
                );
                return;
            }
        }
        if pending.len() > MAX_MESSAGE {
            eprintln!("toolgate: a remote server's event is over 16 MiB; the stream is dropped");
            return;
        }
    }
}

/// A JSON message as one line (its newlines are whitespace between tokens: JSON strings hold
/// none unescaped); `None` when it is empty.
fn one_line(text: &str) -> Option<String> {
    let text = text.trim();
    (!text.is_empty()).then(|| text.replace(['\n', '\r'], " "))
}

/// Reads the session's GET stream for what the server sends on its own, opening it again
/// when it ends (a server that offers none answers 405, and it is not asked again).
async fn listen(
    client: reqwest::Client,
    remote: Remote,
    headers: HeaderMap,
    lines: mpsc::Sender<String>,
    gone: mpsc::Sender<()>,
) {
    loop {
        let opened = client
            .get(&remote.url)
            .headers(headers.clone())
            .header(ACCEPT, "text/event-stream")
            .send()
            .await;
        match opened {
            Ok(response) if response.status().is_success() => {
                let mut unused = Vec::new();
                read_events(response, None, &mut unused, &lines).await;
            }
            Ok(response) if response.status() == reqwest::StatusCode::NOT_FOUND => {
                let _ = gone.try_send(());
                return;
            }
            Ok(_) => return,
            Err(_) => {}
        }
        if lines.is_closed() {
            return;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Ends the link's session on the server (best effort, bounded).
async fn end_session(client: &reqwest::Client, remote: &Remote, link: &Link) {
    if link.session.is_none() {
        return;
    }
    let ended = client
        .delete(&remote.url)
        .headers(session_headers(
            link.session.as_deref(),
            link.version.as_deref(),
        ))
        .send();
    let _ = tokio::time::timeout(Duration::from_secs(2), ended).await;
}

/// A JSON-RPC error answering request `id`.
fn failure(id: Option<&Value>, why: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id.cloned().unwrap_or(Value::Null),
           "error": {"code": -32603, "message": format!("toolgate: {why}")}})
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_becomes_one_line() {
        assert_eq!(
            one_line("{\n \"a\": 1\r\n}\n").as_deref(),
            Some("{  \"a\": 1  }")
        );
        assert_eq!(one_line("  \n"), None);
    }
}
