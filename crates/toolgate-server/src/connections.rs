//! The connections the daemon holds, and how many.
//!
//! Anyone on the machine can open a connection, token or not, and a connection that sends
//! nothing is only closed when its head's read timeout passes (30 s): a few hundred silent
//! connections would otherwise take the daemon's file descriptors, and every real client would
//! wait behind them. So at most [`ServerConfig::max_connections`](crate::ServerConfig) are held;
//! past that a new connection takes the place of the oldest one that has not shown credentials
//! (a client that authenticates does so with its first request, long before a flood cycles
//! through the table), and when every held connection has shown them — long polls and event
//! streams of callers holding the token — the new one is closed at once.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use toolgate_runtime::CancellationToken;

/// Set on a connection once a request on it has shown credentials (the token or a page
/// session's key); carried to the guard in each request's extensions.
#[derive(Clone, Debug)]
pub(crate) struct Credentialed(Arc<AtomicBool>);

impl Credentialed {
    pub(crate) fn mark(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    fn is_marked(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

struct Held {
    credentialed: Credentialed,
    evicted: CancellationToken,
}

/// The held connections, oldest first.
pub(crate) struct Connections {
    max: usize,
    held: Mutex<(u64, BTreeMap<u64, Held>)>,
}

/// One held connection's place: given back when dropped.
pub(crate) struct Slot {
    id: u64,
    connections: Arc<Connections>,
    /// Marked when a request on the connection shows credentials.
    pub(crate) credentialed: Credentialed,
    /// Cancelled when a newer connection takes this one's place.
    pub(crate) evicted: CancellationToken,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.connections.lock().1.remove(&self.id);
    }
}

impl Connections {
    /// At most `max` connections held (at least one).
    pub(crate) fn new(max: usize) -> Arc<Connections> {
        Arc::new(Connections {
            max: max.max(1),
            held: Mutex::new((0, BTreeMap::new())),
        })
    }

    fn lock(&self) -> MutexGuard<'_, (u64, BTreeMap<u64, Held>)> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A place for a new connection: when all are taken, the oldest connection without
    /// credentials is told to close and gives its place; `None` when every held connection
    /// has shown credentials (the new one is to be closed).
    pub(crate) fn admit(self: &Arc<Self>) -> Option<Slot> {
        let mut guard = self.lock();
        let (next, held) = &mut *guard;
        if held.len() >= self.max {
            let oldest = held
                .iter()
                .find(|(_, h)| !h.credentialed.is_marked())
                .map(|(id, _)| *id)?;
            if let Some(evicted) = held.remove(&oldest) {
                evicted.evicted.cancel();
            }
        }
        let id = *next;
        *next += 1;
        let credentialed = Credentialed(Arc::new(AtomicBool::new(false)));
        let evicted = CancellationToken::new();
        held.insert(
            id,
            Held {
                credentialed: credentialed.clone(),
                evicted: evicted.clone(),
            },
        );
        Some(Slot {
            id,
            connections: self.clone(),
            credentialed,
            evicted,
        })
    }

    /// How many connections are held.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().1.len()
    }
}

/// Files the daemon keeps open besides its connections (the database, its journal and lock,
/// the listener, the standard streams), with room to spare.
const OTHER_FILES: u64 = 64;

/// The connections held at most: `configured`, and fewer when the process may not open that
/// many files (a connection is one).
pub(crate) fn budget(configured: usize) -> usize {
    #[cfg(unix)]
    if let Some(limit) = rustix::process::getrlimit(rustix::process::Resource::Nofile).current {
        let room = usize::try_from(limit.saturating_sub(OTHER_FILES)).unwrap_or(usize::MAX);
        return configured.min(room).max(1);
    }
    configured
}

/// Raises the soft limit on open files to the hard one (at most 65,536), as a daemon that holds
/// connections should: many systems start processes at 1,024. Returns the limit in force.
/// For `toolgate serve`; a program embedding the daemon decides for itself.
pub fn raise_open_file_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        use rustix::process::{Resource, getrlimit, setrlimit};
        let mut limit = getrlimit(Resource::Nofile);
        let want = limit.maximum.unwrap_or(u64::MAX).min(1 << 16);
        if limit.current.is_some_and(|current| current < want) {
            limit.current = Some(want);
            let _ = setrlimit(Resource::Nofile, limit);
        }
        getrlimit(Resource::Nofile).current
    }
    #[cfg(not(unix))]
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn a_new_connection_takes_the_place_of_the_oldest_without_credentials() {
        let connections = Connections::new(3);
        let first = connections.admit().unwrap();
        let second = connections.admit().unwrap();
        let third = connections.admit().unwrap();
        first.credentialed.mark();
        let fourth = connections.admit().unwrap();
        assert!(!first.evicted.is_cancelled(), "it showed credentials");
        assert!(second.evicted.is_cancelled(), "the oldest without");
        assert!(!third.evicted.is_cancelled());
        assert_eq!(connections.len(), 3);
        // An evicted connection's slot, dropped when its task ends, frees nothing twice.
        drop(second);
        assert_eq!(connections.len(), 3);

        third.credentialed.mark();
        fourth.credentialed.mark();
        assert!(
            connections.admit().is_none(),
            "all held ones showed credentials"
        );
        drop(third);
        assert_eq!(connections.len(), 2);
        let fifth = connections.admit().unwrap();
        assert!(!fifth.evicted.is_cancelled());
        assert_eq!(connections.len(), 3);
    }

    #[cfg(unix)]
    #[test]
    fn the_budget_leaves_room_for_the_other_files_and_the_limit_is_raised() {
        use rustix::process::{Resource, getrlimit};
        let limit = raise_open_file_limit().unwrap();
        let hard = getrlimit(Resource::Nofile).maximum.unwrap_or(u64::MAX);
        assert_eq!(
            limit,
            hard.min(1 << 16).max(limit),
            "raised to the hard limit"
        );
        let most = usize::try_from(limit - OTHER_FILES).unwrap();
        assert_eq!(budget(usize::MAX), most);
        assert_eq!(budget(3), 3);
    }
}
