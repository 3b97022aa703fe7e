//! Who may talk to the daemon, and from where. Every request passes this guard first.
//!
//! - `Host` must name this daemon exactly (`127.0.0.1:PORT`, `localhost:PORT`, `[::1]:PORT`):
//!   a DNS-rebinding page's host is refused, and `X-Forwarded-Host` is never honoured.
//! - `Origin`, when sent, must be this daemon's own; `null`, an empty value and look-alikes
//!   (`http://127.0.0.1.evil.example`) are refused, and so is `Sec-Fetch-Site: cross-site`.
//!   Changes made with the page's session need a matching `Origin` (no CSRF).
//! - Credentials: `Authorization: Bearer <token>`, compared in constant time, or the page's
//!   session key, which the page keeps in its origin's storage and sends as `X-Toolgate-Key`
//!   (no cookie: a browser sends a cookie to every port of the host and lets any of them
//!   replace it; the origin's storage stays with the page's origin, and a custom header cannot be sent
//!   across origins without the preflight the daemon refuses). Sessions end after 12 hours.
//!   A credential in the URL is refused outright.
//! - No CORS is ever granted; preflights are refused. State changes only with POST or DELETE.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use crate::error::ApiError;
use crate::state::AppState;

/// The header the page sends its session's key in.
pub(crate) const SESSION_KEY_HEADER: &str = "x-toolgate-key";

/// Paths anyone on this machine may read: the page and its assets, health, the API document,
/// and the login exchange.
fn is_public(method: &Method, path: &str) -> bool {
    matches!(
        (method.as_str(), path),
        (
            "GET" | "HEAD",
            "/" | "/app.js" | "/app.css" | "/favicon.ico" | "/api/health" | "/api/openapi.json"
        ) | ("POST", "/api/login")
    )
}

/// Compares two secrets in constant time.
pub(crate) fn same_secret(expected: &str, given: &str) -> bool {
    expected.len() == given.len() && bool::from(expected.as_bytes().ct_eq(given.as_bytes()))
}

/// A header that may be sent once: its text, if sent. Sent twice, it is refused (which of the
/// two counts is exactly what a proxy and the daemon could disagree on).
pub(crate) fn header_text<'a>(
    headers: &'a HeaderMap,
    name: &header::HeaderName,
) -> Result<Option<&'a str>, ApiError> {
    if headers.get_all(name).iter().nth(1).is_some() {
        return Err(ApiError::bad_request(
            "duplicate_header",
            format!("the `{name}` header is sent more than once"),
        ));
    }
    match headers.get(name) {
        None => Ok(None),
        Some(value) => value.to_str().map(Some).map_err(|_| {
            ApiError::bad_request(
                "bad_header",
                format!("the `{name}` header is not readable text"),
            )
        }),
    }
}

/// How a request proved who it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Credential {
    /// The daemon's token: the admin.
    Token,
    /// A named token (see [`crate::roles`]).
    Named(String, crate::roles::Role),
    /// The page's session: an approver.
    PageSession,
    None,
}

impl Credential {
    /// Who it is, when it proves anyone.
    pub(crate) fn who(&self) -> Option<crate::roles::Who> {
        use crate::roles::{Role, Who};
        match self {
            Credential::Token => Some(Who {
                role: Role::Admin,
                name: None,
            }),
            Credential::Named(name, role) => Some(Who {
                role: *role,
                name: Some(name.clone()),
            }),
            Credential::PageSession => Some(Who {
                role: Role::Approver,
                name: None,
            }),
            Credential::None => None,
        }
    }
}

