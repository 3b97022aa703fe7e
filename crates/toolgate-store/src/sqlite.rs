//! The embedded store: one SQLite file in WAL mode, one writer, a few readers.
//!
//! Statements run on the calling thread through rusqlite: a commit of a few rows costs tens of
//! microseconds with [`Durability::Process`], where handing each statement to a driver's worker
//! thread (sqlx's design) cost about as much per statement as a whole HTTP request on the
//! machines we measure on (`cargo bench -p toolgate-store --bench commit`). With
//! [`Durability::Full`] the disk flush dominates, and writes tell tokio's multi-threaded runtime
//! they block (`block_in_place`) so other tasks move to another thread meanwhile.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OpenFlags, Row, Transaction, TransactionBehavior};
use serde_json::Value;
use toolgate_runtime::{Grant, GrantStore};

use crate::record::{
    DecisionRow, DecisionStatus, EventFilter, EventRecord, PendingRecord, SessionRow, StoreError,
    rfc3339,
};
use crate::{Batch, Committed, Store};

/// The schema, one migration per entry; applied in order, each in its own transaction.
const MIGRATIONS: &[&str] = &[r#"
CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    type TEXT NOT NULL,
    time TEXT NOT NULL,
    session TEXT,
    request_id TEXT,
    tool_call_id TEXT,
    body TEXT NOT NULL
);
CREATE INDEX events_by_session ON events (session, seq);
CREATE INDEX events_by_request ON events (request_id);
CREATE TABLE pending (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    session TEXT,
    created TEXT NOT NULL,
    request TEXT NOT NULL
);
CREATE TABLE decisions (
    id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    call TEXT NOT NULL,
    result TEXT NOT NULL,
    created TEXT NOT NULL,
    updated TEXT NOT NULL
);
CREATE TABLE grants (
    id TEXT PRIMARY KEY,
    tool TEXT NOT NULL,
    uses_left INTEGER,
    body TEXT NOT NULL,
    created TEXT NOT NULL
);
CREATE INDEX grants_by_tool ON grants (tool);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    snapshot TEXT NOT NULL,
    updated TEXT NOT NULL
);
"#];

/// What a commit survives. Spelled `full` and `process` in files and on the command line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// The daemon's crash and the machine's: every commit is flushed to the disk (`fsync`)
    /// before it returns (`synchronous = FULL`).
    #[default]
    Full,
    /// The daemon's crash (`kill -9`), not a power loss or kernel crash: commits reach the
    /// operating system before they return, and the disk at each checkpoint
    /// (`synchronous = NORMAL` in WAL mode). Several times faster per commit.
    Process,
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

/// Idle read connections kept open.
const IDLE_READERS: usize = 4;

/// The embedded store. Cheap to clone; clones share the connections.
#[derive(Clone)]
pub struct SqliteStore {
    shared: Arc<Shared>,
}

struct Shared {
    path: PathBuf,
    durability: Durability,
    /// Held for the store's life: one store per database (see [`owner_lock`]).
    _owner: Mutex<Connection>,
    /// The one writer: writes never contend with each other.
    writer: Mutex<Connection>,
    /// Idle readers (WAL lets them read while the writer writes).
    readers: Mutex<Vec<Connection>>,
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

fn connect(path: &Path, durability: Durability, read_only: bool) -> Result<Connection, StoreError> {
    let flags = if read_only {
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX
    } else {
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
    };
    let connection = Connection::open_with_flags(path, flags)?;
    connection.busy_timeout(Duration::from_secs(10))?;
    if !read_only {
        connection.pragma_update(None, "journal_mode", "WAL")?;
    }
    connection.pragma_update(
        None,
        "synchronous",
        match durability {
            Durability::Full => "FULL",
            Durability::Process => "NORMAL",
        },
    )?;
    connection.pragma_update(None, "foreign_keys", "ON")?;
    connection.set_prepared_statement_cache_capacity(32);
    Ok(connection)
}

/// Takes the lock that makes this store the database's only owner: a second daemon on the
/// same data directory would otherwise refuse the first one's live requests as abandoned when
/// it recovers. An SQLite file next to the database (`toolgate.db.lock`) held in exclusive
/// locking mode; the operating system releases it when the process ends, however it ends. The
/// database itself stays readable by other programs (`sqlite3`, backups).
fn owner_lock(path: &Path) -> Result<Connection, StoreError> {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    let lock_path = PathBuf::from(name);
    let connection = Connection::open(&lock_path)?;
    // A daemon that is shutting down lets go within moments; a live one never does.
    connection.busy_timeout(Duration::from_millis(200))?;
    connection.pragma_update(None, "locking_mode", "EXCLUSIVE")?;
    let taken = connection.execute_batch(
        "CREATE TABLE IF NOT EXISTS owner (id INTEGER PRIMARY KEY, since TEXT NOT NULL);
         INSERT OR REPLACE INTO owner (id, since) VALUES (1, datetime('now'));",
    );
    match taken {
        Ok(()) => Ok(connection),
        Err(rusqlite::Error::SqliteFailure(e, _))
            if matches!(
                e.code,
                rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
            ) =>
        {
            Err(StoreError(format!(
                "{} is in use by another toolgate (one daemon per data directory; stop the other \
                 one or give this one another --data-dir)",
                path.display()
            )))
        }
        Err(e) => Err(e.into()),
    }
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
            let owner = owner_lock(path)?;
            let mut writer = connect(path, durability, false)?;
            migrate(&mut writer)?;
            let reader = connect(path, durability, true)?;
            Ok(SqliteStore {
                shared: Arc::new(Shared {
                    path: path.to_owned(),
                    durability,
                    _owner: Mutex::new(owner),
                    writer: Mutex::new(writer),
                    readers: Mutex::new(vec![reader]),
                }),
            })
        })
    }

    /// Runs `work` on the writer.
    fn write<T>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let run = || work(&mut lock(&self.shared.writer));
        match self.shared.durability {
            // A disk flush: long enough for tokio to move other tasks away.
            Durability::Full => blocking(run),
            Durability::Process => run(),
        }
    }

    /// Runs `work` on an idle reader (opening one when none is idle).
    fn read<T>(
        &self,
        work: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let idle = lock(&self.shared.readers).pop();
        let connection = match idle {
            Some(connection) => connection,
            None => connect(&self.shared.path, self.shared.durability, true)?,
        };
        let result = work(&connection);
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
            let rows = statement.query_map(rusqlite::params_from_iter(values), event_from_row)?;
            rows.map(|row| row?).collect()
        })
    }
}

