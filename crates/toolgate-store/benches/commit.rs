//! What the store's commits cost, next to the cheapest write the engine does on the same kind of
//! connection in the same run (a one-row insert in autocommit mode): opening a request (its
//! pending row, event and decision) and closing one (the same three rows), on SQLite once per
//! durability, then on PostgreSQL (a server started in a temporary folder, as the tests do;
//! skipped when it is not installed).

#![allow(clippy::unwrap_used, clippy::indexing_slicing, missing_docs)]

use std::time::{Duration, Instant};

use serde_json::json;
use toolgate_store::{
    Batch, DecisionRow, DecisionStatus, Durability, EventRecord, JsonText, PendingRecord,
    PostgresStore, SqliteStore, Store,
};

#[path = "../tests/common/postgres.rs"]
mod postgres;

const N: usize = 2000;

fn median(mut samples: Vec<Duration>) -> f64 {
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1e6
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for durability in [Durability::Full, Durability::Process] {
        runtime.block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let baseline = baseline(dir.path(), durability);
            let store = SqliteStore::open_with(&dir.path().join("store.db"), durability)
                .await
                .unwrap();
            run(
                &format!("SQLite, durability {durability:?}"),
                &store,
                baseline,
            )
            .await;
            let three = sqlite_three_rows(dir.path(), durability).await;
            println!(
                "  the engine's floor for 3 rows     p50 {three:>8.1} µs   = {:.2}×   (BEGIN, the \
                 same three rows and COMMIT on a bare connection to a database of the store's schema)",
                three / baseline
            );
            let store = std::sync::Arc::new(store);
            concurrent(store.clone(), 1).await;
            concurrent(store.clone(), 8).await;
            if durability == Durability::Process {
                grants_read(&*store).await;
            }
        });
    }
    if let Some(cluster) = postgres::Cluster::start() {
        runtime.block_on(async {
            let url = cluster.create("bench").await;
            let (baseline, three) = postgres_baseline(&url).await;
            let store = PostgresStore::open(&url).await.unwrap();
            run("PostgreSQL 15 on a Unix socket", &store, baseline).await;
            let store = std::sync::Arc::new(store);
            concurrent(store.clone(), 1).await;
            concurrent(store.clone(), 8).await;
            grants_read(&*store).await;
            println!(
                "  the engine's floor for 3 rows     p50 {three:>8.1} µs   = {:.2}×   (BEGIN, three \
                 one-row inserts and COMMIT sent in one round trip on a bare connection)",
                three / baseline
            );
        });
    }
}

/// What reading a tool's grants costs (every ask consults them) with one grant of the tool
/// stored, then with 10,000 (lasting grants of 10,000 sessions): the read a decision makes when
/// many grants are active.
async fn grants_read(store: &dyn Store) {
    use toolgate_runtime::{Effect, Grant, GrantScope, GrantTarget};
    let grant = |session: String| {
        Grant::new(
            Effect::Allow,
            "bench-tool",
            GrantTarget::Command {
                prefix: vec!["git".into(), "push".into()],
                exact: false,
            },
            GrantScope::Session { session },
            "bench",
        )
    };
    let timed = async |store: &dyn Store| {
        let mut samples = Vec::new();
        for _ in 0..200 {
            let started = Instant::now();
            let grants = store.for_tool("bench-tool").await.unwrap();
            samples.push(started.elapsed());
            assert!(!grants.is_empty());
        }
        median(samples)
    };
    store.insert(grant("s-0".into())).await.unwrap();
    let one = timed(store).await;
    for batch in 0..100 {
        let grants = (0..100).map(|i| grant(format!("s-{batch}-{i}"))).collect();
        store
            .commit(Batch {
                grants,
                ..Batch::default()
            })
            .await
            .unwrap();
    }
    let many = timed(store).await;
    println!(
        "  a tool's grants read, 1 stored    p50 {one:>8.1} µs; 10,001 stored p50 {many:>8.1} µs = {:.0}×",
        many / one
    );
}