fn credential(state: &AppState, headers: &HeaderMap) -> Result<Credential, ApiError> {
    if let Some(auth) = header_text(headers, &header::AUTHORIZATION)? {
        // The scheme is case-insensitive (RFC 9110 §11.1).
        let (scheme, token) = auth.split_once(' ').ok_or_else(ApiError::unauthorized)?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(ApiError::unauthorized());
        }
        if same_secret(&state.inner.token, token.trim()) {
            return Ok(Credential::Token);
        }
        return match crate::roles::named(state, token.trim()) {
            Some((name, role)) => Ok(Credential::Named(name, role)),
            None => Err(ApiError::unauthorized()),
        };
    }
    match header_text(headers, &HeaderName::from_static(SESSION_KEY_HEADER))? {
        None => Ok(Credential::None),
        Some(key) if state.page_session_is_valid(key.trim()) => Ok(Credential::PageSession),
        Some(_) => Err(ApiError::unauthorized()),
    }
}

/// Query keys that name a credential, however they are encoded.
const CREDENTIAL_KEYS: &[&str] = &[
    "token",
    "access_token",
    "auth",
    "authorization",
    "key",
    "api_key",
    "api-key",
    "apikey",
    "password",
    "secret",
    "bearer",
];

/// Whether a URL carries a credential: a query key that names one (as sent, or decoded once
/// more, as a proxy passes it on), or the daemon's token itself anywhere in the path or the
/// query, percent-encoded up to three times. Such a URL ends up in
/// browser histories, proxy logs and `Referer` headers; it is refused even though the daemon
/// would never accept the credential from it.
fn credential_in_url(state: &AppState, path: &str, query: Option<&str>) -> bool {
    // In any case: a hex token in capitals is as good as the token to whoever reads it.
    let token = state.inner.token.as_bytes();
    let holds = |text: &str| {
        !token.is_empty()
            && text
                .as_bytes()
                .windows(token.len())
                .any(|w| w.eq_ignore_ascii_case(token))
    };
    // (The path decoded as a query would be: a token is hex, which neither `&` nor `=` splits.)
    let in_path = decodings(path)
        .iter()
        .flat_map(|path| form_urlencoded::parse(path.as_bytes()))
        .any(|(key, value)| holds(&key) || holds(&value));
    if in_path {
        return true;
    }
    query.is_some_and(|query| {
        let forms = decodings(query);
        // A credential's name, in the query as sent and as a proxy decoding it once passes it
        // on (what that proxy reads as a parameter, `%2574oken=` or `x=%26key%3D…` alike); the
        // token itself, in every form.
        let named = forms
            .iter()
            .take(2)
            .flat_map(|form| form_urlencoded::parse(form.as_bytes()))
            .any(|(key, _)| CREDENTIAL_KEYS.contains(&key.trim().to_ascii_lowercase().as_str()));
        named
            || forms
                .iter()
                .flat_map(|form| form_urlencoded::parse(form.as_bytes()))
                .any(|(key, value)| holds(&value) || holds(&key))
    })
}

/// `text`, and `text` percent-decoded once and twice, for a second reading: the forms a
/// proxy or another program may see after decoding what the daemon reads once.
fn decodings(text: &str) -> Vec<std::borrow::Cow<'_, str>> {
    let mut forms = vec![std::borrow::Cow::Borrowed(text)];
    while forms.len() < 3
        && let Some(last) = forms.last()
        && last.contains('%')
    {
        let decoded = percent_encoding::percent_decode_str(last)
            .decode_utf8_lossy()
            .into_owned();
        if decoded == **last {
            break;
        }
        forms.push(std::borrow::Cow::Owned(decoded));
    }
    forms
}

