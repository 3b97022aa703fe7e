//! Remembered answers: `GET /api/grants`, `DELETE /api/grants/{id}`, and the removal of those
//! that expired or were spent.

use std::path::PathBuf;

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
    /// `session` (the scopes of one session: once, turn, session), `workspace` or `user`.
    scope: Option<String>,
    limit: Option<u32>,
    /// The grants after this one in the list's order: an earlier page's `next`.
    after: Option<String>,
}

/// Where a grant is in the list (oldest first, then by id, as the store orders them): its
/// creation time as the store writes it, then its id — a page's `next`, which stays valid when
/// the grant it names is revoked meanwhile.
fn cursor(grant: &Grant) -> (String, &str) {
    (
        humantime::format_rfc3339_micros(grant.created_at).to_string(),
        &grant.id,
    )
}

/// An `after` read back (`TIME/ID`, as `next` writes it: the time in the shape the OpenAPI
/// document's pattern gives, which is what is checked — a cursor only places a page).
fn read_cursor(after: &str) -> Result<(String, String), ApiError> {
    after
        .split_once('/')
        .filter(|(time, id)| time_shaped(time) && !id.is_empty())
        .map(|(time, id)| {
            // Written as the store writes times (`.5Z` is `.500000Z`), so it sorts among them
            // as the time it says; one that is no time (a 13th month) sorts as its text.
            let time = humantime::parse_rfc3339(time).map_or_else(
                |_| time.to_owned(),
                |at| humantime::format_rfc3339_micros(at).to_string(),
            );
            (time, id.to_owned())
        })
        .ok_or_else(|| {
            ApiError::bad_request(
                "bad_cursor",
                format!(
                    "`after` is a page's `next` as the daemon wrote it (`TIME/ID`), not `{after}`"
                ),
            )
        })
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

/// The stored grant `id` (`404` when there is none).
async fn stored(state: &AppState, id: &str) -> Result<Grant, ApiError> {
    state
        .store()
        .list()
        .await?
        .into_iter()
        .find(|g| g.id == id)
        .ok_or_else(|| ApiError::not_found(format!("no grant `{id}`")))
}

/// Whether a grant has the scope a listing's `scope` names.
fn in_scope(grant: &Grant, scope: &str) -> bool {
    match &grant.scope {
        GrantScope::Once { .. } | GrantScope::Turn { .. } | GrantScope::Session { .. } => {
            scope == "session"
        }
        GrantScope::Workspace { .. } => scope == "workspace",
        GrantScope::User => scope == "user",
    }
}

/// How often grants that expired or were spent are removed while the daemon runs (they answer
/// nothing from the moment they end; this keeps the list and the store to the live ones).
const REMOVE_ENDED_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// Removes the grants that expired or were spent now and every [`REMOVE_ENDED_EVERY`] while the
/// daemon runs.
pub(crate) fn start_removing_ended(state: &AppState) {
    crate::state::every(state, REMOVE_ENDED_EVERY, |state| async move {
        if let Err(error) = remove_ended(&state).await {
            // Tried again at the next turn: an ended grant answers nothing meanwhile.
            eprintln!(
                "toolgate: grants that expired could not be removed: {}",
                error.message
            );
        }
    });
}

/// Removes every grant that expired or was spent, each with a `grant_expired` event (filed under
/// its session when it has one) in one commit. Returns how many went.
pub(crate) async fn remove_ended(state: &AppState) -> Result<usize, ApiError> {
    let now = state.now();
    let mut removed = 0;
    for grant in state.store().list().await? {
        if !grant.has_ended(now) {
            continue;
        }
        let why = if grant.uses_left == Some(0) {
            "spent"
        } else {
            "expired"
        };
        let session = session_of(&grant).map(str::to_owned);
        let event = EventRecord::new(
            "grant_expired",
            json!({"grant": grant, "actor": "daemon", "action": grant.tool,
                   "session": session, "reason": format!("the grant {why}")}),
        );
        let committed = state
            .commit(Batch {
                revoke: Some(grant.id.clone()),
                events: vec![event],
                ..Batch::default()
            })
            .await?;
        // Revoked by someone else meanwhile: nothing to do.
        removed += usize::from(matches!(committed, Committed::Written(_)));
    }
    Ok(removed)
}

/// Whether `text` has the shape of an RFC 3339 time in UTC: `YYYY-MM-DDTHH:MM:SS`, a fraction
/// of 1 to 9 digits or none, `Z`.
fn time_shaped(text: &str) -> bool {
    let bytes = text.as_bytes();
    let Some((head, rest)) = bytes.split_at_checked(19) else {
        return false;
    };
    let head_fits = head.iter().zip(b"0000-00-00T00:00:00").all(|(&b, &shape)| {
        if shape == b'0' {
            b.is_ascii_digit()
        } else {
            b == shape
        }
    });
    let fraction = match rest {
        [b'.', digits @ .., b'Z'] => {
            (1..=9).contains(&digits.len()) && digits.iter().all(u8::is_ascii_digit)
        }
        [b'Z'] => true,
        _ => false,
    };
    head_fits && fraction
}

/// `GET /api/grants[?session=S][&tool=T][&scope=SCOPE][&limit=N][&after=NEXT]`: the grants that
/// still answer (not expired, not spent), oldest first — those kept for one session, about one
/// tool, or of one scope (`session`, `workspace`, `user`), when given — at most `limit` of them (1,000
/// unless fewer are asked for), and how many there are (`total`, filtered as the list is, from
/// the start); `next`, when more follow, is where the next page starts (`after=NEXT`).
pub(crate) async fn list(
    State(state): State<AppState>,
    Query(query): Query<ListQuery>,
) -> Result<Json<Value>, ApiError> {
    if let Some(scope) = &query.scope
        && !matches!(scope.as_str(), "session" | "workspace" | "user")
    {
        return Err(ApiError::bad_request(
            "bad_filter",
            format!("`scope` is `session`, `workspace` or `user`, not `{scope}`"),
        ));
    }
    for (name, given) in [("session", &query.session), ("tool", &query.tool)] {
        crate::body::not_empty(
            given.as_deref(),
            "bad_filter",
            format!("`{name}` names one; leave it out for every grant"),
        )?;
    }
    let limit = crate::events::page_size(query.limit, "limit")?.unwrap_or(crate::events::MAX_PAGE);
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let after = query.after.as_deref().map(read_cursor).transpose()?;
    let now = state.now();
    let matching: Vec<Grant> = state
        .store()
        .list()
        .await?
        .into_iter()
        .filter(|g| !g.has_ended(now))
        .filter(|g| {
            query
                .scope
                .as_deref()
                .is_none_or(|scope| in_scope(g, scope))
        })
        .filter(|g| query.session.is_none() || session_of(g) == query.session.as_deref())
        .filter(|g| query.tool.as_ref().is_none_or(|tool| g.tool == *tool))
        .collect();
    let total = matching.len();
    let mut grants: Vec<Grant> = matching
        .into_iter()
        .filter(|g| {
            after.as_ref().is_none_or(|(time, id)| {
                let (at, of) = cursor(g);
                (at.as_str(), of) > (time.as_str(), id.as_str())
            })
        })
        .take(limit.saturating_add(1))
        .collect();
    let more = grants.len() > limit;
    grants.truncate(limit);
    let next = grants.last().filter(|_| more).map(|last| {
        let (time, id) = cursor(last);
        format!("{time}/{id}")
    });
    Ok(Json(match next {
        Some(next) => json!({ "grants": grants, "total": total, "next": next }),
        None => json!({ "grants": grants, "total": total }),
    }))
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
    who: Option<axum::Extension<crate::roles::Who>>,
    Path(id): Path<String>,
    Query(query): Query<ByQuery>,
) -> Result<StatusCode, ApiError> {
    let by = crate::roles::acting(
        who.as_deref(),
        crate::approvals::named_actor(query.by.as_deref(), "api")?,
    );
    let grant = stored(&state, &id).await?;
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
        Committed::NoGrant
        | Committed::NotPending
        | Committed::SameGrant(_)
        | Committed::SessionChanged => Err(ApiError::not_found(format!("no grant `{id}`"))),
    }
}

