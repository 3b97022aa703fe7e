//! Keeping the audit log to a span of time. With `retain` set, the events and the decided
//! decisions recorded longer ago are removed when the daemon starts and every hour after; an
//! `audit_pruned` event, committed first, says what goes (`before`, how many of each), so the
//! log itself tells where it was cut; if the removal stops short (the daemon stopping, the
//! store refusing), an `audit_prune_stopped` event says how far it went. Pending requests, grants and sessions are kept whatever
//! their age. Without `retain`, everything is kept.

use std::time::{Duration, SystemTime};

use serde_json::json;
use toolgate_store::{Batch, EventRecord, Pruned};

use crate::error::ApiError;
use crate::state::AppState;

/// How many rows of each table one transaction of a prune removes at most.
const PRUNE_BATCH: u32 = 5_000;

/// How often the store is pruned while the daemon runs.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// Prunes now and every [`PRUNE_EVERY`] while the daemon runs, when `retain` is set.
pub(crate) fn start(state: &AppState) {
    let Some(retain) = state.inner.config.retain else {
        return;
    };
    crate::state::every(state, PRUNE_EVERY, move |state| async move {
        if let Err(error) = prune(&state, retain).await {
            // Tried again at the next turn; nothing is lost meanwhile.
            eprintln!(
                "toolgate: what is older than the retention could not be removed: {}",
                error.message
            );
        }
    });
}

/// Removes what was recorded more than `retain` ago, after the `audit_pruned` event that says
/// what goes. Returns what was removed.
pub(crate) async fn prune(state: &AppState, retain: Duration) -> Result<Pruned, ApiError> {
    // (A span reaching before 1970 keeps everything: no time of the log is that old.)
    let Some(cutoff) = SystemTime::now()
        .checked_sub(retain)
        .filter(|cutoff| cutoff.duration_since(std::time::UNIX_EPOCH).is_ok())
    else {
        return Ok(Pruned::default());
    };
    let before = humantime::format_rfc3339_micros(cutoff).to_string();
    let prunable = state.store().prunable(&before).await?;
    if prunable == Pruned::default() {
        return Ok(prunable);
    }
    record(
        state,
        "audit_pruned",
        &before,
        prunable,
        Some(humantime::format_duration(retain).to_string()),
    )
    .await?;
    // A batch at a time, so that commits go on in between; not past the daemon's stop.
    let mut pruned = Pruned::default();
    let failed = loop {
        if state.inner.closing.is_cancelled() {
            break None;
        }
        let batch = match state.store().prune(&before, PRUNE_BATCH).await {
            Ok(batch) => batch,
            Err(error) => break Some(ApiError::from(error)),
        };
        pruned.events += batch.events;
        pruned.decisions += batch.decisions;
        let limit = u64::from(PRUNE_BATCH);
        if batch.events < limit && batch.decisions < limit {
            break None;
        }
        tokio::task::yield_now().await;
    };
    if pruned.events < prunable.events || pruned.decisions < prunable.decisions {
        // Stopped short (the daemon stopping, or the store refusing): the log says how far it
        // went, and the next turn's `audit_pruned` counts what is left.
        let _ = record(state, "audit_prune_stopped", &before, pruned, None).await;
    }
    if let Some(error) = failed {
        return Err(error);
    }
    eprintln!(
        "toolgate: removed {} events and {} decided decisions recorded before {before} (retain {})",
        pruned.events,
        pruned.decisions,
        humantime::format_duration(retain)
    );
    Ok(pruned)
}

/// Commits the daemon's event of `kind` about removing what was recorded before `before`, with
/// a `reason` in words for the page and `toolgate tail`.
async fn record(
    state: &AppState,
    kind: &str,
    before: &str,
    counts: Pruned,
    retain: Option<String>,
) -> Result<(), ApiError> {
    let what = format!(
        "{} events and {} decided decisions recorded before {before}",
        counts.events, counts.decisions
    );
    let reason = match &retain {
        Some(retain) => format!("removing {what}: older than the retention, {retain}"),
        None => format!("stopped after removing {what}"),
    };
    let mut fields = json!({
        "before": before,
        "events": counts.events,
        "decisions": counts.decisions,
        "actor": "daemon",
        "reason": reason,
    });
    if let (Some(retain), Some(fields)) = (retain, fields.as_object_mut()) {
        fields.insert("retain".into(), retain.into());
    }
    state
        .commit(Batch {
            events: vec![EventRecord::new(kind, fields)],
            ..Batch::default()
        })
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::*;
    use crate::{Server, ServerConfig};
    use toolgate_policy::Policy;

    fn policy() -> Policy {
        Policy::from_toml("p.toml", "version = 1\n").unwrap()
    }

    #[tokio::test]
    async fn a_retention_reaching_before_1970_keeps_everything() {
        let dir = tempfile::tempdir().unwrap();
        let server = Server::open(ServerConfig::new(dir.path()), policy())
            .await
            .unwrap();
        let centuries = Duration::from_secs(200 * 365 * 86_400);
        assert_eq!(
            prune(server.state(), centuries).await.unwrap(),
            Pruned::default()
        );
    }

    /// A removal the daemon's stop cuts short says how far it went.
    #[tokio::test]
    async fn a_prune_stopped_short_says_how_far_it_went() {
        let dir = tempfile::tempdir().unwrap();
        let server = Server::open(ServerConfig::new(dir.path()), policy())
            .await
            .unwrap();
        let state = server.state();
        let mut old = EventRecord::new("custom", json!({"note": "old"}));
        old.time = "2020-01-01T00:00:00.000000Z".into();
        state
            .commit(Batch {
                events: vec![old],
                ..Batch::default()
            })
            .await
            .unwrap();
        state.inner.closing.cancel();
        let pruned = prune(state, Duration::from_secs(86_400)).await.unwrap();
        assert_eq!(pruned, Pruned::default());
        let log = state
            .store()
            .events_after(0, &toolgate_store::EventFilter::default(), 10)
            .await
            .unwrap();
        let kinds: Vec<&str> = log.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(kinds, ["custom", "audit_pruned", "audit_prune_stopped"]);
        let planned = log[1].body.to_value().unwrap();
        let stopped = log[2].body.to_value().unwrap();
        assert_eq!(
            (planned["events"].as_u64(), stopped["events"].as_u64()),
            (Some(1), Some(0))
        );
        let said = |event: &serde_json::Value| event["reason"].as_str().unwrap().to_owned();
        assert!(
            said(&planned)
                .starts_with("removing 1 events and 0 decided decisions recorded before "),
            "{planned}"
        );
        assert!(
            said(&stopped).starts_with("stopped after removing 0 events"),
            "{stopped}"
        );
    }

    #[tokio::test]
    async fn a_retention_shorter_than_an_hour_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = ServerConfig::new(dir.path());
        config.retain = Some(Duration::from_secs(60));
        let error = Server::open(config, policy()).await.err().unwrap();
        assert!(
            error
                .to_string()
                .contains("shorter than the shortest retention, 1h"),
            "{error}"
        );
        assert!(crate::parse_retain("59m").is_err());
        assert_eq!(
            crate::parse_retain("2weeks").unwrap(),
            Duration::from_secs(14 * 86_400)
        );
        assert!(
            crate::parse_retain("soon")
                .unwrap_err()
                .contains("`soon` is not a span of time")
        );
    }
}