/// Checks a request before any handler sees it; the credential it showed ([`Credential::None`]
/// on a public path).
pub(crate) fn check(
    state: &AppState,
    method: &Method,
    uri: &axum::http::Uri,
    headers: &HeaderMap,
) -> Result<Credential, ApiError> {
    let (path, query) = (uri.path(), uri.query());
    let forwarded_host = headers.get_all(header::FORWARDED).iter().any(|v| {
        v.to_str().map_or(true, |v| {
            v.split([';', ',']).any(|pair| {
                pair.split_once('=')
                    .is_some_and(|(name, _)| name.trim().eq_ignore_ascii_case("host"))
            })
        })
    });
    if headers.contains_key("x-forwarded-host") || forwarded_host {
        return Err(ApiError::bad_request(
            "forwarded_host",
            "`X-Forwarded-Host` and `Forwarded: host=` are not accepted: the daemon answers to \
             the names it is configured with, whatever a proxy says (a proxy in front of it must \
             not send them)",
        ));
    }
    let host = header_text(headers, &header::HOST)?
        .map(str::to_ascii_lowercase)
        .ok_or_else(|| ApiError::bad_request("missing_host", "a `Host` header is required"))?;
    // An absolute request target (`GET http://name/…`) names the host HTTP/1.1 goes by.
    let target = uri.authority().map(|a| a.as_str().to_ascii_lowercase());
    let named = [Some(host), target];
    if named.iter().flatten().any(|h| !state.hosts().contains(h)) {
        return Err(ApiError::forbidden(
            "host_not_allowed",
            format!(
                "this daemon only answers to {} (a page on another name may be trying DNS rebinding)",
                state.hosts().join(", ")
            ),
        ));
    }
    let origin = header_text(headers, &header::ORIGIN)?;
    if let Some(origin) = origin
        && !state.inner.origins.iter().any(|o| o == origin)
    {
        return Err(ApiError::forbidden(
            "origin_not_allowed",
            "requests from other origins (or a `null` or empty origin) are refused",
        ));
    }
    // Browsers send one lowercase value; anything naming another site, however written, is
    // refused.
    let site = header_text(headers, &HeaderName::from_static("sec-fetch-site"))?;
    if site.is_some_and(|s| s.to_ascii_lowercase().contains("cross-site")) {
        return Err(ApiError::forbidden(
            "cross_site",
            "requests from other sites are refused",
        ));
    }
    if credential_in_url(state, path, query) {
        return Err(ApiError::bad_request(
            "token_in_url",
            "credentials are never accepted in a URL; send `Authorization: Bearer <token>`",
        ));
    }
    if *method == Method::OPTIONS {
        return Err(ApiError::new(
            axum::http::StatusCode::METHOD_NOT_ALLOWED,
            "no_cors",
            "cross-origin requests are not supported",
        ));
    }
    if is_public(method, path) {
        return Ok(Credential::None);
    }
    let credential = credential(state, headers)?;
    if credential == Credential::PageSession {
        // A page session that made sign-in codes could sign itself in again forever: its 12
        // hours, and signing out, would end nothing.
        if (method.as_str(), path) == ("POST", "/api/login/codes") {
            return Err(ApiError::forbidden(
                "token_required",
                "a new sign-in code takes the token (`toolgate page`), not a page's session",
            ));
        }
        let changes = !matches!(*method, Method::GET | Method::HEAD);
        if changes && origin.is_none() {
            return Err(ApiError::forbidden(
                "origin_required",
                "changes made with the page's session need an `Origin` header",
            ));
        }
    }
    match credential.who() {
        Some(who) => {
            crate::roles::permit(&who, method, path)?;
            Ok(credential)
        }
        None => Err(ApiError::unauthorized()),
    }
}

/// Runs a handler; a panic in it becomes a `500 internal_error` for that request (the
/// connection and the daemon go on; nothing the handler had not committed is acknowledged, and
/// an answer it had claimed is withdrawn, so the request ends refused, never allowed).
pub(crate) async fn contained(handler: impl std::future::Future<Output = Response>) -> Response {
    use futures_util::FutureExt;
    match std::panic::AssertUnwindSafe(handler).catch_unwind().await {
        Ok(response) => response,
        Err(_) => ApiError::new(
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            "the daemon failed on this request (a bug; it is logged on the daemon's stderr); \
             nothing was acknowledged",
        )
        .into_response(),
    }
}

/// How many characters of a secret in a row an error body may not hold.
const SECRET_RUN: usize = 16;

/// The most of an error's body read to redact it (an error quotes at most 1 KiB of what was
/// sent).
const MAX_ERROR_BODY: usize = 64 << 10;

