//! The OpenAI-compatible model against a local HTTP server replaying recorded responses.

#![cfg(feature = "openai")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use toolgate_runtime::{Agent, OpenAiModel, Outcome, RunError, TurnEnd};

use common::{Log, recording_tool};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/openai");

/// One canned HTTP response.
struct Canned {
    status: &'static str,
    content_type: &'static str,
    body: String,
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{FIXTURES}/{name}")).unwrap()
}

/// A request the server received.
#[derive(Debug)]
struct Received {
    head: String,
    body: Value,
}

/// Serves `responses` in order, one per connection, on 127.0.0.1; records the requests. The
/// server stops after the last response (and every read is bounded in time).
async fn replay(responses: Vec<Canned>) -> (String, Arc<Mutex<Vec<Received>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let received = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&received);
    tokio::spawn(async move {
        for canned in responses {
            let accepted = tokio::time::timeout(Duration::from_secs(10), listener.accept()).await;
            let Ok(Ok((mut socket, _))) = accepted else {
                return;
            };
            let mut buffer = Vec::new();
            let mut chunk = [0u8; 4096];
            let (head, body) = loop {
                let n = tokio::time::timeout(Duration::from_secs(10), socket.read(&mut chunk))
                    .await
                    .unwrap()
                    .unwrap();
                assert!(n > 0, "the client closed before sending its request");
                buffer.extend_from_slice(&chunk[..n]);
                let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") else {
                    continue;
                };
                let head = String::from_utf8_lossy(&buffer[..end]).to_string();
                let length: usize = head
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse().ok())?
                    })
                    .unwrap_or(0);
                if buffer.len() >= end + 4 + length {
                    break (head, buffer[end + 4..end + 4 + length].to_vec());
                }
            };
            log.lock().unwrap().push(Received {
                head,
                body: serde_json::from_slice(&body).unwrap(),
            });
            let header = format!(
                "HTTP/1.1 {}\r\ncontent-type: {}\r\nconnection: close\r\n\r\n",
                canned.status, canned.content_type
            );
            socket.write_all(header.as_bytes()).await.unwrap();
            // Stream the body in small writes, as a server flushing each event would.
            for piece in canned.body.as_bytes().chunks(97) {
                socket.write_all(piece).await.unwrap();
                socket.flush().await.unwrap();
            }
            let _ = socket.shutdown().await;
        }
    });
    (format!("http://{address}/v1"), received)
}

fn sse(name: &str) -> Canned {
    Canned {
        status: "200 OK",
        content_type: "text/event-stream",
        body: fixture(name),
    }
}

#[tokio::test]
async fn a_turn_with_parallel_tool_calls_over_a_replayed_stream() {
    let (base, received) = replay(vec![sse("tool_calls.sse"), sse("text.sse")]).await;
    let log = Log::default();
    let model = OpenAiModel::new(base, "gpt-4.1-mini").with_api_key("sk-test");
    let agent = Agent::builder(model)
        .instructions("You are a careful coding agent.")
        .tool(recording_tool("read_file", &log))
        .tool(recording_tool("run_command", &log))
        .build()
        .unwrap();
    let mut events = agent.events().subscribe();
    let turn = agent
        .run(
            &agent.session("s"),
            "What do my notes say, and is the tree clean?",
        )
        .await
        .unwrap();

    assert_eq!(turn.end, TurnEnd::Completed);
    assert_eq!(turn.text(), "The notes list two tasks; the tree is clean.");
    assert_eq!(
        log.take(),
        [
            "ran read_file {\"path\":\"notes/résumé.md\"}",
            "ran run_command {\"command\":\"git status -s\"}",
        ]
    );
    assert!(turn.results.iter().all(|r| r.outcome == Outcome::Completed));
    let mut deltas = 0;
    while let Some(event) = events.try_recv() {
        deltas += usize::from(matches!(
            event.kind,
            toolgate_runtime::EventKind::TextDelta { .. }
        ));
    }
    assert_eq!(deltas, 11, "text streamed piece by piece");

    let received = received.lock().unwrap();
    assert_eq!(received.len(), 2);
    assert!(
        received[0]
            .head
            .starts_with("POST /v1/chat/completions HTTP/1.1")
    );
    assert!(
        received[0]
            .head
            .to_ascii_lowercase()
            .contains("authorization: bearer sk-test")
    );
    let first = &received[0].body;
    assert_eq!(first["model"], "gpt-4.1-mini");
    assert_eq!(first["stream"], true);
    assert_eq!(
        first["messages"],
        json!([
            {"role": "system", "content": "You are a careful coding agent."},
            {"role": "user", "content": "What do my notes say, and is the tree clean?"},
        ])
    );
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools.len(), 2);
    assert!(tools.contains(&"read_file") && tools.contains(&"run_command"));
    let second = &received[1].body["messages"];
    assert_eq!(second[2]["role"], "assistant");
    assert_eq!(
        second[2]["tool_calls"][0]["id"],
        "call_Qm1bYp7TgZ4sXhJ2nKd8RfLe"
    );
    assert_eq!(
        second[2]["tool_calls"][1]["function"],
        json!({"name": "run_command", "arguments": "{\"command\":\"git status -s\"}"})
    );
    assert_eq!(
        second[3],
        json!({"role": "tool", "tool_call_id": "call_Qm1bYp7TgZ4sXhJ2nKd8RfLe", "content": "ok read_file"})
    );
    assert_eq!(second[4]["tool_call_id"], "call_Vb3nWc9PqL0xTz6uEa5GhYs2");
}

#[tokio::test]
async fn an_api_error_fails_the_turn_with_the_apis_message() {
    let (base, _) = replay(vec![Canned {
        status: "401 Unauthorized",
        content_type: "application/json",
        body: fixture("unauthorized.json"),
    }])
    .await;
    let agent = Agent::builder(OpenAiModel::new(base, "gpt-4.1-mini"))
        .build()
        .unwrap();
    let error = agent.run(&agent.session("s"), "hello").await.unwrap_err();
    let RunError::Model(message) = error else {
        panic!("expected a model error, got {error:?}");
    };
    assert!(
        message.starts_with("the model API answered 401 Unauthorized: Incorrect API key provided"),
        "{message}"
    );
}

#[tokio::test]
async fn a_stream_cut_short_fails_the_turn() {
    let full = fixture("text.sse");
    let cut = full
        .split("data: {")
        .take(4)
        .collect::<Vec<_>>()
        .join("data: {");
    let (base, _) = replay(vec![Canned {
        status: "200 OK",
        content_type: "text/event-stream",
        body: cut,
    }])
    .await;
    let agent = Agent::builder(OpenAiModel::new(base, "m")).build().unwrap();
    let error = agent.run(&agent.session("s"), "hello").await.unwrap_err();
    assert_eq!(
        error,
        RunError::Model("the model's response ended before it was complete".into())
    );
}

#[tokio::test]
async fn an_unreachable_endpoint_is_a_model_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let agent = Agent::builder(OpenAiModel::new(format!("http://{address}/v1"), "m"))
        .build()
        .unwrap();
    let error = agent.run(&agent.session("s"), "hello").await.unwrap_err();
    assert!(
        matches!(&error, RunError::Model(m) if m.starts_with("cannot reach the model at")),
        "{error:?}"
    );
}
