//! Remembered answers: `GET /api/grants`, `DELETE /api/grants/{id}`.

use axum::Json;
use axum::extract::State;

use crate::body::{Path, Query};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate_runtime::{Grant, GrantScope};
use toolgate_store::{Batch, Committed, EventRecord};

use crate::error::ApiError;
use crate::state::AppState;

/// Filters of the grants listed.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListQuery {
    session: Option<String>,
    tool: Option<String>,
    limit: Option<u32>,
}

/// The session a grant is kept for, when it is kept for one.
fn session_of(grant: &Grant) -> Option<&str> {
    match &grant.scope {
        GrantScope::Once { session }
        | GrantScope::Turn { session, .. }
        | GrantScope::Session { session } => Some(session),
        GrantScope::Workspace { .. } | GrantScope::User => None,
    }
}

/// `GET /api/grants[?session=S][&tool=T][&limit=N]`: the grants, oldest first — those kept for
/// one session, or about one tool, when given — at most `limit` of them (1,000 unless fewer
/// are asked for), and how many there are (`total`).
pub(crate) async fn list(
    State(state): State<AppState>,
    Query(query): Query<ListQuery>,
) -> Result<Json<Value>, ApiError> {
    for (name, given) in [("session", &query.session), ("tool", &query.tool)] {
        crate::body::not_empty(
            given.as_deref(),
            "bad_filter",
            format!("`{name}` names one; leave it out for every grant"),
        )?;
    }
    let limit = crate::events::page_size(query.limit, "limit")?.unwrap_or(crate::events::MAX_PAGE);
    let mut grants: Vec<Grant> = state
        .store()
        .list()
        .await?
        .into_iter()
        .filter(|g| query.session.is_none() || session_of(g) == query.session.as_deref())
        .filter(|g| query.tool.as_ref().is_none_or(|tool| g.tool == *tool))
        .collect();
    let total = grants.len();
    grants.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    Ok(Json(json!({ "grants": grants, "total": total })))
}

/// Who acts: `?by=NAME` (a `DELETE` has no body to say it in).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ByQuery {
    pub(crate) by: Option<String>,
}

/// `DELETE /api/grants/{id}?by=NAME`: revokes a grant (`204`; `404` when there is none); the
/// event's actor is `by` (as an answer's), else `api`.
pub(crate) async fn revoke(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(query): Query<ByQuery>,
) -> Result<StatusCode, ApiError> {
    let by = crate::approvals::named_actor(query.by.as_deref(), "api")?;
    // Not while an answer that found this grant stored names it instead of making another.
    let _writing = state.inner.grant_writes.lock().await;
    let grant = state
        .store()
        .list()
        .await?
        .into_iter()
        .find(|g| g.id == id)
        .ok_or_else(|| ApiError::not_found(format!("no grant `{id}`")))?;
    // Filed under the grant's session, when it has one, so the session's log shows it.
    let session = session_of(&grant).map(str::to_owned);
    let event = EventRecord::new(
        "grant_revoked",
        json!({"grant": grant, "actor": by, "action": grant.tool, "session": session}),
    );
    // The grant goes with its event, in one commit: the audit log never misses a revocation.
    let committed = state
        .commit(Batch {
            revoke: Some(id.clone()),
            events: vec![event],
            ..Batch::default()
        })
        .await?;
    match committed {
        Committed::Written(_) => Ok(StatusCode::NO_CONTENT),
        // Revoked by someone else since it was read.
        Committed::NoGrant | Committed::NotPending => {
            Err(ApiError::not_found(format!("no grant `{id}`")))
        }
    }
}