/// `POST /api/grants/{id}/promote` with `{"write"?, "by"?}`: the rule the grant amounts to,
/// placed in its policy file (see [`crate::promote`]; a session's grant goes to its session's
/// workspace's policy) — the diff alone, or, with `"write": true`, the file written and the
/// grant revoked (its `grant_revoked` event says where it went). An approver's: the rule
/// decides what the grant, which an approver made, decided, and no more (a rule of a wider
/// reach, or one that would take a deny's calls, is refused). `404` for no such grant, `409
/// not_promotable` (and nothing written) when no rule of the same reach can be placed.
pub(crate) async fn promote(
    State(state): State<AppState>,
    who: Option<axum::Extension<crate::roles::Who>>,
    Path(id): Path<String>,
    Query(crate::body::NoQuery {}): Query<crate::body::NoQuery>,
    crate::body::JsonBody(body): crate::body::JsonBody,
) -> Result<Json<Value>, ApiError> {
    crate::body::known_keys(&body, &["write", "by"])?;
    let write = match body.get("write") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(write)) => *write,
        Some(_) => {
            return Err(ApiError::bad_request(
                "invalid_write",
                "`write` is true (write the rule, revoke the grant) or false (the diff alone)",
            ));
        }
    };
    let by = crate::roles::acting(who.as_deref(), crate::approvals::actor(&body, "api")?);
    let grant = stored(&state, &id).await?;
    let not_promotable = |why: String| ApiError::conflict("not_promotable", why);
    // A session's grant goes to the policy of the workspace its session works in.
    let project = match session_of(&grant) {
        Some(session) => state
            .store()
            .session(session)
            .await?
            .and_then(|row| row.snapshot.get("workspace")?.as_str().map(PathBuf::from)),
        None => None,
    };
    let file = crate::promote::file_for(&grant, project.as_deref()).map_err(not_promotable)?;
    let example = match &grant.request_id {
        Some(request) => {
            let filter = toolgate_store::EventFilter {
                kinds: vec!["permission_requested".into()],
                request_id: Some(request.clone()),
                ..Default::default()
            };
            state
                .store()
                .latest(&filter, 1)
                .await?
                .first()
                .and_then(|event| serde_json::from_str::<Value>(event.body.as_str()).ok())
                .and_then(|event| crate::promote::example_from(&event))
        }
        None => None,
    };
    let plan = crate::promote::plan(&grant, &file, example.as_ref()).map_err(not_promotable)?;
    let shown = json!({
        "grant": grant.id,
        "file": plan.file,
        "diff": plan.diff(),
        "superseded": plan.superseded,
        "example": plan.example,
        "written": write,
    });
    if !write {
        return Ok(Json(shown));
    }
    crate::promote::replace_file(&file, false, Some(&plan.new)).map_err(|why| {
        ApiError::new(
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            "cannot_write",
            why,
        )
    })?;
    let event = EventRecord::new(
        "grant_revoked",
        json!({"grant": grant, "actor": by, "action": grant.tool,
               "session": session_of(&grant), "promoted": plan.file,
               "reason": format!("made a rule in {}", plan.file.display())}),
    );
    // (Revoked by someone else meanwhile: the rule stands, written.)
    state
        .commit(Batch {
            revoke: Some(id),
            events: vec![event],
            ..Batch::default()
        })
        .await?;
    Ok(Json(shown))
}
