//! People answering: the pending list, and the answers that end requests — recorded before
//! the waiting call hears of them.

use axum::Json;
use axum::extract::State;

use crate::body::Path;
use serde_json::{Value, json};
use toolgate_policy::{Choice, Decision, Layer};
use toolgate_runtime::{Answer, Grant, Request, Response, messages};
use toolgate_store::{Committed, PendingRecord};

use crate::body::JsonBody;
use crate::decisions::{Facts, close};
use crate::error::ApiError;
use crate::state::AppState;

/// `GET /api/pending`: every request waiting for a person, oldest first.
pub(crate) async fn pending(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let pending = state.store().pending().await?;
    Ok(Json(json!({ "pending": pending })))
}

/// The longest name an answer's `by` may give.
const MAX_ACTOR: usize = 64;

/// Who answered, as the client names itself (`by`: at most 64 characters; control characters
/// are dropped), else `default`.
pub(crate) fn actor(body: &Value, default: &str) -> Result<String, ApiError> {
    let named = match body.get("by") {
        None | Some(Value::Null) => return Ok(default.to_owned()),
        Some(Value::String(named)) => named,
        Some(_) => {
            return Err(ApiError::bad_request(
                "invalid_by",
                "`by` is a name (a string)",
            ));
        }
    };
    if named.chars().count() > MAX_ACTOR {
        return Err(ApiError::bad_request(
            "invalid_by",
            format!("`by` is at most {MAX_ACTOR} characters"),
        ));
    }
    let named: String = named.chars().filter(|c| !c.is_control()).collect();
    Ok(if named.trim().is_empty() {
        default.to_owned()
    } else {
        named
    })
}

/// `POST /api/approvals/{id}` with `{"decision": "allow-once" | "allow-always" |
/// "reject-once" | "reject-always", "reason"?, "by"?}` (HPD's `{"approved", "choice"}` too).
pub(crate) async fn approve(
    State(state): State<AppState>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Json<Value>, ApiError> {
    let answer =
        Answer::from_json(&body).map_err(|e| ApiError::bad_request("invalid_decision", e))?;
    let by = actor(&body, "api")?;
    let choice = answer.decision;
    resolve(&state, &id, answer, &by).await?;
    Ok(Json(
        json!({"status": "resolved", "id": id, "decision": choice}),
    ))
}

/// Answers a pending request: takes the answer from the broker, records it (event, decision,
/// grants) and only then releases the waiter. A store failure denies the request.
pub(crate) async fn resolve(
    state: &AppState,
    id: &str,
    answer: Answer,
    by: &str,
) -> Result<(), ApiError> {
    // What answering needs: kept in memory for requests this process opened.
    let open = state.open_request(id);
    let record = match &open {
        Some(_) => None,
        None => state.store().pending_request(id).await?,
    };
    let claim = state
        .broker()
        .claim(id, Response::Permission(answer.clone()))?;
    let Some(Request::Permission(request)) = claim.request().cloned() else {
        claim.fail("the request is not a permission request");
        return Err(ApiError::bad_request(
            "wrong_request_kind",
            format!("request `{id}` is not a permission request"),
        ));
    };
    let (facts, call) = match (&open, &record) {
        (Some(open), _) => (open.facts.clone(), Some(open.row.call.clone())),
        (None, Some(record)) => (facts_of(record), record.request.get("call").cloned()),
        (None, None) => (
            Facts {
                action: request.tool.clone(),
                rule: request.rule.clone(),
                ..Facts::default()
            },
            None,
        ),
    };
    let grants = match &record {
        Some(record) if record.kind == crate::hosted::HOSTED => {
            crate::hosted::grants_for(record, &request, answer.decision, by)
        }
        _ => grants_for(&request, call.as_ref(), answer.decision, by),
    };
    let (decision, reason) = if answer.decision.allows() {
        (
            Decision::Allow,
            format!("approved by {by} ({})", answer.decision),
        )
    } else {
        let reason = answer
            .reason
            .clone()
            .filter(|r| !r.trim().is_empty())
            .unwrap_or_else(|| messages::USER_DENIED.to_owned());
        (Decision::Deny, reason)
    };
    if open.is_none() && record.is_none() {
        // Not a request of this daemon's store (an in-process run's): nothing to close.
        claim.complete(by);
        return Ok(());
    }
    let closed = close(
        state,
        id,
        &facts,
        decision,
        &reason,
        Layer::Handler,
        by,
        grants,
    )
    .await;
    match closed {
        Ok((Committed::Written(_), result)) => {
            // The released call first: it is what the requester waits for.
            state.announce_decided(id, result);
            claim.complete(by);
            state.inner.timer.release(id);
            // Let the released call's poll (woken on this thread) answer before this answer's
            // own response is written: the waiting agent is who the person is waiting for.
            tokio::task::yield_now().await;
            Ok(())
        }
        Ok((Committed::NotPending, _)) => {
            claim.fail("the request was resolved elsewhere");
            state.inner.timer.release(id);
            Err(ApiError::conflict(
                "already_resolved",
                format!("request `{id}` is no longer pending"),
            ))
        }
        Err(error) => {
            let message = "the answer could not be recorded, so the request is refused";
            claim.fail(message);
            state.inner.timer.release(id);
            // Try to record the refusal (the store may be back); the waiting call hears of it.
            crate::decisions::settle_unanswered(
                state,
                id,
                &facts,
                toolgate_runtime::Resolution::Failed {
                    message: message.to_owned(),
                },
            )
            .await;
            Err(error)
        }
    }
}

fn facts_of(record: &PendingRecord) -> Facts {
    record
        .request
        .get("facts")
        .and_then(|f| serde_json::from_value(f.clone()).ok())
        .unwrap_or_default()
}

/// The grants an "always" answer to an external request stores.
fn grants_for(
    request: &toolgate_runtime::PermissionRequest,
    call: Option<&Value>,
    choice: Choice,
    by: &str,
) -> Vec<Grant> {
    always_grants(request, choice, by, |_| {
        let call = call.and_then(|c| toolgate_policy::Call::from_value(c.clone()).ok());
        Some(
            call.as_ref()
                .map(crate::decisions::grant_context)
                .unwrap_or(toolgate_runtime::GrantContext {
                    session: String::new(),
                    branch: String::new(),
                    turn: 0,
                    workspace: None,
                }),
        )
    })
}

/// The grants an "always" answer stores: exactly the targets the request showed, in the scope
/// it named, placed by the context `place` gives for that scope (none: no grants).
pub(crate) fn always_grants(
    request: &toolgate_runtime::PermissionRequest,
    choice: Choice,
    by: &str,
    place: impl FnOnce(toolgate_runtime::ScopeKind) -> Option<toolgate_runtime::GrantContext>,
) -> Vec<Grant> {
    let effect = match choice {
        Choice::AllowAlways => toolgate_runtime::Effect::Allow,
        Choice::RejectAlways => toolgate_runtime::Effect::Deny,
        Choice::AllowOnce | Choice::RejectOnce => return Vec::new(),
    };
    let Some(covers) = request.always.iter().find(|a| a.choice == choice) else {
        return Vec::new();
    };
    let Some(context) = place(covers.scope) else {
        return Vec::new();
    };
    covers
        .targets
        .iter()
        .map(|target| {
            let mut grant = Grant::new(
                effect,
                request.tool.clone(),
                target.clone(),
                context.scope(covers.scope),
                by,
            );
            grant.request_id = Some(request.id.clone());
            grant
        })
        .collect()
}
