//! The embedded store: one SQLite file in WAL mode, written by one thread, read through a
//! few read-only connections.
//!
//! A commit hands its rows to the writer thread (see [`writer`]), which writes the commits
//! waiting at that moment in one transaction (group commit) and answers each once SQLite has
//! committed it. The conditions a batch carries (close a request only if still pending, open
//! one only if not, revoke or spend only a grant that is there) are checked by its statements,
//! inside that transaction, so the daemon needs no lock of its own around them. Reads run on
//! the caller's thread: in WAL mode a reader waits for no writer.
//!
//! Versions up to 0.1 kept a commit journal in front of the database; a journal such a version
//! left is applied and removed when the store opens (see [`retire`]).

mod journal;
mod retire;
mod schema;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, Row};
use serde_json::Value;
use toolgate_runtime::{Grant, GrantStore};

use crate::record::{
    DecisionQuery, DecisionRow, DecisionStatus, EventFilter, EventRecord, JsonText, PendingRecord,
    SessionRow, StoreError,
};
use crate::{Batch, Committed, Pruned, Store};
use schema::{JOURNAL_SCHEMA, MIGRATIONS};
use writer::{Queue, Rows, Writer};

/// The highest event number ever given: the log's newest event's, or, once pruned away,
/// SQLite's record of it (`AUTOINCREMENT`'s `sqlite_sequence`), so numbers go on after a prune.
const HIGHEST_SEQ: &str = "SELECT MAX(COALESCE((SELECT MAX(seq) FROM events), 0), \
     COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0))";
const PRUNED_EVENTS: &str = "time < ?1";
const PRUNED_DECISIONS: &str = "status = 'decided' AND updated < ?1";

/// How long closing waits for the writer's last checkpoint (the writer may be waiting for another
/// program's lock: it is left to it).
const CLOSE_WAIT: Duration = Duration::from_millis(200);

/// Idle read connections kept open.
const IDLE_READERS: usize = 4;

/// What a commit survives. Spelled `full` and `process` in files and on the command line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// The daemon's crash and the machine's: every transaction is flushed to the disk
    /// (`fsync`) before its commits return (SQLite's `synchronous = FULL`). The commits
    /// waiting at once share one flush.
    Full,
    /// The daemon's crash (`kill -9`) loses nothing: a commit has reached the operating system
    /// (SQLite's write-ahead log) before it returns. A power loss or kernel crash may lose the
    /// last commits before it, never the database: the write-ahead log is flushed to the disk
    /// when it is folded into the database (SQLite's `synchronous = NORMAL` in WAL mode;
    /// Redis's `appendfsync everysec` makes the same trade).
    #[default]
    Process,
}

impl Durability {
    /// SQLite's `synchronous` for it, in WAL mode.
    fn synchronous(self) -> &'static str {
        match self {
            Durability::Full => "FULL",
            Durability::Process => "NORMAL",
        }
    }
}

impl std::str::FromStr for Durability {
    type Err = String;

    fn from_str(text: &str) -> Result<Durability, String> {
        match text {
            "full" => Ok(Durability::Full),
            "process" => Ok(Durability::Process),
            other => Err(format!(
                "`{other}` is not a durability; use `full` or `process`"
            )),
        }
    }
}

/// The embedded store. Cheap to clone; clones share the connections and the writer.
#[derive(Clone)]
pub struct SqliteStore {
    shared: Arc<Shared>,
}

struct Shared {
    path: PathBuf,
    durability: Durability,
    /// Held for the store's life: one store per database (see [`schema::owner_lock`]).
    _owner: Mutex<Connection>,
    /// What waits for the writer.
    queue: Arc<Queue>,
    /// The write connection: the writer thread's, or a caller's that leads a group (see
    /// [`writer::lead`]).
    write: Arc<Mutex<Writer>>,
    /// The writer thread, joined when the last clone goes.
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Cuts short the writer's wait for another program's lock when the store goes.
    interrupt: rusqlite::InterruptHandle,
    /// Idle readers (WAL lets them read while the writer writes).
    readers: Mutex<Vec<Connection>>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        // What was handed to the writer is written (or refused) before the store is gone:
        // the next store on this file starts after it.
        self.queue.close();
        self.interrupt.interrupt();
        // Waited for a moment at most: a writer waiting out another program's lock (SQLite's
        // wait does not stop for an interrupt) finishes on its own.
        if let Some(writer) = lock(&self.writer).take() {
            let deadline = std::time::Instant::now() + CLOSE_WAIT * 5;
            while !writer.is_finished() && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(2));
            }
            if writer.is_finished() {
                let _ = writer.join();
            }
        }
    }
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.shared.path)
            .field("durability", &self.shared.durability)
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What the writer answered; its end unanswered (the writer stopped) is a failure.
async fn answered<T>(
    answer: tokio::sync::oneshot::Receiver<Result<T, StoreError>>,
) -> Result<T, StoreError> {
    answer
        .await
        .unwrap_or_else(|_| Err(StoreError::unavailable("the store's writer stopped")))
}