/// Requests opened and closed (two commits of three rows each) by `clients` tasks at once, for
/// a second: commits per second. The SQLite store's writer groups the commits waiting at once
/// into one transaction, so more clients share each write (and, with `Full`, each flush).
async fn concurrent(store: std::sync::Arc<dyn Store>, clients: usize) {
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut commits = 0u64;
                let mut i = 0;
                while started.elapsed() < Duration::from_secs(1) {
                    let id = format!("c{c}-{i}");
                    i += 1;
                    let open = Batch {
                        open: Some(PendingRecord {
                            id: id.clone(),
                            kind: "decision".into(),
                            session: Some("bench".into()),
                            created: "2026-11-22T00:00:00Z".into(),
                            request: json!({"tool": "pay", "args": {"n": i}}),
                        }),
                        events: vec![EventRecord::new(
                            "permission_requested",
                            json!({"request_id": id}),
                        )],
                        ..Batch::default()
                    };
                    store.commit(open).await.unwrap();
                    let close = Batch {
                        close: Some(id.clone()),
                        events: vec![EventRecord::new(
                            "permission_resolved",
                            json!({"request_id": id}),
                        )],
                        ..Batch::default()
                    };
                    store.commit(close).await.unwrap();
                    commits += 2;
                }
                commits
            })
        })
        .collect();
    let mut commits = 0;
    for task in tasks {
        commits += task.await.unwrap();
    }
    let rate = commits as f64 / started.elapsed().as_secs_f64();
    println!("  commits by {clients} client(s) at once     {rate:>8.0} /s");
}

/// A one-row insert in autocommit on a bare PostgreSQL connection; and a transaction of three
/// one-row inserts, pipelined (the least the same work as the store's commits costs).
async fn postgres_baseline(url: &str) -> (f64, f64) {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute("CREATE TABLE t (seq BIGSERIAL PRIMARY KEY, body TEXT)")
        .await
        .unwrap();
    let insert = client
        .prepare("INSERT INTO t (body) VALUES ($1)")
        .await
        .unwrap();
    let mut samples = Vec::with_capacity(N);
    for i in 0..N {
        let body = format!("{{\"i\": {i}}}");
        let started = Instant::now();
        client.execute(&insert, &[&body]).await.unwrap();
        samples.push(started.elapsed());
    }
    let (begin, commit) = (
        client.prepare("BEGIN").await.unwrap(),
        client.prepare("COMMIT").await.unwrap(),
    );
    let mut three = Vec::with_capacity(N);
    for i in 0..N {
        let body = format!("{{\"i\": {i}}}");
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 1] = [&body];
        let started = Instant::now();
        let (a, b, c, d, e) = tokio::join!(
            client.execute(&begin, &[]),
            client.execute(&insert, &params),
            client.execute(&insert, &params),
            client.execute(&insert, &params),
            client.execute(&commit, &[]),
        );
        for done in [a, b, c, d, e] {
            done.unwrap();
        }
        three.push(started.elapsed());
    }
    (median(samples), median(three))
}

/// The same three rows as opening a request writes (its pending row, event and decision, into
/// the store's own tables and indexes), in one transaction on a bare connection configured as
/// the store's writer: what SQLite alone costs for that work.
async fn sqlite_three_rows(dir: &std::path::Path, durability: Durability) -> f64 {
    let path = dir.join("floor.db");
    // The store's schema, made by the store.
    drop(SqliteStore::open_with(&path, durability).await.unwrap());
    let connection = rusqlite::Connection::open(&path).unwrap();
    let synchronous = match durability {
        Durability::Full => "FULL",
        Durability::Process => "NORMAL",
    };
    connection
        .pragma_update(None, "synchronous", synchronous)
        .unwrap();
    let mut samples = Vec::with_capacity(N);
    for i in 0..N {
        let id = format!("r{i}");
        let call = json!({"tool": "pay", "args": {"n": i}, "context": {"session": "bench"}});
        let request = json!({"call": call}).to_string();
        let event = json!({"type": "permission_requested", "request_id": id}).to_string();
        let result = json!({"id": id, "status": "pending"}).to_string();
        let started = Instant::now();
        connection.execute_batch("BEGIN IMMEDIATE").unwrap();
        connection
            .prepare_cached(
                "INSERT INTO pending (id, kind, session, created, request) VALUES (?, ?, ?, ?, ?)",
            )
            .unwrap()
            .execute((&id, "decision", "bench", "2026-11-22T00:00:00Z", &request))
            .unwrap();
        connection
            .prepare_cached(
                "INSERT INTO events (type, time, session, request_id, tool_call_id, body) \
                 VALUES (?, ?, ?, ?, ?, ?)",
            )
            .unwrap()
            .execute((
                "permission_requested",
                "2026-11-22T00:00:00Z",
                "bench",
                &id,
                None::<String>,
                &event,
            ))
            .unwrap();
        connection
            .prepare_cached(
                "INSERT INTO decisions (id, status, call, result, created, updated) \
                 VALUES (?, ?, ?, ?, ?, ?)",
            )
            .unwrap()
            .execute((
                &id,
                "pending",
                call.to_string(),
                &result,
                "2026-11-22T00:00:00Z",
                "2026-11-22T00:00:00Z",
            ))
            .unwrap();
        connection.execute_batch("COMMIT").unwrap();
        samples.push(started.elapsed());
    }
    median(samples)
}

