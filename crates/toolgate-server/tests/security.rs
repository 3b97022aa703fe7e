//! Hostile requests: each is refused with a JSON error, and the pending request it aims at is
//! left untouched.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

use common::{Daemon, HOST, ORIGIN};

/// A daemon with one pending request; returns it and the request's id.
async fn with_pending() -> (Daemon, String) {
    let daemon = Daemon::start().await;
    let call = json!({"tool": "pay", "args": {}, "context": {"session": "s1"}});
    let (status, body) = daemon.call("POST", "/api/decisions", Some(call)).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let id = body["id"].as_str().unwrap().to_owned();
    (daemon, id)
}

fn approve(daemon: &Daemon, id: &str) -> axum::http::request::Builder {
    let _ = daemon;
    Request::builder()
        .method("POST")
        .uri(format!("/api/approvals/{id}"))
        .header(header::CONTENT_TYPE, "application/json")
}

fn answer() -> Body {
    Body::from(json!({"decision": "allow-once"}).to_string())
}

async fn refused(
    daemon: &Daemon,
    id: &str,
    request: Request<Body>,
    status: StatusCode,
    code: &str,
) {
    let (got, body) = daemon.send(request).await;
    assert_eq!(
        (got, body["error"]["code"].as_str()),
        (status, Some(code)),
        "{body}"
    );
    assert_eq!(
        daemon.pending_ids().await,
        [id.to_owned()],
        "the pending request is untouched"
    );
}

#[tokio::test]
async fn requests_for_another_host_are_refused() {
    let (daemon, id) = with_pending().await;
    let bearer = format!("Bearer {}", daemon.token);
    for host in [
        "evil.example",
        "evil.example:7811",
        "127.0.0.1.evil.example:7811",
        "127.0.0.1:7812",
        "localhost.evil.example:7811",
        "127.0.0.1",
        "0.0.0.0:7811",
    ] {
        let request = approve(&daemon, &id)
            .header(header::HOST, host)
            .header(header::AUTHORIZATION, &bearer)
            .body(answer())
            .unwrap();
        refused(
            &daemon,
            &id,
            request,
            StatusCode::FORBIDDEN,
            "host_not_allowed",
        )
        .await;
    }
    let request = approve(&daemon, &id)
        .header(header::AUTHORIZATION, &bearer)
        .body(answer())
        .unwrap();
    refused(
        &daemon,
        &id,
        request,
        StatusCode::BAD_REQUEST,
        "missing_host",
    )
    .await;
    let request = approve(&daemon, &id)
        .header(header::HOST, HOST)
        .header("x-forwarded-host", "evil.example")
        .header(header::AUTHORIZATION, &bearer)
        .body(answer())
        .unwrap();
    refused(
        &daemon,
        &id,
        request,
        StatusCode::BAD_REQUEST,
        "forwarded_host",
    )
    .await;
    for forwarded in [
        "host=evil.example",
        "for=192.0.2.1;Host=evil.example",
        "for=192.0.2.1, host=evil.example;proto=https",
        "Host = evil.example",
        "for=x;\thost =\"evil.example\"",
    ] {
        let request = approve(&daemon, &id)
            .header(header::HOST, HOST)
            .header(header::FORWARDED, forwarded)
            .header(header::AUTHORIZATION, &bearer)
            .body(answer())
            .unwrap();
        refused(
            &daemon,
            &id,
            request,
            StatusCode::BAD_REQUEST,
            "forwarded_host",
        )
        .await;
    }
    // What a proxy says of the client is no concern of the daemon's.
    let request = Request::builder()
        .uri("/api/pending")
        .header(header::HOST, HOST)
        .header(header::FORWARDED, "for=192.0.2.1;proto=https")
        .header(header::AUTHORIZATION, &bearer)
        .body(Body::empty())
        .unwrap();
    assert_eq!(daemon.send(request).await.0, StatusCode::OK);
    // An absolute request target names the host the request is for, whatever `Host` says.
    let request = Request::builder()
        .method("POST")
        .uri(format!("http://evil.example/api/approvals/{id}"))
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::HOST, HOST)
        .header(header::AUTHORIZATION, &bearer)
        .body(answer())
        .unwrap();
    refused(
        &daemon,
        &id,
        request,
        StatusCode::FORBIDDEN,
        "host_not_allowed",
    )
    .await;
    let request = Request::builder()
        .uri(format!("http://{HOST}/api/pending"))
        .header(header::HOST, HOST)
        .header(header::AUTHORIZATION, &bearer)
        .body(Body::empty())
        .unwrap();
    assert_eq!(daemon.send(request).await.0, StatusCode::OK);
    // The loopback names of the daemon's own port are all fine.
    for host in ["127.0.0.1:7811", "LOCALHOST:7811", "[::1]:7811"] {
        let request = Request::builder()
            .uri("/api/health")
            .header(header::HOST, host)
            .body(Body::empty())
            .unwrap();
        assert_eq!(daemon.send(request).await.0, StatusCode::OK, "{host}");
    }
}

