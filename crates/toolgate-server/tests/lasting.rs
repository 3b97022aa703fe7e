//! Grants that last: an "always" answer chooses where its grants apply (the session, the
//! workspace, every workspace of the user) among the scopes the policy offers, and how long they
//! last; an expired grant answers nothing, is listed no more and is removed with an event; a
//! restart keeps workspace and user grants. Time is the daemon's clock, moved by the test.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use axum::http::StatusCode;
use common::Daemon;
use serde_json::{Value, json};
use toolgate_server::{Clock, ServerConfig};

const POLICY: &str = r#"
version = 1

[approval]
timeout = "30s"

[[rule]]
name = "ask-push"
decision = "ask"
reason = "pushes need a person"
command = ["git push"]
grant = "command"

[[rule]]
name = "ask-deploy"
decision = "ask"
reason = "deploys need a person"
command = ["deploy"]
scopes = ["session"]
"#;

/// A clock the test moves forward.
#[derive(Clone, Default)]
struct Moved(Arc<AtomicU64>);

impl Moved {
    fn clock(&self) -> Clock {
        let ahead = self.0.clone();
        Clock::from_fn(move || {
            SystemTime::now() + Duration::from_secs(ahead.load(Ordering::SeqCst))
        })
    }

    fn forward(&self, by: Duration) {
        self.0.fetch_add(by.as_secs(), Ordering::SeqCst);
    }
}

async fn open(dir: tempfile::TempDir, moved: &Moved) -> Daemon {
    let mut config = ServerConfig::new(dir.path());
    config.clock = moved.clock();
    Daemon::open_configured(dir, POLICY, config).await
}

fn call(command: &str, session: &str, workspace: Option<&std::path::Path>) -> Value {
    let mut context = json!({"session": session});
    if let Some(workspace) = workspace {
        context["workspace"] = json!(workspace);
    }
    json!({"tool": "bash", "args": {"command": command}, "context": context})
}

async fn decide(daemon: &Daemon, call: Value) -> (StatusCode, Value) {
    daemon.call("POST", "/api/decisions", Some(call)).await
}

async fn answer(daemon: &Daemon, id: &str, body: Value) -> (StatusCode, Value) {
    daemon
        .call("POST", &format!("/api/approvals/{id}"), Some(body))
        .await
}

/// The decision of a call the policy asks: answered by a grant (`allow`/`deny`) or asked.
async fn outcome(daemon: &Daemon, call: Value) -> String {
    let (status, body) = decide(daemon, call).await;
    match status {
        StatusCode::OK => {
            assert_eq!(body["layer"], "grant", "{body}");
            body["decision"].as_str().unwrap().to_owned()
        }
        StatusCode::ACCEPTED => "ask".to_owned(),
        other => panic!("{other}: {body}"),
    }
}

fn workspace(dir: &tempfile::TempDir, name: &str) -> std::path::PathBuf {
    let path = dir.path().join(name);
    std::fs::create_dir_all(&path).unwrap();
    path.canonicalize().unwrap()
}

