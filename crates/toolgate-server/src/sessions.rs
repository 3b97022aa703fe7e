//! Sessions, and the seeds' approval routes that are scoped by them: AGH's
//! `POST /api/sessions/{id}/approve` and HPD's
//! `POST /agents/{agent}/sessions/{sid}/branches/{bid}/responses`.
//!
//! A session is created explicitly (`POST /api/sessions`) or by the first call that names it
//! in its context; it has branches (`main` first; `POST /api/sessions/{id}/branches` forks
//! one). Its pending requests are the external calls that name it.

use axum::Json;
use axum::extract::State;

use crate::body::{NoQuery, Path, Query};
use axum::http::StatusCode;
use serde_json::{Map, Value, json};
use toolgate_policy::Choice;
use toolgate_runtime::{Answer, ContinuationAnswer, MAIN_BRANCH, Request, Response};
use toolgate_store::PendingRecord;

use crate::approvals::{actor, no_longer_pending};
use crate::body::{JsonBody, known_keys};
use crate::decisions::{SOURCE, now};
use crate::error::ApiError;
use crate::lifecycle::resolve;
use crate::state::AppState;

/// The agent id of the daemon's own requests on HPD's route.
pub const AGENT_ID: &str = SOURCE;

/// Whether `name` can name a session or a branch: 1 to 128 ASCII letters, digits and `-_.:/`.
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | '/'))
}

fn invalid_session_id(what: &str) -> ApiError {
    ApiError::bad_request(
        "invalid_session_id",
        format!("{what} is a session id: 1 to 128 ASCII letters, digits and `-_.:/`"),
    )
}

fn session_json(id: &str, workspace: Option<&str>) -> Value {
    json!({"id": id, "created": now(), "workspace": workspace, "branches": [MAIN_BRANCH]})
}

/// Whether `workspace` can be a workspace: an absolute path (a relative one would be resolved
/// against the daemon's own folder, which says nothing about the caller's).
pub(crate) fn check_workspace(workspace: Option<&str>, what: &str) -> Result<(), ApiError> {
    let invalid = |why: String| Err(ApiError::bad_request("invalid_workspace", why));
    match workspace {
        // No path the system can open is longer (PATH_MAX), or holds a NUL.
        Some(path) if path.chars().count() > MAX_WORKSPACE => invalid(format!(
            "{what} must be a path of at most {MAX_WORKSPACE} characters, not {}",
            path.chars().count()
        )),
        Some(path) if path.contains('\0') => invalid(format!(
            "{what} must be a path, which holds no NUL character"
        )),
        Some(path) if !std::path::Path::new(path).is_absolute() => invalid(format!(
            "{what} must be an absolute path (the workspace's root), not `{path}`"
        )),
        _ => Ok(()),
    }
}

/// The most branches a session has (each fork writes the session's record again, with them
/// all).
pub(crate) const MAX_BRANCHES: usize = 1000;

fn too_many_branches(session: &str) -> ApiError {
    ApiError::conflict(
        "too_many_branches",
        format!("session `{session}` has {MAX_BRANCHES} branches, as many as a session may have"),
    )
}

/// The longest workspace path taken, in characters (Linux's `PATH_MAX` is as many bytes).
const MAX_WORKSPACE: usize = 4096;

/// The workspace a session was created with.
/// What the daemon knows of a session a call names: its workspace and its taint.
#[derive(Debug, Default)]
pub(crate) struct Known {
    pub(crate) workspace: Option<String>,
    pub(crate) taint: Option<toolgate_policy::SessionTaint>,
}

fn known_of(snapshot: &Value) -> Known {
    Known {
        workspace: snapshot
            .get("workspace")
            .and_then(Value::as_str)
            .map(str::to_owned),
        taint: crate::taint::of(snapshot),
    }
}

/// Makes sure a session named by an external call exists, with the call's branch, and returns
/// its workspace and taint; a session name that breaks the id rules is refused (the branch was checked
/// with the call, by [`check_branch`]).
pub(crate) async fn ensure(
    state: &AppState,
    id: &str,
    workspace: Option<&str>,
    branch: Option<&str>,
) -> Result<Known, ApiError> {
    if !valid_name(id) {
        return Err(invalid_session_id("the call's `context.session`"));
    }
    record(state, id, workspace, branch).await
}

