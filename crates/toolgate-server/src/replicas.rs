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
    let mut ids: Vec<String> = state
        .broker()
        .pending()
        .into_iter()
        .map(|pending| pending.request.id().to_owned())
        .collect();
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

/// A request another daemon closed: its waiter here, if any, is released with what was
/// recorded, and the polls waiting here on it are answered.
pub(crate) async fn closed_elsewhere(state: &AppState, id: &str) {
    let result = match state.store().decision(id).await {
        Ok(Some(row)) if row.status == DecisionStatus::Decided => {
            Some(Bytes::copy_from_slice(row.result.as_str().as_bytes()))
        }
        _ => None,
    };
    let waiting_here = state
        .broker()
        .pending()
        .iter()
        .any(|pending| pending.request.id() == id);
    if !waiting_here {
        drop(state.announce_decided(id, result));
        return;
    }
    let filter = EventFilter {
        request_id: Some(id.to_owned()),
        kinds: vec!["permission_resolved".into()],
        ..EventFilter::default()
    };
    let ended: Option<Value> = match state.store().latest(&filter, 1).await {
        Ok(events) => events.first().and_then(|event| event.body.to_value().ok()),
        // Still waiting: looked up again at the next turn.
        Err(_) => return,
    };
    let Some(ended) = ended else {
        // Closed without its event (not by a daemon of this version): refused.
        state.forget_open(id);
        state
            .broker()
            .fail(id, "the request was closed by another daemon");
        drop(state.announce_decided(id, result));
        return;
    };
    let said = |key: &str| ended.get(key).and_then(Value::as_str).map(str::to_owned);
    let by = said("actor").unwrap_or_else(|| "another daemon".to_owned());
    let answer: Option<Choice> = ended
        .get("answer")
        .and_then(|answer| serde_json::from_value(answer.clone()).ok());
    state.forget_open(id);
    match answer {
        Some(decision) => {
            let response = Response::Permission(Answer {
                decision,
                reason: said("reason").filter(|_| !decision.allows()),
            });
            match state.broker().claim(id, response) {
                Ok(claim) => {
                    // A hosted run, released, stores none of the answer's grants again.
                    if ended
                        .get("grants")
                        .and_then(Value::as_array)
                        .is_some_and(|grants| !grants.is_empty())
                    {
                        crate::state::lock(&state.inner.answered_with_grants).insert(id);
                    }
                    let served = state.announce_decided(id, result);
                    claim.complete(&by);
                    state.inner.timer.release(id);
                    drop(served);
                }
                // Being ended here at the same moment (its timeout): that stands.
                Err(_) => drop(state.announce_decided(id, result)),
            }
        }
        None => {
            let reason = said("reason").unwrap_or_else(|| "ended by another daemon".to_owned());
            state.broker().fail(id, reason);
            state.inner.timer.release(id);
            drop(state.announce_decided(id, result));
        }
    }
}
