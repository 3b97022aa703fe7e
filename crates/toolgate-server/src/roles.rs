//! Who may do what: named tokens with roles.
//!
//! - `agent` asks and waits: it submits calls, polls and withdraws the requests whose ids it
//!   holds (an id is unguessable), and runs hosted sessions;
//! - `approver` answers: besides what an agent does, it lists what waits, answers, lists and
//!   revokes grants, and reads the log and the policy in force (the page signs in as one);
//! - `admin` does everything: besides, it makes sign-in codes and names tokens.
//!
//! The token in the daemon's token file is the admin's. `POST /api/tokens` (admin) names a
//! token with a role; the daemon keeps its SHA-256 only, and shows the token once. A request
//! whose role may not use a route gets `403 role_forbidden`. What a named token does is filed
//! under its name: an answer's `actor` is the token's name, whatever `by` says.

use std::collections::HashMap;
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use toolgate_store::{Batch, EventRecord, TokenRow};

use crate::body::{JsonBody, Path};
use crate::error::ApiError;
use crate::state::{AppState, lock};

/// What a credential may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// Asks and waits.
    Agent,
    /// Answers, grants and revokes.
    Approver,
    /// Everything.
    Admin,
}

impl Role {
    /// The role's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Agent => "agent",
            Role::Approver => "approver",
            Role::Admin => "admin",
        }
    }

    /// The role of a name.
    pub fn parse(name: &str) -> Option<Role> {
        match name {
            "agent" => Some(Role::Agent),
            "approver" => Some(Role::Approver),
            "admin" => Some(Role::Admin),
            _ => None,
        }
    }
}

/// Who a request is: its role, and its name when a named token proved it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Who {
    pub(crate) role: Role,
    pub(crate) name: Option<String>,
}

/// The least role each route takes (by method and path template); a route not listed takes
/// `admin`.
const LEAST: &[(&str, &str, Role)] = &[
    ("POST", "/api/logout", Role::Agent),
    ("POST", "/api/decisions", Role::Agent),
    ("GET", "/api/decisions/{id}", Role::Agent),
    ("DELETE", "/api/decisions/{id}", Role::Agent),
    ("POST", "/api/sessions", Role::Agent),
    ("GET", "/api/sessions/{id}", Role::Agent),
    ("POST", "/api/sessions/{id}/branches", Role::Agent),
    ("GET", "/api/sessions/{id}/events", Role::Agent),
    ("POST", "/api/sessions/{id}/results", Role::Agent),
    ("GET", "/api/pending", Role::Approver),
    // HPD's responses answer permission requests: an approver's.
    (
        "POST",
        "/agents/{agent}/sessions/{session}/branches/{branch}/responses",
        Role::Approver,
    ),
    ("POST", "/api/approvals/{id}", Role::Approver),
    ("POST", "/api/sessions/{id}/approve", Role::Approver),
    ("DELETE", "/api/sessions/{id}/taint", Role::Approver),
    ("GET", "/api/grants", Role::Approver),
    ("DELETE", "/api/grants/{id}", Role::Approver),
    // The rule decides what the grant (an approver's) decided, and no more.
    ("POST", "/api/grants/{id}/promote", Role::Approver),
    ("GET", "/api/events", Role::Approver),
    ("GET", "/api/audit", Role::Approver),
    ("GET", "/api/decisions", Role::Approver),
    ("GET", "/api/sessions", Role::Approver),
    ("GET", "/api/policy", Role::Approver),
];

/// Whether `path` fits `template` (`{…}` is one segment).
fn fits(template: &str, path: &str) -> bool {
    let (mut t, mut p) = (template.split('/'), path.split('/'));
    loop {
        match (t.next(), p.next()) {
            (None, None) => return true,
            (Some(want), Some(got)) if want.starts_with('{') && !got.is_empty() => {}
            (Some(want), Some(got)) if want == got => {}
            _ => return false,
        }
    }
}

/// The least role a request of `method` to `path` takes.
pub(crate) fn least(method: &Method, path: &str) -> Role {
    let method = if *method == Method::HEAD {
        "GET"
    } else {
        method.as_str()
    };
    LEAST
        .iter()
        .find(|(m, template, _)| *m == method && fits(template, path))
        .map_or(Role::Admin, |(_, _, role)| *role)
}

/// Refuses a request its role may not make.
pub(crate) fn permit(who: &Who, method: &Method, path: &str) -> Result<(), ApiError> {
    let needed = least(method, path);
    if who.role >= needed {
        return Ok(());
    }
    Err(ApiError::forbidden(
        "role_forbidden",
        format!(
            "this route takes the `{}` role{}; this credential is `{}`",
            needed.as_str(),
            if needed == Role::Admin {
                ""
            } else {
                " or more"
            },
            who.role.as_str()
        ),
    ))
}

/// Who acts, as the log files it: a named token's name, whatever the request says; else what it
/// says (`given`).
pub(crate) fn acting(who: Option<&Who>, given: String) -> String {
    who.and_then(|who| who.name.clone()).unwrap_or(given)
}

