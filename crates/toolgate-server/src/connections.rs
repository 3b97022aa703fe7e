//! The connections the daemon holds without credentials, and how many.
//!
//! Anyone on the machine can open a connection, token or not, and a connection that sends
//! nothing is only closed when its head's read timeout passes (30 s): a few hundred silent
//! connections would otherwise take the daemon's file descriptors, and every real client would
//! wait behind them. So at most [`ServerConfig::max_anonymous_connections`](crate::ServerConfig)
//! connections that have not shown credentials are held: past that, a new connection takes the
//! place of the oldest of them (a client that authenticates does so with its first request,
//! within microseconds of connecting). A connection that has shown credentials (the token, a
//! page session's key, or a login that gave one) leaves that table for good: callers' long
//! polls and event streams are never closed to make room, and never make a caller wait; only
//! the limit on open files bounds them.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use toolgate_runtime::CancellationToken;

/// Has shown no credentials yet: may be evicted.
const ANONYMOUS: u8 = 0;
/// Has shown credentials: stays.
const CREDENTIALED: u8 = 1;
/// Gave its place to a newer connection: closing.
const EVICTED: u8 = 2;

/// One connection's standing.
struct Standing {
    state: AtomicU8,
    /// Its place among the anonymous ones (higher is newer).
    place: AtomicU64,
    evicted: CancellationToken,
}

/// A connection's standing, carried to the guard in each request's extensions.
#[derive(Clone)]
pub(crate) struct Credentialed {
    standing: Arc<Standing>,
    connections: Arc<Connections>,
}

impl std::fmt::Debug for Credentialed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Credentialed")
    }
}

/// What marking a connection did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Marked {
    /// It left the anonymous ones now.
    Now,
    /// An earlier request had shown credentials.
    Already,
    /// It had given its place to a newer connection: it is closing.
    Evicted,
}

impl Credentialed {
    /// A request on the connection showed credentials: it leaves the anonymous ones for good.
    pub(crate) fn mark(&self) -> Marked {
        match self.standing.state.compare_exchange(
            ANONYMOUS,
            CREDENTIALED,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => {
                let place = self.standing.place.load(Ordering::Acquire);
                self.connections.lock().anonymous.remove(&place);
                Marked::Now
            }
            Err(CREDENTIALED) => Marked::Already,
            Err(_) => Marked::Evicted,
        }
    }

    /// Back among the anonymous ones, as the newest: for a login that was refused on a
    /// connection it had marked ([`Marked::Now`]) — never one an earlier request marked.
    pub(crate) fn unmark(&self) {
        let mut table = self.connections.lock();
        if self
            .standing
            .state
            .compare_exchange(CREDENTIALED, ANONYMOUS, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            let place = table.next;
            table.next += 1;
            self.standing.place.store(place, Ordering::Release);
            table.anonymous.insert(place, self.standing.clone());
            self.connections.make_room(&mut table);
        }
    }
}

/// The refusal of a request on a connection that gave its place to a newer one (it closes).
pub(crate) fn evicted() -> crate::error::ApiError {
    crate::error::ApiError::new(
        axum::http::StatusCode::SERVICE_UNAVAILABLE,
        "connection_evicted",
        "this connection had shown no credentials and gave its place to a newer one; connect \
         again",
    )
}

struct Table {
    next: u64,
    /// The connections without credentials, oldest first.
    anonymous: BTreeMap<u64, Arc<Standing>>,
}

/// The connections held without credentials.
pub(crate) struct Connections {
    max: usize,
    table: Mutex<Table>,
}

/// One connection's place: given back when dropped.
pub(crate) struct Slot {
    /// Goes with each of its requests.
    pub(crate) credentialed: Credentialed,
    /// Cancelled when a newer connection takes this one's place.
    pub(crate) evicted: CancellationToken,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let standing = &self.credentialed.standing;
        let place = standing.place.load(Ordering::Acquire);
        let mut table = self.credentialed.connections.lock();
        if table
            .anonymous
            .get(&place)
            .is_some_and(|held| Arc::ptr_eq(held, standing))
        {
            table.anonymous.remove(&place);
        }
    }
}

