//! A request's life in the daemon, in one place.
//!
//! - **Opened** ([`open`]): kept in memory and its waiter registered, then committed (its
//!   record, its `permission_requested` event and, for an external requester, its decision),
//!   then its timeout held — in a task of its own, so a requester hanging up cannot split these.
//! - **Waited on**: the broker holds its waiter, the timer its timeout; polls wait for its
//!   decision to change (see `state`).
//! - **Ended**, however it ends, with one [`Ending`] written by [`close`] in one transaction
//!   (its `permission_resolved` event, its decision, the grants an "always" answer makes):
//!   by a person's answer ([`resolve`]: recorded before the waiter hears of it), by its
//!   timeout, a failure or its requester's withdrawal ([`settle_unanswered`],
//!   [`close_until_recorded`]: tried again until the store takes it), or by a restart or
//!   another daemon's stop (`recover`).
//!
//! The handlers (`decisions`, `approvals`, `hosted`) parse and respond; they call these.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use serde_json::Value;
use toolgate_policy::{Choice, Decision, Layer};
use toolgate_runtime::{
    Answer, Grant, PermissionRequest, Request, Resolution, Response, Scope, messages,
};
use toolgate_store::{Batch, Committed, DecisionRow, DecisionStatus, EventRecord, PendingRecord};

use crate::approvals::no_longer_pending;
use crate::decisions::{Facts, now};
use crate::error::ApiError;
use crate::state::{AppState, Room};

/// How a pending request ends, whatever ends it (an answer, its timeout, its withdrawal, a
/// failure, a restart): the one description its event, its decision and its polls are made
/// from.
#[derive(Clone, Debug)]
pub(crate) struct Ending {
    pub(crate) decision: Decision,
    pub(crate) layer: Layer,
    pub(crate) reason: String,
    pub(crate) actor: String,
}

/// What opening a request takes: made by its handler.
pub(crate) struct Opening {
    pub(crate) id: String,
    pub(crate) facts: Facts,
    /// Its decision as it stands (pending), for its polls.
    pub(crate) row: DecisionRow,
    /// Its place in its session's bound.
    pub(crate) room: Room,
    pub(crate) scope: Scope,
    pub(crate) request: PermissionRequest,
    /// Its record in the store.
    pub(crate) pending: PendingRecord,
    /// Its `permission_requested` event.
    pub(crate) event: EventRecord,
    pub(crate) timeout: Duration,
}

/// Opens a request (see the module's documentation).
pub(crate) async fn open(state: &AppState, opening: Opening) -> Result<(), ApiError> {
    let Opening {
        id,
        facts,
        row,
        room,
        scope,
        request,
        pending,
        event,
        timeout,
    } = opening;
    // Kept in memory (see `AppState::remember_open`), and its waiter registered, before it is
    // committed: from then on anyone reading the log or the pending list may answer it. (Its
    // id is known to no one before.)
    state.remember_open(&id, facts, row.clone(), room);
    let ticket = state
        .broker()
        .open(scope, Request::Permission(Arc::new(request)))
        .map_err(|error| {
            // (Only a duplicate id.)
            state.forget_open(&id);
            ApiError::from(error)
        })?;
    // In a task of its own, so that a requester hanging up cannot leave the request committed
    // without its waiter held (the PostgreSQL store's commit yields; SQLite's does not).
    let opening = tokio::spawn({
        let state = state.clone();
        async move {
            let committed = state
                .commit(Batch {
                    open: Some(pending),
                    events: vec![event],
                    decision: Some(row),
                    ..Batch::default()
                })
                .await;
            if let Err(error) = committed {
                // Never asked: its waiter goes (as cancelled, which nobody records) with what
                // was kept.
                drop(ticket);
                state.forget_open(&id);
                return Err(error);
            }
            state
                .inner
                .timer
                .hold(ticket, tokio::time::Instant::now() + timeout);
            Ok(())
        }
    });
    opening.await.map_err(|error| {
        toolgate_store::StoreError::unavailable(format!("the request could not be opened: {error}"))
    })??;
    Ok(())
}

