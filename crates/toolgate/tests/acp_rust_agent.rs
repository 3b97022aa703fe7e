//! `toolgate acp` in front of an agent on the official ACP Rust SDK (`agent-client-protocol`),
//! driven by the scripted editor on the TypeScript SDK (`tests/acp`). This test's own program is
//! the agent: the proxy starts it again with `TOOLGATE_TEST_ACP_AGENT` set. The agent follows the
//! script each prompt carries (as `tests/acp/agent.mjs` does: permission requests, reads, writes)
//! and answers the prompt with what each step came to, in `_meta.results`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

mod common;

use std::process::Command;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    InitializeRequest, InitializeResponse, NewSessionRequest, NewSessionResponse, PromptRequest,
    PromptResponse, ReadTextFileRequest, RequestPermissionRequest, StopReason,
    WriteTextFileRequest,
};
use agent_client_protocol::{Agent, Client, Stdio};
use common::BIN;
use serde_json::{Value, json};

const AGENT: &str = "TOOLGATE_TEST_ACP_AGENT";

/// One step of a prompt's script, sent to the editor; what it came to.
async fn step(cx: &ConnectionTo<Client>, session: &str, step: &Value) -> Value {
    let request = |mut params: Value| {
        params["sessionId"] = json!(session);
        params
    };
    let answered = if let Some(permission) = step.get("permission") {
        let params: RequestPermissionRequest =
            serde_json::from_value(request(permission.clone())).unwrap();
        cx.send_request(params)
            .block_task()
            .await
            .map(|r| serde_json::to_value(r).unwrap())
    } else if let Some(path) = step.get("read") {
        let params: ReadTextFileRequest =
            serde_json::from_value(request(json!({"path": path}))).unwrap();
        cx.send_request(params)
            .block_task()
            .await
            .map(|r| serde_json::to_value(r).unwrap())
    } else if let Some(write) = step.get("write") {
        let params: WriteTextFileRequest =
            serde_json::from_value(request(json!({"path": write[0], "content": write[1]})))
                .unwrap();
        cx.send_request(params)
            .block_task()
            .await
            .map(|r| serde_json::to_value(r).unwrap())
    } else {
        return json!({"error": "unknown step"});
    };
    answered.unwrap_or_else(|e| json!({"error": {"code": e.code, "message": e.message}}))
}

/// The agent, on this process's stdin and stdout.
fn agent() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let served = runtime.block_on(
        Agent
            .v1()
            .name("rust-agent")
            .on_receive_request(
                async move |initialize: InitializeRequest, responder, _cx| {
                    responder.respond(InitializeResponse::new(initialize.protocol_version))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |_new: NewSessionRequest, responder, _cx| {
                    responder.respond(NewSessionResponse::new("rust-session"))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |prompt: PromptRequest, responder, cx: ConnectionTo<Client>| {
                    // The steps wait for the editor's answers: outside the dispatch loop.
                    let worker = cx.clone();
                    cx.spawn(async move {
                        let text = serde_json::to_value(&prompt.prompt).unwrap()[0]["text"]
                            .as_str()
                            .unwrap_or("[]")
                            .to_owned();
                        let script: Vec<Value> = serde_json::from_str(&text).unwrap_or_default();
                        let session = prompt.session_id.0.to_string();
                        let mut results = Vec::new();
                        for s in &script {
                            results.push(step(&worker, &session, s).await);
                        }
                        let meta = json!({"results": results});
                        let mut done = PromptResponse::new(StopReason::EndTurn);
                        done.meta = meta.as_object().cloned();
                        responder.respond(done)
                    })
                },
                agent_client_protocol::on_receive_request!(),
            )
            .connect_to(Stdio::new()),
    );
    if let Err(e) = served {
        eprintln!("rust-agent: {e:?}");
        std::process::exit(1);
    }
}

fn main() {
    if std::env::var_os(AGENT).is_some() {
        agent();
        return;
    }
    let name = "an_agent_on_the_rust_sdk_works_through_the_proxy";
    let Some(peers) = common::acp_peers() else {
        println!("test {name} ... skipped: the ACP peers are not installed");
        return;
    };
    let (_dir, base, work, policy) =
        common::acp_workspace("for the rust agent\n", "mode = \"approve-reads\"\n");
    let w = |name: &str| work.join(name).to_string_lossy().into_owned();
    let permission = |id: &str, kind: &str, path: &str| {
        common::acp_permission(id, kind, path, &["allow_once", "reject_once"])
    };
    let script = json!({
        "sessions": [{"cwd": work, "prompts": [[
            {"read": w("notes.txt")},
            {"write": [base.join("outside.txt"), "x"]},
            permission("edit-1", "edit", &w("main.rs")),
            permission("outside-1", "read", "/etc/passwd"),
            {"write": [w("main.rs"), "fn main() {}\n"]},
        ]]}],
        "answers": ["allow_once", "reject_once"],
    });
    let file = base.join("script.json");
    std::fs::write(&file, script.to_string()).unwrap();
    let output = Command::new("timeout")
        .arg("90")
        .arg("node")
        .arg(peers.join("editor.mjs"))
        .arg(&file)
        .arg("--")
        .arg(BIN)
        .args(["acp", "--isolated", "--policy"])
        .arg(&policy)
        .arg("--")
        .arg(std::env::current_exe().unwrap())
        .env(AGENT, "1")
        .current_dir(&peers)
        .output()
        .unwrap();
    let seen = common::editor_saw(&output, name);
    let results = &seen["results"][0]["results"][0];
    assert_eq!(
        results[0]["content"],
        json!("for the rust agent\n"),
        "{seen}"
    );
    assert!(
        results[1]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("outside"),
        "{seen}"
    );
    assert_eq!(results[2]["outcome"]["optionId"], json!("opt-allow_once"));
    assert_eq!(results[3]["outcome"]["optionId"], json!("opt-reject_once"));
    assert!(
        results[4]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("refused by the person"),
        "{seen}"
    );
    assert!(!work.join("main.rs").exists() && !base.join("outside.txt").exists());
    assert_eq!(seen["reads"], json!([w("notes.txt")]));
    assert_eq!(seen["writes"], json!([]));
    println!("test {name} ... ok");
}
