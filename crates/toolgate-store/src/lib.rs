//! toolgate's durable store: the audit log of events, pending requests, decisions of external
//! requesters, remembered grants and saved sessions.
//!
//! [`Store`] is the trait the daemon writes through; every write is committed before it
//! returns, so whatever the daemon acknowledges survives a crash. [`SqliteStore`] is the
//! embedded default (one file in WAL mode, one writer thread grouping the commits that wait);
//! `PostgresStore` (the `postgres` feature, on by default) keeps the same contract on a
//! PostgreSQL database. A store is also the runtime's [`GrantStore`].
//!
//! ```rust,standalone_crate
//! use toolgate_store::{EventRecord, SqliteStore, Store};
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let dir = tempfile::tempdir()?;
//! let store = SqliteStore::open(&dir.path().join("toolgate.db")).await?;
//! let seq = store.append(&[EventRecord::new("custom", serde_json::json!({"note": "hi"}))]).await?;
//! assert_eq!(seq, [1]);
//! let events = store.events_after(0, &Default::default(), 10).await?;
//! assert_eq!(events[0].body.to_value()?["note"], "hi");
//! assert_eq!(events[0].served(), format!(r#"{{"seq":1,{}"#, &events[0].body.as_str()[1..]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

#[cfg(feature = "postgres")]
mod postgres;
mod record;
mod sqlite;

#[cfg(feature = "postgres")]
pub use postgres::PostgresStore;
pub use record::{
    DecisionQuery, DecisionRow, DecisionStatus, EVENT_NESTING, ErrorSource, EventFilter,
    EventRecord, JsonText, MAX_NESTING, PendingRecord, SessionRow, StoreError, TokenRow, nesting,
    nests_deeper,
};
pub use sqlite::{Durability, SqliteStore};

use async_trait::async_trait;

use serde_json::Value;
use toolgate_runtime::{Grant, GrantStore};

/// A page of events read at once ends with the event that brings it to this many bytes: a
/// page of large calls' events stays a few megabytes, not a thousand times a call.
pub const PAGE_BYTES: usize = 8 << 20;

/// The most one commit may hold, as JSON.
pub const MAX_COMMIT_BYTES: usize = 256 << 20;

/// Whether every store takes `batch`: at most [`MAX_COMMIT_BYTES`], and nested no deeper than
/// [`MAX_NESTING`] (what JSON readers, the daemon's clients among them, read back).
pub(crate) fn checked(batch: &Batch) -> Result<(), StoreError> {
    let record = serde_json::to_vec(batch).map_err(|error| {
        StoreError::Refused(format!("the commit cannot be written as JSON: {error}"))
    })?;
    if record.len() > MAX_COMMIT_BYTES {
        return Err(StoreError::Refused(format!(
            "the commit holds {} MiB, more than the {} MiB the store takes at once",
            record.len() >> 20,
            MAX_COMMIT_BYTES >> 20
        )));
    }
    if let Some(nested) = nests_deeper(&record, MAX_NESTING) {
        return Err(StoreError::Refused(format!(
            "the commit nests {nested} levels deep (arrays and objects within each other), \
             more than the {MAX_NESTING} the store keeps"
        )));
    }
    Ok(())
}

/// How much a prune removes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Pruned {
    /// Events of the audit log.
    pub events: u64,
    /// External requesters' decided decisions.
    pub decisions: u64,
}

/// Writes that stand or fall together.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Batch {
    /// A request to record as pending.
    pub open: Option<PendingRecord>,
    /// A pending request to resolve: if it is no longer pending, nothing of the batch is
    /// written.
    pub close: Option<String>,
    /// Events to append, in order.
    pub events: Vec<EventRecord>,
    /// An external requester's decision to create, or to update: an update writes its status,
    /// result and update time, and keeps the call and creation time it was created with.
    pub decision: Option<DecisionRow>,
    /// Grants to store: if one of them answers the same calls for good as a stored grant (see
    /// [`Grant::lasts_like`]), nothing of the batch is written ([`Committed::SameGrant`]).
    pub grants: Vec<Grant>,
    /// Grants the batch names as stored (an answer that found a grant like its own names that
    /// one): if one of them is gone, nothing of the batch is written ([`Committed::NoGrant`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grants_kept: Vec<String>,
    /// A grant to remove: if there is no such grant, nothing of the batch is written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoke: Option<String>,
    /// A grant with a use count to spend one use of: if there is no such grant, or no use is
    /// left, nothing of the batch is written (a grant without a count needs no write).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spend: Option<String>,
    /// A session's snapshot to save (created, or replacing the one saved).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionRow>,
    /// What `session` must find saved, when given: `Some(updated)`, the snapshot saved at that
    /// time; `None`, no snapshot. Otherwise nothing of the batch is written
    /// ([`Committed::SessionChanged`]): a change made from an older read is not saved over a
    /// newer one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_was: Option<Option<String>>,
}

