//! Session taint, kept with the session: `POST /api/sessions/{id}/results` tells the daemon a
//! call's result came into the session (the hooks' after-tool events, a gateway's results), and
//! the policy says whether it tainted it; `DELETE /api/sessions/{id}/taint` clears it (a
//! person, once they have looked). While a session is tainted, its calls' allows that would
//! send something out ask (see `toolgate_policy::Policy::under_taint`).
//!
//! The taint is saved in the session's record (`taint`), with the event that says so
//! (`session_tainted`, `taint_cleared`), in one commit that holds only if the record is still
//! the one read (else read again): two results at once both count.

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate_policy::{Call, SessionTaint, TaintKind, TaintSource};
use toolgate_store::{Batch, Committed, EventRecord, SessionRow};

use crate::body::{JsonBody, Path, Query, known_keys};
use crate::error::ApiError;
use crate::state::AppState;

/// A session's taint, as its record holds it (`None`: never tainted, nothing reached). A
/// record this toolgate cannot read is taken as tainted: what it held is not known.
pub(crate) fn of(snapshot: &Value) -> Option<SessionTaint> {
    let stored = snapshot.get("taint")?;
    Some(
        <SessionTaint as serde::Deserialize>::deserialize(stored).unwrap_or_else(|_| {
            SessionTaint {
                sources: vec![TaintSource {
                    kind: TaintKind::File,
                    tool: "toolgate".into(),
                    what: "a taint record this toolgate cannot read".into(),
                    at: String::new(),
                    call_id: None,
                }],
                ..SessionTaint::default()
            }
        }),
    )
}

/// How many times a change of a session's taint reads the session again when another change
/// was saved between its read and its save.
const SAVE_TRIES: usize = 16;

/// Changes a session's taint with `change` (`None` when it changed nothing; else the events
/// that say what changed), saved with its events in one commit over the record read. `None`
/// when there is no such session; else the taint as it now stands.
async fn change_taint(
    state: &AppState,
    id: &str,
    change: impl Fn(&mut SessionTaint) -> Option<Vec<EventRecord>>,
) -> Result<Option<SessionTaint>, ApiError> {
    for _ in 0..SAVE_TRIES {
        let Some(row) = state.store().session(id).await? else {
            return Ok(None);
        };
        let mut taint = of(&row.snapshot).unwrap_or_default();
        let Some(events) = change(&mut taint) else {
            return Ok(Some(taint));
        };
        let mut snapshot = row.snapshot;
        if let Value::Object(fields) = &mut snapshot {
            fields.insert("taint".into(), json!(taint));
        }
        let committed = state
            .commit(Batch {
                session: Some(SessionRow {
                    id: id.to_owned(),
                    snapshot,
                    updated: crate::decisions::now(),
                }),
                session_was: Some(Some(row.updated)),
                events,
                ..Batch::default()
            })
            .await?;
        if matches!(committed, Committed::Written(_)) {
            return Ok(Some(taint));
        }
    }
    Err(ApiError::new(
        axum::http::StatusCode::SERVICE_UNAVAILABLE,
        "session_busy",
        format!("session `{id}` changed each time this change read it; try again"),
    ))
}

/// The `session_tainted` event of a source that tainted session `id`.
fn tainted(id: &str, source: &TaintSource) -> EventRecord {
    let mut fields = serde_json::Map::new();
    fields.insert("session".into(), json!(id));
    fields.insert("action".into(), json!(source.tool));
    fields.insert("source".into(), json!(source));
    fields.insert("reason".into(), json!(source.to_string()));
    if let Some(call_id) = &source.call_id {
        fields.insert("tool_call_id".into(), json!(call_id));
    }
    EventRecord::new("session_tainted", Value::Object(fields))
}

/// The sessions' taint of the agents the daemon hosts: kept with the daemon's sessions, as the
/// results route keeps it, so the page shows it and a person clears it there.
pub(crate) struct DaemonTaints {
    pub(crate) state: AppState,
}

#[async_trait::async_trait]
impl toolgate_runtime::SessionTaints for DaemonTaints {
    async fn get(&self, session: &str) -> Result<SessionTaint, String> {
        let row = self
            .state
            .store()
            .session(session)
            .await
            .map_err(|e| e.to_string())?;
        Ok(row.and_then(|row| of(&row.snapshot)).unwrap_or_default())
    }

