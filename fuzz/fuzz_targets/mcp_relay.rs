//! Any bytes as a sequence of JSON-RPC frames from either side of the MCP gateway: no panic, and
//! nothing reaches the server as a tool call the policy did not allow.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolgate_mcp::{Gate, Options, Out};
use toolgate_policy::{Call, Decision, Policy};

fn policy() -> Arc<Policy> {
    static POLICY: OnceLock<Arc<Policy>> = OnceLock::new();
    Arc::clone(POLICY.get_or_init(|| {
        Arc::new(
            Policy::from_toml("policy.toml", include_str!("../../examples/policy.toml"))
                .unwrap_or_default(),
        )
    }))
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let policy = policy();
    let mut gate = Gate::new(Options {
        policy: Arc::clone(&policy),
        server: "fs".into(),
        workspace: Some("/ws".into()),
        daemon: false,
        session: None,
        pins: None,
        trusted: false,
        roots_workspace: true,
    });
    // Each line is a frame; its first byte says which side sent it.
    for line in input.lines() {
        let (from_client, frame) = match line.strip_prefix('>') {
            Some(rest) => (true, rest),
            None => (false, line.strip_prefix('<').unwrap_or(line)),
        };
        let outs = if from_client {
            gate.from_client(frame)
        } else {
            gate.from_server(frame)
        };
        for out in outs {
            let Out::ToServer(text) = out else { continue };
            let Ok(message) = serde_json::from_str::<Value>(&text) else {
                continue;
            };
            if message.get("method").and_then(Value::as_str) != Some("tools/call") {
                continue;
            }
            let params = &message["params"];
            let name = params["name"].as_str().unwrap_or_default();
            let args = params
                .get("arguments")
                .cloned()
                .unwrap_or(Value::Object(Default::default()));
            let mut call = Call::new(name).with_args(args);
            call.context = gate.context();
            assert_eq!(policy.evaluate(&call).decision, Decision::Allow, "{text}");
        }
    }
});