/// What a batch wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Committed {
    /// Everything, with the events' sequence numbers.
    Written(Vec<i64>),
    /// Nothing: the request to close was no longer pending.
    NotPending,
    /// Nothing: the grant to revoke, spend or keep was gone, or had no use left.
    NoGrant,
    /// Nothing: a grant to store answers the same calls for good as the stored grant with
    /// this id (see [`Grant::lasts_like`]): the store keeps one of such grants.
    SameGrant(String),
    /// Nothing: the session to save was not as the batch found it (see
    /// [`Batch::session_was`]).
    SessionChanged,
}

/// What another daemon sharing the store did (see [`Store::changes`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// It committed: the highest event number it wrote (0 when none), and the request it
    /// closed, if any.
    Committed {
        /// The highest event number written.
        seq: i64,
        /// The request closed.
        closed: Option<String>,
    },
    /// Changes may have been missed (the connection that hears them was lost, and is back):
    /// whatever is waited on is to be looked at again.
    Resync,
}

/// The writes of [`GrantStore`] every store makes the same way: through [`Store::commit`].
pub(crate) mod grant_writes {
    use super::{Batch, Committed, Store, StoreError};
    use toolgate_runtime::Grant;
    use toolgate_runtime::grants::StoreError as GrantStoreError;

    /// A store's failure, as the runtime's grant store says it.
    pub(crate) fn error(error: StoreError) -> GrantStoreError {
        GrantStoreError(error.to_string())
    }

    /// [`GrantStore::insert`](toolgate_runtime::GrantStore::insert).
    pub(crate) async fn insert(store: &dyn Store, grant: Grant) -> Result<(), GrantStoreError> {
        let batch = Batch {
            grants: vec![grant],
            ..Batch::default()
        };
        store.commit(batch).await.map(|_| ()).map_err(error)
    }

    /// [`GrantStore::use_once`](toolgate_runtime::GrantStore::use_once).
    pub(crate) async fn use_once(store: &dyn Store, id: &str) -> Result<bool, GrantStoreError> {
        let batch = Batch {
            spend: Some(id.to_owned()),
            ..Batch::default()
        };
        Ok(matches!(
            store.commit(batch).await.map_err(error)?,
            Committed::Written(_)
        ))
    }

    /// [`GrantStore::revoke`](toolgate_runtime::GrantStore::revoke).
    pub(crate) async fn revoke(store: &dyn Store, id: &str) -> Result<bool, GrantStoreError> {
        let batch = Batch {
            revoke: Some(id.to_owned()),
            ..Batch::default()
        };
        Ok(matches!(
            store.commit(batch).await.map_err(error)?,
            Committed::Written(_)
        ))
    }
}

/// What the daemon keeps. Every method commits before it returns.
#[async_trait]
pub trait Store: GrantStore {
    /// Writes a batch in one transaction.
    ///
    /// A commit goes on to its end when its caller is dropped: the SQLite store's writer
    /// thread, and the PostgreSQL store's task of its own, finish what they were handed (or
    /// roll it back whole); only the answer is lost. The daemon
    /// runs the steps that must not stop between a commit and what follows it (opening a
    /// request: committed, then its timeout held; answering one: recorded, then its waiter
    /// released) in tasks of their own, so a requester hanging up cannot split them.
    async fn commit(&self, batch: Batch) -> Result<Committed, StoreError>;