/// An error response without any secret that lets a client in (see [`AppState::secrets`]),
/// in any case: an error that quotes what was sent — a path, a field — never hands back a
/// token put there, by mistake or by a page that tricked a client into it.
async fn redacted(state: &AppState, response: Response) -> Response {
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_ERROR_BODY).await else {
        return ApiError::new(
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            "the daemon's error was too long to be sent",
        )
        .into_response();
    };
    let lower = bytes.to_ascii_lowercase();
    // Any run of SECRET_RUN characters of a secret, not only a whole one: a message cut at
    // 1 KiB may end inside one, and what is left of it would be most of it.
    let secrets = state.secrets();
    let mut runs: std::collections::HashSet<&[u8]> = std::collections::HashSet::new();
    let mut short: Vec<&[u8]> = Vec::new();
    for secret in &secrets {
        let secret = secret.as_bytes();
        if secret.len() >= SECRET_RUN {
            runs.extend(secret.windows(SECRET_RUN));
        } else if !secret.is_empty() {
            short.push(secret);
        }
    }
    let mut hidden = vec![false; lower.len()];
    let mut mark = |at: usize, length: usize| {
        for slot in hidden.iter_mut().skip(at).take(length) {
            *slot = true;
        }
    };
    for (at, window) in lower.windows(SECRET_RUN).enumerate() {
        if runs.contains(window) {
            mark(at, SECRET_RUN);
        }
    }
    for secret in short {
        for (at, window) in lower.windows(secret.len()).enumerate() {
            if window == secret {
                mark(at, secret.len());
            }
        }
    }
    if !hidden.contains(&true) {
        return Response::from_parts(parts, Body::from(bytes));
    }
    let mut out = Vec::with_capacity(bytes.len());
    for (at, byte) in bytes.iter().enumerate() {
        match (
            hidden.get(at),
            at.checked_sub(1).and_then(|before| hidden.get(before)),
        ) {
            // The first character of a hidden run says so; the rest go.
            (Some(true), Some(true)) => {}
            (Some(true), _) => out.extend_from_slice(b"[redacted]"),
            _ => out.push(*byte),
        }
    }
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(out))
}

/// The guard every request passes, and the headers every response gets.
pub(crate) async fn guard(
    State(state): State<AppState>,
    mut request: Request<Body>,
    next: Next,
) -> Response {
    let mut checked = check(&state, request.method(), request.uri(), request.headers());
    if let Ok(who) = checked.as_ref().map(Credential::who)
        && let Some(who) = who
    {
        request.extensions_mut().insert(who);
    }
    if matches!(
        checked,
        Ok(Credential::Token | Credential::Named(..) | Credential::PageSession)
    ) && let Some(connection) = request
        .extensions()
        .get::<crate::connections::Credentialed>()
        && connection.mark() == crate::connections::Marked::Evicted
    {
        checked = Err(crate::connections::evicted());
    }
    let mut response = match checked {
        Ok(_) => contained(next.run(request)).await,
        Err(error) => error.into_response(),
    };
    if response.status().is_client_error() || response.status().is_server_error() {
        response = redacted(&state, response).await;
    }
    let headers = response.headers_mut();
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    headers.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    headers.insert("x-frame-options", HeaderValue::from_static("DENY"));
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    headers.remove(header::ACCESS_CONTROL_ALLOW_ORIGIN);
    response
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[tokio::test]
    async fn a_handler_that_panics_gets_a_json_500_and_the_next_request_is_served() {
        let failing = contained(async { panic!("a bug") }).await;
        assert_eq!(
            failing.status(),
            axum::http::StatusCode::INTERNAL_SERVER_ERROR
        );
        let body = axum::body::to_bytes(failing.into_body(), 4096)
            .await
            .unwrap();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["error"]["code"], "internal_error");
        let fine = contained(async { axum::http::StatusCode::OK.into_response() }).await;
        assert_eq!(fine.status(), axum::http::StatusCode::OK);
    }
}