/// Whether a call's `context.branch` can name a branch (with a session or without one: the
/// audit log keeps it either way).
pub(crate) fn check_branch(branch: Option<&str>) -> Result<(), ApiError> {
    if branch.is_some_and(|branch| !valid_name(branch)) {
        return Err(ApiError::bad_request(
            "invalid_branch",
            "the call's `context.branch` is 1 to 128 ASCII letters, digits and `-_.:/`",
        ));
    }
    Ok(())
}

/// Makes sure a session exists, with `branch`, under the name the program that runs it gave
/// (a hosted run's: the embedding program's choice, not a client's), and returns its workspace
/// and taint.
pub(crate) async fn record(
    state: &AppState,
    id: &str,
    workspace: Option<&str>,
    branch: Option<&str>,
) -> Result<Known, ApiError> {
    let branch = branch.unwrap_or(MAIN_BRANCH);
    let has_branch = |snapshot: &Value| {
        snapshot
            .get("branches")
            .and_then(Value::as_array)
            .is_none_or(|branches| branches.iter().any(|b| b.as_str() == Some(branch)))
    };
    // Read, changed and saved only if nobody saved it meanwhile; else again. Most calls name
    // a session that exists, with a branch it has: one read, nothing to write.
    for _ in 0..SAVE_TRIES {
        let (mut snapshot, was) = match state.store().session(id).await? {
            Some(row) if has_branch(&row.snapshot) => return Ok(known_of(&row.snapshot)),
            Some(row) => (row.snapshot, Some(row.updated)),
            None => (session_json(id, workspace), None),
        };
        if let Some(branches) = snapshot.get_mut("branches").and_then(Value::as_array_mut)
            && !branches.iter().any(|b| b.as_str() == Some(branch))
        {
            if branches.len() >= MAX_BRANCHES {
                return Err(too_many_branches(id));
            }
            branches.push(Value::String(branch.to_owned()));
        }
        if state
            .store()
            .put_session_if(id, &snapshot, was.as_deref())
            .await?
        {
            return Ok(known_of(&snapshot));
        }
    }
    Err(contended(id))
}

/// How many times a change to a session reads it again when another change was saved between
/// its read and its save.
const SAVE_TRIES: usize = 16;

/// A session changed by others each time this change read it.
fn contended(id: &str) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::SERVICE_UNAVAILABLE,
        "session_busy",
        format!("session `{id}` changed each time this change read it; try again"),
    )
}

/// `POST /api/sessions` with `{"id"?, "workspace"?}`.
pub(crate) async fn create(
    State(state): State<AppState>,
    Query(NoQuery {}): Query<NoQuery>,
    JsonBody(body): JsonBody,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    if !body.is_object() {
        return Err(ApiError::bad_request(
            "invalid_session",
            "send an object: `{\"id\"?, \"workspace\"?}`",
        ));
    }
    known_keys(&body, &["id", "workspace"])?;
    let id = match body.get("id") {
        None | Some(Value::Null) => uuid::Uuid::new_v4().to_string(),
        Some(Value::String(id)) if valid_name(id) => id.clone(),
        Some(_) => return Err(invalid_session_id("`id`")),
    };
    let workspace = match body.get("workspace") {
        None | Some(Value::Null) => None,
        Some(Value::String(workspace)) => {
            check_workspace(Some(workspace), "`workspace`")?;
            Some(workspace.as_str())
        }
        Some(_) => {
            return Err(ApiError::bad_request(
                "invalid_workspace",
                "`workspace` is a path (a string)",
            ));
        }
    };
    let snapshot = session_json(&id, workspace);
    // Saved only if none is (two creations of one id at once: one is created).
    if !state.store().put_session_if(&id, &snapshot, None).await? {
        return Err(ApiError::conflict(
            "session_exists",
            format!("session `{id}` exists"),
        ));
    }
    Ok((StatusCode::CREATED, Json(snapshot)))
}

/// `GET /api/sessions[?limit=N]`: the sessions, most recently created or given a branch first
/// (the first `limit`, 1 to 1,000, when given), and how many there are (`total`).
pub(crate) async fn list(
    State(state): State<AppState>,
    Query(query): Query<ListQuery>,
) -> Result<Json<Value>, ApiError> {
    let limit = crate::events::page_size(query.limit, "limit")?.unwrap_or(crate::events::MAX_PAGE);
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let rows = state.store().sessions().await?;
    let total = rows.len();
    let sessions: Vec<Value> = rows.into_iter().take(limit).map(|s| s.snapshot).collect();
    Ok(Json(json!({ "sessions": sessions, "total": total })))
}