#[tokio::test]
async fn requests_from_another_origin_are_refused() {
    let (daemon, id) = with_pending().await;
    let bearer = format!("Bearer {}", daemon.token);
    for origin in [
        "null",
        "",
        "http://evil.example",
        "http://127.0.0.1.evil.example:7811",
        "http://127.0.0.1:7811.evil.example",
        "https://127.0.0.1:7811",
        "http://127.0.0.1:7812",
        "http://127.0.0.1:7811/",
    ] {
        let request = approve(&daemon, &id)
            .header(header::HOST, HOST)
            .header(header::ORIGIN, origin)
            .header(header::AUTHORIZATION, &bearer)
            .body(answer())
            .unwrap();
        refused(
            &daemon,
            &id,
            request,
            StatusCode::FORBIDDEN,
            "origin_not_allowed",
        )
        .await;
    }
    for site in ["cross-site", "CROSS-SITE", "same-origin, cross-site"] {
        let request = approve(&daemon, &id)
            .header(header::HOST, HOST)
            .header("sec-fetch-site", site)
            .header(header::AUTHORIZATION, &bearer)
            .body(answer())
            .unwrap();
        refused(&daemon, &id, request, StatusCode::FORBIDDEN, "cross_site").await;
    }
}

/// Withdrawing a call changes state as an answer does, and is guarded the same way.
#[tokio::test]
async fn a_withdrawal_is_guarded_like_an_answer() {
    let (daemon, id) = with_pending().await;
    let bearer = format!("Bearer {}", daemon.token);
    let withdraw = |uri: String| Request::builder().method("DELETE").uri(uri);
    let path = format!("/api/decisions/{id}");
    for (request, status, code) in [
        (
            withdraw(path.clone())
                .header(header::HOST, HOST)
                .body(Body::empty()),
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        ),
        (
            withdraw(format!("{path}?token={}", daemon.token))
                .header(header::HOST, HOST)
                .body(Body::empty()),
            StatusCode::BAD_REQUEST,
            "token_in_url",
        ),
        (
            withdraw(path.clone())
                .header(header::HOST, "127.0.0.1.evil.example:7811")
                .header(header::AUTHORIZATION, &bearer)
                .body(Body::empty()),
            StatusCode::FORBIDDEN,
            "host_not_allowed",
        ),
        (
            withdraw(path.clone())
                .header(header::HOST, HOST)
                .header(header::ORIGIN, "null")
                .header(header::AUTHORIZATION, &bearer)
                .body(Body::empty()),
            StatusCode::FORBIDDEN,
            "origin_not_allowed",
        ),
        (
            withdraw(path.clone())
                .header(header::HOST, HOST)
                .header("sec-fetch-site", "cross-site")
                .header(header::AUTHORIZATION, &bearer)
                .body(Body::empty()),
            StatusCode::FORBIDDEN,
            "cross_site",
        ),
    ] {
        refused(&daemon, &id, request.unwrap(), status, code).await;
    }
    // A GET of the same route reads, and changes nothing.
    let (status, body) = daemon.call("GET", &path, None).await;
    assert_eq!(
        (status, body["status"].as_str()),
        (StatusCode::OK, Some("pending"))
    );
    assert_eq!(daemon.pending_ids().await, [id]);
}

