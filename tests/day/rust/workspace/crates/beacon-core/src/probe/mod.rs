//! Running one check against the outside world.

mod http;
mod tcp;

use std::time::Instant;

use crate::check::{Check, CheckKind};
use crate::status::Outcome;

/// Runs `check` once and reports what it saw. Never panics on network errors.
pub async fn run(client: &reqwest::Client, check: &Check) -> Outcome {
    let started = Instant::now();
    let result = match &check.kind {
        CheckKind::Http { url, expect_status } => {
            http::probe(client, url, *expect_status, check.timeout).await
        }
        CheckKind::Tcp { host, port } => tcp::probe(host, *port, check.timeout).await,
    };
    match result {
        Ok(()) => Outcome::Up { latency_ms: started.elapsed().as_millis() as u64 },
        Err(e) => Outcome::Down { reason: e.to_string() },
    }
}