impl Connections {
    /// At most `max` connections without credentials held (at least one).
    pub(crate) fn new(max: usize) -> Arc<Connections> {
        Arc::new(Connections {
            max: max.max(1),
            table: Mutex::new(Table {
                next: 0,
                anonymous: BTreeMap::new(),
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Evicts the oldest anonymous connections until there is room for one more.
    fn make_room(&self, table: &mut Table) {
        while table.anonymous.len() > self.max {
            let Some((_, oldest)) = table.anonymous.pop_first() else {
                return;
            };
            // (One that showed credentials meanwhile stays.)
            if oldest
                .state
                .compare_exchange(ANONYMOUS, EVICTED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                oldest.evicted.cancel();
            }
        }
    }

    /// A place for a new connection, among the anonymous ones: when they are as many as
    /// allowed, the oldest is told to close.
    pub(crate) fn admit(self: &Arc<Self>) -> Slot {
        let mut table = self.lock();
        let place = table.next;
        table.next += 1;
        let standing = Arc::new(Standing {
            state: AtomicU8::new(ANONYMOUS),
            place: AtomicU64::new(place),
            evicted: CancellationToken::new(),
        });
        table.anonymous.insert(place, standing.clone());
        self.make_room(&mut table);
        Slot {
            evicted: standing.evicted.clone(),
            credentialed: Credentialed {
                standing,
                connections: self.clone(),
            },
        }
    }

    /// How many connections without credentials are held.
    #[cfg(test)]
    fn anonymous(&self) -> usize {
        self.lock().anonymous.len()
    }
}

/// Files the daemon keeps open besides its connections (the database, its write-ahead log and
/// lock, each reader's connection to it, the listener, the standard streams, connections
/// closing), with room to spare.
const OTHER_FILES: u64 = 256;

/// The connections without credentials held at most: `configured`, and fewer when the process
/// may not open that many files (a connection is one): at most half of those left once the
/// daemon's own are counted, so that callers' connections always have the other half.
pub(crate) fn budget(configured: usize) -> usize {
    #[cfg(unix)]
    if let Some(limit) = rustix::process::getrlimit(rustix::process::Resource::Nofile).current {
        // Half of what is left for connections: the other half stays for callers'.
        let room = usize::try_from(limit.saturating_sub(OTHER_FILES) / 2).unwrap_or(usize::MAX);
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
        let limit = getrlimit(Resource::Nofile);
        let want = limit.maximum.unwrap_or(u64::MAX).min(1 << 16);
        // (macOS refuses more than its OPEN_MAX, 10,240, whatever the hard limit says.)
        for want in [want, want.min(10_240)] {
            if limit.current.is_some_and(|current| current < want) {
                let raised = rustix::process::Rlimit {
                    current: Some(want),
                    maximum: limit.maximum,
                };
                if setrlimit(Resource::Nofile, raised).is_ok() {
                    break;
                }
            }
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
        let first = connections.admit();
        let second = connections.admit();
        let third = connections.admit();
        assert_eq!(first.credentialed.mark(), Marked::Now);
        assert_eq!(connections.anonymous(), 2, "it left the table");
        let fourth = connections.admit();
        assert!(
            !second.evicted.is_cancelled(),
            "room for three anonymous ones"
        );
        let fifth = connections.admit();
        assert!(!first.evicted.is_cancelled(), "it showed credentials");
        assert!(second.evicted.is_cancelled(), "the oldest without");
        assert_eq!(
            second.credentialed.mark(),
            Marked::Evicted,
            "too late: it is closing"
        );
        assert!(!third.evicted.is_cancelled());
        assert_eq!(connections.anonymous(), 3);
        // An evicted connection's slot, dropped when its task ends, frees nothing twice.
        drop(second);
        assert_eq!(connections.anonymous(), 3);

        // Connections with credentials never count: however many, a new one is let in.
        for slot in [&third, &fourth, &fifth] {
            assert_eq!(slot.credentialed.mark(), Marked::Now);
        }
        assert_eq!(third.credentialed.mark(), Marked::Already);
        let sixth = connections.admit();
        assert!(!sixth.evicted.is_cancelled());
        assert_eq!(connections.anonymous(), 1);
        drop(third);
        assert_eq!(connections.anonymous(), 1);

        // A refused login puts its connection back among the anonymous ones, as the newest.
        fourth.credentialed.unmark();
        assert_eq!(connections.anonymous(), 2);
        let _seventh = connections.admit();
        let _eighth = connections.admit();
        assert!(sixth.evicted.is_cancelled(), "the oldest anonymous one");
        assert!(!fourth.evicted.is_cancelled(), "put back as the newest");
        drop(fourth);
        assert_eq!(connections.anonymous(), 2);
    }

    #[cfg(unix)]
    #[test]
    fn the_budget_leaves_room_for_the_other_files_and_the_limit_is_raised() {
        use rustix::process::{Resource, getrlimit};
        let limit = raise_open_file_limit().unwrap();
        let hard = getrlimit(Resource::Nofile).maximum.unwrap_or(u64::MAX);
        assert!(
            limit >= hard.min(1 << 16),
            "raised to the hard limit: {limit}"
        );
        let most = usize::try_from((limit - OTHER_FILES) / 2).unwrap();
        assert_eq!(budget(usize::MAX), most);
        assert_eq!(budget(3), 3);
    }
}
