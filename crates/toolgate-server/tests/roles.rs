//! Roles: every route, with each role's token — the routes a role may use are served (whatever
//! the answer: a 404 for the made-up id is served), the others are `403 role_forbidden`; an
//! approver's answer is logged under its token's name; a revoked token is refused.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use axum::http::StatusCode;
use common::Daemon;
use serde_json::{Value, json};

/// What waiting on request `id` with `token` is answered (its status).
async fn waited_on(daemon: &Daemon, token: &str, id: &str) -> StatusCode {
    daemon
        .call_as(token, "GET", &format!("/api/decisions/{id}"), None)
        .await
        .0
}

/// The least role each route takes: what the matrix checks against.
fn least(method: &str, path: &str) -> &'static str {
    match (method, path) {
        ("GET", "/api/health" | "/api/openapi.json") | ("POST", "/api/login") => "public",
        ("POST", "/api/logout" | "/api/decisions" | "/api/sessions")
        | ("GET" | "DELETE", "/api/decisions/{id}")
        | ("GET", "/api/sessions/{id}" | "/api/sessions/{id}/events")
        | ("POST", "/api/sessions/{id}/branches" | "/api/sessions/{id}/results") => "agent",
        (
            "GET",
            "/api/pending" | "/api/grants" | "/api/events" | "/api/audit" | "/api/sessions"
            | "/api/policy" | "/api/decisions",
        )
        | ("POST", "/api/approvals/{id}" | "/api/sessions/{id}/approve")
        | ("DELETE", "/api/grants/{id}" | "/api/sessions/{id}/taint")
        | ("POST", "/api/grants/{id}/promote")
        | ("POST", "/agents/{agent}/sessions/{session}/branches/{branch}/responses") => "approver",
        _ => "admin",
    }
}

#[tokio::test]
async fn each_route_with_each_role_is_served_or_forbidden() {
    let daemon = Daemon::start().await;
    let tokens = [
        ("agent", daemon.token_for("an-agent", "agent").await),
        (
            "approver",
            daemon.token_for("an-approver", "approver").await,
        ),
        ("admin", daemon.token_for("an-admin", "admin").await),
    ];
    let rank = |role: &str| {
        ["agent", "approver", "admin"]
            .iter()
            .position(|r| *r == role)
            .unwrap()
    };
    let mut checked = 0;
    for (method, template) in toolgate_server::ROUTES {
        let path = template
            .replace("{id}", "no-such-id")
            .replace("{name}", "no-such-token")
            .replace("{agent}", "a")
            .replace("{session}", "s")
            .replace("{branch}", "b");
        let needed = least(method, template);
        for (role, secret) in &tokens {
            // (Logging out would end nothing here: a token is not a page session.)
            let body = (*method == "POST").then(|| json!({}));
            let (status, reply) = if path.ends_with("/events") {
                // A stream: its status alone (it goes on until the daemon stops).
                let request = daemon.request_as(secret, method, &path, None);
                let response = tower::ServiceExt::oneshot(daemon.app(), request)
                    .await
                    .unwrap();
                let code = response.status();
                if code.is_success() {
                    (code, Value::Null)
                } else {
                    use http_body_util::BodyExt;
                    let bytes = response.into_body().collect().await.unwrap().to_bytes();
                    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
                }
            } else {
                daemon.call_as(secret, method, &path, body).await
            };
            let allowed = needed == "public" || rank(role) >= rank(needed);
            if allowed {
                assert_ne!(
                    status,
                    StatusCode::FORBIDDEN,
                    "{role} {method} {path}: {reply}"
                );
                assert_ne!(
                    status,
                    StatusCode::UNAUTHORIZED,
                    "{role} {method} {path}: {reply}"
                );
            } else {
                assert_eq!(
                    (status, reply["error"]["code"].as_str()),
                    (StatusCode::FORBIDDEN, Some("role_forbidden")),
                    "{role} {method} {path}"
                );
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 3 * toolgate_server::ROUTES.len());
}

#[tokio::test]
async fn a_named_token_acts_under_its_name_until_revoked() {
    let daemon = Daemon::start().await;
    let agent = daemon.token_for("claude", "agent").await;
    let approver = daemon.token_for("alice", "approver").await;
    let call = json!({"tool": "pay", "args": {"n": 1}, "context": {"session": "s1"}});
    let (status, asked) = daemon
        .call_as(&agent, "POST", "/api/decisions", Some(call))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{asked}");
    let id = asked["id"].as_str().unwrap();
    // The agent may wait on it, not answer it.
    assert_eq!(waited_on(&daemon, &agent, id).await, StatusCode::OK);
    let answer = json!({"decision": "allow-once", "by": "somebody else"});
    let (status, _) = daemon
        .call_as(
            &agent,
            "POST",
            &format!("/api/approvals/{id}"),
            Some(answer.clone()),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // The approver answers; the log names it, whatever `by` said.
    let (status, reply) = daemon
        .call_as(
            &approver,
            "POST",
            &format!("/api/approvals/{id}"),
            Some(answer),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    let (_, audit) = daemon
        .call("GET", "/api/audit?type=permission_resolved", None)
        .await;
    assert_eq!(audit["events"][0]["actor"], "alice", "{audit}");

    // Listed without their secrets; a name once.
    let (_, listed) = daemon.call("GET", "/api/tokens", None).await;
    assert_eq!(listed["tokens"].as_array().unwrap().len(), 2, "{listed}");
    assert!(!listed.to_string().contains(&agent));
    let (status, reply) = daemon
        .call(
            "POST",
            "/api/tokens",
            Some(json!({"name": "claude", "role": "admin"})),
        )
        .await;
    assert_eq!(
        (status, reply["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("token_exists"))
    );
    for bad in [
        json!({"name": " ", "role": "agent"}),
        json!({"name": "x", "role": "root"}),
    ] {
        let (status, _) = daemon.call("POST", "/api/tokens", Some(bad.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
    }

    // The page signs in with an approver's token, not with an agent's.
    for (secret, signed) in [(&approver, true), (&agent, false)] {
        let (status, body) = daemon
            .call("POST", "/api/login", Some(json!({"token": secret})))
            .await;
        assert_eq!(status.is_success(), signed, "{status} {body}");
    }

    // Revoked: refused at once.
    let (status, _) = daemon.call("DELETE", "/api/tokens/claude", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(
        waited_on(&daemon, &agent, id).await,
        StatusCode::UNAUTHORIZED
    );
    let (status, _) = daemon.call("DELETE", "/api/tokens/claude", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, audit) = daemon
        .call("GET", "/api/audit?type=token_created,token_revoked", None)
        .await;
    assert_eq!(audit["events"].as_array().unwrap().len(), 3, "{audit}");
}