/// Runs `work`, telling a multi-threaded tokio runtime that it blocks.
fn blocking<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        _ => work(),
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path` and brings its schema up to date;
    /// every commit is flushed to the disk.
    pub async fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_with(path, Durability::Full).await
    }

    /// Opens the database at `path` with the given durability.
    pub async fn open_with(path: &Path, durability: Durability) -> Result<SqliteStore, StoreError> {
        blocking(|| {
            schema::keep_private(path)?;
            let owner = schema::owner_lock(path)?;
            let mut connection = schema::connect(path, durability, false)?;
            schema::migrate(&mut connection, JOURNAL_SCHEMA)?;
            retire::retire(&mut connection, path)?;
            schema::migrate(&mut connection, MIGRATIONS.len())?;
            let reader = schema::connect(path, durability, true)?;
            let interrupt = connection.get_interrupt_handle();
            let queue = Arc::new(Queue::default());
            let leads = durability == Durability::Process;
            let write = Arc::new(Mutex::new(Writer::new(connection, path, leads)?));
            let writer = Writer::start(Arc::clone(&write), Arc::clone(&queue))?;
            Ok(SqliteStore {
                shared: Arc::new(Shared {
                    path: path.to_owned(),
                    durability,
                    _owner: Mutex::new(owner),
                    queue,
                    write,
                    writer: Mutex::new(Some(writer)),
                    interrupt,
                    readers: Mutex::new(vec![reader]),
                }),
            })
        })
        .map_err(|error: StoreError| match error {
            StoreError::Locked { message, source } => StoreError::Locked {
                message: format!(
                    "{} is locked by another program (is it holding a write transaction?): \
                     {message}",
                    path.display()
                ),
                source,
            },
            error => error,
        })
    }

    /// Runs `work` on the writer thread, between two groups of commits, and returns what it
    /// returns.
    async fn on_writer<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.shared.queue.run(Box::new(move |connection| {
            let _ = reply.send(work(connection));
        }))?;
        answered(answer).await
    }

    /// Runs `work`, a read, on an idle reader (opening one when none is idle).
    ///
    /// A reader waits for nobody on the caller's thread: in WAL mode a read waits for no
    /// writer, only, rarely, for another program rebuilding the shared index; then the read is
    /// tried again with a wait of [`schema::READ_BUSY_TIMEOUT`], telling the runtime that it
    /// blocks (its other tasks move to another thread).
    fn read<T>(
        &self,
        work: impl Fn(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let idle = lock(&self.shared.readers).pop();
        let connection = match idle {
            Some(connection) => connection,
            None => schema::connect(&self.shared.path, self.shared.durability, true)?,
        };
        let result = match work(&connection) {
            Err(StoreError::Locked { .. }) => blocking(|| {
                connection.busy_timeout(schema::READ_BUSY_TIMEOUT)?;
                let again = work(&connection);
                connection.busy_timeout(Duration::ZERO)?;
                again
            }),
            result => result,
        };
        let mut readers = lock(&self.shared.readers);
        if readers.len() < IDLE_READERS {
            readers.push(connection);
        }
        result
    }

    fn select_events(
        &self,
        after: i64,
        filter: &EventFilter,
        limit: u32,
        newest_first: bool,
    ) -> Result<Vec<EventRecord>, StoreError> {
        let mut sql = String::from(
            "SELECT seq, type, time, session, request_id, tool_call_id, body FROM events WHERE seq > ?",
        );
        let mut values = vec![SqlValue::Integer(after)];
        if let Some(session) = &filter.session {
            sql.push_str(" AND session = ?");
            values.push(SqlValue::Text(session.clone()));
        }
        if let Some(request) = &filter.request_id {
            sql.push_str(" AND request_id = ?");
            values.push(SqlValue::Text(request.clone()));
        }
        if let Some(since) = &filter.since {
            sql.push_str(" AND time >= ?");
            values.push(SqlValue::Text(since.clone()));
        }
        if !filter.kinds.is_empty() {
            sql.push_str(" AND type IN (");
            sql.push_str(&vec!["?"; filter.kinds.len()].join(", "));
            sql.push(')');
            values.extend(filter.kinds.iter().cloned().map(SqlValue::Text));
        }
        sql.push_str(if newest_first {
            " ORDER BY seq DESC LIMIT ?"
        } else {
            " ORDER BY seq LIMIT ?"
        });
        values.push(SqlValue::Integer(i64::from(limit)));
        self.read(|connection| {
            let mut statement = connection.prepare_cached(&sql)?;
            let rows =
                statement.query_map(rusqlite::params_from_iter(values.iter()), event_from_row)?;
            // A page ends early once it holds PAGE_BYTES of events (a thousand large calls
            // would be a gigabyte).
            let (mut events, mut bytes) = (Vec::new(), 0usize);
            for row in rows {
                let event = row??;
                bytes = bytes.saturating_add(event.body.as_str().len());
                events.push(event);
                if bytes >= crate::PAGE_BYTES {
                    break;
                }
            }
            Ok(events)
        })
    }
}

/// A JSON column, or a row error naming it.
fn json_column(row: &Row<'_>, column: &str) -> Result<Value, StoreError> {
    let text: String = row.get(column)?;
    Ok(crate::record::from_stored(text.as_bytes())?)
}

fn event_from_row(row: &Row<'_>) -> rusqlite::Result<Result<EventRecord, StoreError>> {
    Ok(Ok(EventRecord {
        seq: row.get("seq")?,
        kind: row.get("type")?,
        time: row.get("time")?,
        session: row.get("session")?,
        request_id: row.get("request_id")?,
        tool_call_id: row.get("tool_call_id")?,
        body: match JsonText::parse(row.get("body")?) {
            Ok(body) => body,
            Err(error) => return Ok(Err(error.into())),
        },
    }))
}

fn grant_from_row(row: &Row<'_>) -> Result<Grant, StoreError> {
    let body: String = row.get("body")?;
    let mut grant: Grant = crate::record::from_stored(body.as_bytes())?;
    let uses: Option<i64> = row.get("uses_left")?;
    grant.uses_left = uses.map(count_of);
    Ok(grant)
}

/// A stored use count.
fn count_of(uses: i64) -> u32 {
    u32::try_from(uses.max(0)).unwrap_or(u32::MAX)
}

fn pending_from_row(row: &Row<'_>) -> Result<PendingRecord, StoreError> {
    Ok(PendingRecord {
        id: row.get("id")?,
        kind: row.get("kind")?,
        session: row.get("session")?,
        created: row.get("created")?,
        request: json_column(row, "request")?,
    })
}

fn session_from_row(row: &Row<'_>) -> Result<SessionRow, StoreError> {
    Ok(SessionRow {
        id: row.get("id")?,
        snapshot: json_column(row, "snapshot")?,
        updated: row.get("updated")?,
    })
}

fn decision_from_row(row: &Row<'_>) -> Result<DecisionRow, StoreError> {
    let status: String = row.get("status")?;
    Ok(DecisionRow {
        id: row.get("id")?,
        status: if status == "pending" {
            DecisionStatus::Pending
        } else {
            DecisionStatus::Decided
        },
        call: json_column(row, "call")?,
        result: JsonText::parse(row.get("result")?)?,
        created: row.get("created")?,
        updated: row.get("updated")?,
    })
}

/// Every row of a query, mapped by `map`.
fn all<T>(
    connection: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    map: impl Fn(&Row<'_>) -> Result<T, StoreError>,
) -> Result<Vec<T>, StoreError> {
    let mut statement = connection.prepare_cached(sql)?;
    let mut rows = statement.query(params)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push(map(row)?);
    }
    Ok(out)
}

/// The first row of a query, if any, mapped by `map`.
fn first<T>(
    connection: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    map: impl Fn(&Row<'_>) -> Result<T, StoreError>,
) -> Result<Option<T>, StoreError> {
    let mut statement = connection.prepare_cached(sql)?;
    let mut rows = statement.query(params)?;
    rows.next()?.map(map).transpose()
}

#[async_trait]
impl Store for SqliteStore {
    /// Folds the write-ahead log into the database file (a clean shutdown's last step; nothing
    /// is lost without it). The store stays usable.
    async fn close(&self) {
        let checkpoint = self.on_writer(|connection| {
            // Another program's read can keep the checkpoint from finishing: tidying only,
            // so it waits a moment at most.
            connection.busy_timeout(CLOSE_WAIT)?;
            let folded = connection.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)");
            connection.busy_timeout(schema::BUSY_TIMEOUT)?;
            Ok(folded?)
        });
        let _ = tokio::time::timeout(CLOSE_WAIT * 2, checkpoint).await;
    }

    async fn commit(&self, batch: Batch) -> Result<Committed, StoreError> {
        if batch == Batch::default() {
            return Ok(Committed::Written(Vec::new()));
        }
        crate::checked(&batch)?;
        // With `Process`, a commit is a write to the operating system: the caller writes it
        // when nobody is writing (see `writer::lead`). With `Full`, a disk flush: the writer
        // thread does, never a runtime's worker.
        let leads = self.shared.durability == Durability::Process;
        let answer = self
            .shared
            .queue
            .commit(Rows::of(batch)?, &self.shared.path, !leads)?;
        if leads {
            writer::lead(&self.shared.write, &self.shared.queue);
        }
        answered(answer).await
    }

    async fn events_after(
        &self,
        after: i64,
        filter: &EventFilter,
        limit: u32,
    ) -> Result<Vec<EventRecord>, StoreError> {
        self.select_events(after, filter, limit, false)
    }

    async fn latest(
        &self,
        filter: &EventFilter,
        limit: u32,
    ) -> Result<Vec<EventRecord>, StoreError> {
        self.select_events(0, filter, limit, true)
    }

    async fn prunable(&self, before: &str) -> Result<Pruned, StoreError> {
        let count = |sql: String| {
            self.read(|connection| {
                Ok(connection.query_row(&sql, [before], |row| row.get::<_, i64>(0))?)
            })
        };
        let events = count(format!("SELECT COUNT(*) FROM events WHERE {PRUNED_EVENTS}"))?;
        let decisions = count(format!(
            "SELECT COUNT(*) FROM decisions WHERE {PRUNED_DECISIONS}"
        ))?;
        Ok(Pruned {
            events: u64::try_from(events).unwrap_or_default(),
            decisions: u64::try_from(decisions).unwrap_or_default(),
        })
    }

    async fn prune(&self, before: &str, limit: u32) -> Result<Pruned, StoreError> {
        let before = before.to_owned();
        self.on_writer(move |connection| {
            let tx = connection.transaction()?;
            let events = tx.execute(
                &format!(
                    "DELETE FROM events WHERE seq IN \
                     (SELECT seq FROM events WHERE {PRUNED_EVENTS} ORDER BY time LIMIT ?2)"
                ),
                rusqlite::params![before, limit],
            )?;
            let decisions = tx.execute(
                &format!(
                    "DELETE FROM decisions WHERE id IN (SELECT id FROM decisions \
                     WHERE {PRUNED_DECISIONS} ORDER BY updated LIMIT ?2)"
                ),
                rusqlite::params![before, limit],
            )?;
            tx.commit()?;
            Ok(Pruned {
                events: events as u64,
                decisions: decisions as u64,
            })
        })
        .await
    }

    async fn last_seq(&self) -> Result<i64, StoreError> {
        self.read(|connection| Ok(connection.query_row(HIGHEST_SEQ, [], |row| row.get(0))?))
    }

    async fn pending(&self) -> Result<Vec<PendingRecord>, StoreError> {
        self.read(|connection| {
            all(
                connection,
                "SELECT id, kind, session, created, request FROM pending ORDER BY created, id",
                [],
                pending_from_row,
            )
        })
    }

    async fn pending_page(
        &self,
        session: Option<&str>,
        limit: u32,
    ) -> Result<(Vec<PendingRecord>, u64), StoreError> {
        self.read(|connection| {
            // A session's are read by its index (a `?1 IS NULL OR session = ?1` would not be).
            let (page, total): (Vec<PendingRecord>, i64) = match session {
                Some(session) => (
                    all(
                        connection,
                        "SELECT id, kind, session, created, request FROM pending \
                         WHERE session = ?1 ORDER BY created, id LIMIT ?2",
                        (session, limit),
                        pending_from_row,
                    )?,
                    connection.query_row(
                        "SELECT COUNT(*) FROM pending WHERE session = ?1",
                        [session],
                        |row| row.get(0),
                    )?,
                ),
                None => (
                    all(
                        connection,
                        "SELECT id, kind, session, created, request FROM pending \
                         ORDER BY created, id LIMIT ?1",
                        [limit],
                        pending_from_row,
                    )?,
                    connection.query_row("SELECT COUNT(*) FROM pending", [], |row| row.get(0))?,
                ),
            };
            Ok((page, u64::try_from(total).unwrap_or(0)))
        })
    }

    async fn pending_request(&self, id: &str) -> Result<Option<PendingRecord>, StoreError> {
        self.read(|connection| {
            first(
                connection,
                "SELECT id, kind, session, created, request FROM pending WHERE id = ?",
                [id],
                pending_from_row,
            )
        })
    }

    async fn decision(&self, id: &str) -> Result<Option<DecisionRow>, StoreError> {
        self.read(|connection| {
            first(
                connection,
                "SELECT id, status, call, result, created, updated FROM decisions WHERE id = ?",
                [id],
                decision_from_row,
            )
        })
    }

    async fn decisions_page(
        &self,
        query: &DecisionQuery,
        limit: u32,
    ) -> Result<Vec<DecisionRow>, StoreError> {
        let (created, id) = query.lower_bound();
        let session = query.session.clone();
        self.read(move |connection| {
            // Read in the order of `decisions_by_created`, from the bound on.
            all(
                connection,
                "SELECT id, status, call, result, created, updated FROM decisions \
                 WHERE (created, id) > (?1, ?2) \
                 AND (?3 IS NULL OR json_extract(call, '$.context.session') = ?3) \
                 ORDER BY created, id LIMIT ?4",
                (&created, &id, &session, limit),
                decision_from_row,
            )
        })
    }

    async fn session(&self, id: &str) -> Result<Option<SessionRow>, StoreError> {
        self.read(|connection| {
            first(
                connection,
                "SELECT id, snapshot, updated FROM sessions WHERE id = ?",
                [id],
                session_from_row,
            )
        })
    }

    async fn sessions(&self) -> Result<Vec<SessionRow>, StoreError> {
        self.read(|connection| {
            all(
                connection,
                "SELECT id, snapshot, updated FROM sessions ORDER BY updated DESC, id",
                [],
                session_from_row,
            )
        })
    }

    async fn tokens(&self) -> Result<Vec<crate::TokenRow>, StoreError> {
        self.read(|connection| {
            all(
                connection,
                "SELECT name, role, hash, created FROM tokens ORDER BY name",
                [],
                |row| {
                    Ok(crate::TokenRow {
                        name: row.get(0)?,
                        role: row.get(1)?,
                        hash: row.get(2)?,
                        created: row.get(3)?,
                    })
                },
            )
        })
    }

    async fn add_token(&self, token: crate::TokenRow) -> Result<bool, StoreError> {
        self.on_writer(move |connection| {
            let added = connection.execute(
                "INSERT OR IGNORE INTO tokens (name, role, hash, created) VALUES (?, ?, ?, ?)",
                (&token.name, &token.role, &token.hash, &token.created),
            )?;
            Ok(added == 1)
        })
        .await
    }

    async fn remove_token(&self, name: &str) -> Result<bool, StoreError> {
        let name = name.to_owned();
        self.on_writer(move |connection| {
            Ok(connection.execute("DELETE FROM tokens WHERE name = ?", [&name])? == 1)
        })
        .await
    }
}

#[async_trait]
impl GrantStore for SqliteStore {
    async fn insert(&self, grant: Grant) -> Result<(), toolgate_runtime::grants::StoreError> {
        crate::grant_writes::insert(self, grant).await
    }

    async fn for_tool(
        &self,
        tool: &str,
    ) -> Result<Vec<Grant>, toolgate_runtime::grants::StoreError> {
        self.read(|connection| {
            all(
                connection,
                "SELECT uses_left, body FROM grants WHERE tool = ? ORDER BY created, id",
                [tool],
                grant_from_row,
            )
        })
        .map_err(crate::grant_writes::error)
    }

    async fn applying(
        &self,
        lookup: &toolgate_runtime::Lookup,
    ) -> Result<Vec<Grant>, toolgate_runtime::grants::StoreError> {
        let scopes = serde_json::to_string(&lookup.scopes)
            .map_err(|e| crate::grant_writes::error(e.into()))?;
        let targets = serde_json::to_string(&lookup.targets)
            .map_err(|e| crate::grant_writes::error(e.into()))?;
        self.read(|connection| {
            all(
                connection,
                "SELECT uses_left, body FROM grants WHERE tool = ? \
                 AND scope_key IN (SELECT value FROM json_each(?)) \
                 AND target_key IN (SELECT value FROM json_each(?)) ORDER BY created, id",
                (&lookup.tool, &scopes, &targets),
                grant_from_row,
            )
        })
        .map_err(crate::grant_writes::error)
    }

    async fn use_once(&self, id: &str) -> Result<bool, toolgate_runtime::grants::StoreError> {
        crate::grant_writes::use_once(self, id).await
    }

    async fn list(&self) -> Result<Vec<Grant>, toolgate_runtime::grants::StoreError> {
        self.read(|connection| {
            all(
                connection,
                "SELECT uses_left, body FROM grants ORDER BY created, id",
                [],
                grant_from_row,
            )
        })
        .map_err(crate::grant_writes::error)
    }

    async fn revoke(&self, id: &str) -> Result<bool, toolgate_runtime::grants::StoreError> {
        crate::grant_writes::revoke(self, id).await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::*;
    use serde_json::json;
    use std::sync::atomic::Ordering;
    use std::time::Instant;

    fn event(kind: &str, request: &str) -> EventRecord {
        EventRecord::new(kind, json!({"request_id": request}))
    }

    fn pending(id: &str) -> PendingRecord {
        PendingRecord {
            id: id.into(),
            kind: "external".into(),
            session: Some("s".into()),
            created: "2026-11-22T00:00:00.000000Z".into(),
            request: json!({"tool": "t"}),
        }
    }

    impl SqliteStore {
        /// Keeps the writer thread busy for `pause`: what is committed meanwhile waits, and
        /// is written as one group after it.
        fn hold_writer(&self, pause: Duration) {
            self.shared
                .queue
                .run(Box::new(move |_| std::thread::sleep(pause)))
                .unwrap();
        }

        fn transactions(&self) -> u64 {
            self.shared.queue.transactions.load(Ordering::Relaxed)
        }
    }

    /// The commits waiting at once are written in one transaction, each answered with its own
    /// outcome: one whose condition fails, or whose request is already pending, is rolled back
    /// alone, and the event numbers of the rest have no gap.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn commits_waiting_at_once_share_a_transaction_and_keep_their_own_outcomes() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("toolgate.db"))
            .await
            .unwrap();
        store
            .open_request(&pending("r1"), &event("permission_requested", "r1"))
            .await
            .unwrap();
        let before = store.transactions();
        store.hold_writer(Duration::from_millis(300));
        let batches = vec![
            // Written.
            Batch {
                close: Some("r1".into()),
                events: vec![event("permission_resolved", "r1")],
                ..Batch::default()
            },
            // r1 was closed just before, in the same transaction: not pending.
            Batch {
                close: Some("r1".into()),
                events: vec![event("permission_resolved", "r1")],
                ..Batch::default()
            },
            Batch {
                open: Some(pending("r2")),
                events: vec![event("permission_requested", "r2")],
                ..Batch::default()
            },
            // Already pending, opened in the same transaction: refused alone.
            Batch {
                open: Some(pending("r2")),
                events: vec![event("permission_requested", "r2")],
                ..Batch::default()
            },
            Batch {
                revoke: Some("no-such-grant".into()),
                events: vec![event("grant_revoked", "g")],
                ..Batch::default()
            },
            Batch {
                events: vec![event("a", "x"), event("b", "x")],
                ..Batch::default()
            },
        ];
        let mut tasks = Vec::new();
        for batch in batches {
            let store = store.clone();
            tasks.push(tokio::spawn(async move { store.commit(batch).await }));
            // In this order in the queue.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let mut outcomes = Vec::new();
        for task in tasks {
            outcomes.push(task.await.unwrap());
        }
        assert_eq!(outcomes[0].as_ref().unwrap(), &Committed::Written(vec![2]));
        assert_eq!(outcomes[1].as_ref().unwrap(), &Committed::NotPending);
        assert_eq!(outcomes[2].as_ref().unwrap(), &Committed::Written(vec![3]));
        let refused = outcomes[3].as_ref().unwrap_err();
        assert!(matches!(refused, StoreError::Conflict(_)), "{refused:?}");
        assert!(refused.says("request `r2` is already pending"), "{refused}");
        assert_eq!(outcomes[4].as_ref().unwrap(), &Committed::NoGrant);
        assert_eq!(
            outcomes[5].as_ref().unwrap(),
            &Committed::Written(vec![4, 5])
        );
        assert_eq!(store.transactions() - before, 1, "one transaction");
        let seqs: Vec<i64> = store
            .events_after(0, &EventFilter::default(), 100)
            .await
            .unwrap()
            .iter()
            .map(|e| e.seq)
            .collect();
        assert_eq!(seqs, [1, 2, 3, 4, 5]);
        let ids: Vec<String> = store
            .pending()
            .await
            .unwrap()
            .into_iter()
            .map(|p| p.id)
            .collect();
        assert_eq!(ids, ["r2"]);
    }

    /// While another program holds the database's write lock, commits wait (on the writer's
    /// thread, not the caller's) and are refused as locked once the wait runs out; those
    /// waiting behind are told at once, not a timeout each; past a bound, commits are refused
    /// without waiting. Once the lock is gone, commits go on, numbered without a gap.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_database_locked_by_another_program_refuses_commits_and_bounds_the_wait() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolgate.db");
        let store = SqliteStore::open_with(&path, Durability::Process)
            .await
            .unwrap();
        store.append(&[event("first", "r")]).await.unwrap();
        let other = Connection::open(&path).unwrap();
        other.busy_timeout(Duration::from_secs(5)).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();

        // Queued while the writer is busy: past the bound, refused at once.
        store.hold_writer(Duration::from_millis(300));
        let mut tasks = Vec::new();
        for i in 0..writer::MAX_WAITING + 8 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                store.append(&[event("waiting", &i.to_string())]).await
            }));
        }
        let (mut locked, mut full) = (0, 0);
        for task in tasks {
            match task.await.unwrap() {
                Err(StoreError::Locked { message, .. }) => {
                    assert!(message.contains("locked by another program"), "{message}");
                    locked += 1;
                }
                Err(StoreError::Unavailable { message, .. }) => {
                    assert!(message.contains("commits"), "{message}");
                    full += 1;
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!((locked, full), (writer::MAX_WAITING, 8));
        // Right after a wait ran out, the next commit is told at once.
        let started = Instant::now();
        let error = store.append(&[event("next", "r")]).await.unwrap_err();
        assert!(matches!(error, StoreError::Locked { .. }), "{error:?}");
        assert!(
            started.elapsed() < schema::BUSY_TIMEOUT / 2,
            "{:?}",
            started.elapsed()
        );

        other.execute_batch("ROLLBACK").unwrap();
        // Right after a wait ran out, a write looks once without waiting: it may still be
        // refused for a moment.
        tokio::time::sleep(writer_locked_out()).await;
        assert_eq!(store.append(&[event("after", "r")]).await.unwrap(), [2]);
    }

    fn writer_locked_out() -> Duration {
        Duration::from_millis(1100)
    }

    /// A writer thread that ends unexpectedly (a panic) leaves no caller waiting: what was
    /// queued hears that the writer stopped, and later commits are refused.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_writer_that_stops_leaves_nobody_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("toolgate.db"))
            .await
            .unwrap();
        store.append(&[event("first", "r")]).await.unwrap();
        store.hold_writer(Duration::from_millis(200));
        store
            .shared
            .queue
            .run(Box::new(|_| panic!("the writer fails")))
            .unwrap();
        let queued = {
            let store = store.clone();
            tokio::spawn(async move { store.append(&[event("queued", "r")]).await })
        };
        let error = tokio::time::timeout(Duration::from_secs(10), queued)
            .await
            .expect("answered")
            .unwrap()
            .unwrap_err();
        assert!(error.says("writer stopped"), "{error}");
        let error = store.append(&[event("later", "r")]).await.unwrap_err();
        assert!(error.says("closed"), "{error}");
    }

    /// A database file deleted or replaced under the running store is noticed: commits are
    /// refused with the reason, never written to a file nobody reads.
    #[tokio::test]
    async fn a_database_deleted_or_replaced_under_the_store_refuses_commits() {
        for replace in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("toolgate.db");
            let store = SqliteStore::open(&path).await.unwrap();
            store.append(&[event("first", "r")]).await.unwrap();
            if replace {
                let copy = dir.path().join("copy.db");
                std::fs::copy(&path, &copy).unwrap();
                std::fs::rename(&copy, &path).unwrap();
            } else {
                std::fs::remove_file(&path).unwrap();
            }
            let error = store.append(&[event("lost", "r")]).await.unwrap_err();
            assert!(matches!(error, StoreError::Unavailable { .. }), "{error:?}");
            let how = if replace {
                "was replaced by another file"
            } else {
                "was deleted or moved"
            };
            assert!(
                error.says(how) && error.says("Restart the daemon"),
                "{error}"
            );
        }
    }

    /// A database that cannot grow (SQLite says `SQLITE_FULL`, as on a full disk) refuses the
    /// commit that needs the room, acknowledging nothing of it; smaller commits go on, and
    /// numbers have no gap.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_full_database_refuses_the_commit_and_keeps_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolgate.db");
        let store = SqliteStore::open_with(&path, Durability::Process)
            .await
            .unwrap();
        store.append(&[event("first", "r")]).await.unwrap();
        store
            .on_writer(|connection| {
                let pages: i64 = connection.query_row("PRAGMA page_count", [], |r| r.get(0))?;
                connection.pragma_update(None, "max_page_count", pages + 2)?;
                Ok(())
            })
            .await
            .unwrap();
        let large = EventRecord::new("large", json!({"blob": "x".repeat(1 << 20)}));
        let error = store.append(&[large]).await.unwrap_err();
        assert!(error.says("full"), "{error}");
        assert_eq!(store.append(&[event("small", "r")]).await.unwrap(), [2]);
        let kinds: Vec<String> = store
            .events_after(0, &EventFilter::default(), 10)
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.kind)
            .collect();
        assert_eq!(kinds, ["first", "small"]);
    }

    #[tokio::test]
    async fn a_page_of_events_is_bounded_in_bytes_too() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("toolgate.db"))
            .await
            .unwrap();
        let large = "x".repeat(crate::PAGE_BYTES / 3);
        for i in 0..5 {
            let event = EventRecord::new("large", json!({"n": i, "blob": large}));
            store.append(&[event]).await.unwrap();
        }
        let filter = EventFilter::default();
        let seqs =
            |events: Vec<EventRecord>| -> Vec<i64> { events.iter().map(|e| e.seq).collect() };
        assert_eq!(
            seqs(store.events_after(0, &filter, 10).await.unwrap()),
            [1, 2, 3]
        );
        assert_eq!(
            seqs(store.events_after(3, &filter, 10).await.unwrap()),
            [4, 5]
        );
        assert_eq!(seqs(store.latest(&filter, 10).await.unwrap()), [5, 4, 3]);
        assert_eq!(
            seqs(store.events_after(0, &filter, 2).await.unwrap()),
            [1, 2]
        );
        let huge = EventRecord::new("huge", json!({"blob": "y".repeat(crate::PAGE_BYTES)}));
        store.append(&[huge]).await.unwrap();
        assert_eq!(seqs(store.events_after(5, &filter, 10).await.unwrap()), [6]);
    }

    /// A commit nested deeper than serde_json reads back is refused, and nothing of it is kept;
    /// what older versions stored that deep (past 128 levels) is read all the same, so one
    /// such request neither breaks the pending list nor stops the store from opening.
    #[tokio::test]
    async fn json_nested_past_what_serde_json_reads_is_refused_and_read_when_stored_before() {
        let nested = |levels: usize| {
            let text = format!("{}{}", "[".repeat(levels), "]".repeat(levels));
            serde_json::from_str::<Value>(&text).unwrap()
        };
        let deep = |id: &str, levels: usize| PendingRecord {
            request: json!({"call": {"args": {"x": nested(levels)}}}),
            ..pending(id)
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolgate.db");
        let store = SqliteStore::open(&path).await.unwrap();
        let open = |record| Batch {
            open: Some(record),
            ..Batch::default()
        };
        store.commit(open(deep("fits", 90))).await.unwrap();
        let error = store.commit(open(deep("deep", 120))).await.unwrap_err();
        assert!(matches!(error, StoreError::Refused(_)), "{error:?}");
        assert!(error.says("levels deep"), "{error}");
        store.commit(open(pending("after"))).await.unwrap();
        // Opened at the same time: listed by id.
        let ids = |records: Vec<PendingRecord>| -> Vec<String> {
            records.into_iter().map(|r| r.id).collect()
        };
        assert_eq!(ids(store.pending().await.unwrap()), ["after", "fits"]);
        store.close().await;
        drop(store);

        // As an older version stored it: 127 levels of arguments in a request.
        let stored = deep("old", 127);
        let connection = Connection::open(&path).unwrap();
        connection
            .execute(
                "INSERT INTO pending (id, kind, session, created, request) VALUES (?, ?, ?, ?, ?)",
                (
                    &stored.id,
                    &stored.kind,
                    &stored.session,
                    &stored.created,
                    serde_json::to_string(&stored.request).unwrap(),
                ),
            )
            .unwrap();
        drop(connection);
        let store = SqliteStore::open(&path).await.unwrap();
        let listed = store.pending().await.unwrap();
        assert_eq!(ids(listed.clone()), ["after", "fits", "old"]);
        assert_eq!(listed[2].request, stored.request);
        assert_eq!(
            store.pending_request("old").await.unwrap().unwrap().request,
            stored.request
        );
    }

    /// Closing folds the write-ahead log into the database; the store stays usable, and a
    /// dropped store's writer has finished before the next store opens the file.
    #[tokio::test]
    async fn closing_folds_the_log_and_the_next_store_carries_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolgate.db");
        let store = SqliteStore::open_with(&path, Durability::Process)
            .await
            .unwrap();
        for _ in 0..20 {
            store.append(&[event("e", "r")]).await.unwrap();
        }
        store.close().await;
        let wal = std::fs::metadata(dir.path().join("toolgate.db-wal")).unwrap();
        assert_eq!(wal.len(), 0, "folded");
        assert_eq!(store.append(&[event("e", "r")]).await.unwrap(), [21]);
        drop(store);
        let store = SqliteStore::open_with(&path, Durability::Process)
            .await
            .unwrap();
        assert_eq!(store.append(&[event("e", "r")]).await.unwrap(), [22]);
    }
}
