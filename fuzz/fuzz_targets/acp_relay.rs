//! Any bytes as a sequence of JSON-RPC frames from either side of the ACP proxy: no panic, and
//! under a policy that refuses every tool nothing the proxy judges (a permission request, a file
//! read or write, a terminal) reaches the editor. A second proxy under the example policy takes
//! the same frames, for the paths a refusal never reaches.
#![no_main]

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolgate_acp::{Options, Proxy};
use toolgate_mcp::Routed;
use toolgate_policy::Policy;

fn policies() -> &'static (Arc<Policy>, Arc<Policy>) {
    static POLICIES: OnceLock<(Arc<Policy>, Arc<Policy>)> = OnceLock::new();
    POLICIES.get_or_init(|| {
        let refusing = "version = 1\n[[rule]]\nname = \"none\"\ndecision = \"deny\"\ntool = \"*\"\n";
        (
            Arc::new(Policy::from_toml("none.toml", refusing).unwrap_or_default()),
            Arc::new(
                Policy::from_toml("policy.toml", include_str!("../../examples/policy.toml"))
                    .unwrap_or_default(),
            ),
        )
    })
}

fn proxy(policy: &Arc<Policy>) -> Proxy {
    let mut options = Options::new(Arc::clone(policy));
    options.workspace = Some("/ws".into());
    Proxy::new(options)
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let (refusing, example) = policies();
    let mut closed = proxy(refusing);
    let mut open = proxy(example);
    // Each line is a frame; a first byte `>` says the editor sent it, anything else the agent.
    for line in input.lines() {
        let (from_editor, frame) = match line.strip_prefix('>') {
            Some(rest) => (true, rest),
            None => (false, line),
        };
        let outs = if from_editor {
            closed.from_editor(frame)
        } else {
            closed.from_agent(frame)
        };
        let _ = if from_editor {
            open.from_editor(frame)
        } else {
            open.from_agent(frame)
        };
        for out in outs {
            if let Routed::ToClient(text) = out {
                let method = serde_json::from_str::<Value>(&text)
                    .ok()
                    .and_then(|m| m.get("method").and_then(Value::as_str).map(str::to_owned));
                assert!(
                    !matches!(
                        method.as_deref(),
                        Some(
                            "session/request_permission"
                                | "fs/read_text_file"
                                | "fs/write_text_file"
                                | "terminal/create"
                        )
                    ),
                    "{frame} reached the editor as {text}"
                );
            }
        }
    }
    let later = Instant::now() + Duration::from_secs(7 * 24 * 3600);
    let _ = closed.expire(later);
    let _ = open.expire(later);
});
