//! The seeds' approval routes over HTTP: AGH's approve API and HPD's hosted response route,
//! with their exact statuses; and sessions.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use axum::http::StatusCode;
use serde_json::{Value, json};

use common::Daemon;

async fn ask(daemon: &Daemon, tool: &str, session: &str, branch: &str) -> String {
    let call = json!({"tool": tool, "args": {}, "context": {"session": session, "branch": branch}});
    daemon.asked(call).await
}

async fn decision(daemon: &Daemon, id: &str) -> Value {
    daemon.decision(id).await
}

#[tokio::test]
async fn agh_approve_answers_by_request_id_with_its_statuses() {
    let daemon = Daemon::start().await;
    let id = ask(&daemon, "pay", "s1", "main").await;
    let approve = |body: Value| daemon.call("POST", "/api/sessions/s1/approve", Some(body));

    for (body, status, code) in [
        (
            json!({"decision": "allow-once"}),
            StatusCode::BAD_REQUEST,
            "missing_request",
        ),
        (
            json!({"request_id": id, "decision": "Allow-Once"}),
            StatusCode::BAD_REQUEST,
            "invalid_decision",
        ),
        (
            json!({"request_id": id}),
            StatusCode::BAD_REQUEST,
            "invalid_decision",
        ),
        (
            json!({"request_id": "nope", "decision": "allow-once"}),
            StatusCode::CONFLICT,
            "not_pending",
        ),
        (
            json!({"turn_id": "t9", "decision": "allow-once"}),
            StatusCode::CONFLICT,
            "not_pending",
        ),
        (
            json!({"request_id": id, "decision": "reject-once", "reason": 5}),
            StatusCode::BAD_REQUEST,
            "invalid_reason",
        ),
    ] {
        let (got, error) = approve(body).await;
        assert_eq!(
            (got, error["error"]["code"].as_str()),
            (status, Some(code)),
            "{error}"
        );
    }
    // A request of another session is not this session's to answer, by AGH's route or HPD's.
    let elsewhere = ask(&daemon, "pay", "s2", "main").await;
    let (status, error) = approve(json!({"request_id": elsewhere, "decision": "allow-once"})).await;
    assert_eq!(
        (status, error["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("not_pending")),
        "{error}"
    );
    let (status, error) = daemon
        .call(
            "POST",
            "/agents/toolgate/sessions/s1/branches/main/responses",
            Some(json!({"permissionId": elsewhere, "approved": true})),
        )
        .await;
    assert_eq!(
        (status, error["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("no_waiter")),
        "{error}"
    );
    let still_pending = || async {
        let mut waiting = daemon.pending_ids().await;
        waiting.sort();
        waiting
    };
    let mut expected = vec![id.clone(), elsewhere];
    expected.sort();
    assert_eq!(still_pending().await, expected);
    let (status, error) = daemon
        .call(
            "POST",
            "/api/sessions/unknown/approve",
            Some(json!({"request_id": id, "decision": "allow-once"})),
        )
        .await;
    assert_eq!(
        (status, error["error"]["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found"))
    );
    assert_eq!(still_pending().await, expected, "still pending");

    // " reject-once " (trimmed) is approved too: AGH's naming quirk. A reason sent along (not
    // AGH's) is what the agent reads.
    let (status, body) = approve(
        json!({"request_id": id, "decision": " reject-once ", "reason": "use the staging key"}),
    )
    .await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"status": "approved"}))
    );
    let decided = decision(&daemon, &id).await;
    assert_eq!(
        (decided["decision"].as_str(), decided["reason"].as_str()),
        (Some("deny"), Some("use the staging key"))
    );
    let (status, error) = approve(json!({"request_id": id, "decision": "allow-once"})).await;
    assert_eq!(
        (status, error["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("not_pending"))
    );
    // A late answer hears how the request went.
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("no longer pending: it was resolved: deny, use the staging key"),
        "{message}"
    );
    // Through another session's routes it is not found there, and how it went is not said.
    let (status, error) = daemon
        .call(
            "POST",
            "/api/sessions/s2/approve",
            Some(json!({"request_id": id, "decision": "allow-once"})),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("is pending in session `s2`") && !message.contains("staging"),
        "{message}"
    );
    let (status, error) = daemon
        .call(
            "POST",
            "/agents/toolgate/sessions/s2/branches/main/responses",
            Some(json!({"permissionId": id, "approved": true})),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    let message = error["error"]["message"].as_str().unwrap();
    assert!(!message.contains("staging"), "{message}");
}

#[tokio::test]
async fn agh_falls_back_to_the_sibling_option_kind() {
    let daemon = Daemon::start().await;
    // `deploy` offers allow-once and reject-once only.
    let id = ask(&daemon, "deploy", "s1", "main").await;
    let (status, _) = daemon
        .call(
            "POST",
            "/api/sessions/s1/approve",
            Some(json!({"request_id": id, "decision": "allow-always"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let decided = decision(&daemon, &id).await;
    assert_eq!(decided["decision"], "allow");
    let (_, grants) = daemon.call("GET", "/api/grants", None).await;
    assert!(
        grants["grants"].as_array().unwrap().is_empty(),
        "applied as allow-once: no grant"
    );
}

#[tokio::test]
async fn hpd_responses_are_routed_by_agent_session_and_branch() {
    let daemon = Daemon::start().await;
    let id = ask(&daemon, "pay", "s1", "main").await;
    let route = |agent: &str, session: &str, branch: &str| {
        format!("/agents/{agent}/sessions/{session}/branches/{branch}/responses")
    };
    let envelope = |permission: &str| {
        json!({"version": "1.0", "type": "PERMISSION_RESPONSE", "permissionId": permission,
               "sourceName": "toolgate", "approved": true, "choice": "alwaysAllow"})
    };
    // HPD: the scope is looked up first (404), then the agent's runtime in it (409).
    for (path, status, code) in [
        (
            route("other", "s1", "main"),
            StatusCode::CONFLICT,
            "BranchRuntimeNotActive",
        ),
        (
            route("other", "nope", "main"),
            StatusCode::NOT_FOUND,
            "not_found",
        ),
        (
            route("toolgate", "nope", "main"),
            StatusCode::NOT_FOUND,
            "not_found",
        ),
        (
            route("toolgate", "s1", "nope"),
            StatusCode::NOT_FOUND,
            "not_found",
        ),
    ] {
        let (got, error) = daemon.call("POST", &path, Some(envelope(&id))).await;
        assert_eq!(
            (got, error["error"]["code"].as_str()),
            (status, Some(code)),
            "{path}"
        );
    }
    // A branch with nothing waiting: the runtime is not active.
    let (status, _) = daemon
        .call(
            "POST",
            "/api/sessions/s1/branches",
            Some(json!({"name": "alt"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, error) = daemon
        .call("POST", &route("toolgate", "s1", "alt"), Some(envelope(&id)))
        .await;
    assert_eq!(
        (status, error["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("BranchRuntimeNotActive"))
    );
    let (status, error) = daemon
        .call(
            "POST",
            &route("toolgate", "s1", "main"),
            Some(envelope("other-id")),
        )
        .await;
    assert_eq!(
        (status, error["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("no_waiter"))
    );
    assert_eq!(daemon.pending_ids().await, std::slice::from_ref(&id));

    let (status, body) = daemon
        .call(
            "POST",
            &route("toolgate", "s1", "main"),
            Some(envelope(&id)),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["decision"], "allow-always");
    assert_eq!(decision(&daemon, &id).await["decision"], "allow");
    let (status, error) = daemon
        .call(
            "POST",
            &route("toolgate", "s1", "main"),
            Some(envelope(&id)),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "nothing waits any more");
    // HPD's code, and how the request went for the late answer.
    assert_eq!(error["error"]["code"], "BranchRuntimeNotActive", "{error}");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("was resolved: allow, "), "{message}");
}

#[tokio::test]
async fn sessions_are_created_listed_read_and_forked() {
    let daemon = Daemon::start().await;
    let (status, created) = daemon
        .call(
            "POST",
            "/api/sessions",
            Some(json!({"id": "work", "workspace": "/ws"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(created["branches"], json!(["main"]));
    let (status, _) = daemon
        .call("POST", "/api/sessions", Some(json!({"id": "work"})))
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    let (status, _) = daemon
        .call("POST", "/api/sessions", Some(json!({"id": "bad id!"})))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // A call naming a session and branch creates them.
    let id = ask(&daemon, "pay", "auto", "feature").await;
    let (_, session) = daemon.call("GET", "/api/sessions/auto", None).await;
    assert_eq!(session["branches"], json!(["main", "feature"]));
    assert_eq!(session["pending"][0]["id"], id);
    let (_, list) = daemon.call("GET", "/api/sessions", None).await;
    assert_eq!(list["sessions"].as_array().unwrap().len(), 2);
    let (status, _) = daemon
        .call(
            "POST",
            "/api/sessions/work/branches",
            Some(json!({"name": "try", "from": "nope"})),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = daemon
        .call(
            "POST",
            "/api/sessions/work/branches",
            Some(json!({"name": "try"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _) = daemon
        .call(
            "POST",
            "/api/sessions/work/branches",
            Some(json!({"name": "try"})),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    let (status, _) = daemon.call("GET", "/api/sessions/missing", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // The most recently created or given a branch first, as many as asked, and how many there are.
    let (_, list) = daemon.call("GET", "/api/sessions?limit=1", None).await;
    assert_eq!(list["total"], 2, "{list}");
    assert_eq!(list["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(list["sessions"][0]["id"], "work", "forked last: {list}");

    // A session has at most 1,000 branches, by fork or by a call naming a new one.
    let branches: Vec<String> = (0..1000).map(|i| format!("b{i}")).collect();
    daemon
        .server
        .state()
        .store()
        .put_session(
            "wide",
            &json!({"id": "wide", "workspace": null, "branches": branches}),
        )
        .await
        .unwrap();
    let (status, body) = daemon
        .call(
            "POST",
            "/api/sessions/wide/branches",
            Some(json!({"name": "one-more", "from": "b0"})),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("too_many_branches")),
        "{body}"
    );
    let call = json!({"tool": "read", "args": {}, "context": {"session": "wide", "branch": "new"}});
    let (status, body) = daemon.call("POST", "/api/decisions", Some(call)).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("too_many_branches")),
        "{body}"
    );
    let call = json!({"tool": "read", "args": {}, "context": {"session": "wide", "branch": "b7"}});
    let (status, _) = daemon.call("POST", "/api/decisions", Some(call)).await;
    assert_eq!(status, StatusCode::OK, "a branch it has is fine");
}

/// Changes to one session at once each land: forks, calls naming new branches and creations
/// of one id (the first wins, the others hear 409).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_changes_to_a_session_are_all_kept() {
    let daemon = std::sync::Arc::new(Daemon::start().await);
    let mut tasks = Vec::new();
    for _ in 0..24 {
        let daemon = daemon.clone();
        tasks.push(tokio::spawn(async move {
            daemon
                .call("POST", "/api/sessions", Some(json!({"id": "shared"})))
                .await
                .0
        }));
    }
    let mut created = 0;
    for task in tasks {
        match task.await.unwrap() {
            StatusCode::CREATED => created += 1,
            status => assert_eq!(status, StatusCode::CONFLICT),
        }
    }
    assert_eq!(created, 1, "one creation of `shared` wins");

    let mut tasks = Vec::new();
    for n in 0..24 {
        let daemon = daemon.clone();
        tasks.push(tokio::spawn(async move {
            if n % 2 == 0 {
                let (status, body) = daemon
                    .call(
                        "POST",
                        "/api/sessions/shared/branches",
                        Some(json!({"name": format!("fork-{n}")})),
                    )
                    .await;
                assert_eq!(status, StatusCode::CREATED, "{body}");
            } else {
                ask(&daemon, "pay", "shared", &format!("call-{n}")).await;
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let (_, session) = daemon.call("GET", "/api/sessions/shared", None).await;
    let branches = session["branches"].as_array().unwrap();
    assert_eq!(branches.len(), 25, "{session}");
    for n in 0..24 {
        let name = if n % 2 == 0 {
            format!("fork-{n}")
        } else {
            format!("call-{n}")
        };
        assert!(branches.contains(&json!(name)), "{name} lost: {session}");
    }
}
