//! A session recorded between the scripted editor and agent of `tests/acp` (straight, no proxy;
//! `tests/acp/record.mjs` made it), replayed through the proxy frame by frame under a policy that
//! allows every file and terminal request and asks about every permission: each frame reaches the
//! other side as recorded — byte for byte, but for the ids of the agent's requests, which the proxy
//! renumbers and gives back.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;
use toolgate_acp::{Options, Proxy};
use toolgate_mcp::Routed;
use toolgate_policy::Policy;

const POLICY: &str = r#"version = 1
[[rule]]
name = "ask-permissions"
decision = "ask"
tool = "acp/*"

[[rule]]
name = "the-rest"
decision = "allow"
tool = "*"
"#;

fn single(outs: Vec<Routed>, line: &str) -> Routed {
    assert_eq!(outs.len(), 1, "{line} became {outs:?}");
    outs.into_iter().next().unwrap()
}

#[test]
fn a_recorded_session_passes_as_recorded_ids_aside() {
    let recording = include_str!("fixtures/recorded-session.txt");
    let policy = Policy::from_toml("replay.toml", POLICY).unwrap();
    let mut proxy = Proxy::new(Options::new(Arc::new(policy)));
    // The agent's request ids, as the proxy renumbered them for the editor.
    let mut renumbered: HashMap<String, Value> = HashMap::new();
    let mut frames = 0;
    for line in recording.lines() {
        frames += 1;
        if let Some(frame) = line.strip_prefix('>') {
            let message: Value = serde_json::from_str(frame).unwrap();
            let is_answer = message.get("method").is_none();
            if !is_answer {
                // The editor's requests and notifications: as written.
                let out = single(proxy.from_editor(frame), frame);
                assert_eq!(out, Routed::ToServer(0, frame.to_owned()));
                continue;
            }
            // The editor's answer to an agent's request: sent under the id the proxy gave it,
            // it reaches the agent under the agent's own, otherwise as written.
            let id = message["id"].to_string();
            let given = renumbered
                .remove(&id)
                .expect("the proxy relayed that request");
            let mut sent = message.clone();
            sent["id"] = given;
            let out = single(proxy.from_editor(&sent.to_string()), frame);
            match out {
                Routed::ToServer(0, text) => assert_eq!(text, frame, "an answer changed"),
                other => panic!("{frame} became {other:?}"),
            }
        } else if let Some(frame) = line.strip_prefix('<') {
            let message: Value = serde_json::from_str(frame).unwrap();
            let out = single(proxy.from_agent(frame), frame);
            let Routed::ToClient(text) = out else {
                panic!("{frame} did not reach the editor");
            };
            match (message.get("method"), message.get("id")) {
                // The agent's requests: renumbered, the rest as written.
                (Some(_), Some(id)) => {
                    let relayed: Value = serde_json::from_str(&text).unwrap();
                    renumbered.insert(id.to_string(), relayed["id"].clone());
                    let mut expected = message.clone();
                    expected["id"] = relayed["id"].clone();
                    assert_eq!(text, expected.to_string(), "a request changed");
                }
                _ => assert_eq!(text, frame, "a frame changed"),
            }
        } else {
            panic!("not a recorded frame: {line}");
        }
    }
    assert!(frames >= 20, "the recording is {frames} frames");
    assert!(renumbered.is_empty(), "unanswered: {renumbered:?}");
}