#[tokio::test]
async fn credentials_are_required_compared_exactly_and_never_taken_from_a_url() {
    let (daemon, id) = with_pending().await;
    let cases: Vec<(Option<String>, String, StatusCode, &str)> = vec![
        (
            None,
            format!("/api/approvals/{id}"),
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        ),
        (
            Some("Bearer wrong".into()),
            format!("/api/approvals/{id}"),
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        ),
        (
            Some(format!("Bearer {}x", daemon.token)),
            format!("/api/approvals/{id}"),
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        ),
        (
            Some(format!("Basic {}", daemon.token)),
            format!("/api/approvals/{id}"),
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        ),
        (
            Some("Bearer".into()),
            format!("/api/approvals/{id}"),
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        ),
        (
            Some(format!("Bearer{}", daemon.token)),
            format!("/api/approvals/{id}"),
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        ),
        (
            Some(format!("Bearer {} {}", daemon.token, daemon.token)),
            format!("/api/approvals/{id}"),
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        ),
        (
            None,
            format!("/api/approvals/{id}?token={}", daemon.token),
            StatusCode::BAD_REQUEST,
            "token_in_url",
        ),
        (
            None,
            format!("/api/approvals/{id}?access_token={}", daemon.token),
            StatusCode::BAD_REQUEST,
            "token_in_url",
        ),
        // Encoded names, other names, and the token under any name or in the path.
        (
            None,
            format!("/api/approvals/{id}?%74oken={}", daemon.token),
            StatusCode::BAD_REQUEST,
            "token_in_url",
        ),
        // Encoded twice: what a proxy decoding once would pass on.
        (
            None,
            format!("/api/approvals/{id}?%2574oken=x"),
            StatusCode::BAD_REQUEST,
            "token_in_url",
        ),
        (
            None,
            format!(
                "/api/approvals/{id}?x=%25{:X}{}",
                daemon.token.as_bytes()[0],
                &daemon.token[1..]
            ),
            StatusCode::BAD_REQUEST,
            "token_in_url",
        ),
        (
            Some(format!("Bearer {}", daemon.token)),
            format!(
                "/api/approvals/{id}/%25{:X}{}",
                daemon.token.as_bytes()[0],
                &daemon.token[1..]
            ),
            StatusCode::BAD_REQUEST,
            "token_in_url",
        ),
        (
            None,
            format!("/api/approvals/{id}?API-Key=x"),
            StatusCode::BAD_REQUEST,
            "token_in_url",
        ),
        (
            None,
            format!("/api/approvals/{id}?by={}", daemon.token),
            StatusCode::BAD_REQUEST,
            "token_in_url",
        ),
        (
            None,
            format!("/api/approvals/{id}?x=1&{}", daemon.token),
            StatusCode::BAD_REQUEST,
            "token_in_url",
        ),
        (
            Some(format!("Bearer {}", daemon.token)),
            format!(
                "/api/approvals/{}%{:X}",
                &daemon.token[..10],
                daemon.token.as_bytes()[10]
            ) + &daemon.token[11..],
            StatusCode::BAD_REQUEST,
            "token_in_url",
        ),
    ];
    for (auth, uri, status, code) in cases {
        let mut builder = Request::builder()
            .method("POST")
            .uri(uri)
            .header(header::HOST, HOST)
            .header(header::CONTENT_TYPE, "application/json");
        if let Some(auth) = auth {
            builder = builder.header(header::AUTHORIZATION, auth);
        }
        refused(&daemon, &id, builder.body(answer()).unwrap(), status, code).await;
    }
    // The scheme is case-insensitive, as HTTP says.
    let request = Request::builder()
        .uri("/api/pending")
        .header(header::HOST, HOST)
        .header(header::AUTHORIZATION, format!("bearer {}", daemon.token))
        .body(Body::empty())
        .unwrap();
    assert_eq!(daemon.send(request).await.0, StatusCode::OK);
    // Reading needs credentials too; only the page and health are public.
    for path in ["/api/pending", "/api/grants", "/api/audit", "/api/events"] {
        let request = Request::builder()
            .uri(path)
            .header(header::HOST, HOST)
            .body(Body::empty())
            .unwrap();
        assert_eq!(
            daemon.send(request).await.0,
            StatusCode::UNAUTHORIZED,
            "{path}"
        );
    }
}

