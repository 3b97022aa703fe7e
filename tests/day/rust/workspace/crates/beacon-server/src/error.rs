use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use beacon_core::CheckId;
use serde_json::json;

#[derive(Debug)]
pub enum ApiError {
    NotFound(CheckId),
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match self {
            ApiError::NotFound(id) => {
                (StatusCode::NOT_FOUND, Json(json!({ "error": format!("no check named `{id}`") })))
                    .into_response()
            }
        }
    }
}
