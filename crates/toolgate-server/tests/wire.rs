//! Requests HTTP itself refuses, sent over a real socket: each gets its status with a JSON
//! error body, and the pending request beside them is left untouched.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::{Value, json};

use common::{Daemon, HOST};

/// Sends `request` on a new connection; the status, the head and the body as JSON.
fn exchange(address: SocketAddr, request: &[u8]) -> (u16, String, Value) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    // The server may answer and close before it has read everything sent: that is fine.
    let _ = stream.write_all(request);
    let mut response = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => response.extend_from_slice(&chunk[..n]),
        }
        if let Some(end) = find(&response, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&response[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .and_then(|l| l.trim().parse().ok())
                .unwrap_or(0);
            if response.len() >= end + 4 + length {
                break;
            }
        }
    }
    let end = find(&response, b"\r\n\r\n").expect("a whole response head");
    let head = String::from_utf8_lossy(&response[..end]).into_owned();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let body = serde_json::from_slice(&response[end + 4..]).unwrap_or(Value::Null);
    (status, head, body)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn authorized(method: &str, path: &str, token: &str, body: &str) -> Vec<u8> {
    format!(
        "{method} {path} HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Serves `server` on a loopback port, runs `checks` (blocking socket code) against its address,
/// then stops it (bounded: 10 s).
async fn serving(
    server: toolgate_server::Server,
    checks: impl FnOnce(SocketAddr) + Send + 'static,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.serve(listener, async {
        let _ = stopped.await;
    }));
    tokio::task::spawn_blocking(move || checks(address))
        .await
        .unwrap();
    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("the daemon stops")
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_http_refuses_get_json_errors() {
    let Daemon {
        dir: _dir,
        server,
        token,
    } = Daemon::start().await;
    serving(server, move |address| {
        let call = json!({"tool": "pay", "args": {}, "context": {"session": "s1"}}).to_string();
        let (status, _, body) = exchange(
            address,
            &authorized("POST", "/api/decisions", &token, &call),
        );
        assert_eq!(status, 202, "{body}");
        let id = body["id"].as_str().unwrap().to_owned();

        let host = format!("Host: {HOST}\r\n");
        let many_headers: String = (0..101).map(|i| format!("X-{i}: a\r\n")).collect();
        let hostile: Vec<(&str, Vec<u8>, u16, &str)> = vec![
            (
                "101 header fields",
                format!("GET /api/health HTTP/1.1\r\n{host}{many_headers}\r\n").into_bytes(),
                431,
                "headers_too_large",
            ),
            (
                "a 500 KB header",
                format!(
                    "GET /api/pending HTTP/1.1\r\n{host}X: {}\r\n\r\n",
                    "a".repeat(500_000)
                )
                .into_bytes(),
                431,
                "headers_too_large",
            ),
            (
                // Over the daemon's 128 KiB, well under hyper's own buffer: refused however the
                // head arrives (one read or many).
                "a 140 KB header",
                format!(
                    "GET /api/health HTTP/1.1\r\n{host}X: {}\r\n\r\n",
                    "a".repeat(140_000)
                )
                .into_bytes(),
                431,
                "headers_too_large",
            ),
            (
                "a 70 KB target",
                format!(
                    "POST /api/approvals/{id}?{} HTTP/1.1\r\n{host}\r\n",
                    "a".repeat(70_000)
                )
                .into_bytes(),
                414,
                "uri_too_long",
            ),
            (
                "a header line without a colon",
                format!("POST /api/approvals/{id} HTTP/1.1\r\n{host}Bad Header\r\n\r\n")
                    .into_bytes(),
                400,
                "malformed_http",
            ),
            (
                "a request line that is not HTTP",
                b"GARBAGE\r\n\r\n".to_vec(),
                400,
                "malformed_http",
            ),
            (
                "a length that is not a number",
                format!(
                    "POST /api/approvals/{id} HTTP/1.1\r\n{host}Content-Length: abc\r\n\r\n{{}}"
                )
                .into_bytes(),
                400,
                "malformed_http",
            ),
            (
                "two different lengths",
                format!(
                    "POST /api/approvals/{id} HTTP/1.1\r\n{host}Content-Length: 2\r\n\
                     Content-Length: 40\r\n\r\n{{}}"
                )
                .into_bytes(),
                400,
                "malformed_http",
            ),
            (
                "a NUL in a header value",
                format!("POST /api/approvals/{id} HTTP/1.1\r\n{host}X: a\0b\r\n\r\n").into_bytes(),
                400,
                "malformed_http",
            ),
        ];
        for (what, request, status, code) in hostile {
            let (got, head, body) = exchange(address, &request);
            assert_eq!(
                (got, body["error"]["code"].as_str()),
                (status, Some(code)),
                "{what}: {head}\n{body}"
            );
            assert!(
                head.to_ascii_lowercase()
                    .contains("content-type: application/json"),
                "{what}: {head}"
            );
            assert!(
                body["error"]["message"]
                    .as_str()
                    .is_some_and(|m| !m.is_empty()),
                "{what}: {body}"
            );
        }

        // A head just under the limit is read.
        let (status, head, _) = exchange(
            address,
            format!(
                "GET /api/health HTTP/1.1\r\n{host}X: {}\r\nConnection: close\r\n\r\n",
                "a".repeat(120_000)
            )
            .as_bytes(),
        );
        assert_eq!(status, 200, "a 120 KB header: {head}");

        // A chunked body that cannot be read is a malformed request, not a large one.
        for chunk in ["zz", "-1", "ffffffffffffffffffff"] {
            let request = format!(
                "POST /api/approvals/{id} HTTP/1.1\r\n{host}Authorization: Bearer {token}\r\n\
                 Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n\
                 {chunk}\r\n{{\"decision\": \"allow-once\"}}\r\n0\r\n\r\n"
            );
            let (status, head, body) = exchange(address, request.as_bytes());
            assert_eq!(
                (status, body["error"]["code"].as_str()),
                (400, Some("unreadable_body")),
                "chunk size {chunk}: {head}\n{body}"
            );
        }

        // Bodies that could be read two ways, or that cannot be what they say, are refused
        // before a byte of them is read: a declared 10 GiB at once, not after a timeout.
        let answer = r#"{"decision": "allow-once"}"#;
        let approve = |extra: &str, body: &str| {
            format!(
                "POST /api/approvals/{id} HTTP/1.1\r\n{host}Authorization: Bearer {token}\r\n\
                 {extra}Connection: close\r\n\r\n{body}"
            )
        };
        let length = format!("Content-Length: {}\r\n", answer.len());
        for (what, request, status, code) in [
            (
                "two content types",
                approve(
                    &format!("Content-Type: application/json\r\nContent-Type: text/plain\r\n{length}"),
                    answer,
                ),
                400,
                "duplicate_header",
            ),
            (
                "UTF-16",
                approve(
                    &format!("Content-Type: application/json; charset=utf-16\r\n{length}"),
                    answer,
                ),
                415,
                "json_required",
            ),
            (
                "a content coding",
                approve(
                    &format!("Content-Type: application/json\r\nContent-Encoding: gzip\r\n{length}"),
                    answer,
                ),
                415,
                "unsupported_encoding",
            ),
            (
                "a transfer coding besides chunked",
                approve(
                    "Content-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\n",
                    &format!("{:x}\r\n{answer}\r\n0\r\n\r\n", answer.len()),
                ),
                501,
                "unsupported_transfer_coding",
            ),
            (
                "chunked twice",
                approve(
                    "Content-Type: application/json\r\nTransfer-Encoding: chunked, chunked\r\n",
                    &format!("{:x}\r\n{answer}\r\n0\r\n\r\n", answer.len()),
                ),
                501,
                "unsupported_transfer_coding",
            ),
            (
                "a declared 10 GiB",
                // (No byte of the body sent: what the daemon leaves unread when it answers
                // would turn its close into a reset, which can drop the answer.)
                approve(
                    "Content-Type: application/json\r\nContent-Length: 10737418240\r\n",
                    "",
                ),
                413,
                "body_too_large",
            ),
        ] {
            let started = std::time::Instant::now();
            let (got, head, body) = exchange(address, request.as_bytes());
            assert_eq!(
                (got, body["error"]["code"].as_str()),
                (status, Some(code)),
                "{what}: {head}\n{body}"
            );
            assert!(started.elapsed() < Duration::from_secs(5), "{what}");
        }
        // Quoted and spelled without the dash, UTF-8 is UTF-8.
        let (got, _, body) = exchange(
            address,
            approve(
                "Content-Type: application/json; charset=\"UTF8\"\r\nContent-Length: 2\r\n",
                "{}",
            )
            .as_bytes(),
        );
        assert_eq!(
            (got, body["error"]["code"].as_str()),
            (400, Some("invalid_decision")),
            "{body}"
        );

        // A length and a transfer coding: read as chunked, and nothing rides behind it (the
        // connection closes after the one answer).
        let call = json!({"tool": "read", "args": {}}).to_string();
        let smuggled = format!(
            "POST /api/decisions HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n\
             {:x}\r\n{call}\r\n0\r\n\r\n\
             POST /api/approvals/{id} HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nContent-Length: 27\r\n\r\n{{\"decision\": \"allow-once\"}}",
            call.len()
        );
        let mut stream = TcpStream::connect(address).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stream.write_all(smuggled.as_bytes()).unwrap();
        let mut everything = Vec::new();
        stream.read_to_end(&mut everything).unwrap();
        let everything = String::from_utf8_lossy(&everything);
        assert_eq!(everything.matches("HTTP/1.1 ").count(), 1, "{everything}");
        assert!(everything.starts_with("HTTP/1.1 200"), "{everything}");

        // An HTTP/2 client with prior knowledge is told, in HTTP/2, to use HTTP/1.1: an empty
        // SETTINGS frame, then GOAWAY with HTTP_1_1_REQUIRED and a JSON error as its debug data.
        let mut h2 = TcpStream::connect(address).unwrap();
        h2.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        h2.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").unwrap();
        let mut frames = Vec::new();
        h2.read_to_end(&mut frames).unwrap();
        assert_eq!(frames[..9], [0, 0, 0, 4, 0, 0, 0, 0, 0], "{frames:?}");
        let goaway = &frames[9..];
        let length = usize::from(goaway[1]) << 8 | usize::from(goaway[2]);
        assert_eq!((goaway[3], goaway.len()), (7, 9 + length), "{frames:?}");
        assert_eq!(goaway[9..17], [0, 0, 0, 0, 0, 0, 0, 0x0d], "HTTP_1_1_REQUIRED");
        let debug: Value = serde_json::from_slice(&goaway[17..]).unwrap();
        assert_eq!(debug["error"]["code"], "http2_unsupported");

        // The pending request is untouched, and the daemon still serves.
        let (status, _, pending) =
            exchange(address, &authorized("GET", "/api/pending", &token, ""));
        assert_eq!(status, 200);
        let ids: Vec<&str> = pending["pending"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["id"].as_str())
            .collect();
        assert_eq!(ids, [id.as_str()]);
        // A route's own errors are left as they were.
        let (status, _, body) = exchange(address, &authorized("GET", "/api/nowhere", &token, ""));
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (404, Some("not_found"))
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_head_that_never_ends_is_cut_off_and_others_are_served() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = toolgate_server::ServerConfig::new(dir.path());
    config.read_timeout = Duration::from_millis(500);
    let policy = toolgate_policy::Policy::from_toml("p.toml", common::POLICY).unwrap();
    let server = toolgate_server::Server::open(config, policy).await.unwrap();
    serving(server, move |address| {
        // A start that is part of HTTP/2's preface and no more is closed when the wait ends
        // (it was held, and polled, for ever), whether the client stays or goes.
        for close in [false, true] {
            for start in [&b"P"[..], b"PRI * HTTP/2.0\r\n"] {
                let started = std::time::Instant::now();
                let mut partial = TcpStream::connect(address).unwrap();
                partial
                    .set_read_timeout(Some(Duration::from_secs(10)))
                    .unwrap();
                partial.write_all(start).unwrap();
                if close {
                    partial.shutdown(std::net::Shutdown::Write).unwrap();
                }
                let mut rest = Vec::new();
                let read = partial.read_to_end(&mut rest);
                assert!(
                    read.is_ok() && rest.is_empty(),
                    "{start:?}, close {close}: {read:?} {rest:?}"
                );
                assert!(
                    started.elapsed() < Duration::from_secs(5),
                    "{start:?}, close {close}: closed after {:?}",
                    started.elapsed()
                );
            }
        }
        // A request whose first byte came alone (it could have been the preface) is read whole.
        let mut split = TcpStream::connect(address).unwrap();
        split
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        split.write_all(b"P").unwrap();
        std::thread::sleep(Duration::from_millis(100));
        split
            .write_all(
                format!("OST /api/login HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}")
                    .as_bytes(),
            )
            .unwrap();
        let mut answer = String::new();
        split.read_to_string(&mut answer).unwrap();
        assert!(
            answer.starts_with("HTTP/1.1 400") && answer.contains("missing_credential"),
            "{answer}"
        );
        // Half a head, then nothing.
        let mut slow = TcpStream::connect(address).unwrap();
        slow.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        slow.write_all(format!("GET /api/health HTTP/1.1\r\nHost: {HOST}\r\n").as_bytes())
            .unwrap();
        let started = std::time::Instant::now();
        // Meanwhile others are served.
        let (status, _, _) = exchange(
            address,
            format!("GET /api/health HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        );
        assert_eq!(status, 200);
        let mut response = Vec::new();
        let read = slow.read_to_end(&mut response);
        let waited = started.elapsed();
        assert!(
            read.is_ok(),
            "closed by the daemon, not by the 10 s read timeout: {read:?}"
        );
        assert!(waited < Duration::from_secs(5), "cut off after {waited:?}");
        // A whole head, then a body that never comes: a 408, in JSON.
        let (status, _, body) = exchange(
            address,
            format!(
                "POST /api/login HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/json\r\n\
                 Content-Length: 100\r\n\r\n{{"
            )
            .as_bytes(),
        );
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (408, Some("body_timeout")),
            "{body}"
        );
        // Closed without a response: there is no request to answer.
        assert!(
            response.is_empty(),
            "{}",
            String::from_utf8_lossy(&response)
        );
    })
    .await;
}

/// Sends `request` on an open keep-alive connection and reads its response: the status.
fn ask_on(stream: &mut TcpStream, request: &[u8]) -> u16 {
    stream.write_all(request).unwrap();
    let mut response = Vec::new();
    let mut byte = [0u8; 1];
    while find(&response, b"\r\n\r\n").is_none() {
        assert_eq!(stream.read(&mut byte).unwrap(), 1, "closed mid-response");
        response.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&response).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).unwrap();
    head.split(' ').nth(1).unwrap().parse().unwrap()
}

/// Whether the daemon closes `stream` (within 5 s).
fn closed(stream: &mut TcpStream) -> bool {
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    match stream.read(&mut [0u8; 1]) {
        Ok(n) => n == 0,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    }
}

/// Connections anyone can open do not crowd out callers: past the most the daemon holds
/// without credentials, a new connection takes the place of the oldest of those; connections
/// that have shown credentials (callers' keep-alive connections, long polls) leave that count
/// and are never closed to make room.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_connections_give_way_to_callers() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = toolgate_server::ServerConfig::new(dir.path());
    config.max_anonymous_connections = 4;
    let policy = toolgate_policy::Policy::from_toml("policy.toml", common::POLICY).unwrap();
    let server = toolgate_server::Server::open(config, policy).await.unwrap();
    let token = std::fs::read_to_string(dir.path().join("token"))
        .unwrap()
        .trim()
        .to_owned();
    serving(server, move |address| {
        let keep_alive = |path: &str| {
            format!("GET {path} HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: Bearer {token}\r\n\r\n")
                .into_bytes()
        };
        let settle = || std::thread::sleep(Duration::from_millis(300));
        // Four connections that say nothing fill the table.
        let mut silent: Vec<TcpStream> = (0..4)
            .map(|_| TcpStream::connect(address).unwrap())
            .collect();
        settle();
        // A caller is served at once (not after the silent ones' 30 s), and the oldest silent
        // connection gave it its place.
        let (status, _, body) = exchange(address, &authorized("GET", "/api/pending", &token, ""));
        assert_eq!(status, 200, "{body}");
        assert!(closed(&mut silent[0]), "the oldest silent connection");
        assert!(!closed_now(&mut silent[1]), "the next one is still held");

        // Four callers' keep-alive connections: each shows the token and leaves the count.
        let mut callers: Vec<TcpStream> = (0..4)
            .map(|_| {
                let mut caller = TcpStream::connect(address).unwrap();
                caller
                    .set_read_timeout(Some(Duration::from_secs(10)))
                    .unwrap();
                assert_eq!(ask_on(&mut caller, &keep_alive("/api/pending")), 200);
                caller
            })
            .collect();
        settle();
        for (n, stream) in silent.iter_mut().enumerate().skip(1) {
            assert!(
                !closed_now(stream),
                "silent connection {n} kept: callers do not count"
            );
        }
        // More silent connections push out the older silent ones, never a caller's.
        let mut late: Vec<TcpStream> = (0..4)
            .map(|_| TcpStream::connect(address).unwrap())
            .collect();
        settle();
        for (n, stream) in silent.iter_mut().enumerate().skip(1) {
            assert!(closed(stream), "silent connection {n}");
        }
        for stream in &mut late {
            assert!(!closed_now(stream), "the newer silent ones are held");
        }
        for caller in &mut callers {
            caller
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            assert_eq!(ask_on(caller, &keep_alive("/api/health")), 200);
        }
    })
    .await;
}

/// Whether `stream` is closed already (a look without waiting).
fn closed_now(stream: &mut TcpStream) -> bool {
    stream.set_nonblocking(true).unwrap();
    let closed = !matches!(
        stream.read(&mut [0u8; 1]),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock
    );
    stream.set_nonblocking(false).unwrap();
    closed
}
