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

/// Store failures told to clients so far, numbered for the log (see [`ApiError::from`]).
static STORE_FAILURES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl From<StoreError> for ApiError {
    /// A store failure as clients see it. What the store refused about the request itself
    /// (it nests too deep, it is too large) and a condition it did not allow for (an id
    /// already in use) are said in full; any other failure is said by its kind and a number,
    /// and written whole to the daemon's log under that number: the store's own words (file
    /// paths, the database's messages) are the operator's, not every client's.
    fn from(error: StoreError) -> ApiError {
        let unrecorded = "no change this request asked for was recorded";
        match &error {
            StoreError::Refused(message) => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "not_storable",
                format!("{message} ({unrecorded})"),
            ),
            StoreError::Conflict(message) => {
                ApiError::conflict("store_conflict", format!("{message} ({unrecorded})"))
            }
            _ => {
                let number = STORE_FAILURES.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                let mut said = error.to_string();
                let mut cause = std::error::Error::source(&error);
                while let Some(next) = cause {
                    said.push_str(&format!(": {next}"));
                    cause = next.source();
                }
                eprintln!(
                    "toolgate: store failure {number} ({}): {said}",
                    error.kind()
                );
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "store_unavailable",
                    format!(
                        "the store is {} (the daemon's log says why, as store failure \
                         {number}); {unrecorded}",
                        match &error {
                            StoreError::Locked { .. } => "locked by another program",
                            StoreError::Damaged { .. } => "damaged",
                            _ => "unavailable",
                        }
                    ),
                )
            }
        }
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
        ApiError::from(StoreError::unavailable(error.0))
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
            Conflict::ScopeNotOffered { .. } => {
                ApiError::conflict("scope_not_offered", conflict.to_string())
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

    /// A store failure reaches the client as its kind and a number, never the store's own
    /// words; what the store refused about the request itself is said in full.
    #[test]
    fn a_store_failure_is_said_by_its_kind_and_its_words_stay_in_the_log() {
        let error = ApiError::from(StoreError::Locked {
            message: "/home/alice/.local/share/toolgate/toolgate.db is locked".into(),
            source: None,
        });
        assert_eq!(error.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(error.code, "store_unavailable");
        assert!(error.message.starts_with("the store is locked by another program (the daemon's log says why, as store failure "), "{}", error.message);
        assert!(!error.message.contains("alice"), "{}", error.message);
        let error = ApiError::from(StoreError::unavailable("disk I/O error at /srv/db"));
        assert!(
            error.message.starts_with("the store is unavailable"),
            "{}",
            error.message
        );
        assert!(!error.message.contains("/srv"), "{}", error.message);

        let error = ApiError::from(StoreError::Refused(
            "the commit nests 120 levels deep".into(),
        ));
        assert_eq!(error.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(
            error.message,
            "the commit nests 120 levels deep (no change this request asked for was recorded)"
        );
        let error = ApiError::from(StoreError::Conflict(
            "request `r` is already pending".into(),
        ));
        assert_eq!(error.status, StatusCode::CONFLICT);
        assert_eq!(error.code, "store_conflict");
    }
}
