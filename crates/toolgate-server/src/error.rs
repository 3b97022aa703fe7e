//! Errors at the HTTP edge: every one is a JSON body `{"error": {"code", "message"}}` with its
//! status. Messages never echo a header (so never the token); internal details are summarised.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use toolgate_runtime::Conflict;
use toolgate_store::StoreError;

/// An error answered to a client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    /// The status.
    pub status: StatusCode,
    /// A stable, machine-readable code.
    pub code: &'static str,
    /// What went wrong, for people.
    pub message: String,
}

/// The longest message an error carries, in bytes: what it quotes of the request (an id, a
/// name) is cut there, so an error never echoes a large request back.
pub(crate) const MAX_MESSAGE: usize = 1024;

impl ApiError {
    /// An error with this status, code and message (cut to 1,024 bytes).
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        let mut message = message.into();
        if message.len() > MAX_MESSAGE {
            let end = (0..=MAX_MESSAGE)
                .rev()
                .find(|&at| message.is_char_boundary(at))
                .unwrap_or(0);
            let cut = message.len().saturating_sub(end);
            message.truncate(end);
            message.push_str(&format!("… ({cut} more bytes)"));
        }
        ApiError {
            status,
            code,
            message,
        }
    }

    /// 400: the request cannot be read.
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// 401: no valid credentials.
    pub fn unauthorized() -> ApiError {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "send `Authorization: Bearer <token>` (the token is in the data directory's `token` file) \
             or sign in on the page",
        )
    }

    /// 403: refused whatever the credentials.
    pub fn forbidden(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, code, message)
    }

    /// 404.
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// 409.
    pub fn conflict(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, code, message)
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> ApiError {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "store_unavailable",
            format!("{error} (no change this request asked for was recorded)"),
        )
    }
}

impl From<serde_json::Error> for ApiError {
    fn from(error: serde_json::Error) -> ApiError {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            format!(
                "a response could not be written as JSON ({error}); no change this request \
                 asked for was recorded"
            ),
        )
    }
}

impl From<toolgate_runtime::grants::StoreError> for ApiError {
    fn from(error: toolgate_runtime::grants::StoreError) -> ApiError {
        ApiError::from(StoreError(error.0))
    }
}

impl From<Conflict> for ApiError {
    fn from(conflict: Conflict) -> ApiError {
        match &conflict {
            Conflict::Unknown { .. } => ApiError::conflict("not_pending", conflict.to_string()),
            Conflict::AlreadyResolved { .. } => {
                ApiError::conflict("already_resolved", conflict.to_string())
            }
            // A well-formed answer the request cannot take: a conflict with what it offers
            // (AGH's route answers its own 400 before it gets here, as the seed does).
            Conflict::NotOffered { .. } => {
                ApiError::conflict("decision_not_offered", conflict.to_string())
            }
            Conflict::WrongKind { .. } => {
                ApiError::conflict("wrong_request_kind", conflict.to_string())
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"code": self.code, "message": self.message}});
        (self.status, Json(body)).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_failure_is_said_once() {
        let error = ApiError::from(StoreError("database is locked".into()));
        assert_eq!(error.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            error.message,
            "the store failed: database is locked (no change this request asked for was recorded)"
        );
    }
}