/// `GET /api/sessions[?limit=N]`'s parameters.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListQuery {
    limit: Option<u32>,
}

/// Every pending request of `session`, oldest first (read by the session's index).
async fn pending_of(state: &AppState, session: &str) -> Result<Vec<PendingRecord>, ApiError> {
    Ok(state.store().pending_page(Some(session), u32::MAX).await?.0)
}

/// The pending request `id`, when it is `session`'s.
async fn pending_in(
    state: &AppState,
    session: &str,
    id: &str,
) -> Result<Option<PendingRecord>, ApiError> {
    Ok(state
        .store()
        .pending_request(id)
        .await?
        .filter(|p| p.session.as_deref() == Some(session)))
}

/// `GET /api/sessions/{id}`: the session and its pending requests.
pub(crate) async fn get(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(NoQuery {}): Query<NoQuery>,
) -> Result<Json<Value>, ApiError> {
    let session = state
        .store()
        .session(&id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no session `{id}`")))?;
    // The oldest 1,000, and how many wait in all.
    let (pending, total) = state
        .store()
        .pending_page(Some(&id), crate::events::MAX_PAGE)
        .await?;
    let mut body = match session.snapshot {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    body.insert("pending".into(), json!(pending));
    body.insert("pending_total".into(), json!(total));
    Ok(Json(Value::Object(body)))
}

/// `POST /api/sessions/{id}/branches` with `{"name", "from"?}`: forks a branch.
pub(crate) async fn fork(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(NoQuery {}): Query<NoQuery>,
    JsonBody(body): JsonBody,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    known_keys(&body, &["name", "from"])?;
    // Read, changed and saved only if nobody saved it meanwhile; else again.
    for _ in 0..SAVE_TRIES {
        let row = state
            .store()
            .session(&id)
            .await?
            .ok_or_else(|| ApiError::not_found(format!("no session `{id}`")))?;
        if let Some(forked) = fork_once(&state, &id, &body, row).await? {
            return Ok(forked);
        }
    }
    Err(contended(&id))
}

/// One try of [`fork`] from the session as read: `None` when it changed before the save.
async fn fork_once(
    state: &AppState,
    id: &str,
    body: &Value,
    row: toolgate_store::SessionRow,
) -> Result<Option<(StatusCode, Json<Value>)>, ApiError> {
    let mut session = row.snapshot;
    let name = body
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| valid_name(n))
        .ok_or_else(|| {
            ApiError::bad_request(
                "invalid_branch",
                "a branch needs a `name`: letters, digits and `-_.:/`",
            )
        })?
        .to_owned();
    let from = match body.get("from") {
        None | Some(Value::Null) => MAIN_BRANCH.to_owned(),
        // Any name: a hosted agent's branches may be named anything (an unknown one is a 404).
        Some(Value::String(from)) => from.clone(),
        Some(_) => {
            return Err(ApiError::bad_request(
                "invalid_branch",
                "`from` names the branch to fork (a string; `main` when left out)",
            ));
        }
    };
    let branches = session
        .get_mut("branches")
        .and_then(Value::as_array_mut)
        .ok_or_else(|| {
            ApiError::bad_request("corrupt_session", "the session has no branch list")
        })?;
    if !branches.iter().any(|b| b.as_str() == Some(from.as_str())) {
        return Err(ApiError::not_found(format!(
            "session `{id}` has no branch `{from}`"
        )));
    }
    if branches.iter().any(|b| b.as_str() == Some(name.as_str())) {
        return Err(ApiError::conflict(
            "branch_exists",
            format!("session `{id}` already has a branch `{name}`"),
        ));
    }
    if branches.len() >= MAX_BRANCHES {
        return Err(too_many_branches(id));
    }
    branches.push(Value::String(name.clone()));
    if !state
        .store()
        .put_session_if(id, &session, Some(&row.updated))
        .await?
    {
        return Ok(None);
    }
    Ok(Some((
        StatusCode::CREATED,
        Json(json!({"session": id, "branch": name, "from": from})),
    )))
}

fn request_of(record: &PendingRecord) -> &Value {
    record.request.get("request").unwrap_or(&record.request)
}

/// AGH's `POST /api/sessions/{id}/approve` with `{"request_id"?, "turn_id"?, "decision"}`:
/// the four exact decisions (trimmed); 400 for a malformed body, a missing id or a decision
/// that was not offered (the request stays pending); 404 for an unknown session; 409 when no
/// such request is pending or a turn has several; `{"status": "approved"}` for any decision.
pub(crate) async fn agh_approve(
    State(state): State<AppState>,
    who: Option<axum::Extension<crate::roles::Who>>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Json<Value>, ApiError> {
    let text = |key: &str| {
        body.get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    for key in ["request_id", "turn_id"] {
        if !matches!(body.get(key), None | Some(Value::Null | Value::String(_))) {
            return Err(ApiError::bad_request(
                "invalid_request",
                format!("`{key}` is a string (a turn is named by its number as text, like \"1\")"),
            ));
        }
    }
    let (request_id, turn_id) = (text("request_id"), text("turn_id"));
    if request_id.is_none() && turn_id.is_none() {
        return Err(ApiError::bad_request(
            "missing_request",
            "send `request_id` or `turn_id`",
        ));
    }
    let decision: Choice = text("decision")
        .ok_or_else(|| ApiError::bad_request("invalid_decision", "send a `decision`"))?
        .parse()
        .map_err(|_| {
            ApiError::bad_request(
                "invalid_decision",
                "`decision` is one of allow-once, allow-always, reject-once, reject-always",
            )
        })?;
    // AGH's body has no reason; one sent all the same is kept (a refusal's is what the agent
    // reads).
    let reason = Answer::reason_of(body.get("reason"))
        .map_err(|e| ApiError::bad_request("invalid_reason", e))?;
    let by = crate::roles::acting(who.as_deref(), actor(&body, "agh")?);
    if state.store().session(&id).await?.is_none() {
        return Err(ApiError::not_found(format!("no session `{id}`")));
    }
    let record = match (&request_id, &turn_id) {
        (Some(request_id), _) => match pending_in(&state, &id, request_id).await? {
            Some(record) => record,
            // AGH's 409; a late answer (after another, or after a restart) hears how it went.
            None => {
                let message = no_longer_pending(&state, request_id, Some(&id))
                    .await?
                    .unwrap_or_else(|| {
                        format!("no request `{request_id}` is pending in session `{id}`")
                    });
                return Err(ApiError::conflict("not_pending", message));
            }
        },
        (None, Some(turn)) => {
            let mut in_turn: Vec<PendingRecord> = pending_of(&state, &id)
                .await?
                .into_iter()
                .filter(|p| p.request.get("turn").and_then(Value::as_str) == Some(turn.as_str()))
                .collect();
            match in_turn.len() {
                1 => in_turn.swap_remove(0),
                0 => {
                    return Err(ApiError::conflict(
                        "not_pending",
                        format!("no request is pending in turn `{turn}`"),
                    ));
                }
                _ => {
                    return Err(ApiError::conflict(
                        "ambiguous",
                        format!("turn `{turn}` has several pending requests; send `request_id`"),
                    ));
                }
            }
        }
        (None, None) => {
            return Err(ApiError::bad_request(
                "missing_request",
                "send `request_id` or `turn_id`",
            ));
        }
    };
    // AGH's option-kind fallback: an "always" the request does not offer falls back to its
    // "once" sibling, and the reverse.
    let offered: Vec<Choice> = request_of(&record)
        .get("choices")
        .and_then(|c| serde_json::from_value(c.clone()).ok())
        .unwrap_or_default();
    let sibling = match decision {
        Choice::AllowAlways => Choice::AllowOnce,
        Choice::AllowOnce => Choice::AllowAlways,
        Choice::RejectAlways => Choice::RejectOnce,
        Choice::RejectOnce => Choice::RejectAlways,
    };
    let applied = if offered.contains(&decision) {
        decision
    } else if offered.contains(&sibling) {
        sibling
    } else {
        return Err(ApiError::bad_request(
            "decision_not_offered",
            format!("`{decision}` (or its sibling) was not offered; the request stays pending"),
        ));
    };
    let answer = Answer {
        decision: applied,
        reason,
        scope: None,
        lasts: None,
    };
    resolve(&state, &record.id, answer, &by).await?;
    Ok(Json(json!({"status": "approved"})))
}

/// Whether a pending request was made in `branch` of its session.
fn in_branch(pending: &PendingRecord, branch: &str) -> bool {
    pending
        .request
        .get("call")
        .and_then(|c| c.get("context"))
        .and_then(|c| c.get("branch"))
        .and_then(Value::as_str)
        .unwrap_or(MAIN_BRANCH)
        == branch
}

/// The ids of the continuation requests hosted runs wait on in `session`'s `branch` (they are
/// the runs' own, held by the broker alone: a restart ends the runs that asked).
fn continuations_in(state: &AppState, session: &str, branch: &str) -> Vec<String> {
    state
        .broker()
        .pending()
        .into_iter()
        .filter(|p| {
            matches!(p.request, Request::Continuation(_))
                && p.scope.session.as_deref() == Some(session)
                && p.scope.branch.as_deref().unwrap_or(MAIN_BRANCH) == branch
        })
        .map(|p| p.request.id().to_owned())
        .collect()
}

/// HPD's 409 for a response to `what` that nothing waits for: `BranchRuntimeNotActive` when
/// nothing waits in the branch at all (no request, no continuation), `no_waiter` when others do;
/// `late` is said after (how a request answered already went).
async fn nobody_waits(
    state: &AppState,
    session: &str,
    branch: &str,
    what: &str,
    late: &str,
) -> Result<ApiError, ApiError> {
    let active = !continuations_in(state, session, branch).is_empty()
        || pending_of(state, session)
            .await?
            .iter()
            .any(|p| in_branch(p, branch));
    Ok(if active {
        ApiError::conflict(
            "no_waiter",
            format!("no {what} is waiting in this branch{late}"),
        )
    } else {
        ApiError::conflict(
            "BranchRuntimeNotActive",
            format!("nothing is waiting in session `{session}`, branch `{branch}`{late}"),
        )
    })
}

/// HPD's `CONTINUATION_RESPONSE` on the responses route (`continuationId`, `approved`,
/// `extensionAmount`: more iterations, the middleware's default when 0 or less): 409
/// `BranchRuntimeNotActive` when nothing waits in the branch, 409 when no continuation request
/// waits for this id; 200 when the run has it.
async fn continuation_respond(
    state: &AppState,
    session: &str,
    branch: &str,
    body: &Value,
) -> Result<Json<Value>, ApiError> {
    let id = body
        .get("continuationId")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::bad_request("missing_continuation_id", "send `continuationId`"))?
        .to_owned();
    let approved = body
        .get("approved")
        .and_then(Value::as_bool)
        .ok_or_else(|| ApiError::bad_request("invalid_response", "`approved` is true or false"))?;
    let extension = match body.get("extensionAmount") {
        None | Some(Value::Null) => 0,
        Some(amount) => match whole_count(amount) {
            // HPD's: more than 0 extends by that much, else by the middleware's default.
            Some(amount) => amount,
            None => {
                return Err(ApiError::bad_request(
                    "invalid_response",
                    "`extensionAmount` is a whole number of iterations",
                ));
            }
        },
    };
    let by = actor(body, "hpd")?;
    if !continuations_in(state, session, branch).contains(&id) {
        let what = format!("continuation request `{id}`");
        return Err(nobody_waits(state, session, branch, &what, "").await?);
    }
    let answer = ContinuationAnswer {
        approved,
        extension,
    };
    state
        .broker()
        .respond(&id, Response::Continuation(answer), &by)?;
    Ok(Json(
        json!({"accepted": true, "continuationId": id, "approved": approved}),
    ))
}

/// HPD's `POST /agents/{agent}/sessions/{sid}/branches/{bid}/responses` with a
/// `PERMISSION_RESPONSE` envelope (`permissionId`, `approved`, `choice`, `reason`) or a
/// `CONTINUATION_RESPONSE`: 404 for an unknown session or branch; 409 `BranchRuntimeNotActive`
/// for another agent than the daemon's or when nothing waits in the branch, 409 when no request
/// waits for this id; 200 with the result.
pub(crate) async fn hpd_respond(
    State(state): State<AppState>,
    who: Option<axum::Extension<crate::roles::Who>>,
    Path((agent, session, branch)): Path<(String, String, String)>,
    JsonBody(body): JsonBody,
) -> Result<Json<Value>, ApiError> {
    let known = state
        .store()
        .session(&session)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no session `{session}`")))?;
    let has_branch = known
        .snapshot
        .get("branches")
        .and_then(Value::as_array)
        .is_some_and(|b| b.iter().any(|b| b.as_str() == Some(branch.as_str())));
    if !has_branch {
        return Err(ApiError::not_found(format!(
            "session `{session}` has no branch `{branch}`"
        )));
    }
    // HPD routes to the runtime of this agent in the branch: the scope exists, no such runtime
    // is active in it.
    if agent != AGENT_ID {
        return Err(ApiError::conflict(
            "BranchRuntimeNotActive",
            format!(
                "no agent `{agent}` runs in session `{session}`, branch `{branch}` (this \
                 daemon's agent is `{AGENT_ID}`)"
            ),
        ));
    }
    match body.get("type") {
        None | Some(Value::Null) => {}
        Some(Value::String(kind)) if kind == "PERMISSION_RESPONSE" => {}
        Some(Value::String(kind)) if kind == "CONTINUATION_RESPONSE" => {
            return continuation_respond(&state, &session, &branch, &body).await;
        }
        Some(Value::String(kind)) => {
            return Err(ApiError::bad_request(
                "unsupported_response",
                format!(
                    "`{kind}` responses are not handled here; send PERMISSION_RESPONSE or \
                     CONTINUATION_RESPONSE"
                ),
            ));
        }
        Some(_) => {
            return Err(ApiError::bad_request(
                "unsupported_response",
                "`type` is a string: PERMISSION_RESPONSE or CONTINUATION_RESPONSE",
            ));
        }
    }
    let permission_id = body
        .get("permissionId")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::bad_request("missing_permission_id", "send `permissionId`"))?
        .to_owned();
    // HPD's envelope answers with `approved` and `choice` (toolgate's `decision` is for
    // `POST /api/approvals/{id}`).
    if body.get("decision").is_some() {
        return Err(ApiError::bad_request(
            "invalid_response",
            "HPD's route takes `approved` and `choice`, not `decision`",
        ));
    }
    let answer =
        Answer::from_json(&body).map_err(|e| ApiError::bad_request("invalid_response", e))?;
    let by = crate::roles::acting(who.as_deref(), actor(&body, "hpd")?);
    let branch_of = |p: &PendingRecord| in_branch(p, &branch);
    let waiting = pending_in(&state, &session, &permission_id)
        .await?
        .is_some_and(|p| branch_of(&p));
    if !waiting {
        // A late answer (after another, or after a restart) hears how it went.
        let late = no_longer_pending(&state, &permission_id, Some(&session))
            .await?
            .map(|message| format!("; {message}"))
            .unwrap_or_default();
        let what = format!("request `{permission_id}`");
        return Err(nobody_waits(&state, &session, &branch, &what, &late).await?);
    }
    let choice = answer.decision;
    resolve(&state, &permission_id, answer, &by).await?;
    Ok(Json(
        json!({"accepted": true, "permissionId": permission_id, "decision": choice}),
    ))
}

/// `value` as a count: a whole number — also one written with a fraction of zero (`12.0`, the
/// same number, as JSON Schema reads an integer) — below 0 read as 0, past `u32` as its most.
/// `None` for anything else.
fn whole_count(value: &Value) -> Option<u32> {
    // Every JSON number reads as an `f64`; an integer too large to be exact there is past
    // `u32` either way.
    let f = value.as_f64().filter(|f| f.fract() == 0.0)?;
    Some(if f <= 0.0 {
        0
    } else if f >= f64::from(u32::MAX) {
        u32::MAX
    } else {
        // Whole and within `u32`: exact.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let n = f as u32;
        n
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::whole_count;

    #[test]
    fn a_count_is_a_whole_number_however_it_is_written() {
        for (given, count) in [
            (json!(3), Some(3)),
            (json!(3.0), Some(3)),
            (json!(-2), Some(0)),
            (json!(-2.0), Some(0)),
            (json!(0.0), Some(0)),
            (json!(1e300), Some(u32::MAX)),
            (json!(u64::MAX), Some(u32::MAX)),
            (json!(i64::MAX), Some(u32::MAX)),
            (json!(4_294_967_295.0), Some(u32::MAX)),
            (json!(4_294_967_294.0), Some(u32::MAX - 1)),
            (json!(2.5), None),
            (json!("3"), None),
            (json!(true), None),
        ] {
            assert_eq!(whole_count(&given), count, "{given}");
        }
    }
}