    /// Appends events to the audit log; returns their sequence numbers (increasing, no gaps).
    async fn append(&self, events: &[EventRecord]) -> Result<Vec<i64>, StoreError> {
        let batch = Batch {
            events: events.to_vec(),
            ..Batch::default()
        };
        match self.commit(batch).await? {
            Committed::Written(seqs) => Ok(seqs),
            Committed::NotPending
            | Committed::NoGrant
            | Committed::SameGrant(_)
            | Committed::SessionChanged => Ok(Vec::new()),
        }
    }

    /// Records a request as pending, with its `pending` event, in one transaction.
    async fn open_request(
        &self,
        request: &PendingRecord,
        event: &EventRecord,
    ) -> Result<i64, StoreError> {
        let batch = Batch {
            open: Some(request.clone()),
            events: vec![event.clone()],
            ..Batch::default()
        };
        match self.commit(batch).await? {
            Committed::Written(seqs) => seqs
                .first()
                .copied()
                .ok_or_else(|| StoreError::unavailable("no event was written")),
            Committed::NotPending
            | Committed::NoGrant
            | Committed::SameGrant(_)
            | Committed::SessionChanged => Err(StoreError::unavailable("no event was written")),
        }
    }

    /// Resolves a pending request, with its `resolved` event, in one transaction. `None` when
    /// no such request was pending (someone resolved it first).
    async fn close_request(
        &self,
        id: &str,
        event: &EventRecord,
    ) -> Result<Option<i64>, StoreError> {
        let batch = Batch {
            close: Some(id.to_owned()),
            events: vec![event.clone()],
            ..Batch::default()
        };
        Ok(match self.commit(batch).await? {
            Committed::Written(seqs) => seqs.first().copied(),
            Committed::NotPending
            | Committed::NoGrant
            | Committed::SameGrant(_)
            | Committed::SessionChanged => None,
        })
    }

    /// Events after sequence number `after`, oldest first, at most `limit`, and no more once
    /// they hold [`PAGE_BYTES`] (at least one).
    async fn events_after(
        &self,
        after: i64,
        filter: &EventFilter,
        limit: u32,
    ) -> Result<Vec<EventRecord>, StoreError>;

    /// The newest `limit` events matching `filter`, newest first, and no more once they hold
    /// [`PAGE_BYTES`] (at least one).
    async fn latest(
        &self,
        filter: &EventFilter,
        limit: u32,
    ) -> Result<Vec<EventRecord>, StoreError>;

    /// The highest sequence number so far (0 when the log is empty).
    async fn last_seq(&self) -> Result<i64, StoreError>;

    /// How much [`Store::prune`] would remove before `before` (an RFC 3339 time).
    async fn prunable(&self, before: &str) -> Result<Pruned, StoreError>;

    /// Removes, in one transaction, up to `limit` events and up to `limit` decisions recorded
    /// before `before` (an RFC 3339 time), oldest first: the events, and the decisions decided
    /// then (a pending request's stays, whatever its age; grants and sessions are not touched).
    /// Returns how much was removed: less than `limit` of each when nothing older is left.
    /// Called again and again, a large prune lets commits go on in between.
    async fn prune(&self, before: &str, limit: u32) -> Result<Pruned, StoreError>;

    /// The pending requests, oldest first.
    async fn pending(&self) -> Result<Vec<PendingRecord>, StoreError>;

    /// The oldest `limit` pending requests (of `session`, when given), and how many are pending
    /// in all: a page of the list without reading the rest.
    async fn pending_page(
        &self,
        session: Option<&str>,
        limit: u32,
    ) -> Result<(Vec<PendingRecord>, u64), StoreError> {
        let all: Vec<PendingRecord> = self
            .pending()
            .await?
            .into_iter()
            .filter(|p| session.is_none() || p.session.as_deref() == session)
            .collect();
        let total = all.len() as u64;
        Ok((all.into_iter().take(limit as usize).collect(), total))
    }

    /// One pending request.
    async fn pending_request(&self, id: &str) -> Result<Option<PendingRecord>, StoreError>;

    /// An external requester's decision.
    async fn decision(&self, id: &str) -> Result<Option<DecisionRow>, StoreError>;

