//! The SQLite store: what is written is read back, across reopening, and concurrent writers
//! never lose or duplicate anything.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::sync::Arc;

use serde_json::json;
use toolgate_runtime::{Effect, Grant, GrantScope, GrantStore, GrantTarget};
use toolgate_store::{
    DecisionRow, DecisionStatus, EventFilter, EventRecord, JsonText, PendingRecord, SqliteStore,
    Store,
};

async fn open(dir: &tempfile::TempDir) -> SqliteStore {
    SqliteStore::open(&dir.path().join("toolgate.db"))
        .await
        .unwrap()
}

fn event(kind: &str, session: &str) -> EventRecord {
    EventRecord::new(kind, json!({"session": session, "note": kind}))
}

#[tokio::test]
async fn events_come_back_in_order_filtered_and_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let seqs = store
        .append(&[event("a", "s1"), event("b", "s2"), event("c", "s1")])
        .await
        .unwrap();
    assert_eq!(seqs, [1, 2, 3]);
    assert_eq!(store.append(&[event("d", "s2")]).await.unwrap(), [4]);
    store.close().await;
    drop(store);

    let store = open(&dir).await;
    assert_eq!(store.last_seq().await.unwrap(), 4);
    let all = store
        .events_after(0, &EventFilter::default(), 100)
        .await
        .unwrap();
    let kinds: Vec<&str> = all.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["a", "b", "c", "d"]);
    assert_eq!(
        all[0].body.to_value().unwrap()["schema"],
        toolgate_runtime::EVENT_SCHEMA
    );
    // Served with its number first, and the body as it was written.
    let served: serde_json::Value = serde_json::from_str(&all[2].served()).unwrap();
    let mut expected = all[2].body.to_value().unwrap();
    expected["seq"] = json!(3);
    assert_eq!(served, expected);
    assert!(all[2].served().starts_with(r#"{"seq":3,""#));
    let s1 = EventFilter {
        session: Some("s1".into()),
        ..EventFilter::default()
    };
    let after_first = store.events_after(1, &s1, 100).await.unwrap();
    assert_eq!(after_first.len(), 1);
    assert_eq!(after_first[0].kind, "c");
    let kinds = EventFilter {
        kinds: vec!["b".into(), "d".into()],
        ..EventFilter::default()
    };
    assert_eq!(store.events_after(0, &kinds, 1).await.unwrap()[0].kind, "b");
}

#[tokio::test]
async fn a_request_is_closed_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let request = PendingRecord {
        id: "r1".into(),
        kind: "permission".into(),
        session: Some("s".into()),
        created: "2026-11-22T00:00:00.000000Z".into(),
        request: json!({"tool": "delete"}),
    };
    let opened = store
        .open_request(
            &request,
            &EventRecord::new("permission_requested", json!({"id": "r1"})),
        )
        .await
        .unwrap();
    assert_eq!(
        store.pending().await.unwrap(),
        std::slice::from_ref(&request)
    );
    assert!(
        store
            .open_request(&request, &event("again", "s"))
            .await
            .is_err(),
        "an id is pending once"
    );
    let resolved = EventRecord::new("request_resolved", json!({"request_id": "r1"}));
    let closed = store.close_request("r1", &resolved).await.unwrap();
    assert_eq!(closed, Some(opened + 1), "the failed open wrote no event");
    assert_eq!(store.close_request("r1", &resolved).await.unwrap(), None);
    assert!(store.pending().await.unwrap().is_empty());
    let by_request = EventFilter {
        request_id: Some("r1".into()),
        ..EventFilter::default()
    };
    assert_eq!(
        store.events_after(0, &by_request, 10).await.unwrap().len(),
        2
    );
}

#[tokio::test]
async fn decisions_and_sessions_are_upserted() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let mut row = DecisionRow {
        id: "d1".into(),
        status: DecisionStatus::Pending,
        call: json!({"tool": "t"}),
        result: JsonText::of(&json!({"decision": "ask"})).unwrap(),
        created: "2026-11-22T00:00:00.000000Z".into(),
        updated: "2026-11-22T00:00:00.000000Z".into(),
    };
    store.put_decision(&row).await.unwrap();
    row.status = DecisionStatus::Decided;
    row.result = JsonText::of(&json!({"decision": "allow"})).unwrap();
    row.updated = "2026-11-22T00:00:05.000000Z".into();
    // An update keeps the call and creation time the decision was created with.
    let update = DecisionRow {
        call: serde_json::Value::Null,
        created: "ignored".into(),
        ..row.clone()
    };
    store.put_decision(&update).await.unwrap();
    assert_eq!(store.decision("d1").await.unwrap(), Some(row));
    assert_eq!(store.decision("nope").await.unwrap(), None);

    store
        .put_session("s1", &json!({"id": "s1", "v": 1}))
        .await
        .unwrap();
    store
        .put_session("s1", &json!({"id": "s1", "v": 2}))
        .await
        .unwrap();
    store.put_session("s2", &json!({"id": "s2"})).await.unwrap();
    assert_eq!(store.session("s1").await.unwrap().unwrap().snapshot["v"], 2);
    assert_eq!(store.sessions().await.unwrap().len(), 2);
}