fn migrate(connection: &mut Connection) -> Result<(), StoreError> {
    connection.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied TEXT NOT NULL)",
        [],
    )?;
    let applied: i64 = connection.query_row(
        "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
        [],
        |row| row.get(0),
    )?;
    for (index, migration) in MIGRATIONS.iter().enumerate() {
        let version = i64::try_from(index + 1).unwrap_or(i64::MAX);
        if version <= applied {
            continue;
        }
        let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch(migration)?;
        tx.execute(
            "INSERT INTO schema_migrations (version, applied) VALUES (?, ?)",
            (version, rfc3339(SystemTime::now())),
        )?;
        tx.commit()?;
    }
    let known = i64::try_from(MIGRATIONS.len()).unwrap_or(i64::MAX);
    if applied > known {
        return Err(StoreError(format!(
            "the database has schema version {applied}, newer than this toolgate knows ({known})"
        )));
    }
    Ok(())
}

fn insert_event(tx: &Transaction<'_>, event: &EventRecord) -> Result<i64, StoreError> {
    let body = serde_json::to_string(&event.body)?;
    tx.prepare_cached(
        "INSERT INTO events (type, time, session, request_id, tool_call_id, body) \
         VALUES (?, ?, ?, ?, ?, ?)",
    )?
    .execute((
        &event.kind,
        &event.time,
        &event.session,
        &event.request_id,
        &event.tool_call_id,
        body,
    ))?;
    Ok(tx.last_insert_rowid())
}

/// A JSON column, or a row error naming it.
fn json_column(row: &Row<'_>, column: &str) -> Result<Value, StoreError> {
    let text: String = row.get(column)?;
    Ok(serde_json::from_str(&text)?)
}

fn event_from_row(row: &Row<'_>) -> rusqlite::Result<Result<EventRecord, StoreError>> {
    Ok(Ok(EventRecord {
        seq: row.get("seq")?,
        kind: row.get("type")?,
        time: row.get("time")?,
        session: row.get("session")?,
        request_id: row.get("request_id")?,
        tool_call_id: row.get("tool_call_id")?,
        body: match json_column(row, "body") {
            Ok(body) => body,
            Err(error) => return Ok(Err(error)),
        },
    }))
}

