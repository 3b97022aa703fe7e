//! The tickets of external requests, and one timer for all their timeouts.
//!
//! An external request's ticket is held here rather than waited on by a task of its own: an
//! answer then reaches nobody who has to be woken (the requester hears of it through the
//! decision it polls), and a pending request costs a map entry and a heap entry, not a task.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use tokio::sync::Notify;
use tokio::time::Instant;
use toolgate_runtime::Ticket;

use crate::state::{AppState, Inner};

/// Deadlines kept before released ones are swept out.
const COMPACT_ABOVE: usize = 1024;

#[derive(Default)]
struct Held {
    tickets: HashMap<String, Ticket>,
    deadlines: BinaryHeap<Reverse<(Instant, String)>>,
}

/// Held tickets and their deadlines.
#[derive(Default)]
pub(crate) struct Timer {
    held: Mutex<Held>,
    changed: Notify,
}

impl Timer {
    fn lock(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Holds `ticket` until it is released or `deadline` passes.
    pub(crate) fn hold(&self, ticket: Ticket, deadline: Instant) {
        let id = ticket.id().to_owned();
        {
            let mut held = self.lock();
            held.deadlines.push(Reverse((deadline, id.clone())));
            held.tickets.insert(id, ticket);
        }
        self.changed.notify_one();
    }

    /// Lets go of a request's ticket (its answer was delivered, or recording it failed).
    /// Deadlines of released tickets are dropped in bulk once they outnumber the held ones, so
    /// answered requests do not pile up until their timeouts would have passed.
    pub(crate) fn release(&self, id: &str) {
        let mut held = self.lock();
        let ticket = held.tickets.remove(id);
        let Held { tickets, deadlines } = &mut *held;
        if deadlines.len() > COMPACT_ABOVE && deadlines.len() > 2 * tickets.len() {
            deadlines.retain(|Reverse((_, id))| tickets.contains_key(id));
        }
        drop(held);
        drop(ticket);
    }

    /// Cancels a held request (its requester withdrew it): `None` when no ticket of that id is
    /// held, else how it ended (by this cancellation, or earlier), or `Some(None)` while an
    /// answer is being recorded (its claim releases the ticket).
    pub(crate) fn cancel(&self, id: &str) -> Option<Option<toolgate_runtime::Resolution>> {
        let mut held = self.lock();
        let resolution = held.tickets.get_mut(id)?.cancel();
        let ticket = match resolution {
            Some(_) => held.tickets.remove(id),
            None => None,
        };
        drop(held);
        drop(ticket);
        Some(resolution)
    }

    /// Expires what is due; returns the requests that ended, with how, and the next deadline.
    fn expire_due(
        &self,
        now: Instant,
    ) -> (Vec<(String, toolgate_runtime::Resolution)>, Option<Instant>) {
        let mut ended = Vec::new();
        let mut dropped = Vec::new();
        let mut held = self.lock();
        while let Some(Reverse((deadline, _))) = held.deadlines.peek() {
            if *deadline > now {
                break;
            }
            let Some(Reverse((_, id))) = held.deadlines.pop() else {
                break;
            };
            let Some(ticket) = held.tickets.get_mut(&id) else {
                continue;
            };
            // `None`: an answer is being recorded; whoever claimed it releases the ticket.
            if let Some(resolution) = ticket.expire() {
                dropped.extend(held.tickets.remove(&id));
                ended.push((id, resolution));
            }
        }
        let next = held
            .deadlines
            .peek()
            .map(|Reverse((deadline, _))| *deadline);
        drop(held);
        drop(dropped);
        (ended, next)
    }
}

/// Starts the task that times out held requests. It holds the state weakly.
pub(crate) fn start(state: &AppState) {
    let timer = Arc::clone(&state.inner.timer);
    let weak: Weak<Inner> = Arc::downgrade(&state.inner);
    tokio::spawn(async move {
        loop {
            let (ended, next) = timer.expire_due(Instant::now());
            if !ended.is_empty() {
                let Some(inner) = weak.upgrade() else { return };
                let state = AppState { inner };
                for (id, resolution) in ended {
                    if let Some(open) = state.open_request(&id) {
                        crate::lifecycle::settle_unanswered(&state, &id, &open.facts, resolution)
                            .await;
                    }
                }
            }
            match next {
                Some(deadline) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(deadline) => {}
                        () = timer.changed.notified() => {}
                    }
                }
                None => timer.changed.notified().await,
            }
        }
    });
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use std::sync::Arc;
    use std::time::Duration;

    use toolgate_runtime::{ApprovalBroker, EventBus, PermissionRequest, Request, Scope};

    use super::*;

    #[tokio::test]
    async fn answered_requests_do_not_keep_their_deadlines() {
        let broker = ApprovalBroker::new(EventBus::new());
        let timer = Timer::default();
        let far = Instant::now() + Duration::from_secs(300);
        let mut ids = Vec::new();
        for _ in 0..5_000 {
            let request = PermissionRequest::example("pay");
            ids.push(request.id.clone());
            let ticket = broker
                .open(Scope::default(), Request::Permission(Arc::new(request)))
                .unwrap();
            timer.hold(ticket, far);
        }
        // One request stays open throughout.
        let open = ids.pop().unwrap();
        for id in &ids {
            timer.release(id);
        }
        let held = timer.lock();
        assert_eq!(held.tickets.len(), 1);
        assert!(
            held.deadlines.len() <= COMPACT_ABOVE + 1,
            "{} deadlines kept",
            held.deadlines.len()
        );
        assert!(
            held.deadlines.iter().any(|Reverse((_, id))| *id == open),
            "the open request keeps its deadline"
        );
        drop(held);
        // And it still times out.
        let (ended, next) = timer.expire_due(far);
        assert_eq!(ended.len(), 1);
        assert_eq!(ended[0].0, open);
        assert_eq!(next, None);
    }
}
