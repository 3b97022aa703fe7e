use axum::body::Body;
use axum::http::{Request, StatusCode};
use beacon_core::Config;
use beacon_server::{app, AppState};
use http_body_util::BodyExt;
use tower::ServiceExt;

fn test_app() -> axum::Router {
    let config = Config::from_toml(
        r#"
[[check]]
id = "homepage"
kind = "http"
url = "http://127.0.0.1:9/"
interval = "30s"
"#,
    )
    .unwrap();
    app(AppState::new(config))
}

async fn get(uri: &str) -> (StatusCode, serde_json::Value) {
    let resp = test_app().oneshot(Request::get(uri).body(Body::empty()).unwrap()).await.unwrap();
    let status = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap())
}

#[tokio::test]
async fn health_is_ok() {
    let (status, body) = get("/health").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["status"], "ok");
}

#[tokio::test]
async fn unknown_check_is_404() {
    let (status, body) = get("/api/checks/nope").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["error"], "no check named `nope`");
}

#[tokio::test]
async fn lists_configured_checks() {
    let (status, body) = get("/api/checks").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["checks"][0]["id"], "homepage");
}
