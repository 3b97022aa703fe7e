//! Request bodies: JSON only, size-limited, with errors in the API's JSON shape.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{StatusCode, header};
use serde_json::Value;

use crate::config::MAX_BODY;
use crate::error::ApiError;

/// A JSON request body (`Content-Type: application/json`, at most 1 MiB).
#[derive(Debug)]
pub(crate) struct JsonBody(pub(crate) Value);

impl<S: Send + Sync> FromRequest<S> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<JsonBody, ApiError> {
        let json = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
        if !json {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "json_required",
                "send the body as `Content-Type: application/json`",
            ));
        }
        let bytes = Bytes::from_request(request, state).await.map_err(|_| {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                format!("the body is over {MAX_BODY} bytes, or could not be read"),
            )
        })?;
        serde_json::from_slice(&bytes).map(JsonBody).map_err(|e| {
            ApiError::bad_request("invalid_json", format!("the body is not JSON: {e}"))
        })
    }
}

/// Query parameters; a malformed query is a 400 in the API's JSON shape.
#[derive(Debug)]
pub(crate) struct Query<T>(pub(crate) T);

impl<T, S> axum::extract::FromRequestParts<S> for Query<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Query<T>, ApiError> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Query(value)| Query(value))
            .map_err(|e| ApiError::bad_request("invalid_query", e.body_text()))
    }
}

/// Path parameters; a malformed one (bad percent-encoding, say) is a 400 in the API's JSON
/// shape.
#[derive(Debug)]
pub(crate) struct Path<T>(pub(crate) T);

impl<T, S> axum::extract::FromRequestParts<S> for Path<T>
where
    T: serde::de::DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Path<T>, ApiError> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Path(value)| Path(value))
            .map_err(|e| ApiError::bad_request("invalid_path", e.body_text()))
    }
}
