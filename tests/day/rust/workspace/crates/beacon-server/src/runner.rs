use std::time::{Instant, SystemTime};

use beacon_core::{probe, Scheduler};

use crate::state::AppState;

/// Runs due checks forever, writing outcomes to the shared board.
pub(crate) async fn run(state: AppState) {
    let client = reqwest::Client::new();
    let mut scheduler = Scheduler::new();
    let now = Instant::now();
    for check in &state.config.checks {
        scheduler.add(check, now);
    }
    loop {
        let Some(deadline) = scheduler.next_deadline() else { return };
        tokio::time::sleep_until(deadline.into()).await;
        for id in scheduler.due(Instant::now()) {
            let Some(check) = state.config.checks.iter().find(|c| c.id == id) else { continue };
            let outcome = probe::run(&client, check).await;
            tracing::debug!(check = %id, ?outcome, "probed");
            state.board.write().await.record(id, outcome, SystemTime::now());
        }
    }
}
