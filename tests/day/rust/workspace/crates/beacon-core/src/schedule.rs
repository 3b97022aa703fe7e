use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::time::{Duration, Instant};

use crate::check::{Check, CheckId};

/// Decides which check runs next.
#[derive(Debug, Default)]
pub struct Scheduler {
    queue: BinaryHeap<Reverse<(Instant, CheckId)>>,
    intervals: HashMap<CheckId, Duration>,
}

impl Scheduler {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(&mut self, check: &Check, now: Instant) {
        let first = now + jitter(&check.id, check.interval);
        self.intervals.insert(check.id.clone(), check.interval);
        self.queue.push(Reverse((first, check.id.clone())));
    }

    /// Pops every check due at `now` and re-queues it one interval later.
    pub fn due(&mut self, now: Instant) -> Vec<CheckId> {
        let mut out = Vec::new();
        while let Some(Reverse((at, _))) = self.queue.peek() {
            if *at > now {
                break;
            }
            let Reverse((at, id)) = self.queue.pop().expect("peeked");
            let interval = self.intervals[&id];
            self.queue.push(Reverse((at + interval, id.clone())));
            out.push(id);
        }
        out
    }

    /// When the earliest queued check is due, if any.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.queue.peek().map(|Reverse((at, _))| *at)
    }

    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

/// Spreads first runs over a quarter of the interval so 200 checks don't fire at once.
fn jitter(id: &CheckId, interval: Duration) -> Duration {
    let hash = id.as_str().bytes().fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(b as u32));
    let spread = (interval.as_millis() as u32 / 4).max(1);
    Duration::from_millis(u64::from(hash % spread))
}