#[tokio::test]
async fn an_always_answer_lasts_where_and_as_long_as_it_says() {
    let places = tempfile::tempdir().unwrap();
    let (app, other) = (workspace(&places, "app"), workspace(&places, "other"));
    let moved = Moved::default();
    let dir = tempfile::tempdir().unwrap();
    let daemon = open(dir, &moved).await;

    // The request offers the policy's scopes, each saying what it covers.
    let (status, body) = decide(&daemon, call("git push origin main", "s1", Some(&app))).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let id = body["id"].as_str().unwrap().to_owned();
    let allow = body["always"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["choice"] == "allow-always")
        .unwrap_or_else(|| panic!("{body}"))
        .clone();
    assert_eq!(allow["scope"], "session");
    let scopes: Vec<&str> = allow["scopes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["scope"].as_str().unwrap())
        .collect();
    assert_eq!(scopes, ["session", "workspace", "user"]);
    let says = allow["scopes"][1]["covers"].as_str().unwrap();
    assert!(
        says.contains("commands starting with `git push`")
            && says.contains(&*app.to_string_lossy()),
        "{says}"
    );

    // Answers that cannot be taken are refused, and the request stays pending.
    for (body, status, code) in [
        (
            json!({"decision": "allow-always", "scope": "galaxy"}),
            StatusCode::BAD_REQUEST,
            "invalid_lasting",
        ),
        (
            json!({"decision": "allow-always", "expires_in": 0}),
            StatusCode::BAD_REQUEST,
            "invalid_lasting",
        ),
        (
            json!({"decision": "allow-always", "expires_in": "8h"}),
            StatusCode::BAD_REQUEST,
            "invalid_lasting",
        ),
        (
            json!({"decision": "allow-always", "expires_in": 1.5}),
            StatusCode::BAD_REQUEST,
            "invalid_lasting",
        ),
        (
            json!({"decision": "allow-always", "expires_in": 400 * 86400}),
            StatusCode::BAD_REQUEST,
            "invalid_lasting",
        ),
    ] {
        let (got, reply) = answer(&daemon, &id, body.clone()).await;
        assert_eq!(
            (got, reply["error"]["code"].as_str()),
            (status, Some(code)),
            "{body}: {reply}"
        );
    }
    assert_eq!(daemon.pending_ids().await, std::slice::from_ref(&id));

    // For the workspace, eight hours.
    let (status, reply) = answer(
        &daemon,
        &id,
        json!({"decision": "allow-always", "scope": "workspace", "expires_in": 8 * 3600}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    let grant = &reply["grants"][0];
    assert_eq!(grant["scope"], "workspace", "{reply}");
    assert_eq!(grant["root"], json!(app), "{reply}");
    assert!(grant["expires_at"].is_string(), "{reply}");

    assert_eq!(
        outcome(&daemon, call("git push", "s2", Some(&app))).await,
        "allow"
    );
    assert_eq!(
        outcome(&daemon, call("git push", "s1", Some(&other))).await,
        "ask"
    );
    assert_eq!(outcome(&daemon, call("git push", "s3", None)).await, "ask");
    let (_, listed) = daemon
        .call("GET", "/api/grants?scope=workspace", None)
        .await;
    assert_eq!(listed["total"], 1, "{listed}");
    let (_, listed) = daemon.call("GET", "/api/grants?scope=user", None).await;
    assert_eq!(listed["total"], 0, "{listed}");
    let (status, listed) = daemon.call("GET", "/api/grants?scope=galaxy", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{listed}");

    // Eight hours on, it answers nothing and is not listed.
    moved.forward(Duration::from_secs(8 * 3600 + 1));
    assert_eq!(
        outcome(&daemon, call("git push", "s2", Some(&app))).await,
        "ask"
    );
    let (_, listed) = daemon.call("GET", "/api/grants", None).await;
    assert_eq!(listed["total"], 0, "{listed}");

    // A refusal for the user: every session, every workspace, none.
    let (_, body) = decide(&daemon, call("git push --force", "s4", Some(&other))).await;
    let id = body["id"].as_str().unwrap();
    let (status, reply) = answer(
        &daemon,
        id,
        json!({"decision": "reject-always", "scope": "user", "reason": "no pushes today"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(
        outcome(&daemon, call("git push", "s5", Some(&app))).await,
        "deny"
    );
    assert_eq!(
        outcome(&daemon, call("git -C . push", "s6", None)).await,
        "deny"
    );
}

#[tokio::test]
async fn a_scope_the_policy_does_not_offer_is_refused_and_the_request_waits() {
    let places = tempfile::tempdir().unwrap();
    let app = workspace(&places, "app");
    let moved = Moved::default();
    let daemon = open(tempfile::tempdir().unwrap(), &moved).await;
    let (status, body) = decide(&daemon, call("deploy prod", "s1", Some(&app))).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let id = body["id"].as_str().unwrap().to_owned();
    let allow = &body["always"][0];
    assert_eq!(allow["scopes"].as_array().unwrap().len(), 1, "{body}");
    let (status, reply) = answer(
        &daemon,
        &id,
        json!({"decision": "allow-always", "scope": "user"}),
    )
    .await;
    assert_eq!(
        (status, reply["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("scope_not_offered")),
        "{reply}"
    );
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("offered: session"),
        "{reply}"
    );
    assert_eq!(daemon.pending_ids().await, std::slice::from_ref(&id));
    let (status, reply) = answer(
        &daemon,
        &id,
        json!({"decision": "allow-always", "scope": "session"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{reply}");

    // A "once" answer makes no grant: a scope and a life it gives are left aside.
    let (_, body) = decide(&daemon, call("deploy staging", "s1", Some(&app))).await;
    let (status, reply) = answer(
        &daemon,
        body["id"].as_str().unwrap(),
        json!({"decision": "allow-once", "scope": "user", "expires_in": 60}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(reply["grants"], json!([]), "{reply}");

    // A call that names no workspace is offered no workspace scope.
    let (_, body) = decide(&daemon, call("git push", "s2", None)).await;
    let scopes: Vec<&str> = body["always"][0]["scopes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["scope"].as_str().unwrap())
        .collect();
    assert_eq!(scopes, ["session", "user"], "{body}");
}

#[tokio::test]
async fn a_restart_keeps_workspace_and_user_grants_and_removes_the_expired() {
    let places = tempfile::tempdir().unwrap();
    let (app, other) = (workspace(&places, "app"), workspace(&places, "other"));
    let moved = Moved::default();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_owned();
    let daemon = open(dir, &moved).await;
    for (command, session, place, body) in [
        (
            "git push",
            "s1",
            &app,
            json!({"decision": "allow-always", "scope": "workspace"}),
        ),
        (
            "git push",
            "s2",
            &other,
            json!({"decision": "allow-always", "scope": "session", "expires_in": 3600}),
        ),
        (
            "deploy prod",
            "s3",
            &app,
            json!({"decision": "reject-always"}),
        ),
    ] {
        let (_, asked) = decide(&daemon, call(command, session, Some(place))).await;
        let (status, reply) = answer(&daemon, asked["id"].as_str().unwrap(), body).await;
        assert_eq!(status, StatusCode::OK, "{reply}");
    }
    let (_, asked) = decide(&daemon, call("git push", "s4", Some(&other))).await;
    let (status, reply) = answer(
        &daemon,
        asked["id"].as_str().unwrap(),
        json!({"decision": "allow-always", "scope": "user"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    let Daemon { dir, server, .. } = daemon;
    drop(server);

    // Two hours later: the session's hour is over.
    moved.forward(Duration::from_secs(2 * 3600));
    let daemon = open(dir, &moved).await;
    assert_eq!(daemon.dir.path(), path);
    assert_eq!(
        outcome(&daemon, call("git push", "s9", Some(&app))).await,
        "allow"
    );
    assert_eq!(
        outcome(&daemon, call("git push", "s9", None)).await,
        "allow"
    );
    assert_eq!(
        outcome(&daemon, call("deploy prod", "s3", Some(&app))).await,
        "deny"
    );
    assert_eq!(
        outcome(&daemon, call("deploy prod", "s4", Some(&app))).await,
        "ask"
    );
    // The expired grant is removed, with an event saying so (the daemon does it as it starts).
    let mut found = Value::Null;
    for _ in 0..200 {
        let (_, audit) = daemon
            .call("GET", "/api/audit?type=grant_expired", None)
            .await;
        if audit["events"].as_array().is_some_and(|e| !e.is_empty()) {
            found = audit["events"][0].clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(found["grant"]["session"], "s2", "{found}");
    let (_, listed) = daemon.call("GET", "/api/grants", None).await;
    assert_eq!(listed["total"], 3, "{listed}");
}

/// In a compound command, "always deny" is offered for the part that asked, not the whole
/// line: it refuses that act later however it is spelled, and leaves the other part to the
/// policy.
#[tokio::test]
async fn an_always_deny_covers_the_part_of_a_compound_command_that_asked() {
    let places = tempfile::tempdir().unwrap();
    let app = workspace(&places, "app");
    let moved = Moved::default();
    let daemon = open(tempfile::tempdir().unwrap(), &moved).await;
    let line = "git status && git push origin main";
    let (status, body) = decide(&daemon, call(line, "s1", Some(&app))).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let id = body["id"].as_str().unwrap().to_owned();
    let deny = body["always"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["choice"] == "reject-always")
        .unwrap_or_else(|| panic!("{body}"))
        .clone();
    let covers = deny["scopes"][0]["covers"].as_str().unwrap();
    assert!(
        covers.contains("commands starting with `git push`") && !covers.contains("git status"),
        "{covers}"
    );
    let (status, reply) = answer(&daemon, &id, json!({"decision": "reject-always"})).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(
        outcome(
            &daemon,
            call("git -C . push origin other", "s1", Some(&app))
        )
        .await,
        "deny"
    );
    let (status, body) = decide(&daemon, call("git status", "s1", Some(&app))).await;
    assert_eq!(
        (status, &body["decision"]),
        (StatusCode::OK, &json!("allow")),
        "{body}"
    );
    assert_ne!(body["layer"], "grant", "{body}");
}

/// The page's "Make a rule": `POST /api/grants/{id}/promote` shows the rule a workspace grant
/// amounts to, in the workspace's policy file, as a diff; with `write` (an approver's) the file
/// is written, with the call that made the grant as its example, and the grant revoked; the log
/// says who. A grant no file can take is refused and nothing written.
#[tokio::test]
async fn a_grant_is_made_a_rule_through_the_daemon() {
    let places = tempfile::tempdir().unwrap();
    let app = workspace(&places, "app");
    let moved = Moved::default();
    let daemon = open(tempfile::tempdir().unwrap(), &moved).await;
    let (_, body) = decide(&daemon, call("git push origin main", "s1", Some(&app))).await;
    let id = body["id"].as_str().unwrap().to_owned();
    let (status, reply) = answer(
        &daemon,
        &id,
        json!({"decision": "allow-always", "scope": "workspace"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    let grant = reply["grants"][0]["id"].as_str().unwrap().to_owned();
    let promote = format!("/api/grants/{grant}/promote");
    let file = app.join(".toolgate/policy.toml");

    let (status, shown) = daemon.call("POST", &promote, Some(json!({}))).await;
    assert_eq!(status, StatusCode::OK, "{shown}");
    assert_eq!(shown["file"], json!(file));
    assert_eq!(shown["written"], false);
    assert_eq!(shown["example"], true);
    let diff = shown["diff"].as_str().unwrap();
    assert!(
        diff.contains("+decision = \"allow\"") && diff.contains("+command = [[\"git\", \"push\"]]"),
        "{diff}"
    );
    assert!(!file.exists(), "shown, not written");
    // An agent may not; an approver (who made the grant) may.
    let agent = daemon.token_for("an-agent", "agent").await;
    let (status, _) = daemon
        .call_as(&agent, "POST", &promote, Some(json!({"write": true})))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let approver = daemon.token_for("alice", "approver").await;
    let (status, _) = daemon
        .call("POST", &promote, Some(json!({"write": "yes"})))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    let (status, written) = daemon
        .call_as(
            &approver,
            "POST",
            &promote,
            Some(json!({"write": true, "by": "bob"})),
        )
        .await;
    assert_eq!(
        (status, &written["written"]),
        (StatusCode::OK, &json!(true)),
        "{written}"
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("git push origin main") && text.contains("[[rule]]"),
        "the call that made the grant is the rule's example: {text}"
    );
    toolgate_policy::Policy::from_toml("p.toml", &text).expect("the written policy loads");
    let (_, grants) = daemon.call("GET", "/api/grants", None).await;
    assert_eq!(grants["grants"], json!([]), "{grants}");
    let (_, log) = daemon
        .call("GET", "/api/audit?type=grant_revoked", None)
        .await;
    assert_eq!(
        log["events"][0]["actor"], "alice",
        "the token's name: {log}"
    );
    assert_eq!(log["events"][0]["promoted"], json!(file));
    let (status, _) = daemon.call("POST", &promote, Some(json!({}))).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "revoked");

    // A session's grant, in a session that names no workspace: no file to take it.
    let (_, body) = decide(&daemon, call("git push origin main", "s2", None)).await;
    let id = body["id"].as_str().unwrap().to_owned();
    let (_, reply) = answer(&daemon, &id, json!({"decision": "allow-always"})).await;
    let grant = reply["grants"][0]["id"].as_str().unwrap().to_owned();
    let (status, refused) = daemon
        .call(
            "POST",
            &format!("/api/grants/{grant}/promote"),
            Some(json!({"write": true})),
        )
        .await;
    assert_eq!(
        (status, &refused["error"]["code"]),
        (StatusCode::CONFLICT, &json!("not_promotable")),
        "{refused}"
    );
}
