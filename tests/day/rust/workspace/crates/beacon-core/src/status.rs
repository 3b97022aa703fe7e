use std::collections::HashMap;
use std::time::SystemTime;

use serde::Serialize;

use crate::check::CheckId;

/// The result of one probe run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Outcome {
    Up { latency_ms: u64 },
    Down { reason: String },
    Unknown,
}

#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub outcome: Outcome,
    pub checked_at: SystemTime,
    pub consecutive_failures: u32,
}

/// Latest status per check, shared by the [`runner`] and the HTTP API.
#[derive(Debug, Default)]
pub struct StatusBoard {
    latest: HashMap<CheckId, Status>,
}

impl StatusBoard {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn record(&mut self, id: CheckId, outcome: Outcome, at: SystemTime) {
        let failures = match (&outcome, self.latest.get(&id)) {
            (Outcome::Down { .. }, Some(prev)) => prev.consecutive_failures + 1,
            (Outcome::Down { .. }, None) => 1,
            _ => 0,
        };
        self.latest.insert(id, Status { outcome, checked_at: at, consecutive_failures: failures });
    }

    pub fn get(&self, id: &CheckId) -> Option<&Status> {
        self.latest.get(id)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&CheckId, &Status)> {
        self.latest.iter()
    }
}