fn grant(uses: Option<u32>) -> Grant {
    let mut grant = Grant::new(
        Effect::Allow,
        "bash",
        GrantTarget::Command {
            prefix: vec!["git".into(), "push".into()],
            exact: false,
        },
        GrantScope::Session {
            session: "s".into(),
        },
        "alice",
    );
    grant.uses_left = uses;
    grant
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grants_are_stored_spent_exactly_and_revoked() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(open(&dir).await);
    let counted = grant(Some(10));
    let unlimited = grant(None);
    store.insert(counted.clone()).await.unwrap();
    store.insert(unlimited.clone()).await.unwrap();
    assert_eq!(store.for_tool("bash").await.unwrap().len(), 2);
    assert!(store.for_tool("other").await.unwrap().is_empty());

    let spenders: Vec<_> = (0..40)
        .map(|_| {
            let store = Arc::clone(&store);
            let id = counted.id.clone();
            tokio::spawn(async move { store.use_once(&id).await.unwrap() })
        })
        .collect();
    let mut spent = 0;
    for spender in spenders {
        spent += usize::from(spender.await.unwrap());
    }
    assert_eq!(spent, 10, "ten uses, spent exactly once each");
    assert!(store.use_once(&unlimited.id).await.unwrap());
    let listed = store.list().await.unwrap();
    let back = listed.iter().find(|g| g.id == counted.id).unwrap();
    assert_eq!(back.uses_left, Some(0));
    assert_eq!(back.target, counted.target);
    assert_eq!(back.created_by, "alice");
    assert!(store.revoke(&counted.id).await.unwrap());
    assert!(!store.revoke(&counted.id).await.unwrap());
    assert_eq!(store.list().await.unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_appends_get_distinct_gapless_sequence_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(open(&dir).await);
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let mut seqs = Vec::new();
                for i in 0..25 {
                    seqs.extend(
                        store
                            .append(&[event(&format!("w{w}-{i}"), "s")])
                            .await
                            .unwrap(),
                    );
                }
                seqs
            })
        })
        .collect();
    let mut all = Vec::new();
    for writer in writers {
        all.extend(writer.await.unwrap());
    }
    all.sort_unstable();
    assert_eq!(all, (1..=200).collect::<Vec<i64>>());
}

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

#[tokio::test]
async fn a_batch_stands_or_falls_together() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let row = DecisionRow {
        id: "d1".into(),
        status: DecisionStatus::Decided,
        call: json!({"tool": "t"}),
        result: JsonText::of(&json!({"decision": "allow"})).unwrap(),
        created: "2026-11-22T00:00:00.000000Z".into(),
        updated: "2026-11-22T00:00:00.000000Z".into(),
    };
    // Closing a request that is not pending: nothing of the batch is written.
    let refused = store
        .commit(toolgate_store::Batch {
            close: Some("nope".into()),
            events: vec![event("answered", "s")],
            decision: Some(row.clone()),
            grants: vec![grant(None)],
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(refused, toolgate_store::Committed::NotPending);
    assert_eq!(store.last_seq().await.unwrap(), 0);
    assert_eq!(store.decision("d1").await.unwrap(), None);
    assert!(store.list().await.unwrap().is_empty());

    let written = store
        .commit(toolgate_store::Batch {
            events: vec![event("decided", "s"), event("granted", "s")],
            decision: Some(row.clone()),
            grants: vec![grant(None)],
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(written, toolgate_store::Committed::Written(vec![1, 2]));
    assert_eq!(store.decision("d1").await.unwrap(), Some(row));
    assert_eq!(store.list().await.unwrap().len(), 1);
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
async fn a_database_has_one_owner_at_a_time() {
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
    // The first one is untouched, and other programs can still read the database: the commit
    // reaches it from the journal without any read through the store.
    first.append(&[event("a", "s")]).await.unwrap();
    let reader = rusqlite::Connection::open(dir.path().join("toolgate.db")).unwrap();
    let mut count = 0;
    for _ in 0..500 {
        count = reader
            .query_row("SELECT COUNT(*) FROM events", [], |row| {
                row.get::<_, i64>(0)
            })
            .unwrap();
        if count == 1 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(count, 1, "applied in the background");
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
    for suffix in ["", "-wal", "-shm", ".journal", ".lock"] {
        assert_eq!(mode(suffix), 0o600, "toolgate.db{suffix}");
    }
    store.close().await;
    drop(store);
    for suffix in ["", ".journal"] {
        let name = format!("{}{suffix}", path.display());
        std::fs::set_permissions(&name, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let store = SqliteStore::open(&path).await.unwrap();
    assert_eq!(store.last_seq().await.unwrap(), 1);
    for suffix in ["", ".journal"] {
        assert_eq!(mode(suffix), 0o600, "toolgate.db{suffix} again");
    }
}

/// A page of the pending list is read without the rest, with how many are pending in all.
#[tokio::test]
async fn the_pending_list_is_read_a_page_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    for (id, session) in [("r1", "s"), ("r2", "t"), ("r3", "s")] {
        let request = PendingRecord {
            id: id.into(),
            kind: "decision".into(),
            session: Some(session.into()),
            created: format!("2026-11-26T00:00:0{}.000000Z", &id[1..]),
            request: json!({}),
        };
        store
            .open_request(&request, &event("permission_requested", id))
            .await
            .unwrap();
    }
    let ids = |page: &[PendingRecord]| page.iter().map(|p| p.id.clone()).collect::<Vec<_>>();
    let (page, total) = store.pending_page(None, 2).await.unwrap();
    assert_eq!((ids(&page), total), (vec!["r1".into(), "r2".into()], 3));
    let (page, total) = store.pending_page(Some("s"), 1).await.unwrap();
    assert_eq!((ids(&page), total), (vec!["r1".to_owned()], 2));
    let (page, total) = store.pending_page(Some("none"), 5).await.unwrap();
    assert_eq!((page.len(), total), (0, 0));
}