/// Records how a request ended when nobody's answer ended it (a timeout, a failure); answers
/// are recorded by whoever gave them, before the waiter hears of them.
pub(crate) async fn settle_unanswered(
    state: &AppState,
    id: &str,
    facts: &Facts,
    resolution: Resolution,
) {
    let (reason, layer, actor) = match resolution {
        // Whoever answered recorded and announced it.
        Resolution::Answered { .. } => return,
        Resolution::TimedOut => (messages::TIMED_OUT.to_owned(), Layer::Timeout, "timeout"),
        Resolution::Cancelled => (messages::CANCELLED.to_owned(), Layer::Handler, "cancelled"),
        Resolution::Failed { message } => (message, Layer::Handler, "daemon"),
    };
    let ending = Ending {
        decision: Decision::Deny,
        reason,
        layer,
        actor: actor.to_owned(),
    };
    close_until_recorded(state, id, facts, ending).await;
}

/// How long an ending that could not be recorded waits before it is tried again: at first,
/// and at most (the wait doubles in between).
const RETRY_FIRST: Duration = Duration::from_millis(100);
const RETRY_MOST: Duration = Duration::from_secs(5);

/// Closes a request that ended without an answer given over HTTP, and tells its polls.
///
/// When the store refuses (a full disk, a database another program holds locked), the request
/// would stay pending with nobody able to answer it (its ticket is gone), so the ending is
/// tried again in the background until it is recorded or the daemon stops; a restart refuses
/// what is left. The first failure and the eventual success are logged.
pub(crate) async fn close_until_recorded(
    state: &AppState,
    id: &str,
    facts: &Facts,
    ending: Ending,
) {
    let Err(error) = record_ending(state, id, facts, &ending).await else {
        return;
    };
    eprintln!(
        "toolgate: request `{id}` could not be closed ({}); trying again until the store takes it",
        error.message
    );
    let (state, id, facts) = (state.clone(), id.to_owned(), facts.clone());
    tokio::spawn(async move {
        let mut delay = RETRY_FIRST;
        loop {
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = state.inner.closing.cancelled() => return,
            }
            if record_ending(&state, &id, &facts, &ending).await.is_ok() {
                eprintln!("toolgate: request `{id}` is closed now ({})", ending.reason);
                return;
            }
            delay = (delay * 2).min(RETRY_MOST);
        }
    });
}

async fn record_ending(
    state: &AppState,
    id: &str,
    facts: &Facts,
    ending: &Ending,
) -> Result<(), ApiError> {
    let (committed, result) = close(state, id, facts, ending, None).await?;
    match committed {
        // Nobody waits for this ending's response: the polls answer when they run.
        Committed::Written(_) => drop(state.announce_decided(id, result)),
        // Ended first otherwise (an answer, here or on another daemon sharing the store): the
        // polls hear what was recorded.
        Committed::NotPending
        | Committed::NoGrant
        | Committed::SameGrant(_)
        | Committed::SessionChanged => {
            crate::replicas::announce_recorded(state, id).await;
        }
    }
    Ok(())
}

/// A person's answer to a pending request, as recorded: the choice and the grants it makes.
pub(crate) struct Answered {
    pub(crate) answer: Choice,
    pub(crate) grants: Vec<toolgate_runtime::Grant>,
    /// The stored grants it names instead of making its own (see [`Batch::grants_kept`]).
    pub(crate) kept: Vec<String>,
}

/// Closes a pending request with its final decision: the `permission_resolved` event, the
/// external requester's decision (when there is one) and the grants an "always" answer makes,
/// in one transaction. Returns the decision's final form.
pub(crate) async fn close(
    state: &AppState,
    id: &str,
    facts: &Facts,
    ending: &Ending,
    answered: Option<Answered>,
) -> Result<(Committed, Option<Bytes>), ApiError> {
    // A withdrawn request was decided by nobody here: its event has no decision.
    let mut event = facts.event(
        "permission_resolved",
        id,
        Some(ending.decision).filter(|_| ending.layer != Layer::Withdrawn),
        ending.layer,
        &ending.reason,
        &ending.actor,
    );
    let (grants, grants_kept) = match answered {
        Some(answered) => {
            event.answer = Some(answered.answer);
            event.grants = answered.grants.iter().map(|g| g.id.clone()).collect();
            (answered.grants, answered.kept)
        }
        None => (Vec::new(), Vec::new()),
    };
    // One reading of the clock for the event and the decision (and one formatting of it).
    let time = now();
    let event = event.record_at(time.clone())?;
    // The external requester's decision, when there is one, in its final form: written once,
    // for the store and for every waiting poll. The call is not copied: an update keeps the
    // call the decision was created with.
    let open = state.open_request(id);
    let stored = match open {
        Some(_) => None,
        None => state.store().decision(id).await?,
    };
    let row = match open.as_ref().map(|open| &open.row).or(stored.as_ref()) {
        Some(pending) => Some(DecisionRow {
            id: pending.id.clone(),
            status: DecisionStatus::Decided,
            call: Value::Null,
            result: crate::outcome::decided(&pending.result, ending)?,
            created: pending.created.clone(),
            updated: time,
        }),
        None => None,
    };
    let result = row
        .as_ref()
        .map(|r| Bytes::copy_from_slice(r.result.as_str().as_bytes()));
    let committed = state
        .commit(Batch {
            close: Some(id.to_owned()),
            events: vec![event],
            decision: row,
            grants,
            grants_kept,
            ..Batch::default()
        })
        .await?;
    if matches!(committed, Committed::Written(_)) {
        state.forget_open(id);
    }
    Ok((committed, result))
}

