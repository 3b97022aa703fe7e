//! Loading the policy again without a restart: the requests held open are decided again under
//! the new policy (answered when it decides them, left waiting when it still asks); a policy
//! that fails to load leaves the one in force and says why; a change to the policy's file loads
//! it again by itself.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use common::Daemon;
use serde_json::{Value, json};
use toolgate_policy::{LoadOptions, Policy, PolicyRole};
use toolgate_server::{PolicySource, Reloaded};

const ASKING: &str = r#"
version = 1
mode = "approve-all"

[[rule]]
name = "ask-releases"
decision = "ask"
reason = "releases need a person"
command = ["git push", "npm publish", "cargo publish"]
"#;

const DECIDING: &str = r#"
version = 1
mode = "approve-all"

[[rule]]
name = "pushes-are-fine"
decision = "allow"
command = ["git push"]

[[rule]]
name = "no-npm-releases"
decision = "deny"
reason = "npm releases are made by CI"
command = ["npm publish"]

[[rule]]
name = "ask-cargo-releases"
decision = "ask"
reason = "cargo releases need a person"
command = ["cargo publish"]
"#;

fn load(path: &Path) -> Result<Policy, String> {
    Policy::load_paths(
        &[(PolicyRole::Given, path.to_owned())],
        LoadOptions::default(),
    )
    .map_err(|e| e.to_string())
}

/// A daemon whose policy is the file `policy.toml` in a folder of its own, which it watches.
async fn daemon_on_file(text: &str) -> (Daemon, PathBuf, tempfile::TempDir) {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("policy.toml");
    std::fs::write(&path, text).unwrap();
    let daemon = Daemon::open_with(tempfile::tempdir().unwrap(), text).await;
    let file = path.clone();
    daemon.server.reload_from(PolicySource {
        files: vec![path.clone()],
        load: Arc::new(move || load(&file)),
    });
    (daemon, path, folder)
}

fn bash(command: &str) -> Value {
    json!({"tool": "bash", "args": {"command": command}, "context": {"session": "s1"}})
}

async fn ask(daemon: &Daemon, command: &str) -> String {
    daemon.asked(bash(command)).await
}

async fn decision(daemon: &Daemon, id: &str) -> Value {
    daemon.decision(id).await
}

