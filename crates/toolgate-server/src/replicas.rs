//! Daemons that share one store (PostgreSQL): what the others commit reaches this one's waiters.
//!
//! A request is waited on by the daemon that opened it (its caller, its timeout, its in-process
//! run), and may be answered on any: the one that answers records the answer as usual (closing
//! the request only if it is still pending, so one answer wins across daemons) and the store
//! tells the others. Here, a request of this daemon's that another closed has its waiter
//! released with the answer recorded, and polls waiting here on another daemon's request are
//! answered; the event streams read on from the new events. A notice can be missed (a lost
//! connection): whatever waits here is looked up again every [`RECHECK`], and at once when the
//! store says it missed some. Requests of a daemon that stopped or was killed are refused, as
//! at a start, every [`SWEEP`].

use std::sync::{Arc, Weak};
use std::time::Duration;

use axum::body::Bytes;
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;
use toolgate_policy::Choice;
use toolgate_runtime::{Answer, Response};
use toolgate_store::{Change, DecisionStatus, EventFilter};

use crate::state::{AppState, Inner};

/// How often what waits here is looked up again, in case a notice was missed.
pub(crate) const RECHECK: Duration = Duration::from_secs(1);
/// How often the requests of daemons that stopped are looked for.
pub(crate) const SWEEP: Duration = Duration::from_secs(5);

/// Starts listening to the other daemons, when the store is shared.
pub(crate) fn start(state: &AppState) {
    let Some(mut changes) = state.store().changes() else {
        return;
    };
    let weak: Weak<Inner> = Arc::downgrade(&state.inner);
    let closing = state.inner.closing.clone();
    tokio::spawn(async move {
        let mut recheck = tokio::time::interval(RECHECK);
        let mut sweep = tokio::time::interval(SWEEP);
        recheck.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let heard = tokio::select! {
                change = changes.recv() => Some(change),
                _ = recheck.tick() => None,
                _ = sweep.tick() => {
                    let Some(inner) = weak.upgrade() else { return };
                    let state = AppState { inner };
                    match crate::recover(&state, crate::ORPHANED).await {
                        Ok(0) => {}
                        Ok(refused) => eprintln!(
                            "toolgate: {refused} request(s) of a daemon that stopped were refused"
                        ),
                        Err(error) => eprintln!(
                            "toolgate: the requests of daemons that stopped could not be \
                             refused yet: {}",
                            error.message
                        ),
                    }
                    continue;
                }
                () = closing.cancelled() => return,
            };
            let Some(inner) = weak.upgrade() else {
                return;
            };
            let state = AppState { inner };
            match heard {
                Some(Ok(Change::Committed { seq, closed })) => {
                    state.advance(seq);
                    if let Some(id) = closed {
                        closed_elsewhere(&state, &id).await;
                    }
                }
                Some(Ok(Change::Resync) | Err(RecvError::Lagged(_))) | None => {
                    recheck_all(&state).await;
                }
                Some(Err(RecvError::Closed)) => return,
            }
        }
    });
}

/// Looks up everything that waits here, and releases what another daemon closed.
async fn recheck_all(state: &AppState) {
    if let Ok(seq) = state.store().last_seq().await {
        state.advance(seq);
    }
    let mut ids = state.broker().waiting_ids();
    ids.extend(state.watched_decisions());
    ids.sort_unstable();
    ids.dedup();
    if ids.is_empty() {
        return;
    }
    let Ok(pending) = state.store().still_pending(&ids).await else {
        // Looked up again at the next turn.
        return;
    };
    for id in ids.iter().filter(|id| !pending.contains(id)) {
        closed_elsewhere(state, id).await;
    }
}

/// How a request ended, as its `permission_resolved` event recorded it.
struct Recorded {
    /// A person's answer, when one ended it.
    answer: Option<Choice>,
    /// Who ended it.
    by: String,
    /// Why.
    reason: Option<String>,
}

