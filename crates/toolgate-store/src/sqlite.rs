//! The embedded store: one SQLite file in WAL mode, `synchronous = FULL`, one writer.

use std::path::Path;
use std::str::FromStr;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use serde_json::Value;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{Row, Sqlite, Transaction};
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

/// What a commit survives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
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

/// The embedded store.
#[derive(Clone, Debug)]
pub struct SqliteStore {
    /// One connection: writes never contend with each other.
    write: SqlitePool,
    /// Readers (WAL lets them read while the writer writes).
    read: SqlitePool,
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path` and brings its schema up to date;
    /// every commit is flushed to the disk.
    pub async fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_with(path, Durability::Full).await
    }

    /// Opens the database at `path` with the given durability.
    pub async fn open_with(path: &Path, durability: Durability) -> Result<SqliteStore, StoreError> {
        let url = format!("sqlite://{}", path.display());
        let options = SqliteConnectOptions::from_str(&url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(match durability {
                Durability::Full => SqliteSynchronous::Full,
                Durability::Process => SqliteSynchronous::Normal,
            })
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true);
        let write = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options.clone())
            .await?;
        migrate(&write).await?;
        let read = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options.read_only(true))
            .await?;
        Ok(SqliteStore { write, read })
    }

    async fn select_events(
        &self,
        after: i64,
        filter: &EventFilter,
        limit: u32,
        newest_first: bool,
    ) -> Result<Vec<EventRecord>, StoreError> {
        let mut sql = String::from(
            "SELECT seq, type, time, session, request_id, tool_call_id, body FROM events WHERE seq > ?",
        );
        if filter.session.is_some() {
            sql.push_str(" AND session = ?");
        }
        if filter.request_id.is_some() {
            sql.push_str(" AND request_id = ?");
        }
        if filter.since.is_some() {
            sql.push_str(" AND time >= ?");
        }
        if !filter.kinds.is_empty() {
            sql.push_str(" AND type IN (");
            sql.push_str(&vec!["?"; filter.kinds.len()].join(", "));
            sql.push(')');
        }
        sql.push_str(if newest_first {
            " ORDER BY seq DESC LIMIT ?"
        } else {
            " ORDER BY seq LIMIT ?"
        });
        let mut query = sqlx::query(&sql).bind(after);
        if let Some(session) = &filter.session {
            query = query.bind(session);
        }
        if let Some(request) = &filter.request_id {
            query = query.bind(request);
        }
        if let Some(since) = &filter.since {
            query = query.bind(since);
        }
        for kind in &filter.kinds {
            query = query.bind(kind);
        }
        let rows = query.bind(i64::from(limit)).fetch_all(&self.read).await?;
        rows.iter().map(event_from_row).collect()
    }

    /// Closes both pools, waiting for running queries.
    pub async fn close(&self) {
        self.write.close().await;
        self.read.close().await;
    }
}

async fn migrate(pool: &SqlitePool) -> Result<(), StoreError> {
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied TEXT NOT NULL)",
    )
    .execute(pool)
    .await?;
    let applied: i64 = sqlx::query("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")
        .fetch_one(pool)
        .await?
        .try_get(0)?;
    for (index, migration) in MIGRATIONS.iter().enumerate() {
        let version = i64::try_from(index + 1).unwrap_or(i64::MAX);
        if version <= applied {
            continue;
        }
        let mut tx = pool.begin().await?;
        sqlx::raw_sql(migration).execute(&mut *tx).await?;
        sqlx::query("INSERT INTO schema_migrations (version, applied) VALUES (?, ?)")
            .bind(version)
            .bind(rfc3339(SystemTime::now()))
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
    }
    let known = i64::try_from(MIGRATIONS.len()).unwrap_or(i64::MAX);
    if applied > known {
        return Err(StoreError(format!(
            "the database has schema version {applied}, newer than this toolgate knows ({known})"
        )));
    }
    Ok(())
}

async fn insert_event(
    tx: &mut Transaction<'_, Sqlite>,
    event: &EventRecord,
) -> Result<i64, StoreError> {
    let body = serde_json::to_string(&event.body)?;
    let seq: i64 = sqlx::query(
        "INSERT INTO events (type, time, session, request_id, tool_call_id, body) \
         VALUES (?, ?, ?, ?, ?, ?) RETURNING seq",
    )
    .bind(&event.kind)
    .bind(&event.time)
    .bind(&event.session)
    .bind(&event.request_id)
    .bind(&event.tool_call_id)
    .bind(body)
    .fetch_one(&mut **tx)
    .await?
    .try_get(0)?;
    Ok(seq)
}

fn event_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<EventRecord, StoreError> {
    let body: String = row.try_get("body")?;
    Ok(EventRecord {
        seq: row.try_get("seq")?,
        kind: row.try_get("type")?,
        time: row.try_get("time")?,
        session: row.try_get("session")?,
        request_id: row.try_get("request_id")?,
        tool_call_id: row.try_get("tool_call_id")?,
        body: serde_json::from_str(&body)?,
    })
}

fn grant_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<Grant, StoreError> {
    let body: String = row.try_get("body")?;
    let mut grant: Grant = serde_json::from_str(&body)?;
    let uses: Option<i64> = row.try_get("uses_left")?;
    grant.uses_left = uses.map(|n| u32::try_from(n.max(0)).unwrap_or(u32::MAX));
    Ok(grant)
}

#[async_trait]
impl Store for SqliteStore {
    async fn commit(&self, batch: Batch) -> Result<Committed, StoreError> {
        let mut tx = self.write.begin().await?;
        if let Some(id) = &batch.close {
            let removed = sqlx::query("DELETE FROM pending WHERE id = ?")
                .bind(id)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if removed == 0 {
                tx.rollback().await?;
                return Ok(Committed::NotPending);
            }
        }
        if let Some(request) = &batch.open {
            sqlx::query(
                "INSERT INTO pending (id, kind, session, created, request) VALUES (?, ?, ?, ?, ?)",
            )
            .bind(&request.id)
            .bind(&request.kind)
            .bind(&request.session)
            .bind(&request.created)
            .bind(serde_json::to_string(&request.request)?)
            .execute(&mut *tx)
            .await?;
        }
        let mut seqs = Vec::with_capacity(batch.events.len());
        for event in &batch.events {
            seqs.push(insert_event(&mut tx, event).await?);
        }
        if let Some(decision) = &batch.decision {
            sqlx::query(
                "INSERT INTO decisions (id, status, call, result, created, updated) VALUES (?, ?, ?, ?, ?, ?) \
                 ON CONFLICT (id) DO UPDATE SET status = excluded.status, result = excluded.result, \
                 updated = excluded.updated",
            )
            .bind(&decision.id)
            .bind(decision.status.as_str())
            .bind(serde_json::to_string(&decision.call)?)
            .bind(serde_json::to_string(&decision.result)?)
            .bind(&decision.created)
            .bind(&decision.updated)
            .execute(&mut *tx)
            .await?;
        }
        for grant in &batch.grants {
            insert_grant(&mut *tx, grant).await?;
        }
        tx.commit().await?;
        Ok(Committed::Written(seqs))
    }

    async fn events_after(
        &self,
        after: i64,
        filter: &EventFilter,
        limit: u32,
    ) -> Result<Vec<EventRecord>, StoreError> {
        self.select_events(after, filter, limit, false).await
    }

    async fn latest(
        &self,
        filter: &EventFilter,
        limit: u32,
    ) -> Result<Vec<EventRecord>, StoreError> {
        self.select_events(0, filter, limit, true).await
    }

    async fn last_seq(&self) -> Result<i64, StoreError> {
        let seq: i64 = sqlx::query("SELECT COALESCE(MAX(seq), 0) FROM events")
            .fetch_one(&self.read)
            .await?
            .try_get(0)?;
        Ok(seq)
    }

    async fn pending(&self) -> Result<Vec<PendingRecord>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, kind, session, created, request FROM pending ORDER BY created, id",
        )
        .fetch_all(&self.read)
        .await?;
        rows.iter().map(pending_from_row).collect()
    }

    async fn pending_request(&self, id: &str) -> Result<Option<PendingRecord>, StoreError> {
        let row =
            sqlx::query("SELECT id, kind, session, created, request FROM pending WHERE id = ?")
                .bind(id)
                .fetch_optional(&self.read)
                .await?;
        row.as_ref().map(pending_from_row).transpose()
    }

    async fn decision(&self, id: &str) -> Result<Option<DecisionRow>, StoreError> {
        let row = sqlx::query(
            "SELECT id, status, call, result, created, updated FROM decisions WHERE id = ?",
        )
        .bind(id)
        .fetch_optional(&self.read)
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let status: String = row.try_get("status")?;
        let call: String = row.try_get("call")?;
        let result: String = row.try_get("result")?;
        Ok(Some(DecisionRow {
            id: row.try_get("id")?,
            status: if status == "pending" {
                DecisionStatus::Pending
            } else {
                DecisionStatus::Decided
            },
            call: serde_json::from_str(&call)?,
            result: serde_json::from_str(&result)?,
            created: row.try_get("created")?,
            updated: row.try_get("updated")?,
        }))
    }

    async fn put_session(&self, id: &str, snapshot: &Value) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO sessions (id, snapshot, updated) VALUES (?, ?, ?) \
             ON CONFLICT (id) DO UPDATE SET snapshot = excluded.snapshot, updated = excluded.updated",
        )
        .bind(id)
        .bind(serde_json::to_string(snapshot)?)
        .bind(rfc3339(SystemTime::now()))
        .execute(&self.write)
        .await?;
        Ok(())
    }

    async fn session(&self, id: &str) -> Result<Option<SessionRow>, StoreError> {
        let row = sqlx::query("SELECT id, snapshot, updated FROM sessions WHERE id = ?")
            .bind(id)
            .fetch_optional(&self.read)
            .await?;
        row.map(|row| session_from_row(&row)).transpose()
    }

    async fn sessions(&self) -> Result<Vec<SessionRow>, StoreError> {
        let rows =
            sqlx::query("SELECT id, snapshot, updated FROM sessions ORDER BY updated DESC, id")
                .fetch_all(&self.read)
                .await?;
        rows.iter().map(session_from_row).collect()
    }
}

fn pending_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<PendingRecord, StoreError> {
    let request: String = row.try_get("request")?;
    Ok(PendingRecord {
        id: row.try_get("id")?,
        kind: row.try_get("kind")?,
        session: row.try_get("session")?,
        created: row.try_get("created")?,
        request: serde_json::from_str(&request)?,
    })
}

fn session_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<SessionRow, StoreError> {
    let snapshot: String = row.try_get("snapshot")?;
    Ok(SessionRow {
        id: row.try_get("id")?,
        snapshot: serde_json::from_str(&snapshot)?,
        updated: row.try_get("updated")?,
    })
}

fn to_grant_error(error: StoreError) -> toolgate_runtime::grants::StoreError {
    toolgate_runtime::grants::StoreError(error.0)
}

async fn insert_grant<'e, E>(executor: E, grant: &Grant) -> Result<(), StoreError>
where
    E: sqlx::Executor<'e, Database = Sqlite>,
{
    sqlx::query("INSERT INTO grants (id, tool, uses_left, body, created) VALUES (?, ?, ?, ?, ?)")
        .bind(&grant.id)
        .bind(&grant.tool)
        .bind(grant.uses_left.map(i64::from))
        .bind(serde_json::to_string(grant)?)
        .bind(rfc3339(grant.created_at))
        .execute(executor)
        .await?;
    Ok(())
}

#[async_trait]
impl GrantStore for SqliteStore {
    async fn insert(&self, grant: Grant) -> Result<(), toolgate_runtime::grants::StoreError> {
        insert_grant(&self.write, &grant)
            .await
            .map_err(to_grant_error)
    }

    async fn for_tool(
        &self,
        tool: &str,
    ) -> Result<Vec<Grant>, toolgate_runtime::grants::StoreError> {
        let rows =
            sqlx::query("SELECT uses_left, body FROM grants WHERE tool = ? ORDER BY created, id")
                .bind(tool)
                .fetch_all(&self.read)
                .await
                .map_err(|e| to_grant_error(e.into()))?;
        rows.iter()
            .map(|row| grant_from_row(row).map_err(to_grant_error))
            .collect()
    }

    async fn use_once(&self, id: &str) -> Result<bool, toolgate_runtime::grants::StoreError> {
        let row = sqlx::query(
            "UPDATE grants SET uses_left = CASE WHEN uses_left IS NULL THEN NULL ELSE uses_left - 1 END \
             WHERE id = ? AND (uses_left IS NULL OR uses_left > 0) RETURNING id",
        )
        .bind(id)
        .fetch_optional(&self.write)
        .await
        .map_err(|e| to_grant_error(e.into()))?;
        Ok(row.is_some())
    }

    async fn list(&self) -> Result<Vec<Grant>, toolgate_runtime::grants::StoreError> {
        let rows = sqlx::query("SELECT uses_left, body FROM grants ORDER BY created, id")
            .fetch_all(&self.read)
            .await
            .map_err(|e| to_grant_error(e.into()))?;
        rows.iter()
            .map(|row| grant_from_row(row).map_err(to_grant_error))
            .collect()
    }

    async fn revoke(&self, id: &str) -> Result<bool, toolgate_runtime::grants::StoreError> {
        let done = sqlx::query("DELETE FROM grants WHERE id = ?")
            .bind(id)
            .execute(&self.write)
            .await
            .map_err(|e| to_grant_error(e.into()))?;
        Ok(done.rows_affected() > 0)
    }
}
