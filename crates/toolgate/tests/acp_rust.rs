//! `toolgate acp` with an editor on the official ACP Rust SDK (`agent-client-protocol`, which
//! starts the proxy as its agent) in front of the scripted agent on the TypeScript SDK
//! (`tests/acp`): the editor serves reads and writes and answers permission requests; the proxy
//! judges what reaches it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, InitializeRequest, NewSessionRequest, PermissionOptionKind, PromptRequest,
    ReadTextFileRequest, ReadTextFileResponse, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, TextContent, WriteTextFileRequest,
    WriteTextFileResponse,
};
use agent_client_protocol::{AcpAgent, Agent, Client};
use common::BIN;
use serde_json::json;

/// What the Rust editor saw.
#[derive(Default)]
struct Seen {
    reads: Vec<PathBuf>,
    writes: Vec<PathBuf>,
    asked: Vec<String>,
}

#[test]
fn an_editor_on_the_rust_sdk_works_through_the_proxy() {
    let Some(peers) = common::acp_peers() else {
        return;
    };
    let (_dir, base, work, policy) =
        common::acp_workspace("from the rust editor\n", "mode = \"approve-reads\"\n");
    let w = |name: &str| work.join(name).to_string_lossy().into_owned();
    let permission = |id: &str, kind: &str, path: &str| {
        common::acp_permission(
            id,
            kind,
            path,
            &["allow_once", "allow_always", "reject_once", "reject_always"],
        )
    };
    let script = json!([
        {"read": w("notes.txt")},
        {"write": [base.join("outside.txt"), "x"]},
        permission("edit-1", "edit", &w("main.rs")),
        permission("outside-1", "read", "/etc/passwd"),
        {"write": [w("main.rs"), "x"]},
    ]);
    let command = format!(
        "{BIN} acp --isolated --policy {} -- node {}",
        policy.display(),
        peers.join("agent.mjs").display()
    );
    let agent = AcpAgent::from_str(&command).unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (reads, writes, asked) = (Arc::clone(&seen), Arc::clone(&seen), Arc::clone(&seen));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let session_cwd = work.clone();
    let meta = runtime.block_on(async move {
        let run = Client
            .v1()
            .name("rust-editor")
            .on_receive_request(
                async move |request: ReadTextFileRequest, responder, _cx| {
                    reads.lock().unwrap().reads.push(request.path.clone());
                    let content = std::fs::read_to_string(&request.path).unwrap_or_default();
                    responder.respond(ReadTextFileResponse::new(content))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: WriteTextFileRequest, responder, _cx| {
                    writes.lock().unwrap().writes.push(request.path.clone());
                    std::fs::write(&request.path, &request.content).unwrap();
                    responder.respond(WriteTextFileResponse::new())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: RequestPermissionRequest, responder, _cx| {
                    // This editor's person refuses everything they are asked.
                    asked
                        .lock()
                        .unwrap()
                        .asked
                        .push(request.tool_call.tool_call_id.0.to_string());
                    let reject = request
                        .options
                        .iter()
                        .find(|o| o.kind == PermissionOptionKind::RejectOnce)
                        .map(|o| o.option_id.clone());
                    let outcome = match reject {
                        Some(id) => {
                            RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id))
                        }
                        None => RequestPermissionOutcome::Cancelled,
                    };
                    responder.respond(RequestPermissionResponse::new(outcome))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .connect_with(agent, async move |cx: ConnectionTo<Agent>| {
                cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                    .block_task()
                    .await?;
                let session = cx
                    .send_request(NewSessionRequest::new(session_cwd))
                    .block_task()
                    .await?;
                let prompt = PromptRequest::new(
                    session.session_id,
                    vec![ContentBlock::Text(TextContent::new(script.to_string()))],
                );
                let done = cx.send_request(prompt).block_task().await?;
                Ok(done.meta)
            });
        tokio::time::timeout(std::time::Duration::from_secs(60), run)
            .await
            .expect("the session ended in time")
    });
    let meta = meta.unwrap().expect("the agent reports its steps");
    let results = &meta["results"];
    assert_eq!(results[0]["content"], json!("from the rust editor\n"));
    assert!(
        results[1]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("outside")
    );
    assert_eq!(results[2]["outcome"]["optionId"], json!("opt-reject_once"));
    assert_eq!(results[3]["outcome"]["optionId"], json!("opt-reject_once"));
    assert!(
        results[4]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("refused by the person"),
        "{}",
        results[4]
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.reads, vec![work.join("notes.txt")]);
    assert!(seen.writes.is_empty());
    assert_eq!(seen.asked.len(), 2, "{:?}", seen.asked);
    assert_eq!(seen.asked[0], "edit-1");
    assert!(seen.asked[1].starts_with("toolgate-"));
    assert!(!work.join("main.rs").exists() && !base.join("outside.txt").exists());
}
