//! Keeping the audit log to a span of time. With `retain` set, the events and the decided
//! decisions recorded longer ago are removed when the daemon starts and every hour after; an
//! `audit_pruned` event, committed first, says what goes (`before`, how many of each), so the
//! log itself tells where it was cut. Pending requests, grants and sessions are kept whatever
//! their age. Without `retain`, everything is kept.

use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};

use serde_json::json;
use toolgate_store::{Batch, EventRecord, Pruned};

use crate::error::ApiError;
use crate::state::{AppState, Inner};

/// How often the store is pruned while the daemon runs.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// Prunes now and every [`PRUNE_EVERY`] while the daemon runs, when `retain` is set.
pub(crate) fn start(state: &AppState) {
    let Some(retain) = state.inner.config.retain else {
        return;
    };
    let weak: Weak<Inner> = Arc::downgrade(&state.inner);
    let closing = state.inner.closing.clone();
    tokio::spawn(async move {
        loop {
            {
                let Some(inner) = weak.upgrade() else {
                    return;
                };
                let state = AppState { inner };
                if let Err(error) = prune(&state, retain).await {
                    // Tried again at the next turn; nothing is lost meanwhile.
                    eprintln!(
                        "toolgate: what is older than the retention could not be removed: {}",
                        error.message
                    );
                }
            }
            tokio::select! {
                () = tokio::time::sleep(PRUNE_EVERY) => {}
                () = closing.cancelled() => return,
            }
        }
    });
}

/// Removes what was recorded more than `retain` ago, after the `audit_pruned` event that says
/// what goes. Returns what was removed.
pub(crate) async fn prune(state: &AppState, retain: Duration) -> Result<Pruned, ApiError> {
    let Some(cutoff) = SystemTime::now().checked_sub(retain) else {
        return Ok(Pruned::default());
    };
    let before = humantime::format_rfc3339_micros(cutoff).to_string();
    let prunable = state.store().prunable(&before).await?;
    if prunable == Pruned::default() {
        return Ok(prunable);
    }
    let event = EventRecord::new(
        "audit_pruned",
        json!({
            "before": before,
            "retain": humantime::format_duration(retain).to_string(),
            "events": prunable.events,
            "decisions": prunable.decisions,
            "actor": "daemon",
        }),
    );
    state
        .commit(Batch {
            events: vec![event],
            ..Batch::default()
        })
        .await?;
    let pruned = state.store().prune(&before).await?;
    eprintln!(
        "toolgate: removed {} events and {} decided decisions recorded before {before} (retain {})",
        pruned.events,
        pruned.decisions,
        humantime::format_duration(retain)
    );
    Ok(pruned)
}
