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
                grants_read(&*store, None).await;
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
            grants_read(&*store, Some(&url)).await;
            println!(
                "  the engine's floor for 3 rows     p50 {three:>8.1} µs   = {:.2}×   (BEGIN, three \
                 one-row inserts and COMMIT sent in one round trip on a bare connection)",
                three / baseline
            );
        });
    }
}

/// What reading the grants an ask may use costs (every ask consults them), with the one that
/// answers it stored, then with 10,000 other active grants of the tool besides — 7,000 of other
/// sessions, 1,000 of other commands in the session, 1,000 of other workspaces, 1,000 of the
/// user's for other commands: the lookup a decision makes (by the grants' keys), next to
/// reading every grant of the tool.
///
/// On PostgreSQL (`url` given), the statistics are brought up to date first, as autovacuum keeps
/// them (it analyses a table whose rows changed by a tenth, within a minute): without them, the
/// planner's generic plan for the lookup reads every grant of the tool.
async fn grants_read(store: &dyn Store, url: Option<&str>) {
    use toolgate_runtime::{Effect, Grant, GrantScope, GrantTarget, Lookup};
    let grant = |words: [&str; 2], scope: GrantScope| {
        Grant::new(
            Effect::Allow,
            "bench-tool",
            GrantTarget::Command {
                prefix: words.iter().map(|w| (*w).to_owned()).collect(),
                exact: false,
            },
            scope,
            "bench",
        )
    };
    let session = |name: &str| GrantScope::Session {
        session: name.to_owned(),
    };
    let lookup = Lookup {
        tool: "bench-tool".into(),
        scopes: vec!["s:s-0".into(), "w:/srv/here".into(), "u".into()],
        targets: vec![String::new(), "git".into()],
    };
    // Each kind of read on its own (reading every grant fills the page cache with them, which
    // the lookup then pays for).
    let timed = async |store: &dyn Store| {
        let (mut keyed, mut whole) = (Vec::new(), Vec::new());
        for _ in 0..500 {
            let started = Instant::now();
            let grants = store.applying(&lookup).await.unwrap();
            keyed.push(started.elapsed());
            assert_eq!(grants.len(), 1);
        }
        for _ in 0..100 {
            let started = Instant::now();
            let grants = store.for_tool("bench-tool").await.unwrap();
            whole.push(started.elapsed());
            assert!(!grants.is_empty());
        }
        (median(keyed), median(whole))
    };
    store
        .insert(grant(["git", "push"], session("s-0")))
        .await
        .unwrap();
    let (one, one_whole) = timed(store).await;
    let mut others = Vec::new();
    for i in 0..7_000 {
        others.push(grant(["git", "push"], session(&format!("other-{i}"))));
    }
    for i in 0..1_000 {
        others.push(grant([&format!("tool{i}"), "run"], session("s-0")));
        others.push(grant(
            ["git", "push"],
            GrantScope::Workspace {
                root: format!("/srv/ws-{i}").into(),
            },
        ));
        others.push(grant([&format!("prog{i}"), "x"], GrantScope::User));
    }
    for chunk in others.chunks(500) {
        store
            .commit(Batch {
                grants: chunk.to_vec(),
                ..Batch::default()
            })
            .await
            .unwrap();
    }
    if let Some(url) = url {
        analyze(url).await;
    }
    let (many, many_whole) = timed(store).await;
    println!(
        "  an ask's grants looked up, 1 stored p50 {one:>8.1} µs; 10,001 stored p50 {many:>8.1} µs = {:.2}×",
        many / one
    );
    println!(
        "  … every grant of the tool read    p50 {one_whole:>8.1} µs; 10,001 stored p50 {many_whole:>8.1} µs = {:.0}×",
        many_whole / one_whole
    );
}

/// Brings the grants' statistics up to date, as autovacuum does.
async fn analyze(url: &str) {
    postgres::execute(url, "ANALYZE grants").await;
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