    /// The external requesters' decisions (pending ones too) made at or after `since` (an RFC
    /// 3339 time) and after `after` (a [`DecisionRow::cursor`]), of `session` (the call's
    /// `context.session`) when given, oldest first, at most `limit`: the calls of the audit
    /// log, as submitted, each with its outcome.
    async fn decisions_page(
        &self,
        query: &DecisionQuery,
        limit: u32,
    ) -> Result<Vec<DecisionRow>, StoreError>;

    /// Creates or updates an external requester's decision (see [`Batch::decision`]).
    async fn put_decision(&self, decision: &DecisionRow) -> Result<(), StoreError> {
        let batch = Batch {
            decision: Some(decision.clone()),
            ..Batch::default()
        };
        self.commit(batch).await.map(|_| ())
    }

    /// Saves a session's snapshot.
    async fn put_session(&self, id: &str, snapshot: &Value) -> Result<(), StoreError> {
        let batch = Batch {
            session: Some(SessionRow {
                id: id.to_owned(),
                snapshot: snapshot.clone(),
                updated: record::rfc3339(std::time::SystemTime::now()),
            }),
            ..Batch::default()
        };
        self.commit(batch).await.map(|_| ())
    }

    /// Saves a session's snapshot only if the one saved is still `was` (the `updated` of the
    /// snapshot read; `None`: none was saved): `false`, writing nothing, when it changed
    /// meanwhile. A read, a change and this, again on `false`, change a session without a lock
    /// (two forks at once both count; two creations of one id, one wins).
    async fn put_session_if(
        &self,
        id: &str,
        snapshot: &Value,
        was: Option<&str>,
    ) -> Result<bool, StoreError> {
        // This save's time differs from the one it replaces (a clock read twice in one
        // microsecond, or set back): a save made from a read of this one is then told apart.
        let mut updated = record::rfc3339(std::time::SystemTime::now());
        while was == Some(updated.as_str()) {
            std::thread::yield_now();
            updated = record::rfc3339(std::time::SystemTime::now());
        }
        let batch = Batch {
            session: Some(SessionRow {
                id: id.to_owned(),
                snapshot: snapshot.clone(),
                updated,
            }),
            session_was: Some(was.map(str::to_owned)),
            ..Batch::default()
        };
        Ok(matches!(self.commit(batch).await?, Committed::Written(_)))
    }

    /// A saved session.
    async fn session(&self, id: &str) -> Result<Option<SessionRow>, StoreError>;

    /// Every saved session, most recently updated first.
    async fn sessions(&self) -> Result<Vec<SessionRow>, StoreError>;

    /// The named tokens, by name.
    async fn tokens(&self) -> Result<Vec<TokenRow>, StoreError>;

    /// Stores a named token; `false` (nothing written) when one of that name, or with that
    /// hash, is stored.
    async fn add_token(&self, token: TokenRow) -> Result<bool, StoreError>;

    /// Removes the token of that name; `false` when there is none.
    async fn remove_token(&self, name: &str) -> Result<bool, StoreError>;

    /// Called once when the daemon stops: a backend folds or flushes what it keeps (nothing is
    /// lost without it).
    async fn close(&self) {}

    /// The changes other daemons sharing this store commit, as they commit them; `None` for a
    /// store no other daemon writes (SQLite's). A receiver that falls behind hears
    /// [`Change::Resync`] in place of what it missed.
    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<Change>> {
        None
    }

    /// Whether other daemons may share this store (what one daemon keeps in memory about its
    /// own requests may then be behind the store).
    fn shared(&self) -> bool {
        false
    }

    /// The pending requests no running daemon waits on (those of a daemon that stopped or was
    /// killed), oldest first: all of them when no other daemon shares the store.
    async fn orphaned(&self) -> Result<Vec<PendingRecord>, StoreError> {
        self.pending().await
    }

    /// Which of `ids` are still pending.
    async fn still_pending(&self, ids: &[String]) -> Result<Vec<String>, StoreError> {
        let mut pending = Vec::new();
        for id in ids {
            if self.pending_request(id).await?.is_some() {
                pending.push(id.clone());
            }
        }
        Ok(pending)
    }
}
