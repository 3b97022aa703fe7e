//! The approval page: plain HTML, CSS and JavaScript compiled into the binary, served with a
//! strict content security policy. It signs in by exchanging a one-time code (printed by
//! `toolgate serve` in the address's fragment, which browsers never send to a server) or the
//! pasted token for a session key the page keeps in its origin's `localStorage` and sends with
//! every request (see [`crate::security`]). The token never sits in a URL.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::body::JsonBody;
use crate::error::ApiError;
use crate::security::same_secret;
use crate::state::{AppState, PAGE_SESSION_LIFETIME};

const INDEX: &str = include_str!("../assets/index.html");
const SCRIPT: &str = include_str!("../assets/app.js");
const STYLE: &str = include_str!("../assets/app.css");

/// The page's content security policy.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                       img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    response
}

/// `GET /`.
pub(crate) async fn index() -> Response {
    asset(INDEX, "text/html; charset=utf-8")
}

/// `GET /app.js`.
pub(crate) async fn script() -> Response {
    asset(SCRIPT, "text/javascript; charset=utf-8")
}

/// `GET /app.css`.
pub(crate) async fn style() -> Response {
    asset(STYLE, "text/css; charset=utf-8")
}

/// `POST /api/login` with `{"code": …}` (a one-time login code) or `{"token": …}` (the admin's,
/// or a named approver's or admin's): a page session, an approver's: a key (`{"key": …}`) the
/// page sends as `X-Toolgate-Key`.
pub(crate) async fn login(
    State(state): State<AppState>,
    connection: Option<axum::Extension<crate::connections::Credentialed>>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    // The connection is kept from here on (a code is spent once: a connection closed to make
    // room after spending it would lose the key), and put back among the anonymous ones if
    // the login is refused.
    let marked = connection.as_ref().map(|connection| connection.mark());
    if marked == Some(crate::connections::Marked::Evicted) {
        return Err(crate::connections::evicted());
    }
    // Put back only if this login marked it (not if an earlier request had).
    let unmark = || {
        if let (Some(connection), Some(crate::connections::Marked::Now)) = (&connection, marked) {
            connection.unmark();
        }
    };
    let text = |key: &str| match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(ApiError::bad_request(
            "missing_credential",
            format!("`{key}` is a string"),
        )),
    };
    let (code, token) = match (text("code"), text("token")) {
        (Ok(code), Ok(token)) => (code, token),
        (Err(e), _) | (_, Err(e)) => {
            unmark();
            return Err(e);
        }
    };
    let session = if let Some(code) = code {
        state.redeem(code)
    } else if let Some(token) = token {
        // The admin's token, or a named approver's or admin's: the page answers (an agent's
        // token signs nothing in).
        let approves = same_secret(&state.inner.token, token.trim())
            || crate::roles::named(&state, token.trim())
                .is_some_and(|(_, role)| role >= crate::roles::Role::Approver);
        approves.then(|| state.new_page_session())
    } else {
        unmark();
        return Err(ApiError::bad_request(
            "missing_credential",
            "send `{\"code\": …}` (from the address `toolgate serve` printed) or `{\"token\": …}`",
        ));
    };
    let session = session.ok_or_else(|| {
        unmark();
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "login_failed",
            "the code is unknown, spent or expired, or the token is wrong",
        )
    })?;
    let lifetime = PAGE_SESSION_LIFETIME.as_secs();
    let mut response = Json(json!({"key": session, "expires_in": lifetime})).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// `POST /api/login/codes`: a new one-time sign-in code for the page (`toolgate page` prints
/// the address that spends it), good for [`crate::LOGIN_CODE_LIFETIME`]. Only a caller who has
/// credentials already gets one.
pub(crate) async fn new_login_code(State(state): State<AppState>) -> Response {
    let code = state.login_code();
    let mut response = (
        StatusCode::CREATED,
        axum::Json(serde_json::json!({
            "code": code,
            "expires_in": crate::LOGIN_CODE_LIFETIME.as_secs(),
        })),
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// `POST /api/logout`: forgets the page session.
pub(crate) async fn logout(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(key) = headers
        .get(crate::security::SESSION_KEY_HEADER)
        .and_then(|v| v.to_str().ok())
    {
        state.forget_page_session(key.trim());
    }
    StatusCode::NO_CONTENT.into_response()
}