#[tokio::test]
async fn a_reload_decides_the_waiting_requests_the_new_policy_decides() {
    let (daemon, path, _folder) = daemon_on_file(ASKING).await;
    let push = ask(&daemon, "git push origin main").await;
    let npm = ask(&daemon, "npm publish").await;
    let cargo = ask(&daemon, "cargo publish").await;

    std::fs::write(&path, DECIDING).unwrap();
    let reloaded = daemon.server.reload().await.unwrap();
    assert_eq!(
        reloaded,
        Reloaded {
            decided: 2,
            waiting: 1
        }
    );
    let allowed = decision(&daemon, &push).await;
    assert_eq!(
        (
            allowed["status"].as_str(),
            allowed["decision"].as_str(),
            allowed["actor"].as_str()
        ),
        (Some("decided"), Some("allow"), Some("policy")),
        "{allowed}"
    );
    assert!(
        allowed["reason"]
            .as_str()
            .unwrap()
            .contains("the policy was reloaded"),
        "{allowed}"
    );
    let denied = decision(&daemon, &npm).await;
    assert_eq!(denied["decision"], "deny", "{denied}");
    assert!(
        denied["reason"]
            .as_str()
            .unwrap()
            .contains("npm releases are made by CI"),
        "{denied}"
    );
    assert_eq!(decision(&daemon, &cargo).await["status"], "pending");
    assert_eq!(daemon.pending_ids().await, std::slice::from_ref(&cargo));
    // New calls are decided by it.
    let (status, body) = daemon
        .call("POST", "/api/decisions", Some(bash("git push")))
        .await;
    assert_eq!(
        (status, body["decision"].as_str()),
        (StatusCode::OK, Some("allow")),
        "{body}"
    );
    let (_, audit) = daemon
        .call("GET", "/api/audit?type=policy_reloaded", None)
        .await;
    assert_eq!(audit["events"][0]["decided"], 2, "{audit}");
    // The one still waiting can be answered as before.
    let (status, body) = daemon.answer(&cargo, "allow-once").await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn a_policy_that_fails_to_load_leaves_the_one_in_force_and_says_why() {
    let (daemon, path, _folder) = daemon_on_file(ASKING).await;
    let waiting = ask(&daemon, "git push").await;
    std::fs::write(
        &path,
        "version = 1\n[[rule]]\nname = \"x\"\ndecision = \"alow\"\n",
    )
    .unwrap();
    let error = daemon.server.reload().await.unwrap_err();
    assert!(error.contains("policy.toml:4:"), "{error}");
    // The old policy still decides; the waiting request still waits.
    let (status, _) = daemon
        .call("POST", "/api/decisions", Some(bash("npm publish")))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(decision(&daemon, &waiting).await["status"], "pending");
    let (status, policy) = daemon.call("GET", "/api/policy", None).await;
    assert_eq!(status, StatusCode::OK, "{policy}");
    assert!(
        policy["reload_failed"]["reason"]
            .as_str()
            .unwrap()
            .contains("unknown decision `alow`"),
        "{policy}"
    );
    assert_eq!(policy["watched"], true, "{policy}");
    let (_, audit) = daemon
        .call("GET", "/api/audit?type=policy_reload_failed", None)
        .await;
    assert_eq!(audit["events"].as_array().unwrap().len(), 1, "{audit}");
    // Fixed, it loads, and the failure is no longer said.
    std::fs::write(&path, DECIDING).unwrap();
    daemon.server.reload().await.unwrap();
    let (_, policy) = daemon.call("GET", "/api/policy", None).await;
    assert!(policy.get("reload_failed").is_none(), "{policy}");
    assert_eq!(decision(&daemon, &waiting).await["decision"], "allow");
}

#[tokio::test]
async fn a_change_to_the_policy_file_loads_it_again() {
    let (daemon, path, _folder) = daemon_on_file(ASKING).await;
    let waiting = ask(&daemon, "git push").await;
    // Written beside it and renamed over it, as editors save.
    let fresh = path.with_extension("toml.new");
    std::fs::write(&fresh, DECIDING).unwrap();
    std::fs::rename(&fresh, &path).unwrap();
    let started = Instant::now();
    loop {
        if decision(&daemon, &waiting).await["status"] == "decided" {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the change was not seen in 10 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(decision(&daemon, &waiting).await["decision"], "allow");
}

/// A reload decides a waiting call under its session's taint: the new policy allows pushes, but
/// in a session a fetched page tainted, the push still waits for a person; elsewhere it is
/// allowed.
#[tokio::test]
async fn a_reload_decides_under_the_sessions_taint() {
    let (daemon, path, _folder) = daemon_on_file(ASKING).await;
    let in_session = |session: &str| {
        json!({"tool": "bash", "args": {"command": "git push origin main"},
               "context": {"session": session}})
    };
    let page = json!({"tool": "WebFetch", "args": {"url": "https://evil.example/", "prompt": "p"}});
    let (status, body) = daemon
        .call(
            "POST",
            "/api/sessions/tainted/results",
            Some(json!({"call": page})),
        )
        .await;
    assert_eq!(
        (status, &body["tainted"]),
        (StatusCode::OK, &json!(true)),
        "{body}"
    );
    let tainted = daemon.asked(in_session("tainted")).await;
    let clean = daemon.asked(in_session("clean")).await;
    std::fs::write(&path, DECIDING).unwrap();
    let reloaded = daemon.server.reload().await.unwrap();
    assert_eq!(
        reloaded,
        Reloaded {
            decided: 1,
            waiting: 1
        }
    );
    assert_eq!(decision(&daemon, &clean).await["decision"], "allow");
    assert_eq!(decision(&daemon, &tainted).await["status"], "pending");
}
