//! The daemon under load, over real loopback TCP, all in one run so the figures compare:
//!
//! - a trivial request (`GET /api/health`, keep-alive), back to back;
//! - an approval round trip: a call waits (`GET /api/decisions/{id}?wait=30` in flight), an
//!   answer is posted, the waiting call is released — timed from the answer's send to the
//!   release's last byte (each request is written out before its clock starts, and each
//!   response parsed after it stops: what is timed is the daemon and the loopback, as in the
//!   trivial request it is compared with, not the client's JSON). The wait must be in flight
//!   first, so each answer follows a 1 ms pause; the baseline it is compared with is a trivial
//!   request after the same pause, interleaved with the round trips (an idle pause changes
//!   what the next request costs on a shared machine, in both directions); and next to a
//!   trivial request plus one bare commit of the same engine (a one-row insert in autocommit
//!   on a bare connection configured as the store's, after the same pause), the engine's own
//!   floor;
//! - sustained decisions: concurrent clients posting calls the policy decides at once, each
//!   committed (with `Durability::Full`, flushed to the disk) before its answer; the store's
//!   writer groups the commits waiting at once into one transaction;
//! - 10,000 pending requests held, and the memory each costs;
//! - a decision a stored grant answers, with that grant alone in the store and with 10,000
//!   other active grants besides (the target: within 1.2×), on two daemons side by side.
//!
//! The daemon runs on a runtime of its own, as `toolgate serve` does; the clients run on
//! another, as other programs would.
//!
//! Each figure is measured twice: with `Durability::Full` (every commit flushed to the disk
//! before it returns) and `Durability::Process`, the default (commits survive the daemon's
//! crash; SQLite's write-ahead log is flushed when it is folded into the database, so a power
//! loss costs the last commits before it).
//!
//! Then once more on PostgreSQL (a server the bench starts in a temporary folder, as the tests
//! do; skipped when PostgreSQL is not installed), with sustained decisions also measured across
//! two daemons sharing the database.
//!
//! Run with `cargo bench -p toolgate-server --bench daemon`; `TOOLGATE_BENCH_DURABILITY=process`
//! (or `full`) measures one SQLite durability only, `TOOLGATE_BENCH_STORE=sqlite` (or
//! `postgres`) one engine only; `TOOLGATE_BENCH_ROUND_TRIP_ONLY=1` stops after the round trips.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::print_stdout,
    clippy::cast_precision_loss
)]

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use toolgate_policy::Policy;
use toolgate_server::{Server, ServerConfig};

#[path = "../../toolgate-store/tests/common/postgres.rs"]
mod postgres;

/// What the daemon keeps its store on.
#[derive(Clone, Debug, PartialEq)]
enum Engine {
    Sqlite(toolgate_store::Durability),
    /// A PostgreSQL connection string.
    Postgres(String),
}

const POLICY: &str = r#"
version = 1
mode = "approve-all"
[[rule]]
name = "ask-pay"
decision = "ask"
tool = "pay"

[[rule]]
name = "ask-push"
decision = "ask"
tool = "Bash"
command = ["git push"]
grant = "command"
"#;

/// A keep-alive HTTP/1.1 connection.
struct Connection {
    stream: BufReader<TcpStream>,
    host: String,
    token: String,
}

impl Connection {
    async fn open(address: &str, token: &str) -> Connection {
        let stream = TcpStream::connect(address).await.unwrap();
        stream.set_nodelay(true).unwrap();
        Connection {
            stream: BufReader::new(stream),
            host: address.to_owned(),
            token: token.to_owned(),
        }
    }

    async fn send(&mut self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        self.write(method, path, body).await;
        self.read().await
    }

    async fn write(&mut self, method: &str, path: &str, body: Option<&Value>) {
        let request = self.request(method, path, body);
        self.write_raw(&request).await;
    }

