//! A daemon on a temporary data directory, driven without a socket.

#![allow(
    dead_code,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::Value;
use toolgate_policy::Policy;
use toolgate_server::{Server, ServerConfig};
use tower::ServiceExt;

pub const HOST: &str = "127.0.0.1:7811";
pub const ORIGIN: &str = "http://127.0.0.1:7811";

/// A policy with one rule of each kind: `read` allowed, `pay` asked, `rm` denied.
pub const POLICY: &str = r#"
version = 1
mode = "approve-all"

[approval]
timeout = "2s"

[[rule]]
name = "no-rm"
decision = "deny"
reason = "nothing is deleted here"
tool = "rm"

[[rule]]
name = "ask-pay"
decision = "ask"
reason = "payments need a person"
tool = "pay"

[[rule]]
name = "ask-deploy"
decision = "ask"
reason = "deploys need a person"
tool = "deploy"
choices = ["allow-once", "reject-once"]
"#;

pub struct Daemon {
    pub dir: tempfile::TempDir,
    pub server: Server,
    pub token: String,
}

impl Daemon {
    pub async fn start() -> Daemon {
        let dir = tempfile::tempdir().unwrap();
        Daemon::open(dir).await
    }

    pub async fn open(dir: tempfile::TempDir) -> Daemon {
        Daemon::open_with(dir, POLICY).await
    }

    /// A daemon with another policy.
    pub async fn open_with(dir: tempfile::TempDir, policy: &str) -> Daemon {
        let config = ServerConfig::new(dir.path());
        Daemon::open_configured(dir, policy, config).await
    }

    /// A daemon with another policy and settings.
    pub async fn open_configured(
        dir: tempfile::TempDir,
        policy: &str,
        config: ServerConfig,
    ) -> Daemon {
        let policy = Policy::from_toml("policy.toml", policy).unwrap();
        let server = Server::open(config, policy).await.unwrap();
        let token = std::fs::read_to_string(dir.path().join("token"))
            .unwrap()
            .trim()
            .to_owned();
        Daemon { dir, server, token }
    }

    pub fn app(&self) -> Router {
        self.server.router()
    }

    /// A request with this daemon's Host and token.
    pub fn request(&self, method: &str, path: &str, body: Option<Value>) -> Request<Body> {
        let mut builder = Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, HOST)
            .header(header::AUTHORIZATION, format!("Bearer {}", self.token));
        let body = match body {
            Some(json) => {
                builder = builder.header(header::CONTENT_TYPE, "application/json");
                Body::from(json.to_string())
            }
            None => Body::empty(),
        };
        builder.body(body).unwrap()
    }

    pub async fn send(&self, request: Request<Body>) -> (StatusCode, Value) {
        let response = self.app().oneshot(request).await.unwrap();
        let status = response.status();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let text = String::from_utf8_lossy(&bytes).to_string();
        assert!(
            !text
                .to_ascii_lowercase()
                .contains(&self.token.to_ascii_lowercase()),
            "a response echoed the token: {text}"
        );
        let value = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
        };
        (status, value)
    }

    pub async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        self.send(self.request(method, path, body)).await
    }

    /// A named token of `role` (`agent`, `approver`, `admin`), made with the daemon's token.
    #[allow(dead_code)]
    pub async fn token_for(&self, name: &str, role: &str) -> String {
        let (status, body) = self
            .call(
                "POST",
                "/api/tokens",
                Some(serde_json::json!({"name": name, "role": role})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert!(body.get("hash").is_none());
        body["token"].as_str().unwrap().to_owned()
    }

    /// A request with this daemon's Host and `token`.
    #[allow(dead_code)]
    pub fn request_as(
        &self,
        token: &str,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Request<Body> {
        let mut request = self.request(method, path, body);
        request.headers_mut().insert(
            header::AUTHORIZATION,
            format!("Bearer {token}").parse().unwrap(),
        );
        request
    }

    /// A call with `token`.
    #[allow(dead_code)]
    pub async fn call_as(
        &self,
        token: &str,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        self.send(self.request_as(token, method, path, body)).await
    }

    /// Answers request `id` with `decision` (`allow-once`, `reject-once`, …).
    pub async fn answer(&self, id: &str, decision: &str) -> (StatusCode, Value) {
        self.call(
            "POST",
            &format!("/api/approvals/{id}"),
            Some(serde_json::json!({ "decision": decision })),
        )
        .await
    }

    /// Submits a call the policy asks about; returns its request's id.
    pub async fn asked(&self, call: Value) -> String {
        let (status, body) = self.call("POST", "/api/decisions", Some(call)).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        body["id"].as_str().unwrap().to_owned()
    }

    /// An external request's decision as it stands.
    pub async fn decision(&self, id: &str) -> Value {
        self.call("GET", &format!("/api/decisions/{id}"), None)
            .await
            .1
    }

    pub async fn pending_ids(&self) -> Vec<String> {
        let (_, body) = self.call("GET", "/api/pending", None).await;
        body["pending"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["id"].as_str().unwrap().to_owned())
            .collect()
    }
}