    async fn change(
        &self,
        session: &str,
        change: toolgate_runtime::TaintChange<'_>,
    ) -> Result<SessionTaint, String> {
        let noted = |taint: &mut SessionTaint| {
            let was = taint.sources.len();
            if !change(taint) {
                return None;
            }
            Some(
                taint
                    .sources
                    .get(was)
                    .map(|s| tainted(session, s))
                    .into_iter()
                    .collect(),
            )
        };
        let mut taint = change_taint(&self.state, session, &noted)
            .await
            .map_err(|e| e.message)?;
        // A session the hosting bridge has not recorded yet: recorded, then changed.
        if taint.is_none() {
            crate::sessions::record(&self.state, session, None, None)
                .await
                .map_err(|e| e.message)?;
            taint = change_taint(&self.state, session, &noted)
                .await
                .map_err(|e| e.message)?;
        }
        Ok(taint.unwrap_or_default())
    }
}

/// What a session's taint route answers.
fn answer(id: &str, taint: &SessionTaint) -> Json<Value> {
    Json(json!({"session": id, "tainted": taint.is_tainted(), "taint": taint}))
}

/// `POST /api/sessions/{id}/results` with `{"call": CALL, "call_id"?}`: the result of `call`
/// came into the session of the path (created when new). The policy says whether it tainted it (a
/// `session_tainted` event with the source, when it newly did) or, while untainted, which
/// hosts it reached. → `{"session", "tainted", "taint"}`.
pub(crate) async fn results(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(crate::body::NoQuery {}): Query<crate::body::NoQuery>,
    JsonBody(body): JsonBody,
) -> Result<Json<Value>, ApiError> {
    known_keys(&body, &["call", "call_id"])?;
    let call_id = match body.get("call_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) if !text.is_empty() && text.chars().count() <= 256 => {
            Some(text.clone())
        }
        Some(_) => {
            return Err(ApiError::bad_request(
                "invalid_call_id",
                "`call_id` is the tool call's id: 1 to 256 characters",
            ));
        }
    };
    let given = body.get("call").cloned().ok_or_else(|| {
        ApiError::bad_request("invalid_call", "`call` is the call whose result came in")
    })?;
    let mut call =
        Call::from_value(given).map_err(|e| ApiError::bad_request("invalid_call", e.message))?;
    // (The path names the session; a session the call names must still be one.)
    if call
        .context
        .session
        .as_deref()
        .is_some_and(|s| !crate::sessions::valid_name(s))
    {
        return Err(ApiError::bad_request(
            "invalid_session_id",
            "the call's `context.session` is a session id: 1 to 128 ASCII letters, digits and \
             `-_.:/`",
        ));
    }
    crate::sessions::check_workspace(
        call.context.workspace.as_deref(),
        "the call's `context.workspace`",
    )?;
    crate::sessions::check_branch(call.context.branch.as_deref())?;
    let known = crate::sessions::ensure(
        &state,
        &id,
        call.context.workspace.as_deref(),
        call.context.branch.as_deref(),
    )
    .await?;
    if call.context.workspace.is_none() {
        call.context.workspace = known.workspace;
    }
    // The path names the session (whatever the call's context says).
    call.context.session = Some(id.clone());
    // Read from the call once; applied to the taint as it stands at each try.
    let effect = state.policy().result_effect(&call);
    let at = crate::decisions::now();
    let taint = change_taint(&state, &id, |taint| {
        let was = taint.sources.len();
        if !effect.apply(taint, &call.tool, &at, call_id.as_deref()) {
            return None;
        }
        // A host reached is kept without a word in the log; a taint is said.
        Some(
            taint
                .sources
                .get(was)
                .map(|source| tainted(&id, source))
                .into_iter()
                .collect(),
        )
    })
    .await?
    .unwrap_or_default();
    Ok(answer(&id, &taint))
}

/// `?by=NAME` of a clearing.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClearQuery {
    by: Option<String>,
}

/// `DELETE /api/sessions/{id}/taint[?by=NAME]`: a person clears the session's taint (a
/// `taint_cleared` event naming who, and what had tainted it); `404` for an unknown session.
/// → `{"session", "tainted": false, "taint"}`.
pub(crate) async fn clear(
    State(state): State<AppState>,
    who: Option<axum::Extension<crate::roles::Who>>,
    Path(id): Path<String>,
    Query(query): Query<ClearQuery>,
) -> Result<Json<Value>, ApiError> {
    let by = crate::roles::acting(
        who.as_deref(),
        crate::approvals::named_actor(query.by.as_deref(), "api")?,
    );
    let taint = change_taint(&state, &id, |taint| {
        if !taint.is_tainted() {
            return None;
        }
        let sources = std::mem::take(&mut taint.sources);
        Some(vec![EventRecord::new(
            "taint_cleared",
            json!({"session": id, "actor": by, "sources": sources,
                   "reason": format!("{by} cleared the session's taint")}),
        )])
    })
    .await?
    .ok_or_else(|| ApiError::not_found(format!("no session `{id}`")))?;
    // The session's calls that asked only because of the taint are decided now.
    crate::reload::decide_again(&state, Some(&id), "the session's taint was cleared").await;
    Ok(answer(&id, &taint))
}