    /// The bytes of a request, built ahead of the moment it is sent.
    fn request(&self, method: &str, path: &str, body: Option<&Value>) -> Vec<u8> {
        let payload = body.map(Value::to_string).unwrap_or_default();
        format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{payload}",
            self.host,
            self.token,
            payload.len()
        )
        .into_bytes()
    }

    async fn write_raw(&mut self, request: &[u8]) {
        self.stream.get_mut().write_all(request).await.unwrap();
    }

    async fn read(&mut self) -> (u16, Value) {
        let (status, body) = self.read_raw().await;
        let body = if body.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&body).unwrap()
        };
        (status, body)
    }

    /// A response's status and body, as they arrived (read, not parsed).
    async fn read_raw(&mut self) -> (u16, Vec<u8>) {
        let mut line = String::new();
        self.stream.read_line(&mut line).await.unwrap();
        let status: u16 = line.split(' ').nth(1).unwrap().parse().unwrap();
        let mut length = 0;
        loop {
            line.clear();
            self.stream.read_line(&mut line).await.unwrap();
            if line == "\r\n" {
                break;
            }
            if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = value.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        self.stream.read_exact(&mut body).await.unwrap();
        (status, body)
    }
}

/// Decisions the policy makes at once, posted by `clients` clients spread over `addresses`,
/// each committed before it is answered.
async fn sustained(
    addresses: &[String],
    token: &str,
    clients: usize,
    per_client: usize,
    said: &str,
) {
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let (address, token) = (addresses[c % addresses.len()].clone(), token.to_owned());
            tokio::spawn(async move {
                let mut connection = Connection::open(&address, &token).await;
                for i in 0..per_client {
                    let call = json!({"tool": "read", "args": {"c": c, "i": i}, "context": {"session": "bench"}});
                    let (status, _) = connection.send("POST", "/api/decisions", Some(&call)).await;
                    assert_eq!(status, 200);
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let elapsed = started.elapsed();
    let decisions = (clients * per_client) as f64;
    println!(
        "  durable decisions, {clients} clients{said:<17} {:>8.0} /s   ({} in {:.2} s)",
        decisions / elapsed.as_secs_f64(),
        clients * per_client,
        elapsed.as_secs_f64()
    );
}

/// The p50 of a one-row insert in autocommit on a connection of its own, each after a 1 ms
/// pause: the least a commit costs on that database.
async fn bare_commit(url: &str) -> Duration {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute("CREATE TABLE bare (id BIGSERIAL PRIMARY KEY, body TEXT)")
        .await
        .unwrap();
    let insert = client
        .prepare("INSERT INTO bare (body) VALUES ($1)")
        .await
        .unwrap();
    let mut commits = Vec::new();
    for i in 0..500 {
        tokio::time::sleep(Duration::from_millis(1)).await;
        let body = format!("{{\"i\": {i}}}");
        let started = Instant::now();
        client.execute(&insert, &[&body]).await.unwrap();
        commits.push(started.elapsed());
    }
    median(commits)
}

/// The p50 of a one-row insert in autocommit on a bare SQLite connection configured as the
/// store's writer is (WAL, the durability's `synchronous`), on the same file system, each
/// after a 1 ms pause: the engine's own floor for a commit.
async fn bare_sqlite_commit(dir: &std::path::Path, full: bool) -> Duration {
    let connection = rusqlite::Connection::open(dir.join("bare.db")).unwrap();
    connection
        .pragma_update(None, "journal_mode", "WAL")
        .unwrap();
    connection
        .pragma_update(None, "synchronous", if full { "FULL" } else { "NORMAL" })
        .unwrap();
    connection
        .execute(
            "CREATE TABLE bare (seq INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT)",
            [],
        )
        .unwrap();
    let mut commits = Vec::new();
    for i in 0..500 {
        tokio::time::sleep(Duration::from_millis(1)).await;
        let body = format!("{{\"i\": {i}}}");
        let started = Instant::now();
        connection
            .prepare_cached("INSERT INTO bare (body) VALUES (?)")
            .unwrap()
            .execute([body])
            .unwrap();
        commits.push(started.elapsed());
    }
    median(commits)
}

/// The p50 of the rows an answer writes (its pending row deleted, its `permission_resolved`
/// event inserted, its decision updated), in one transaction on a bare connection configured as
/// the store's writer, to a database of the store's schema, each after a 1 ms pause; the rows'
/// text is the daemon's own (its last answer's event and decision, read from its database).
async fn bare_sqlite_answer(
    dir: &std::path::Path,
    durability: toolgate_store::Durability,
) -> Duration {
    let (event, result, call) = {
        let daemon = rusqlite::Connection::open(dir.join("toolgate.db")).unwrap();
        let event: String = daemon
            .query_row(
                "SELECT body FROM events WHERE type = 'permission_resolved' ORDER BY seq DESC LIMIT 1",
                [],
                |row| row.get(0),
            )
            .unwrap();
        let (result, call): (String, String) = daemon
            .query_row(
                "SELECT result, call FROM decisions ORDER BY updated DESC LIMIT 1",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .unwrap();
        (event, result, call)
    };
    let path = dir.join("floor.db");
    // The store's schema, made by the store.
    drop(
        toolgate_store::SqliteStore::open_with(&path, durability)
            .await
            .unwrap(),
    );
    let connection = rusqlite::Connection::open(&path).unwrap();
    let full = durability == toolgate_store::Durability::Full;
    connection
        .pragma_update(None, "synchronous", if full { "FULL" } else { "NORMAL" })
        .unwrap();
    let mut samples = Vec::new();
    for i in 0..500 {
        let id = format!("r{i}");
        connection
            .execute(
                "INSERT INTO pending (id, kind, session, created, request) VALUES (?, 'decision', 'bench', '2026-11-22T00:00:00Z', ?)",
                (&id, &call),
            )
            .unwrap();
        connection
            .execute(
                "INSERT INTO decisions (id, status, call, result, created, updated) VALUES (?, 'pending', ?, ?, '2026-11-22T00:00:00Z', '2026-11-22T00:00:00Z')",
                (&id, &call, &result),
            )
            .unwrap();
        tokio::time::sleep(Duration::from_millis(1)).await;
        let started = Instant::now();
        connection.execute_batch("BEGIN IMMEDIATE").unwrap();
        connection
            .prepare_cached("DELETE FROM pending WHERE id = ?")
            .unwrap()
            .execute([&id])
            .unwrap();
        connection
            .prepare_cached(
                "INSERT INTO events (type, time, session, request_id, body) \
                 VALUES ('permission_resolved', '2026-11-22T00:00:01Z', 'bench', ?, ?)",
            )
            .unwrap()
            .execute((&id, &event))
            .unwrap();
        connection
            .prepare_cached(
                "UPDATE decisions SET status = 'decided', result = ?, updated = \
                 '2026-11-22T00:00:01Z' WHERE id = ?",
            )
            .unwrap()
            .execute((&result, &id))
            .unwrap();
        connection.execute_batch("COMMIT").unwrap();
        samples.push(started.elapsed());
    }
    median(samples)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn main() {
    let only: Option<toolgate_store::Durability> = std::env::var("TOOLGATE_BENCH_DURABILITY")
        .ok()
        .map(|d| d.parse().unwrap());
    let store = std::env::var("TOOLGATE_BENCH_STORE").ok();
    if store.as_deref() != Some("postgres") {
        for durability in [
            toolgate_store::Durability::Full,
            toolgate_store::Durability::Process,
        ] {
            if only.is_some_and(|only| only != durability) {
                continue;
            }
            bench(&Engine::Sqlite(durability));
        }
        println!("grants, SQLite (durability Process)");
        let engine = Engine::Sqlite(toolgate_store::Durability::Process);
        decisions_with_grants(&engine, &engine);
    }
    if store.as_deref() != Some("sqlite") {
        let Some((cluster, url)) = postgres::Cluster::with_database("bench") else {
            return;
        };
        bench(&Engine::Postgres(url));
        let databases = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let few = databases.block_on(cluster.create("bench_few"));
        let many = databases.block_on(cluster.create("bench_many"));
        println!("grants, PostgreSQL");
        decisions_with_grants(&Engine::Postgres(few), &Engine::Postgres(many));
    }
}

/// A daemon on `engine`, on a runtime of its own, built as `toolgate serve` builds it: its
/// clients are other programs, whose threads it does not share. Returns its address, its token
/// and the runtime (which must be kept).
fn daemon(
    engine: &Engine,
    dir: &std::path::Path,
) -> (std::net::SocketAddr, String, tokio::runtime::Runtime) {
    let (address, token, runtime, _) = daemon_and_store(engine, dir);
    (address, token, runtime)
}

/// [`daemon`], and its store.
fn daemon_and_store(
    engine: &Engine,
    dir: &std::path::Path,
) -> (
    std::net::SocketAddr,
    String,
    tokio::runtime::Runtime,
    std::sync::Arc<dyn toolgate_store::Store>,
) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .thread_name("toolgate-daemon")
        .enable_all()
        .build()
        .unwrap();
    let (address, store) = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let mut config = ServerConfig::new(dir);
        config.listen = address;
        match engine {
            Engine::Sqlite(durability) => config.durability = *durability,
            Engine::Postgres(url) => config.store = Some(url.clone()),
        }
        let policy = Policy::from_toml("bench.toml", POLICY).unwrap();
        let server = Server::open(config, policy).await.unwrap();
        let store = server.state().store().clone();
        tokio::spawn(server.serve(listener, std::future::pending()));
        (address, store)
    });
    let token = std::fs::read_to_string(dir.join("token"))
        .unwrap()
        .trim()
        .to_owned();
    (address, token, runtime, store)
}

/// A decision a stored grant answers (an allow-always of `git push` in the session), on two
/// daemons side by side: one whose store holds that grant alone, one whose store also holds
/// 10,000 other active grants of the tool — 7,000 of other sessions, 1,000 of other commands in
/// the same session, 1,000 of other workspaces, 1,000 of the user's for other commands —
/// posted to each in turn (so the machine's moods fall on both).
fn decisions_with_grants(few: &Engine, many: &Engine) {
    use toolgate_runtime::{Effect, Grant, GrantScope, GrantTarget};
    let grant = |words: [&str; 2], scope: GrantScope| {
        Grant::new(
            Effect::Allow,
            "Bash",
            GrantTarget::Command {
                prefix: words.iter().map(|w| (*w).to_owned()).collect(),
                exact: false,
            },
            scope,
            "bench",
        )
    };
    let answering = || {
        grant(
            ["git", "push"],
            GrantScope::Session {
                session: "bench-grants".into(),
            },
        )
    };
    let (few_dir, many_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (few_address, few_token, few_runtime, few_store) = daemon_and_store(few, few_dir.path());
    let (many_address, many_token, many_runtime, many_store) =
        daemon_and_store(many, many_dir.path());
    let clients = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    clients.block_on(async {
        few_store.insert(answering()).await.unwrap();
        many_store.insert(answering()).await.unwrap();
        let mut others = Vec::new();
        for i in 0..7_000 {
            others.push(grant(
                ["git", "push"],
                GrantScope::Session {
                    session: format!("other-{i}"),
                },
            ));
        }
        for i in 0..1_000 {
            let program = format!("tool{i}");
            others.push(grant(
                [&program, "run"],
                GrantScope::Session {
                    session: "bench-grants".into(),
                },
            ));
            others.push(grant(
                ["git", "push"],
                GrantScope::Workspace {
                    root: format!("/srv/ws-{i}").into(),
                },
            ));
            let program = format!("prog{i}");
            others.push(grant([&program, "x"], GrantScope::User));
        }
        for chunk in others.chunks(500) {
            let batch = toolgate_store::Batch {
                grants: chunk.to_vec(),
                ..toolgate_store::Batch::default()
            };
            many_store.commit(batch).await.unwrap();
        }
        if let Engine::Postgres(url) = many {
            // The statistics autovacuum keeps (it analyses a table whose rows changed by a
            // tenth, within a minute): without them, the planner's generic plan for the
            // lookup reads every grant of the tool.
            postgres::execute(url, "ANALYZE grants").await;
        }
        let mut on_few = Connection::open(&few_address.to_string(), &few_token).await;
        let mut on_many = Connection::open(&many_address.to_string(), &many_token).await;
        let call = json!({"tool": "Bash", "args": {"command": "git push origin main"},
                          "context": {"session": "bench-grants"}});
        let (mut with_one, mut with_many) = (Vec::new(), Vec::new());
        for i in 0..1_000 {
            for (connection, samples) in [(&mut on_few, &mut with_one), (&mut on_many, &mut with_many)] {
                let request = connection.request("POST", "/api/decisions", Some(&call));
                let started = Instant::now();
                connection.write_raw(&request).await;
                let (status, body) = connection.read_raw().await;
                if i >= 100 {
                    samples.push(started.elapsed());
                }
                let body: Value = serde_json::from_slice(&body).unwrap();
                assert_eq!((status, body["decision"].as_str()), (200, Some("allow")), "{body}");
            }
        }
        let (one, many) = (median(with_one), median(with_many));
        println!(
            "  a decision a grant answers, 1 grant stored p50 {:>8.1} µs; 10,001 stored p50 {:>8.1} µs = {:.2}×",
            micros(one),
            micros(many),
            many.as_secs_f64() / one.as_secs_f64()
        );
    });
    few_runtime.shutdown_background();
    many_runtime.shutdown_background();
}

fn bench(engine: &Engine) {
    let dir = tempfile::tempdir().unwrap();
    let (address, token, daemon_runtime) = daemon(engine, dir.path());
    let clients = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    clients.block_on(run(engine, address.to_string(), token, dir.path()));
    daemon_runtime.shutdown_background();
}

async fn run(engine: &Engine, address: String, token: String, dir: &std::path::Path) {
    match engine {
        Engine::Sqlite(durability) => {
            println!(
                "daemon benchmarks, SQLite, durability {durability:?} (one run; compare within it)"
            );
        }
        Engine::Postgres(_) => {
            println!(
                "daemon benchmarks, PostgreSQL 15 on a Unix socket (one run; compare within it)"
            );
        }
    }
    let full = *engine == Engine::Sqlite(toolgate_store::Durability::Full);

    // The baseline: a trivial request.
    let mut plain = Connection::open(&address, &token).await;
    for _ in 0..200 {
        plain.send("GET", "/api/health", None).await;
    }
    let health = plain.request("GET", "/api/health", None);
    let mut trivial = Vec::new();
    for _ in 0..2000 {
        let started = Instant::now();
        plain.write_raw(&health).await;
        let (status, _) = plain.read_raw().await;
        trivial.push(started.elapsed());
        assert_eq!(status, 200);
    }
    let trivial = median(trivial);
    println!(
        "  trivial request (GET /api/health)     p50 {:>8.1} µs   (back to back)",
        micros(trivial)
    );

    // Approval round trips, each next to a trivial request after the same pause.
    let mut requester = Connection::open(&address, &token).await;
    let mut approver = Connection::open(&address, &token).await;
    let mut round_trips = Vec::new();
    let mut answered = Vec::new();
    let mut paused = Vec::new();
    for i in 0..500 {
        tokio::time::sleep(Duration::from_millis(1)).await;
        let started = Instant::now();
        approver.write_raw(&health).await;
        let (status, _) = approver.read_raw().await;
        paused.push(started.elapsed());
        assert_eq!(status, 200);

        let call = json!({"tool": "pay", "args": {"n": i}, "context": {"session": "bench"}});
        let (status, body) = requester.send("POST", "/api/decisions", Some(&call)).await;
        assert_eq!(status, 202);
        let id = body["id"].as_str().unwrap().to_owned();
        // The waiting call is in flight before the answer is posted.
        let wait = format!(
            "GET /api/decisions/{id}?wait=30 HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\n\r\n"
        );
        requester
            .stream
            .get_mut()
            .write_all(wait.as_bytes())
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(1)).await;
        let answer = approver.request(
            "POST",
            &format!("/api/approvals/{id}"),
            Some(&json!({"decision": "allow-once"})),
        );
        let started = Instant::now();
        approver.write_raw(&answer).await;
        let (status, released) = requester.read_raw().await;
        round_trips.push(started.elapsed());
        let released: Value = serde_json::from_slice(&released).unwrap();
        assert_eq!(
            (status, released["decision"].as_str()),
            (200, Some("allow"))
        );
        let (status, _) = approver.read_raw().await;
        answered.push(started.elapsed());
        assert_eq!(status, 200);
    }
    let paused = median(paused);
    println!(
        "  trivial request after a 1 ms pause    p50 {:>8.1} µs",
        micros(paused)
    );
    let round_trip = median(round_trips);
    println!(
        "  approval round trip (post → release)  p50 {:>8.1} µs   = {:.2}× the paused trivial request",
        micros(round_trip),
        round_trip.as_secs_f64() / paused.as_secs_f64()
    );
    let answered = median(answered);
    println!(
        "  … and the answer's own response      p50 {:>8.1} µs   = {:.2}×",
        micros(answered),
        answered.as_secs_f64() / paused.as_secs_f64()
    );
    // The engine's own floor: one bare commit, after the same pause.
    let commit = match engine {
        Engine::Postgres(url) => bare_commit(url).await,
        Engine::Sqlite(_) => bare_sqlite_commit(dir, full).await,
    };
    println!(
        "  a bare one-row commit (autocommit)    p50 {:>8.1} µs   (round trip = {:.2}× trivial + commit)",
        micros(commit),
        round_trip.as_secs_f64() / (paused + commit).as_secs_f64()
    );
    if let Engine::Sqlite(durability) = engine {
        // And for the rows an answer writes: what SQLite alone costs for them.
        let rows = bare_sqlite_answer(dir, *durability).await;
        println!(
            "  the answer's rows, bare connection    p50 {:>8.1} µs   (round trip = {:.2}× trivial + them)",
            micros(rows),
            round_trip.as_secs_f64() / (paused + rows).as_secs_f64()
        );
    }

    if std::env::var_os("TOOLGATE_BENCH_ROUND_TRIP_ONLY").is_some() {
        return;
    }
    // Sustained decisions, each durable before it is acknowledged.
    let clients = 8;
    let per_client = 400;
    sustained(
        std::slice::from_ref(&address),
        &token,
        clients,
        per_client,
        "",
    )
    .await;
    if let Engine::Postgres(_) = engine {
        // The same across two daemons sharing the database, half the clients on each.
        let other = tempfile::tempdir().unwrap();
        std::fs::copy(dir.join("token"), other.path().join("token")).unwrap();
        let engine = engine.clone();
        let path = other.path().to_owned();
        let (second, _, runtime) = tokio::task::spawn_blocking(move || daemon(&engine, &path))
            .await
            .unwrap();
        sustained(
            &[address.clone(), second.to_string()],
            &token,
            clients,
            per_client,
            " across 2 daemons",
        )
        .await;
        tokio::task::spawn_blocking(move || runtime.shutdown_background())
            .await
            .unwrap();
    }

    // 10,000 pending requests.
    static MEASURED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let first = !MEASURED.swap(true, std::sync::atomic::Ordering::SeqCst);
    let before = rss_kib();
    let held = 10_000;
    let started = Instant::now();
    let tasks: Vec<_> = (0..4)
        .map(|c| {
            let (address, token) = (address.clone(), token.clone());
            tokio::spawn(async move {
                let mut connection = Connection::open(&address, &token).await;
                for i in 0..held / 4 {
                    // 40 sessions of 250: a session holds at most 1,000.
                    let session = format!("held-{c}-{}", i / 250);
                    let call = json!({"tool": "pay", "args": {"c": c, "i": i}, "context": {"session": session}});
                    let (status, _) = connection.send("POST", "/api/decisions", Some(&call)).await;
                    assert_eq!(status, 202);
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let opened = started.elapsed();
    let after = rss_kib();
    // The list shows the oldest 1,000; `total` counts every one held.
    let (_, pending) = plain.send("GET", "/api/pending?limit=1", None).await;
    let count = pending["total"].as_u64().unwrap();
    assert_eq!(count, held as u64);
    println!(
        "  pending requests held                  {count:>8}   (opened in {:.2} s)",
        opened.as_secs_f64()
    );
    // Only the first run starts from a fresh heap: later runs reuse what the first freed.
    if let (Some(before), Some(after), true) = (before, after, first) {
        println!(
            "  memory per pending request             {:>8.0} bytes (resident {} → {} KiB)",
            (after.saturating_sub(before) * 1024) as f64 / held as f64,
            before,
            after
        );
    }
}
