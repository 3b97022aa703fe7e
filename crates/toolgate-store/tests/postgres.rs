//! The PostgreSQL store keeps the same contract as the SQLite one: every case of the store's
//! suite, each on a new database of one real PostgreSQL server started for the test.

#![cfg(feature = "postgres")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::sync::Arc;

use common::postgres::Cluster;
use common::suite::{self, Engine, event};
use toolgate_store::{PostgresStore, Store, StoreError};

/// A PostgreSQL store on one database.
struct Postgres(String);

#[async_trait::async_trait]
impl Engine for Postgres {
    async fn try_open(&self) -> Result<Arc<dyn Store>, StoreError> {
        Ok(Arc::new(PostgresStore::open(&self.0).await?))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_contract_holds_on_postgresql() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    for (index, (name, case)) in suite::CASES.iter().enumerate() {
        let url = cluster.create(&format!("case{index}")).await;
        eprintln!("case: {name}");
        // A case that hangs fails, and names itself.
        tokio::time::timeout(std::time::Duration::from_secs(60), case(&Postgres(url)))
            .await
            .unwrap_or_else(|_| panic!("{name} did not finish in 60 s"));
    }

    // A database whose transactions are serializable by default: the store's are read
    // committed all the same (concurrent spends, closes and appends wait instead of failing).
    for (name, case) in suite::CASES.iter().filter(|(name, _)| {
        name.starts_with("grants_are")
            || name.starts_with("racing")
            || name.starts_with("concurrent")
    }) {
        let url = cluster.create(&format!("serializable_{name}")).await;
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        let connection = tokio::spawn(connection);
        client
            .batch_execute(&format!(
                "ALTER DATABASE \"serializable_{name}\" SET default_transaction_isolation = 'serializable'"
            ))
            .await
            .unwrap();
        drop(client);
        let _ = connection.await;
        eprintln!("case, serializable by default: {name}");
        tokio::time::timeout(std::time::Duration::from_secs(60), case(&Postgres(url)))
            .await
            .unwrap_or_else(|_| panic!("{name} did not finish in 60 s"));
    }

    // What is particular to PostgreSQL.
    let url = cluster.create("newer").await;
    let store = PostgresStore::open(&url).await.unwrap();
    store.close().await;
    drop(store);
    let (client, connection) = common::postgres::connect(&url).await;
    client
        .batch_execute("INSERT INTO schema_migrations (version, applied) VALUES (99, 'x')")
        .await
        .unwrap();
    let error = PostgresStore::open(&url).await.unwrap_err();
    assert!(
        error.to_string().contains("newer than this toolgate knows"),
        "{error}"
    );
    drop(client);
    let _ = connection.await;

    // Text PostgreSQL cannot hold (a NUL, which SQLite's can) is kept as U+FFFD, the same way
    // where it is looked up: the commit (perhaps a batch of events) is not lost for it.
    let url = cluster.create("nul").await;
    let store = PostgresStore::open(&url).await.unwrap();
    let mut odd = event("odd", "s");
    odd.session = Some("a\0b".into());
    assert_eq!(
        store.append(&[odd, event("fine", "s")]).await.unwrap(),
        [1, 2]
    );
    let by_session = toolgate_store::EventFilter {
        session: Some("a\0b".into()),
        ..Default::default()
    };
    let found = store.events_after(0, &by_session, 10).await.unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].session.as_deref(), Some("a\u{FFFD}b"));

    // Grants stored before grants were filed by their keys are filed when the store opens
    // (the database taken back to the schema before, with a grant stored then).
    let url = cluster.create("unfiled").await;
    let store = PostgresStore::open(&url).await.unwrap();
    store.close().await;
    drop(store);
    let (client, connection) = common::postgres::connect(&url).await;
    let old = toolgate_runtime::Grant::new(
        toolgate_runtime::Effect::Allow,
        "bash",
        toolgate_runtime::GrantTarget::Command {
            prefix: vec!["git".into(), "push".into()],
            exact: false,
        },
        toolgate_runtime::GrantScope::Workspace {
            root: "/ws/".into(),
        },
        "alice",
    );
    client
        .batch_execute(
            "DROP INDEX grants_by_keys; ALTER TABLE grants DROP COLUMN scope_key, \
             DROP COLUMN target_key; CREATE INDEX grants_by_tool ON grants (tool); \
             DROP TABLE tokens; DROP INDEX decisions_by_created; \
             DELETE FROM schema_migrations WHERE version >= 4",
        )
        .await
        .unwrap();
    client
        .execute(
            "INSERT INTO grants (id, tool, uses_left, body, created) VALUES ($1, $2, NULL, $3, $4)",
            &[
                &old.id,
                &old.tool,
                &serde_json::to_string(&old).unwrap(),
                &"2026-01-01T00:00:00Z",
            ],
        )
        .await
        .unwrap();
    drop(client);
    let _ = connection.await;
    let store = PostgresStore::open(&url).await.unwrap();
    let lookup = toolgate_runtime::Lookup {
        tool: "bash".into(),
        scopes: vec!["s:s1".into(), "w:/ws".into(), "u".into()],
        targets: vec![String::new(), "git".into()],
    };
    let found = toolgate_runtime::GrantStore::applying(&store, &lookup)
        .await
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].id, old.id);
    store.close().await;

    // Nothing to connect to: a clear error, at once.
    let error = PostgresStore::open(&cluster.url("missing"))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("cannot connect"), "{error}");
    let error = PostgresStore::open("postgres://[bad").await.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("not a PostgreSQL connection string"),
        "{error}"
    );
}

