//! Any bytes as a sequence of JSON-RPC frames from either side of the MCP gateway — one server's
//! gate, and a hub of two: no panic, and nothing reaches a server as a tool call the policy did
//! not allow.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolgate_mcp::{Gate, Hub, Options, Out, Routed};
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

/// The workspace stays `/ws` (the client's roots do not name it), as `judged` assumes.
fn options(server: &str) -> Options {
    Options::new(policy(), server, Some("/ws".into()))
}

/// Whether a frame relayed to a server is a tool call the policy allows there (or no call).
fn judged(text: &str, server: &str) -> bool {
    let Ok(message) = serde_json::from_str::<Value>(text) else {
        return true;
    };
    if message.get("method").and_then(Value::as_str) != Some("tools/call") {
        return true;
    }
    let params = &message["params"];
    let name = params["name"].as_str().unwrap_or_default();
    let args = params
        .get("arguments")
        .cloned()
        .unwrap_or(Value::Object(Default::default()));
    let mut call = Call::new(name).with_args(args);
    call.context = Gate::new(options(server)).context();
    policy().evaluate(&call).decision == Decision::Allow
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let mut gate = Gate::new(options("fs"));
    let mut hub = Hub::new(
        vec![
            ("fs".into(), Gate::new(options("fs"))),
            ("git".into(), Gate::new(options("git"))),
        ],
        "__",
    );
    // Each line is a frame; its first byte says which side sent it: `>` the client, `|` the
    // hub's second server, anything else the (first) server.
    for line in input.lines() {
        let (side, frame) = match line.strip_prefix('>') {
            Some(rest) => (None, rest),
            None => match line.strip_prefix('|') {
                Some(rest) => (Some(1), rest),
                None => (Some(0), line.strip_prefix('<').unwrap_or(line)),
            },
        };
        let outs = match side {
            None => gate.from_client(frame),
            Some(_) => gate.from_server(frame),
        };
        for out in outs {
            if let Out::ToServer(text) = out {
                assert!(judged(&text, "fs"), "{text}");
            }
        }
        let routed = match side {
            None => hub.from_client(frame),
            Some(i) => hub.from_server(i, frame),
        };
        for out in routed {
            if let Routed::ToServer(i, text) = out {
                assert!(judged(&text, if i == 0 { "fs" } else { "git" }), "{text}");
            }
        }
    }
});
