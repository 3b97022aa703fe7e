//! The SQLite store's schema and files: migrations, connections, the owner's lock and the
//! files' modes.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use super::Durability;
use crate::record::{StoreError, rfc3339};

/// How long a write waits for another program's lock on the database (`sqlite3` in a
/// transaction, a backup) before it is refused. The writer's own thread waits, never a
/// runtime's worker.
pub(super) const BUSY_TIMEOUT: Duration = Duration::from_secs(if cfg!(test) { 1 } else { 10 });

/// How long a read waits, when it must: WAL readers wait for no writer, only for the moment
/// another program rebuilds the shared index, so a read that would wait longer is refused.
pub(super) const READ_BUSY_TIMEOUT: Duration = Duration::from_millis(250);

/// The schema, one migration per entry; applied in order, each in its own transaction.
pub(super) const MIGRATIONS: &[&str] = &[
    r#"
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
"#,
    r#"
CREATE TABLE journal (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    applied_lsn INTEGER NOT NULL
);
INSERT INTO journal (id, applied_lsn) VALUES (1, 0);
"#,
    // The database's own number, which its journal's records carry.
    r#"
ALTER TABLE journal ADD COLUMN store INTEGER NOT NULL DEFAULT 0;
UPDATE journal SET store = max(1, random() & 9223372036854775807) WHERE id = 1;
"#,
    // What pruning looks for: events by time, decided decisions by when they were decided.
    r#"
CREATE INDEX events_by_time ON events (time);
CREATE INDEX decisions_by_status_updated ON decisions (status, updated);
"#,
    // A session's pending requests, oldest first (its page, AGH's turns, HPD's branches).
    r#"
CREATE INDEX pending_by_session ON pending (session, created, id);
"#,
    // The commit journal of versions up to 0.1 is retired (see `retire`): the number of its
    // last applied commit is no longer kept.
    r#"
DROP TABLE journal;
"#,
    // Grants filed by scope and target (see `Grant::scope_key`), so an ask reads only those
    // that may answer it; the keys of the grants stored before are written by `file_grants`.
    r#"
ALTER TABLE grants ADD COLUMN scope_key TEXT NOT NULL DEFAULT '';
ALTER TABLE grants ADD COLUMN target_key TEXT NOT NULL DEFAULT '';
DROP INDEX grants_by_tool;
CREATE INDEX grants_by_keys ON grants (tool, scope_key, target_key);
"#,
    // Named tokens with roles (their SHA-256 only).
    r#"
CREATE TABLE tokens (
    name TEXT PRIMARY KEY,
    role TEXT NOT NULL,
    hash TEXT NOT NULL UNIQUE,
    created TEXT NOT NULL
);
"#,
    // The calls of the audit log in the order they came (`decisions_page`, replay).
    r#"
CREATE INDEX decisions_by_created ON decisions (created, id);
"#,
];

/// The migration that files grants by their keys (its number, from 1).
const GRANT_KEYS: i64 = 7;

/// The last schema that kept the commit journal's state: the store migrates to it, applies
/// what a journal left next to the database holds, then goes on.
pub(super) const JOURNAL_SCHEMA: usize = 5;

/// Applies the migrations after the database's version, up to `upto` (all of them with
/// `MIGRATIONS.len()`), each in its own transaction; refuses a database newer than this toolgate.
pub(super) fn migrate(connection: &mut Connection, upto: usize) -> Result<(), StoreError> {
    connection.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied TEXT NOT NULL)",
        [],
    )?;
    let applied: i64 = connection.query_row(
        "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
        [],
        |row| row.get(0),
    )?;
    let known = i64::try_from(MIGRATIONS.len()).unwrap_or(i64::MAX);
    if applied > known {
        return Err(StoreError::damaged(format!(
            "the database has schema version {applied}, newer than this toolgate knows ({known})"
        )));
    }
    for (index, migration) in MIGRATIONS.iter().enumerate().take(upto) {
        let version = i64::try_from(index + 1).unwrap_or(i64::MAX);
        if version <= applied {
            continue;
        }
        let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch(migration)?;
        if version == GRANT_KEYS {
            file_grants(&tx)?;
        }
        tx.execute(
            "INSERT INTO schema_migrations (version, applied) VALUES (?, ?)",
            (version, rfc3339(SystemTime::now())),
        )?;
        tx.commit()?;
    }
    Ok(())
}

/// Writes the keys of every stored grant (those stored before grants were filed by them). A
/// grant that cannot be read keeps the empty keys, where no lookup but one of the whole tool
/// finds it, and answers nothing, as before.
fn file_grants(tx: &rusqlite::Transaction<'_>) -> Result<(), StoreError> {
    let mut filed = Vec::new();
    {
        let mut statement = tx.prepare("SELECT id, body FROM grants")?;
        let mut rows = statement.query([])?;
        while let Some(row) = rows.next()? {
            let (id, body): (String, String) = (row.get(0)?, row.get(1)?);
            if let Ok(grant) =
                crate::record::from_stored::<toolgate_runtime::Grant>(body.as_bytes())
            {
                filed.push((id, grant.scope_key(), grant.target_key()));
            }
        }
    }
    let mut update = tx.prepare("UPDATE grants SET scope_key = ?, target_key = ? WHERE id = ?")?;
    for (id, scope, target) in filed {
        update.execute((scope, target, id))?;
    }
    Ok(())
}