impl Recorded {
    /// The response a waiter hears for it, when a person's answer ended it.
    fn response(&self) -> Option<Response> {
        self.answer.map(|decision| {
            // (The grants it made are stored by the daemon that took it.)
            Response::Permission(Answer {
                decision,
                reason: self.reason.clone().filter(|_| !decision.allows()),
                scope: None,
                lasts: None,
            })
        })
    }
}

/// How request `id` ended, as recorded; `None` when it has not ended (or its end cannot be read
/// now).
async fn recorded(state: &AppState, id: &str) -> Option<Recorded> {
    let filter = EventFilter {
        request_id: Some(id.to_owned()),
        kinds: vec!["permission_resolved".into()],
        ..EventFilter::default()
    };
    let events = state.store().latest(&filter, 1).await.ok()?;
    let ended = events.first()?.body.to_value().ok()?;
    let said = |key: &str| ended.get(key).and_then(Value::as_str).map(str::to_owned);
    Some(Recorded {
        answer: ended
            .get("answer")
            .and_then(|answer| serde_json::from_value(answer.clone()).ok()),
        by: said("actor").unwrap_or_else(|| "another daemon".to_owned()),
        reason: said("reason"),
    })
}

/// Answers the polls waiting here on `id` with its decision as recorded, once it is decided.
pub(crate) async fn announce_recorded(state: &AppState, id: &str) {
    if let Ok(Some(row)) = state.store().decision(id).await
        && row.status == DecisionStatus::Decided
    {
        let result = Bytes::copy_from_slice(row.result.as_str().as_bytes());
        drop(state.announce_decided(id, Some(result)));
    }
}

/// Releases a waiter here whose answer lost to one recorded first elsewhere, with that one.
pub(crate) async fn deliver_recorded(state: &AppState, id: &str, claim: toolgate_runtime::Claim) {
    let ended = recorded(state, id).await;
    deliver(state, id, claim, ended).await;
}

/// [`deliver_recorded`], with the end as read already.
async fn deliver(
    state: &AppState,
    id: &str,
    claim: toolgate_runtime::Claim,
    ended: Option<Recorded>,
) {
    state.forget_open(id);
    match ended {
        Some(ended) => match ended.response() {
            Some(response) => {
                if ended.answer.is_some_and(|answer| {
                    matches!(answer, Choice::AllowAlways | Choice::RejectAlways)
                }) {
                    // A hosted run, released, stores none of the answer's grants again.
                    crate::state::lock(&state.inner.answered_with_grants).insert(id);
                }
                announce_recorded(state, id).await;
                claim.complete_with(response, &ended.by);
            }
            None => {
                announce_recorded(state, id).await;
                claim.fail(ended.reason.unwrap_or_else(|| "ended elsewhere".to_owned()));
            }
        },
        None => claim.fail("the request was resolved elsewhere"),
    }
    state.inner.timer.release(id);
}

/// A request another daemon closed: its waiter here, if any, is released with what was
/// recorded, and the polls waiting here on it are answered. A request not closed yet (its
/// commit still under way here, or one the store never holds, as a hosted run's continuation)
/// is left as it is.
pub(crate) async fn closed_elsewhere(state: &AppState, id: &str) {
    let Some(ended) = recorded(state, id).await else {
        return;
    };
    if !state.broker().is_waiting(id) {
        announce_recorded(state, id).await;
        return;
    }
    match ended.response() {
        Some(response) => {
            // Claimed with the recorded answer itself; being ended here at the same moment (its
            // timeout) stands.
            if let Ok(claim) = state.broker().claim(id, response) {
                deliver(state, id, claim, Some(ended)).await;
            }
        }
        None => {
            state.forget_open(id);
            state.broker().fail(
                id,
                ended
                    .reason
                    .unwrap_or_else(|| "ended by another daemon".to_owned()),
            );
            state.inner.timer.release(id);
            announce_recorded(state, id).await;
        }
    }
}