#[tokio::test]
async fn no_state_changes_on_get_no_cors_and_bounded_bodies() {
    let (daemon, id) = with_pending().await;
    let request = daemon.request("GET", &format!("/api/approvals/{id}"), None);
    refused(
        &daemon,
        &id,
        request,
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
    )
    .await;
    let preflight = Request::builder()
        .method("OPTIONS")
        .uri(format!("/api/approvals/{id}"))
        .header(header::HOST, HOST)
        .header(header::ORIGIN, ORIGIN)
        .header("access-control-request-method", "POST")
        .body(Body::empty())
        .unwrap();
    let response = daemon.app().oneshot(preflight).await.unwrap();
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert!(
        response
            .headers()
            .get(header::ACCESS_CONTROL_ALLOW_ORIGIN)
            .is_none()
    );

    let huge = "x".repeat(toolgate_server::MAX_BODY + 10);
    let request = approve(&daemon, &id)
        .header(header::HOST, HOST)
        .header(header::AUTHORIZATION, format!("Bearer {}", daemon.token))
        .body(Body::from(
            json!({"decision": "allow-once", "reason": huge}).to_string(),
        ))
        .unwrap();
    refused(
        &daemon,
        &id,
        request,
        StatusCode::PAYLOAD_TOO_LARGE,
        "body_too_large",
    )
    .await;
    // A form post (what a cross-site page could send without a preflight) is not JSON.
    let request = Request::builder()
        .method("POST")
        .uri(format!("/api/approvals/{id}"))
        .header(header::HOST, HOST)
        .header(header::AUTHORIZATION, format!("Bearer {}", daemon.token))
        .header(header::CONTENT_TYPE, "text/plain")
        .body(Body::from("{\"decision\":\"allow-once\"}"))
        .unwrap();
    refused(
        &daemon,
        &id,
        request,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "json_required",
    )
    .await;
}

async fn login(daemon: &Daemon, body: Value) -> (StatusCode, Option<String>, Option<String>) {
    let request = Request::builder()
        .method("POST")
        .uri("/api/login")
        .header(header::HOST, HOST)
        .header(header::ORIGIN, ORIGIN)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let response = daemon.app().oneshot(request).await.unwrap();
    let cookie = response
        .headers()
        .get(header::SET_COOKIE)
        .map(|v| v.to_str().unwrap().to_owned());
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let key = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v["key"].as_str().map(str::to_owned));
    (status, cookie, key)
}

