//! The SQLite store: what is written is read back, across reopening, and concurrent writers
//! never lose or duplicate anything.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::sync::Arc;

use common::suite::{self, Engine, event};
use serde_json::json;
use toolgate_store::{EventRecord, SqliteStore, Store, StoreError};

/// A SQLite store in a folder of its own.
struct Sqlite(tempfile::TempDir);

#[async_trait::async_trait]
impl Engine for Sqlite {
    async fn try_open(&self) -> Result<Arc<dyn Store>, StoreError> {
        Ok(Arc::new(
            SqliteStore::open(&self.0.path().join("toolgate.db")).await?,
        ))
    }
}

async fn open(dir: &tempfile::TempDir) -> SqliteStore {
    SqliteStore::open(&dir.path().join("toolgate.db"))
        .await
        .unwrap()
}

/// Each of the store's cases, as a test of its own on a new SQLite store.
macro_rules! on_sqlite {
    ($($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                suite::$name(&Sqlite(tempfile::tempdir().unwrap())).await;
            }
        )*
    };
}

suite::each_case!(on_sqlite);

#[tokio::test]
async fn a_database_from_a_newer_toolgate_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolgate.db");
    let store = SqliteStore::open(&path).await.unwrap();
    store.close().await;
    // Pretend a newer toolgate migrated it further.
    drop(store);
    let connection = rusqlite::Connection::open(&path).unwrap();
    connection
        .execute(
            "INSERT INTO schema_migrations (version, applied) VALUES (99, 'x')",
            [],
        )
        .unwrap();
    drop(connection);
    let error = SqliteStore::open(&path).await.unwrap_err();
    assert!(
        error.to_string().contains("newer than this toolgate knows"),
        "{error}"
    );
}

/// The write-ahead log is folded into the database as it grows (SQLite's checkpoints), so it
/// stays bounded however many commits come.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_write_ahead_log_stays_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolgate.db");
    let store = SqliteStore::open_with(&path, toolgate_store::Durability::Process)
        .await
        .unwrap();
    let body = "x".repeat(2000);
    for i in 0..5000 {
        store
            .append(&[EventRecord::new("custom", json!({"i": i, "pad": body}))])
            .await
            .unwrap();
    }
    let wal = std::fs::metadata(dir.path().join("toolgate.db-wal"))
        .unwrap()
        .len();
    // Without checkpoints the log would hold every commit's pages: over 40 MB here.
    assert!(wal < 16 * 1024 * 1024, "the log is {wal} bytes");
    assert_eq!(store.last_seq().await.unwrap(), 5000);
    drop(store);
    let reopened = SqliteStore::open(&path).await.unwrap();
    assert_eq!(reopened.last_seq().await.unwrap(), 5000);
}

/// One store per database: a second one (another daemon on the same data directory) is refused
/// while the first is open, with a message that says what to do, and allowed once it is gone.
#[tokio::test]
async fn a_second_store_is_refused_at_once_and_other_programs_may_read() {
    let dir = tempfile::tempdir().unwrap();
    let first = open(&dir).await;
    let started = std::time::Instant::now();
    let error = SqliteStore::open(&dir.path().join("toolgate.db"))
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("in use by another toolgate"),
        "{error}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "refused at once"
    );
    // The first one is untouched, and other programs can still read the database: a commit
    // that returned is in it.
    first.append(&[event("a", "s")]).await.unwrap();
    let reader = rusqlite::Connection::open(dir.path().join("toolgate.db")).unwrap();
    let count = reader
        .query_row("SELECT COUNT(*) FROM events", [], |row| {
            row.get::<_, i64>(0)
        })
        .unwrap();
    assert_eq!(count, 1);
    drop(first);
    let second = open(&dir).await;
    assert_eq!(second.last_seq().await.unwrap(), 1);
}

/// The audit log holds every call's arguments: the database's files are its owner's alone,
/// made so, or made so again when an older toolgate (or a restore) left them readable.
#[tokio::test]
async fn the_database_files_are_readable_by_their_owner_alone() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolgate.db");
    let mode = |suffix: &str| {
        let name = format!("{}{suffix}", path.display());
        std::fs::metadata(&name).unwrap().permissions().mode() & 0o777
    };
    let store = SqliteStore::open(&path).await.unwrap();
    store.append(&[event("first", "s")]).await.unwrap();
    let _ = store.last_seq().await.unwrap();
    for suffix in ["", "-wal", "-shm", ".lock"] {
        assert_eq!(mode(suffix), 0o600, "toolgate.db{suffix}");
    }
    store.close().await;
    drop(store);
    for suffix in ["", ".lock"] {
        let name = format!("{}{suffix}", path.display());
        std::fs::set_permissions(&name, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let store = SqliteStore::open(&path).await.unwrap();
    assert_eq!(store.last_seq().await.unwrap(), 1);
    for suffix in ["", ".lock"] {
        assert_eq!(mode(suffix), 0o600, "toolgate.db{suffix} again");
    }
}
