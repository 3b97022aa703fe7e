use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

use beacon_core::CheckId;

use crate::error::ApiError;
use crate::state::AppState;

pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/api/checks", get(list_checks))
        .route("/api/checks/:id", get(get_check))
        .with_state(state)
}

async fn health() -> Json<Value> {
    Json(json!({ "status": "ok", "version": env!("CARGO_PKG_VERSION") }))
}

async fn list_checks(State(state): State<AppState>) -> Json<Value> {
    let board = state.board.read().await;
    let checks: Vec<Value> = state
        .config
        .checks
        .iter()
        .map(|c| json!({ "id": c.id, "status": board.get(&c.id).map(|s| &s.outcome) }))
        .collect();
    Json(json!({ "checks": checks }))
}

async fn get_check(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id = CheckId::from(id.as_str());
    let check = state
        .config
        .checks
        .iter()
        .find(|c| c.id == id)
        .ok_or_else(|| ApiError::NotFound(id.clone()))?;
    let board = state.board.read().await;
    Ok(Json(json!({ "check": check, "status": board.get(&id) })))
}