/// An error quotes what was sent (a path, a field, a name), but never a secret that lets a
/// client in — the token, in any case, or a page's key — wherever it was put.
#[tokio::test]
async fn error_bodies_never_quote_a_secret() {
    let (daemon, id) = with_pending().await;
    let upper = daemon.token.to_ascii_uppercase();
    // In a URL, in capitals: refused as the token itself is.
    let request = daemon.request("GET", &format!("/api/decisions/{upper}"), None);
    refused(
        &daemon,
        &id,
        request,
        StatusCode::BAD_REQUEST,
        "token_in_url",
    )
    .await;
    let request = daemon.request("GET", &format!("/api/pending?session={upper}"), None);
    refused(
        &daemon,
        &id,
        request,
        StatusCode::BAD_REQUEST,
        "token_in_url",
    )
    .await;
    // In a body, where an error would quote it back.
    let (_, _, key) = login(&daemon, json!({"token": daemon.token})).await;
    let key = key.unwrap();
    for secret in [daemon.token.clone(), upper.clone(), key.clone()] {
        for (path, body) in [
            (format!("/api/approvals/{id}"), json!({"decision": secret})),
            (format!("/api/approvals/{id}"), json!({secret.clone(): 1})),
            (
                "/api/decisions".to_owned(),
                json!({"tool": "pay", "context": {"mode": secret}}),
            ),
            (
                "/api/sessions".to_owned(),
                json!({"id": "s", "workspace": secret}),
            ),
        ] {
            let request = daemon.request("POST", &path, Some(body.clone()));
            let response = daemon.app().oneshot(request).await.unwrap();
            assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{path} {body}");
            let text = response.into_body().collect().await.unwrap().to_bytes();
            let text = String::from_utf8_lossy(&text).to_ascii_lowercase();
            assert!(
                !text.contains(&secret.to_ascii_lowercase()),
                "{path} {body}: {text}"
            );
            let error: Value = serde_json::from_str(&text).unwrap();
            assert!(
                error["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("[redacted]"),
                "{text}"
            );
        }
    }
    // Cut short where an error's message ends (1 KiB), most of the token is still most of it.
    for pad in [945, 960, 1000] {
        let choice = format!("{}{}", "a".repeat(pad), daemon.token);
        let body = json!({"approved": true, "choice": choice});
        let request = daemon.request("POST", &format!("/api/approvals/{id}"), Some(body));
        let response = daemon.app().oneshot(request).await.unwrap();
        let text = response.into_body().collect().await.unwrap().to_bytes();
        let text = String::from_utf8_lossy(&text).to_ascii_lowercase();
        let token = daemon.token.to_ascii_lowercase();
        let leaked: Vec<&str> = (0..=token.len() - 16)
            .map(|at| &token[at..at + 16])
            .filter(|run| text.contains(run))
            .collect();
        assert!(leaked.is_empty(), "{pad}: {leaked:?} in {text}");
    }
    // A page's key in a path: not found, and not quoted.
    let request = daemon.request("GET", &format!("/api/decisions/{key}"), None);
    let response = daemon.app().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let text = response.into_body().collect().await.unwrap().to_bytes();
    assert!(!String::from_utf8_lossy(&text).contains(&key), "{text:?}");
    assert_eq!(daemon.pending_ids().await, [id]);
}

/// The page signs in with the one-time code (or the token) for a session key it keeps in its
/// tab and sends as a header. No cookie: a browser would send it to every port of the host and
/// let any of them replace or delete it.
#[tokio::test]
async fn the_page_signs_in_with_a_one_time_code_into_a_key_it_sends() {
    let (daemon, id) = with_pending().await;
    let code = daemon.server.state().login_code();
    let (status, cookie, key) = login(&daemon, json!({"code": code})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(cookie, None, "no cookie");
    let key = key.unwrap();
    assert_eq!(
        login(&daemon, json!({"code": code})).await.0,
        StatusCode::UNAUTHORIZED,
        "spent"
    );
    assert_eq!(
        login(&daemon, json!({"token": "nope"})).await.0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        login(&daemon, json!({"token": daemon.token})).await.0,
        StatusCode::OK
    );

    let read = |key: &str| {
        Request::builder()
            .uri("/api/pending")
            .header(header::HOST, HOST)
            .header("X-Toolgate-Key", key)
            .body(Body::empty())
            .unwrap()
    };
    assert_eq!(daemon.send(read(&key)).await.0, StatusCode::OK);
    let (status, body) = daemon.send(read("0123abcd")).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("unauthorized"))
    );
    // A cookie is no credential, whatever it holds.
    let cookie_only = Request::builder()
        .uri("/api/pending")
        .header(header::HOST, HOST)
        .header(header::COOKIE, format!("toolgate_session={key}"))
        .body(Body::empty())
        .unwrap();
    assert_eq!(daemon.send(cookie_only).await.0, StatusCode::UNAUTHORIZED);
    // Changing needs the page's own Origin too (no CSRF).
    let without_origin = approve(&daemon, &id)
        .header(header::HOST, HOST)
        .header("X-Toolgate-Key", &key)
        .body(answer())
        .unwrap();
    refused(
        &daemon,
        &id,
        without_origin,
        StatusCode::FORBIDDEN,
        "origin_required",
    )
    .await;
    let forged = approve(&daemon, &id)
        .header(header::HOST, HOST)
        .header("X-Toolgate-Key", "forged")
        .header(header::ORIGIN, ORIGIN)
        .body(answer())
        .unwrap();
    refused(
        &daemon,
        &id,
        forged,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    )
    .await;
    let from_page = approve(&daemon, &id)
        .header(header::HOST, HOST)
        .header("X-Toolgate-Key", &key)
        .header(header::ORIGIN, ORIGIN)
        .body(answer())
        .unwrap();
    assert_eq!(daemon.send(from_page).await.0, StatusCode::OK);

    // Signing out ends the session.
    let logout = Request::builder()
        .method("POST")
        .uri("/api/logout")
        .header(header::HOST, HOST)
        .header(header::ORIGIN, ORIGIN)
        .header("X-Toolgate-Key", &key)
        .body(Body::empty())
        .unwrap();
    assert_eq!(daemon.send(logout).await.0, StatusCode::NO_CONTENT);
    assert_eq!(daemon.send(read(&key)).await.0, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn the_page_is_served_with_a_strict_policy() {
    let daemon = Daemon::start().await;
    for (path, kind) in [
        ("/", "text/html"),
        ("/app.js", "text/javascript"),
        ("/app.css", "text/css"),
    ] {
        let request = Request::builder()
            .uri(path)
            .header(header::HOST, HOST)
            .body(Body::empty())
            .unwrap();
        let response = daemon.app().oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let headers = response.headers();
        assert!(
            headers[header::CONTENT_TYPE]
                .to_str()
                .unwrap()
                .starts_with(kind)
        );
        let csp = headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
        assert!(csp.contains("frame-ancestors 'none'") && csp.contains("script-src 'self'"));
        assert!(!csp.contains("unsafe-inline"));
        assert_eq!(headers["x-frame-options"], "DENY");
        assert_eq!(headers["x-content-type-options"], "nosniff");
    }
}

#[tokio::test]
async fn ambiguous_requests_are_refused_not_read_one_way() {
    let (daemon, id) = with_pending().await;
    let bearer = format!("Bearer {}", daemon.token);
    // A second Host, Origin or Authorization: whichever one a proxy checked, refused.
    let request = approve(&daemon, &id)
        .header(header::HOST, HOST)
        .header(header::HOST, "evil.example")
        .header(header::AUTHORIZATION, &bearer)
        .body(answer())
        .unwrap();
    refused(
        &daemon,
        &id,
        request,
        StatusCode::BAD_REQUEST,
        "duplicate_header",
    )
    .await;
    let request = approve(&daemon, &id)
        .header(header::HOST, HOST)
        .header(header::ORIGIN, ORIGIN)
        .header(header::ORIGIN, "http://evil.example")
        .header(header::AUTHORIZATION, &bearer)
        .body(answer())
        .unwrap();
    refused(
        &daemon,
        &id,
        request,
        StatusCode::BAD_REQUEST,
        "duplicate_header",
    )
    .await;
    let request = approve(&daemon, &id)
        .header(header::HOST, HOST)
        .header(header::AUTHORIZATION, &bearer)
        .header(header::AUTHORIZATION, "Bearer nope")
        .body(answer())
        .unwrap();
    refused(
        &daemon,
        &id,
        request,
        StatusCode::BAD_REQUEST,
        "duplicate_header",
    )
    .await;
    // A body naming a key twice, at any depth.
    for body in [
        r#"{"decision": "reject-once", "decision": "allow-once"}"#,
        r#"{"decision": "allow-once", "reason": "a", "reason": "b"}"#,
    ] {
        let request = approve(&daemon, &id)
            .header(header::HOST, HOST)
            .header(header::AUTHORIZATION, &bearer)
            .body(Body::from(body))
            .unwrap();
        refused(
            &daemon,
            &id,
            request,
            StatusCode::BAD_REQUEST,
            "invalid_json",
        )
        .await;
    }
    // Both answer forms in one body.
    let request = approve(&daemon, &id)
        .header(header::HOST, HOST)
        .header(header::AUTHORIZATION, &bearer)
        .body(Body::from(
            json!({"decision": "allow-once", "approved": false}).to_string(),
        ))
        .unwrap();
    refused(
        &daemon,
        &id,
        request,
        StatusCode::BAD_REQUEST,
        "invalid_decision",
    )
    .await;
    // Who answered: a name, not too long.
    for by in [json!(5), json!("x".repeat(65))] {
        let request = approve(&daemon, &id)
            .header(header::HOST, HOST)
            .header(header::AUTHORIZATION, &bearer)
            .body(Body::from(
                json!({"decision": "allow-once", "by": by}).to_string(),
            ))
            .unwrap();
        refused(&daemon, &id, request, StatusCode::BAD_REQUEST, "invalid_by").await;
    }
    // A call whose tool is named twice is not evaluated at all.
    let (status, body) = daemon
        .send(
            Request::builder()
                .method("POST")
                .uri("/api/decisions")
                .header(header::HOST, HOST)
                .header(header::AUTHORIZATION, &bearer)
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(
                    r#"{"tool": "read", "args": {}, "tool": "pay", "context": {"session": "s1"}}"#,
                ))
                .unwrap(),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_json")),
        "{body}"
    );
    assert_eq!(daemon.pending_ids().await, std::slice::from_ref(&id));

    // And the answer, sent plainly, still works.
    let (status, body) = daemon
        .call(
            "POST",
            &format!("/api/approvals/{id}"),
            Some(json!({"decision": "reject-once", "by": "x".repeat(64)})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// A name a reverse proxy forwards (`hosts` in the settings): accepted as `Host`, and as an
/// origin over TLS too, as the proxy may serve the page; anything else stays refused.
#[tokio::test]
async fn a_configured_proxy_name_is_accepted_over_http_and_https() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = toolgate_server::ServerConfig::new(dir.path());
    config.extra_hosts = vec!["Proxy.LAN:8443".into()];
    config.validate().unwrap();
    let policy = toolgate_policy::Policy::from_toml("p.toml", "version = 1\n").unwrap();
    let server = toolgate_server::Server::open(config, policy).await.unwrap();
    let token = std::fs::read_to_string(dir.path().join("token")).unwrap();
    let status = |origin: &'static str| {
        let request = Request::builder()
            .uri("/api/pending")
            .header(header::HOST, "proxy.lan:8443")
            .header(header::ORIGIN, origin)
            .header(header::AUTHORIZATION, format!("Bearer {}", token.trim()))
            .body(Body::empty())
            .unwrap();
        let app = server.router();
        async move { app.oneshot(request).await.unwrap().status() }
    };
    assert_eq!(status("https://proxy.lan:8443").await, StatusCode::OK);
    assert_eq!(status("http://proxy.lan:8443").await, StatusCode::OK);
    assert_eq!(status("https://proxy.lan").await, StatusCode::FORBIDDEN);
    assert_eq!(
        status("https://evil.example:8443").await,
        StatusCode::FORBIDDEN
    );

    for bad in [
        "*",
        "*.lan",
        "https://proxy.lan",
        "proxy.lan/x",
        "user@proxy.lan",
        "",
        "proxy.lan:",
        "proxy.lan:0",
        "proxy.lan:99999",
        "proxy_lan",
        "a..lan",
        "localhost",
    ] {
        let mut config = toolgate_server::ServerConfig::new(dir.path());
        config.extra_hosts = vec![bad.into()];
        let error = config.validate().unwrap_err().to_string();
        assert!(error.contains("is not a host name"), "{bad}: {error}");
    }
}

/// A caller with the token gets a fresh one-time sign-in code (`toolgate page`); without
/// credentials, or from another origin, none. A code signs in once; at most MAX_LOGIN_CODES
/// live at once, a new one taking the oldest's place.
#[tokio::test]
async fn fresh_sign_in_codes_need_credentials_and_are_spent_once() {
    let (daemon, id) = with_pending().await;
    let mint = || {
        Request::builder()
            .method("POST")
            .uri("/api/login/codes")
            .header(header::HOST, HOST)
    };
    refused(
        &daemon,
        &id,
        mint().body(Body::empty()).unwrap(),
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    )
    .await;
    refused(
        &daemon,
        &id,
        mint()
            .header(header::AUTHORIZATION, format!("Bearer {}", daemon.token))
            .header(header::ORIGIN, "http://evil.example")
            .body(Body::empty())
            .unwrap(),
        StatusCode::FORBIDDEN,
        "origin_not_allowed",
    )
    .await;
    // A page's session cannot make codes: it would sign itself in again past its 12 hours,
    // and past signing out.
    let page_code = daemon.server.state().login_code();
    let (_, _, key) = login(&daemon, json!({"code": page_code})).await;
    refused(
        &daemon,
        &id,
        mint()
            .header("x-toolgate-key", key.unwrap())
            .header(header::ORIGIN, ORIGIN)
            .body(Body::empty())
            .unwrap(),
        StatusCode::FORBIDDEN,
        "token_required",
    )
    .await;
    let mut codes = Vec::new();
    for _ in 0..=toolgate_server::MAX_LOGIN_CODES {
        let (status, body) = daemon.call("POST", "/api/login/codes", None).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert_eq!(
            body["expires_in"],
            toolgate_server::LOGIN_CODE_LIFETIME.as_secs()
        );
        codes.push(body["code"].as_str().unwrap().to_owned());
    }
    // The oldest gave its place to the newest.
    let (status, _, _) = login(&daemon, json!({"code": codes[0]})).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let newest = codes.last().unwrap();
    let (status, _, key) = login(&daemon, json!({"code": newest})).await;
    assert_eq!(status, StatusCode::OK);
    assert!(key.is_some());
    let (status, _, _) = login(&daemon, json!({"code": newest})).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "a code signs in once");
    assert_eq!(daemon.pending_ids().await, [id]);
}