/// A token's SHA-256, hex.
pub(crate) fn hash(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The named tokens, by their hash, as this daemon last read them.
pub(crate) type Known = HashMap<String, (String, Role)>;

/// Reads the named tokens from the store into the daemon's memory (a token made or revoked on
/// another daemon sharing the store counts here at the next read).
pub(crate) async fn refresh(state: &AppState) -> Result<(), ApiError> {
    let rows = state.store().tokens().await?;
    let known: Known = rows
        .into_iter()
        .filter_map(|row| Some((row.hash, (row.name, Role::parse(&row.role)?))))
        .collect();
    *lock(&state.inner.tokens) = known;
    Ok(())
}

/// How often the named tokens are read again from the store.
const REFRESH_EVERY: Duration = Duration::from_secs(2);

/// Reads the named tokens every [`REFRESH_EVERY`] when other daemons share the store (alone on
/// it, this daemon reads them again itself at each change it makes).
pub(crate) fn start(state: &AppState) {
    if !state.store().shared() {
        return;
    }
    crate::state::every(state, REFRESH_EVERY, |state| async move {
        if let Err(error) = refresh(&state).await {
            eprintln!(
                "toolgate: the named tokens could not be read again (those known stay): {}",
                error.message
            );
        }
    });
}

/// The name and role of a named token, when it is one.
pub(crate) fn named(state: &AppState, token: &str) -> Option<(String, Role)> {
    lock(&state.inner.tokens).get(&hash(token)).cloned()
}

/// The longest name a token may have.
const MAX_NAME: usize = 64;

/// `POST /api/tokens` with `{"name", "role"}` (admin): a new token with that name and role,
/// shown once (`201 {"name", "role", "token", "created"}`); `409 token_exists` when the name is
/// taken.
pub(crate) async fn create(
    State(state): State<AppState>,
    JsonBody(body): JsonBody,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    crate::body::known_keys(&body, &["name", "role"])?;
    let name = body
        .get("name")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|name| {
            !name.is_empty()
                && name.chars().count() <= MAX_NAME
                && !name.chars().any(char::is_control)
        })
        .ok_or_else(|| {
            ApiError::bad_request(
                "invalid_name",
                format!("`name` is who the token is: 1 to {MAX_NAME} characters"),
            )
        })?
        .to_owned();
    let role = body
        .get("role")
        .and_then(Value::as_str)
        .and_then(Role::parse)
        .ok_or_else(|| {
            ApiError::bad_request("invalid_role", "`role` is `agent`, `approver` or `admin`")
        })?;
    let token = format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    let created = crate::decisions::now();
    let row = TokenRow {
        name: name.clone(),
        role: role.as_str().to_owned(),
        hash: hash(&token),
        created: created.clone(),
    };
    if !state.store().add_token(row).await? {
        return Err(ApiError::conflict(
            "token_exists",
            format!("a token named `{name}` exists: revoke it first, or choose another name"),
        ));
    }
    refresh(&state).await?;
    record(&state, "token_created", &name, role).await;
    Ok((
        StatusCode::CREATED,
        Json(json!({"name": name, "role": role.as_str(), "token": token, "created": created})),
    ))
}

/// `GET /api/tokens` (admin): the named tokens (never the tokens themselves).
pub(crate) async fn list(
    State(state): State<AppState>,
    crate::body::Query(crate::body::NoQuery {}): crate::body::Query<crate::body::NoQuery>,
) -> Result<Json<Value>, ApiError> {
    let tokens: Vec<Value> = state
        .store()
        .tokens()
        .await?
        .into_iter()
        .map(|row| json!({"name": row.name, "role": row.role, "created": row.created}))
        .collect();
    Ok(Json(json!({ "tokens": tokens })))
}

/// `DELETE /api/tokens/{name}` (admin): revokes a named token (`204`; `404` when there is none).
pub(crate) async fn revoke(
    State(state): State<AppState>,
    Path(name): Path<String>,
    crate::body::Query(crate::body::NoQuery {}): crate::body::Query<crate::body::NoQuery>,
) -> Result<StatusCode, ApiError> {
    let role = state
        .store()
        .tokens()
        .await?
        .into_iter()
        .find(|row| row.name == name)
        .and_then(|row| Role::parse(&row.role));
    if !state.store().remove_token(&name).await? {
        return Err(ApiError::not_found(format!("no token named `{name}`")));
    }
    refresh(&state).await?;
    record(&state, "token_revoked", &name, role.unwrap_or(Role::Agent)).await;
    Ok(StatusCode::NO_CONTENT)
}

/// The log's word of a token made or revoked (best effort: the token's change stands).
async fn record(state: &AppState, kind: &str, name: &str, role: Role) {
    let event = EventRecord::new(
        kind,
        json!({"actor": "admin", "token": name, "role": role.as_str(),
               "reason": format!("the {} token `{name}`", role.as_str())}),
    );
    let _ = state
        .commit(Batch {
            events: vec![event],
            ..Batch::default()
        })
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_take_their_least_role() {
        assert_eq!(least(&Method::POST, "/api/decisions"), Role::Agent);
        assert_eq!(least(&Method::GET, "/api/decisions/abc"), Role::Agent);
        assert_eq!(least(&Method::GET, "/api/decisions/"), Role::Admin);
        assert_eq!(least(&Method::POST, "/api/approvals/abc"), Role::Approver);
        assert_eq!(least(&Method::HEAD, "/api/pending"), Role::Approver);
        assert_eq!(least(&Method::POST, "/api/tokens"), Role::Admin);
        assert_eq!(least(&Method::POST, "/api/login/codes"), Role::Admin);
        assert_eq!(
            least(&Method::POST, "/agents/a/sessions/s/branches/b/responses"),
            Role::Approver
        );
        assert_eq!(hash("abc").len(), 64);
    }
}