fn grant_from_row(row: &Row<'_>) -> Result<Grant, StoreError> {
    let body: String = row.get("body")?;
    let mut grant: Grant = serde_json::from_str(&body)?;
    let uses: Option<i64> = row.get("uses_left")?;
    grant.uses_left = uses.map(|n| u32::try_from(n.max(0)).unwrap_or(u32::MAX));
    Ok(grant)
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

fn insert_grant(connection: &Connection, grant: &Grant) -> Result<(), StoreError> {
    connection
        .prepare_cached(
            "INSERT INTO grants (id, tool, uses_left, body, created) VALUES (?, ?, ?, ?, ?)",
        )?
        .execute((
            &grant.id,
            &grant.tool,
            grant.uses_left.map(i64::from),
            serde_json::to_string(grant)?,
            rfc3339(grant.created_at),
        ))?;
    Ok(())
}

#[async_trait]
impl Store for SqliteStore {
    /// Folds the write-ahead log into the database file (a clean shutdown's last step; nothing
    /// is lost without it).
    async fn close(&self) {
        let _ = self.write(|connection| {
            connection.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")?;
            Ok(())
        });
    }

    async fn commit(&self, batch: Batch) -> Result<Committed, StoreError> {
        self.write(|connection| {
            let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
            if let Some(id) = &batch.close {
                let removed = tx
                    .prepare_cached("DELETE FROM pending WHERE id = ?")?
                    .execute([id])?;
                if removed == 0 {
                    tx.rollback()?;
                    return Ok(Committed::NotPending);
                }
            }
            if let Some(request) = &batch.open {
                tx.prepare_cached(
                    "INSERT INTO pending (id, kind, session, created, request) VALUES (?, ?, ?, ?, ?)",
                )?
                .execute((
                    &request.id,
                    &request.kind,
                    &request.session,
                    &request.created,
                    serde_json::to_string(&request.request)?,
                ))?;
            }
            let mut seqs = Vec::with_capacity(batch.events.len());
            for event in &batch.events {
                seqs.push(insert_event(&tx, event)?);
            }
            if let Some(decision) = &batch.decision {
                tx.prepare_cached(
                    "INSERT INTO decisions (id, status, call, result, created, updated) VALUES (?, ?, ?, ?, ?, ?) \
                     ON CONFLICT (id) DO UPDATE SET status = excluded.status, result = excluded.result, \
                     updated = excluded.updated",
                )?
                .execute((
                    &decision.id,
                    decision.status.as_str(),
                    serde_json::to_string(&decision.call)?,
                    serde_json::to_string(&decision.result)?,
                    &decision.created,
                    &decision.updated,
                ))?;
            }
            for grant in &batch.grants {
                insert_grant(&tx, grant)?;
            }
            tx.commit()?;
            Ok(Committed::Written(seqs))
        })
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

    async fn last_seq(&self) -> Result<i64, StoreError> {
        self.read(|connection| {
            Ok(
                connection.query_row("SELECT COALESCE(MAX(seq), 0) FROM events", [], |row| {
                    row.get(0)
                })?,
            )
        })
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
                |row| {
                    let status: String = row.get("status")?;
                    Ok(DecisionRow {
                        id: row.get("id")?,
                        status: if status == "pending" {
                            DecisionStatus::Pending
                        } else {
                            DecisionStatus::Decided
                        },
                        call: json_column(row, "call")?,
                        result: json_column(row, "result")?,
                        created: row.get("created")?,
                        updated: row.get("updated")?,
                    })
                },
            )
        })
    }

    async fn put_session(&self, id: &str, snapshot: &Value) -> Result<(), StoreError> {
        let snapshot = serde_json::to_string(snapshot)?;
        self.write(|connection| {
            connection
                .prepare_cached(
                    "INSERT INTO sessions (id, snapshot, updated) VALUES (?, ?, ?) \
                     ON CONFLICT (id) DO UPDATE SET snapshot = excluded.snapshot, updated = excluded.updated",
                )?
                .execute((id, snapshot, rfc3339(SystemTime::now())))?;
            Ok(())
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
}

fn to_grant_error(error: StoreError) -> toolgate_runtime::grants::StoreError {
    toolgate_runtime::grants::StoreError(error.0)
}

#[async_trait]
impl GrantStore for SqliteStore {
    async fn insert(&self, grant: Grant) -> Result<(), toolgate_runtime::grants::StoreError> {
        self.write(|connection| insert_grant(connection, &grant))
            .map_err(to_grant_error)
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
        .map_err(to_grant_error)
    }

    async fn use_once(&self, id: &str) -> Result<bool, toolgate_runtime::grants::StoreError> {
        self.write(|connection| {
            let spent = connection
                .prepare_cached(
                    "UPDATE grants SET uses_left = CASE WHEN uses_left IS NULL THEN NULL ELSE uses_left - 1 END \
                     WHERE id = ? AND (uses_left IS NULL OR uses_left > 0)",
                )?
                .execute([id])?;
            Ok(spent > 0)
        })
        .map_err(to_grant_error)
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
        .map_err(to_grant_error)
    }

    async fn revoke(&self, id: &str) -> Result<bool, toolgate_runtime::grants::StoreError> {
        self.write(|connection| {
            let removed = connection
                .prepare_cached("DELETE FROM grants WHERE id = ?")?
                .execute([id])?;
            Ok(removed > 0)
        })
        .map_err(to_grant_error)
    }
}