/// A bare connection configured as the store's are.
fn baseline(dir: &std::path::Path, durability: Durability) -> f64 {
    let connection = rusqlite::Connection::open(dir.join("baseline.db")).unwrap();
    connection
        .pragma_update(None, "journal_mode", "WAL")
        .unwrap();
    let synchronous = match durability {
        Durability::Full => "FULL",
        Durability::Process => "NORMAL",
    };
    connection
        .pragma_update(None, "synchronous", synchronous)
        .unwrap();
    connection
        .execute(
            "CREATE TABLE t (seq INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT)",
            [],
        )
        .unwrap();
    let mut samples = Vec::with_capacity(N);
    for i in 0..N {
        let started = Instant::now();
        connection
            .prepare_cached("INSERT INTO t (body) VALUES (?)")
            .unwrap()
            .execute([format!("{{\"i\": {i}}}")])
            .unwrap();
        samples.push(started.elapsed());
    }
    median(samples)
}

async fn run(engine: &str, store: &dyn Store, baseline: f64) {
    let (mut opens, mut closes) = (Vec::with_capacity(N), Vec::with_capacity(N));
    for i in 0..N {
        let id = format!("r{i}");
        let call = json!({"tool": "pay", "args": {"n": i}, "context": {"session": "bench"}});
        let row = DecisionRow {
            id: id.clone(),
            status: DecisionStatus::Pending,
            call: call.clone(),
            result: JsonText::of(&json!({"id": id, "status": "pending"})).unwrap(),
            created: "2026-11-22T00:00:00Z".into(),
            updated: "2026-11-22T00:00:00Z".into(),
        };
        let open = Batch {
            open: Some(PendingRecord {
                id: id.clone(),
                kind: "decision".into(),
                session: Some("bench".into()),
                created: "2026-11-22T00:00:00Z".into(),
                request: json!({"call": call}),
            }),
            events: vec![EventRecord::new(
                "permission_requested",
                json!({"request_id": id}),
            )],
            decision: Some(row.clone()),
            ..Batch::default()
        };
        let started = Instant::now();
        store.commit(open).await.unwrap();
        opens.push(started.elapsed());
        let close = Batch {
            close: Some(id.clone()),
            events: vec![EventRecord::new(
                "permission_resolved",
                json!({"request_id": id}),
            )],
            decision: Some(DecisionRow {
                status: DecisionStatus::Decided,
                ..row
            }),
            ..Batch::default()
        };
        let started = Instant::now();
        store.commit(close).await.unwrap();
        closes.push(started.elapsed());
    }
    // The same closes, each after a 1 ms pause (as a daemon's answers come): caches go cold.
    let mut paused = Vec::with_capacity(N / 4);
    for i in 0..N / 4 {
        let id = format!("p{i}");
        store
            .commit(Batch {
                open: Some(PendingRecord {
                    id: id.clone(),
                    kind: "decision".into(),
                    session: Some("bench".into()),
                    created: "2026-11-22T00:00:00Z".into(),
                    request: json!({"i": i}),
                }),
                ..Batch::default()
            })
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(1)).await;
        let close = Batch {
            close: Some(id.clone()),
            events: vec![EventRecord::new(
                "permission_resolved",
                json!({"request_id": id}),
            )],
            ..Batch::default()
        };
        let started = Instant::now();
        store.commit(close).await.unwrap();
        paused.push(started.elapsed());
    }
    let paused = median(paused);
    let (open, close) = (median(opens), median(closes));
    println!("store commits, {engine} (one run; compare within it)");
    println!("  one-row insert, bare connection   p50 {baseline:>8.1} µs");
    println!(
        "  open a request (3 rows)           p50 {open:>8.1} µs   = {:.2}×",
        open / baseline
    );
    println!(
        "  close a request (3 rows)          p50 {close:>8.1} µs   = {:.2}×",
        close / baseline
    );
    println!(
        "  close a request after 1 ms idle   p50 {paused:>8.1} µs   = {:.2}×",
        paused / baseline
    );
}