/// Two replicas on one database: each sees what the other wrote, hears the other's changes as
/// they commit (not its own), closes a request the other opened exactly once between them, and
/// tells a stopped replica's requests from a running one's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_one_database() {
    use toolgate_store::{Change, PendingRecord};
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let url = cluster.create("shared").await;
    let a = PostgresStore::open(&url).await.unwrap();
    let b = PostgresStore::open(&url).await.unwrap();
    assert_ne!(a.replica(), b.replica());
    let mut heard_by_a = a.changes().unwrap();
    let mut heard_by_b = b.changes().unwrap();
    let next = |receiver: &mut tokio::sync::broadcast::Receiver<Change>| {
        let mut receiver = receiver.resubscribe();
        async move {
            tokio::time::timeout(std::time::Duration::from_secs(10), receiver.recv())
                .await
                .expect("a change is heard")
                .unwrap()
        }
    };
    let request = |id: &str| PendingRecord {
        id: id.into(),
        kind: "decision".into(),
        session: Some("s".into()),
        created: "2026-11-29T00:00:00.000000Z".into(),
        request: serde_json::json!({"tool": "pay"}),
    };

    // Opened on A: B hears it, and lists it.
    let hearing = next(&mut heard_by_b);
    let seq = a
        .open_request(&request("r1"), &event("permission_requested", "s"))
        .await
        .unwrap();
    assert_eq!(hearing.await, Change::Committed { seq, closed: None });
    assert_eq!(b.pending().await.unwrap().len(), 1);
    assert_eq!(
        b.still_pending(&["r1".into(), "nope".into()])
            .await
            .unwrap(),
        ["r1"]
    );
    // A running replica's request is nobody's orphan.
    assert!(b.orphaned().await.unwrap().is_empty());

    // Closed on B, raced by A: one wins; A hears B's close (and not its own commits).
    let hearing = next(&mut heard_by_a);
    let (by_a, by_b) = (event("resolved-a", "s"), event("resolved-b", "s"));
    let (on_a, on_b) = tokio::join!(a.close_request("r1", &by_a), b.close_request("r1", &by_b),);
    let (on_a, on_b) = (on_a.unwrap(), on_b.unwrap());
    assert_eq!(
        usize::from(on_a.is_some()) + usize::from(on_b.is_some()),
        1,
        "one close wins: {on_a:?} {on_b:?}"
    );
    if let Some(seq) = on_b {
        assert_eq!(
            hearing.await,
            Change::Committed {
                seq,
                closed: Some("r1".into())
            }
        );
    }
    assert!(a.still_pending(&["r1".into()]).await.unwrap().is_empty());

    // Both append at once: one log, no gaps.
    let (x, y) = tokio::join!(
        async {
            let mut seqs = Vec::new();
            for i in 0..50 {
                seqs.extend(a.append(&[event(&format!("a{i}"), "s")]).await.unwrap());
            }
            seqs
        },
        async {
            let mut seqs = Vec::new();
            for i in 0..50 {
                seqs.extend(b.append(&[event(&format!("b{i}"), "s")]).await.unwrap());
            }
            seqs
        },
    );
    let mut all: Vec<i64> = x.into_iter().chain(y).collect();
    all.sort_unstable();
    let first = all[0];
    assert_eq!(all, (first..first + 100).collect::<Vec<_>>());

    // B stops with a request waiting: it is an orphan to A once B's connection is gone.
    b.open_request(&request("r2"), &event("permission_requested", "s"))
        .await
        .unwrap();
    assert!(a.orphaned().await.unwrap().is_empty());
    b.close().await;
    drop(b);
    // Taken for stopped once its lock is missing at two looks 10 s apart.
    let mut orphans = Vec::new();
    for _ in 0..800 {
        orphans = a.orphaned().await.unwrap();
        if !orphans.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(
        orphans.iter().map(|p| p.id.as_str()).collect::<Vec<_>>(),
        ["r2"]
    );
}

/// A database reached over the network is spoken to over TLS, its certificate checked: with
/// `sslmode=require` and the server's authority (`sslrootcert`), every connection the store
/// makes is encrypted (the server says so); a server no authority the store trusts vouches for
/// is refused, not spoken to in the clear.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_over_the_network_is_spoken_to_over_tls_and_its_certificate_checked() {
    let Some(cluster) = Cluster::start_tls() else {
        return;
    };
    cluster.create("tls").await;
    let certificate = cluster.certificate();
    let url = cluster.tcp_url("tls", "require", Some(&certificate));
    let store = PostgresStore::open(&url).await.unwrap();
    store.append(&[event("over-tls", "s")]).await.unwrap();
    assert_eq!(store.last_seq().await.unwrap(), 1);

    let (admin, connection) =
        tokio_postgres::connect(&cluster.url("postgres"), tokio_postgres::NoTls)
            .await
            .unwrap();
    tokio::spawn(connection);
    let row = admin
        .query_one(
            "SELECT count(*) FILTER (WHERE s.ssl), count(*) FILTER (WHERE NOT s.ssl) \
             FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.datname = 'tls'",
            &[],
        )
        .await
        .unwrap();
    let (encrypted, clear): (i64, i64) = (row.get(0), row.get(1));
    assert!(encrypted >= 2, "the pool's and the listener's: {encrypted}");
    assert_eq!(clear, 0);
    drop(store);

    // The system's authorities do not vouch for a self-signed server: refused.
    let error = PostgresStore::open(&cluster.tcp_url("tls", "require", None))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("cannot connect"), "{error}");
    assert!(error.to_lowercase().contains("certificate"), "{error}");
    // A certificate file that is not one: said.
    let error = PostgresStore::open(&cluster.tcp_url(
        "tls",
        "require",
        Some(std::path::Path::new("/nonexistent/ca.pem")),
    ))
    .await
    .unwrap_err()
    .to_string();
    assert!(error.contains("sslrootcert"), "{error}");
}