/// The database's schema version.
pub(super) fn version(connection: &Connection) -> Result<usize, StoreError> {
    let version: i64 = connection.query_row(
        "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
        [],
        |row| row.get(0),
    )?;
    Ok(usize::try_from(version).unwrap_or(0))
}

pub(super) fn connect(
    path: &Path,
    durability: Durability,
    read_only: bool,
) -> Result<Connection, StoreError> {
    let flags = if read_only {
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX
    } else {
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
    };
    let connection = Connection::open_with_flags(path, flags)?;
    // A reader's waits are the caller's to decide (see `SqliteStore::read`).
    connection.busy_timeout(if read_only {
        Duration::ZERO
    } else {
        BUSY_TIMEOUT
    })?;
    if !read_only {
        connection.pragma_update(None, "journal_mode", "WAL")?;
    }
    connection.pragma_update(None, "synchronous", durability.synchronous())?;
    connection.pragma_update(None, "foreign_keys", "ON")?;
    connection.set_prepared_statement_cache_capacity(32);
    Ok(connection)
}

/// Takes the lock that makes this store the database's only owner: a second daemon on the
/// same data directory would otherwise refuse the first one's live requests as abandoned when
/// it recovers. An SQLite file next to the database (`toolgate.db.lock`) held in exclusive
/// locking mode; the operating system releases it when the process ends, however it ends. The
/// database itself stays readable by other programs (`sqlite3`, backups).
pub(super) fn owner_lock(path: &Path) -> Result<Connection, StoreError> {
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
            Err(StoreError::Locked {
                message: format!(
                    "{} is in use by another toolgate (one daemon per data directory; stop the \
                     other one or give this one another --data-dir)",
                    path.display()
                ),
                source: None,
            })
        }
        Err(e) => Err(e.into()),
    }
}

/// Makes the database's files readable by their owner alone (the audit log holds every call's
/// arguments): each is created with mode 0600, or has the group's and others' bits taken away.
/// SQLite makes its `-wal` and `-shm` files with the database's mode.
pub(super) fn keep_private(path: &Path) -> Result<(), StoreError> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut names = vec![path.to_owned()];
    for suffix in ["-wal", "-shm", ".lock", ".lock-journal", ".journal"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        names.push(PathBuf::from(name));
    }
    for (index, name) in names.iter().enumerate() {
        let failed = |e: std::io::Error| StoreError::Unavailable {
            message: format!("cannot keep {} private: {e}", name.display()),
            source: Some(Box::new(e)),
        };
        match std::fs::symlink_metadata(name) {
            Ok(meta) if meta.is_file() => {
                let mode = meta.permissions().mode();
                if mode & 0o077 != 0 {
                    std::fs::set_permissions(name, std::fs::Permissions::from_mode(mode & 0o700))
                        .map_err(failed)?;
                }
            }
            // Not a file: SQLite or the journal's retirement says what is wrong with it.
            Ok(_) => {}
            // The database and the lock are made here, private from the start.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && matches!(index, 0 | 3 | 4) => {
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(name)
                    .map_err(failed)?;
            }
            Err(_) => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use toolgate_runtime::{Effect, Grant, GrantScope, GrantStore, GrantTarget, Lookup};

    use super::*;

    /// Grants stored before grants were filed by their keys are filed when the store opens: a
    /// lookup finds each where it would find it stored today; one that cannot be read answers
    /// nothing, as before.
    #[tokio::test]
    async fn grants_stored_before_keys_are_filed_when_the_store_opens() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolgate.db");
        let grants = [
            Grant::new(
                Effect::Allow,
                "bash",
                GrantTarget::Command {
                    prefix: vec!["git".into(), "push".into()],
                    exact: false,
                },
                GrantScope::Workspace {
                    root: "/ws/".into(),
                },
                "alice",
            ),
            Grant::new(
                Effect::Deny,
                "bash",
                GrantTarget::Command {
                    prefix: vec!["rm".into()],
                    exact: true,
                },
                GrantScope::Session {
                    session: "s1".into(),
                },
                "alice",
            ),
        ];
        {
            let mut connection = Connection::open(&path).unwrap();
            migrate(&mut connection, GRANT_KEYS as usize - 1).unwrap();
            for grant in &grants {
                connection
                    .execute(
                        "INSERT INTO grants (id, tool, uses_left, body, created) \
                         VALUES (?, ?, NULL, ?, ?)",
                        (
                            &grant.id,
                            &grant.tool,
                            serde_json::to_string(grant).unwrap(),
                            rfc3339(grant.created_at),
                        ),
                    )
                    .unwrap();
            }
            connection
                .execute(
                    "INSERT INTO grants (id, tool, uses_left, body, created) \
                     VALUES ('unreadable', 'bash', NULL, '{', '2026-01-01T00:00:00Z')",
                    [],
                )
                .unwrap();
        }
        let store = crate::SqliteStore::open(&path).await.unwrap();
        let lookup = Lookup {
            tool: "bash".into(),
            scopes: vec!["s:s1".into(), "w:/ws".into(), "u".into()],
            targets: vec![String::new(), "git".into()],
        };
        let mut found: Vec<String> = store
            .applying(&lookup)
            .await
            .unwrap()
            .into_iter()
            .map(|g| g.id)
            .collect();
        found.sort();
        let mut expected = [grants[0].id.clone(), grants[1].id.clone()];
        expected.sort();
        assert_eq!(found, expected);
        for grant in &grants {
            assert!(lookup.admits(grant));
        }
    }
}