/// Answers a pending request: takes the answer from the broker, records it (event, decision,
/// grants) and only then releases the waiter. A store failure denies the request.
///
/// In a task of its own: an answerer hanging up while its answer is recorded (the PostgreSQL
/// store's commit yields) cannot leave the answer recorded and its waiter told otherwise.
pub(crate) async fn resolve(
    state: &AppState,
    id: &str,
    answer: Answer,
    by: &str,
) -> Result<Vec<Grant>, ApiError> {
    let (state, id, by) = (state.clone(), id.to_owned(), by.to_owned());
    tokio::spawn(async move { answer_request(&state, &id, answer, &by).await })
        .await
        .map_err(|error| {
            ApiError::from(toolgate_store::StoreError::unavailable(format!(
                "the answer could not be recorded: {error}"
            )))
        })?
}

async fn answer_request(
    state: &AppState,
    id: &str,
    answer: Answer,
    by: &str,
) -> Result<Vec<Grant>, ApiError> {
    // What answering needs: kept in memory for requests this process opened.
    let open = state.open_request(id);
    let record = match &open {
        Some(_) => None,
        None => state.store().pending_request(id).await?,
    };
    // A request this daemon decided before it restarted is no longer anywhere but the store:
    // said as resolved (as it would have been before the restart), not as unknown.
    if open.is_none()
        && record.is_none()
        && let Some(message) = no_longer_pending(state, id, None).await?
    {
        return Err(ApiError::conflict("already_resolved", message));
    }
    let claimed = match state
        .broker()
        .claim(id, Response::Permission(answer.clone()))
    {
        // Pending in the store and waited on by another daemon sharing it: answered here all
        // the same (recorded here; that daemon hears of it and releases its waiter).
        Err(toolgate_runtime::Conflict::Unknown { .. })
            if open.is_none() && state.store().shared() =>
        {
            match record.as_ref().map(elsewhere) {
                Some(Ok(request)) => request.takes(&answer).map(|()| Claimed::Elsewhere(request)),
                Some(Err(error)) => return Err(error),
                None => Err(toolgate_runtime::Conflict::Unknown { id: id.to_owned() }),
            }
        }
        claimed => claimed.map(Claimed::Here),
    };
    let claim = match claimed {
        Ok(claim) => claim,
        // Answered, and not closed yet: that answer is being recorded, or could not be and
        // the request is being refused.
        Err(toolgate_runtime::Conflict::AlreadyResolved { .. }) if open.is_some() => {
            return Err(ApiError::conflict(
                "already_resolved",
                format!(
                    "request `{id}` already has an answer, which is being recorded; if the \
                     store cannot take it, the request is refused as soon as it can"
                ),
            ));
        }
        // An "always" a session-less call was not offered: said why.
        Err(conflict @ toolgate_runtime::Conflict::NotOffered { .. })
            if matches!(answer.decision, Choice::AllowAlways | Choice::RejectAlways)
                && open.as_ref().map_or_else(
                    || record.as_ref().is_some_and(|r| r.session.is_none()),
                    |open| open.facts.session.is_none(),
                ) =>
        {
            return Err(ApiError::conflict(
                "decision_not_offered",
                format!(
                    "{conflict}; a call that names no session (`context.session`) is offered \
                     no \"always\": a grant for it would answer every other caller that names \
                     none"
                ),
            ));
        }
        Err(conflict) => return Err(conflict.into()),
    };
    let (claim, request) = match claim {
        Claimed::Here(claim) => {
            let Some(Request::Permission(request)) = claim.request().cloned() else {
                claim.fail("the request is not a permission request");
                return Err(ApiError::conflict(
                    "wrong_request_kind",
                    format!("request `{id}` is not a permission request"),
                ));
            };
            (Some(claim), request)
        }
        Claimed::Elsewhere(request) => (None, request),
    };
    // Borrowed, not copied: this is the approval's path.
    let fallback;
    let (facts, call): (&Facts, Option<&Value>) = match (&open, &record) {
        (Some(open), _) => (&open.facts, Some(&open.row.call)),
        (None, Some(record)) => {
            fallback = facts_of(record);
            (&fallback, record.request.get("call"))
        }
        (None, None) => {
            fallback = Facts {
                action: request.tool.clone(),
                rule: request.rule.clone(),
                ..Facts::default()
            };
            (&fallback, None)
        }
    };
    let grants: Vec<Grant> = match &record {
        Some(record) if record.kind == crate::hosted::HOSTED => {
            crate::hosted::grants_for(record, &request, &answer, by, state.now())
        }
        _ => grants_for(&request, call, &answer, by, state.now()),
    }
    .into_iter()
    .map(|grant| grant.with_reason(answer.reason.as_deref()))
    .collect();
    let (decision, reason) = if answer.decision.allows() {
        // The approver's words, when they gave some, are kept with the approval.
        let said = match answer.reason.as_deref().map(str::trim) {
            Some(said) if !said.is_empty() => format!(": {said}"),
            _ => String::new(),
        };
        (
            Decision::Allow,
            format!("approved by {by} ({}){said}", answer.decision),
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
        // Not a request of this daemon's store (an in-process run's): nothing to close (the
        // run stores what an "always" makes).
        if let Some(claim) = claim {
            claim.complete(by);
        }
        return Ok(Vec::new());
    }
    // A grant like one already stored is not made twice (revoking one would leave the other
    // answering): the answer names the one stored, which must still be there when the answer
    // is recorded. The store refuses a batch whose lasting grant is like a stored one
    // ([`Committed::SameGrant`]: another answer stored one since they were read), or that
    // names one revoked since ([`Committed::NoGrant`]): they are read again (a few times at
    // most: each refusal means a grant was stored or revoked meanwhile).
    let ending = crate::lifecycle::Ending {
        decision,
        layer: Layer::Handler,
        reason,
        actor: by.to_owned(),
    };
    let (closed, made) = {
        let mut tries = 0;
        loop {
            tries += 1;
            let stored = if grants.is_empty() {
                Vec::new()
            } else {
                // Unread, the answer cannot name what is stored: it fails as a commit would.
                let like = toolgate_runtime::Lookup::like(&request.tool, &grants);
                match state.store().applying(&like).await {
                    Ok(stored) => stored,
                    Err(error) => break (Err(ApiError::from(error)), Vec::new()),
                }
            };
            let (mut new, mut already) = (Vec::new(), Vec::new());
            for grant in &grants {
                match stored.iter().find(|s| s.lasts_like(grant)) {
                    Some(existing) => already.push(existing.clone()),
                    None => new.push(grant.clone()),
                }
            }
            let made: Vec<Grant> = new.iter().chain(&already).cloned().collect();
            let kept = already.iter().map(|grant| grant.id.clone()).collect();
            let closed = close(
                state,
                id,
                facts,
                &ending,
                Some(crate::lifecycle::Answered {
                    answer: answer.decision,
                    grants: new,
                    kept,
                }),
            )
            .await;
            match closed {
                Ok((Committed::SameGrant(_), _)) if tries < SAME_GRANT_TRIES => continue,
                // A grant it names was revoked since it was read: read again (its own is made).
                Ok((Committed::NoGrant, _)) if !already.is_empty() && tries < SAME_GRANT_TRIES => {
                    continue;
                }
                // Grants like this answer's kept coming and going while it was recorded: it
                // fails as a commit would (the request is still pending, and is refused).
                Ok((Committed::SameGrant(_), _)) => break (Err(contended()), made),
                Ok((Committed::NoGrant, _)) if !already.is_empty() => {
                    break (Err(contended()), made);
                }
                closed => break (closed, made),
            }
        }
    };
    match closed {
        Ok((Committed::Written(_), result)) => {
            // A hosted run, released, stores none of these grants again.
            if !made.is_empty()
                && record
                    .as_ref()
                    .is_some_and(|r| r.kind == crate::hosted::HOSTED)
            {
                crate::state::lock(&state.inner.answered_with_grants).insert(id);
            }
            // The released call first: it is what the requester waits for.
            let served = state.announce_decided(id, result);
            let recorded = Recorded {
                claim,
                state,
                id,
                by,
            };
            // Its poll answers before anything else is done here (the broker's bookkeeping, this
            // answer's own response): the waiting agent is who the person is waiting for.
            served.wait().await;
            drop(recorded);
            Ok(made)
        }
        // (A batch that closes a request revokes and spends nothing; one that met a grant like
        // its own was read again above.)
        Ok((
            Committed::NotPending
            | Committed::NoGrant
            | Committed::SameGrant(_)
            | Committed::SessionChanged,
            _,
        )) => {
            match claim {
                // Another daemon's answer was recorded first: the waiter here hears that one.
                Some(claim) if state.store().shared() => {
                    crate::replicas::deliver_recorded(state, id, claim).await;
                }
                Some(claim) => claim.fail("the request was resolved elsewhere"),
                None => {}
            }
            state.inner.timer.release(id);
            Err(ApiError::conflict(
                "already_resolved",
                format!("request `{id}` is no longer pending"),
            ))
        }
        Err(error) => {
            let message = "the answer could not be recorded, so the request is refused";
            let Some(claim) = claim else {
                // Another daemon's waiter keeps waiting: nothing was recorded.
                return Err(error);
            };
            claim.fail(message);
            state.inner.timer.release(id);
            // Try to record the refusal (the store may be back); the waiting call hears of it.
            crate::lifecycle::settle_unanswered(
                state,
                id,
                facts,
                toolgate_runtime::Resolution::Failed {
                    message: message.to_owned(),
                },
            )
            .await;
            Err(error)
        }
    }
}

/// How many times an answer reads the stored grants again when the store found one like its own
/// stored since it read them.
const SAME_GRANT_TRIES: usize = 4;

/// The request another daemon sharing the store waits on, as its record holds it.
fn elsewhere(
    record: &PendingRecord,
) -> Result<std::sync::Arc<toolgate_runtime::PermissionRequest>, ApiError> {
    record
        .request
        .get("request")
        .and_then(|request| serde_json::from_value(request.clone()).ok())
        .map(std::sync::Arc::new)
        .ok_or_else(|| {
            ApiError::conflict(
                "wrong_request_kind",
                format!("request `{}` is not a permission request", record.id),
            )
        })
}

/// What a stored request says of its call (its facts), for its events.
pub(crate) fn facts_of(record: &PendingRecord) -> Facts {
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
    answer: &Answer,
    by: &str,
    now: std::time::SystemTime,
) -> Vec<Grant> {
    crate::approvals::always_grants(request, answer, by, now, |_| {
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

/// An answer whose grants kept meeting others' being made and revoked as it was recorded.
fn contended() -> ApiError {
    ApiError::from(toolgate_store::StoreError::Conflict(
        "grants like this answer's kept being made and revoked while it was recorded".to_owned(),
    ))
}

/// The broker's bookkeeping of an answer recorded and announced (its claim completed, its
/// ticket let go), done when this is dropped: also when the handler is dropped while it waits
/// for the released poll to be served (the approver hung up).
struct Recorded<'a> {
    claim: Option<toolgate_runtime::Claim>,
    state: &'a AppState,
    id: &'a str,
    by: &'a str,
}

impl Drop for Recorded<'_> {
    fn drop(&mut self) {
        if let Some(claim) = self.claim.take() {
            claim.complete(self.by);
        }
        self.state.inner.timer.release(self.id);
    }
}

/// An answer taken: from this daemon's broker, or for a request another daemon waits on.
/// (Held for one answer, on the stack: not boxed.)
#[allow(clippy::large_enum_variant)]
enum Claimed {
    Here(toolgate_runtime::Claim),
    Elsewhere(std::sync::Arc<toolgate_runtime::PermissionRequest>),
}
