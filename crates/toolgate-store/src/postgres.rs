//! The PostgreSQL store: the same contract as the SQLite one, on a database server.
//!
//! Every commit is one transaction whose statements carry the batch's conditions (a request is
//! closed only by the statement that deletes it, a use spent only from a row locked for it), so
//! what the SQLite store decides under its own lock the database decides here. Events take
//! their numbers from one counter row, updated last in the transaction: two commits that append
//! events are ordered by that row's lock, so the numbers have no gaps and a reader that has
//! seen an event has seen every event numbered before it.
//!
//! A commit runs in a task of its own: a caller's future dropped while it waits never leaves a
//! transaction half done on a pooled connection (the commit still ends, one way or the other).
//!
//! Any number of daemons share one database. Each store is a replica with a number of its own
//! (from a sequence), held as a session-level advisory lock by a connection of its own for as
//! long as it runs: the requests it opened carry that number, so those of a replica that stopped
//! or was killed are told from those a live one waits on ([`Store::orphaned`]). That connection
//! also listens: every commit that writes events or closes a request notifies the others
//! (`pg_notify`, delivered when the transaction commits), and [`Store::changes`] hands those
//! notices on; when the connection is lost it is made again, and the loss is said as
//! [`Change::Resync`] so nothing missed goes unlooked at.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use async_trait::async_trait;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use futures_util::{StreamExt, TryStreamExt};
use serde_json::Value;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Row};
use tokio_postgres_rustls::MakeRustlsConnect;
use toolgate_runtime::{Grant, GrantStore};

use crate::record::{
    DecisionQuery, DecisionRow, DecisionStatus, EventFilter, EventRecord, JsonText, PendingRecord,
    SessionRow, StoreError, TokenRow, from_stored, rfc3339,
};
use crate::{Batch, Change, Committed, Pruned, Store};

/// The schema, one migration per entry; applied in order, each in its own transaction. Text
/// that orders a list (ids, times, sessions) compares byte by byte (`COLLATE "C"`), as in
/// SQLite, whatever the database's locale.
const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE events (
    seq BIGINT PRIMARY KEY,
    type TEXT NOT NULL,
    time TEXT COLLATE "C" NOT NULL,
    session TEXT COLLATE "C",
    request_id TEXT COLLATE "C",
    tool_call_id TEXT,
    body TEXT NOT NULL
);
CREATE INDEX events_by_session ON events (session, seq);
CREATE INDEX events_by_request ON events (request_id);
CREATE INDEX events_by_time ON events (time);
CREATE TABLE event_counter (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    last BIGINT NOT NULL
);
INSERT INTO event_counter (id, last) VALUES (1, 0);
CREATE TABLE pending (
    id TEXT COLLATE "C" PRIMARY KEY,
    kind TEXT NOT NULL,
    session TEXT COLLATE "C",
    created TEXT COLLATE "C" NOT NULL,
    request TEXT NOT NULL
);
CREATE INDEX pending_by_session ON pending (session, created, id);
CREATE TABLE decisions (
    id TEXT COLLATE "C" PRIMARY KEY,
    status TEXT NOT NULL,
    call TEXT NOT NULL,
    result TEXT NOT NULL,
    created TEXT COLLATE "C" NOT NULL,
    updated TEXT COLLATE "C" NOT NULL
);
CREATE INDEX decisions_by_status_updated ON decisions (status, updated);
CREATE TABLE grants (
    id TEXT COLLATE "C" PRIMARY KEY,
    tool TEXT NOT NULL,
    uses_left BIGINT,
    body TEXT NOT NULL,
    created TEXT COLLATE "C" NOT NULL
);
CREATE INDEX grants_by_tool ON grants (tool);
CREATE TABLE sessions (
    id TEXT COLLATE "C" PRIMARY KEY,
    snapshot TEXT NOT NULL,
    updated TEXT COLLATE "C" NOT NULL
);
"#,
    // Several daemons on one database: each a replica with its own number, which the requests
    // it opens carry.
    r#"
CREATE SEQUENCE replicas;
ALTER TABLE pending ADD COLUMN owner BIGINT;
"#,
    // A batch's condition, checked inside its statement: a condition that does not hold ends
    // the transaction (so a batch is sent whole, with its COMMIT, in one round trip).
    r#"
CREATE FUNCTION toolgate_expect(holds boolean, what text) RETURNS boolean
LANGUAGE plpgsql AS $body$
BEGIN
    IF NOT holds THEN
        RAISE EXCEPTION USING ERRCODE = 'TG001', MESSAGE = what;
    END IF;
    RETURN true;
END
$body$;
"#,
    // Grants filed by scope and target (see `Grant::scope_key`), so an ask reads only those
    // that may answer it; the keys of the grants stored before are written by `file_grants`.
    r#"
ALTER TABLE grants ADD COLUMN scope_key TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE grants ADD COLUMN target_key TEXT COLLATE "C" NOT NULL DEFAULT '';
DROP INDEX grants_by_tool;
CREATE INDEX grants_by_keys ON grants (tool, scope_key, target_key);
"#,
    // Named tokens with roles (their SHA-256 only).
    r#"
CREATE TABLE tokens (
    name TEXT COLLATE "C" PRIMARY KEY,
    role TEXT NOT NULL,
    hash TEXT NOT NULL UNIQUE,
    created TEXT COLLATE "C" NOT NULL
);
"#,
    // The calls of the audit log in the order they came (`decisions_page`, replay).
    r#"
CREATE INDEX decisions_by_created ON decisions (created, id);
"#,
];

/// The migration that files grants by their keys (its number, from 1).
const GRANT_KEYS: i64 = 4;

/// The advisory lock key migrations take, so two stores opening at once migrate once ("toolgate"
/// in ASCII, as a number; replicas' keys are small numbers from a sequence).
const MIGRATION_LOCK: i64 = 0x746f_6f6c_6761_7465;
/// The channel commits notify on.
const CHANNEL: &str = "toolgate_changes";
/// Connections in the pool.
const POOL_SIZE: usize = 16;
/// Changes held for a receiver that has not read them; one that falls further behind hears
/// [`Change::Resync`].
const CHANGES_HELD: usize = 4096;
/// The longest wait between two tries to make the listening connection again.
const RECONNECT_MOST: std::time::Duration = std::time::Duration::from_secs(2);
/// How long a connection may take to be made.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
/// How long a replica's lock must stay missing before its requests are taken for orphans: well
/// over what making its listening connection again takes ([`RECONNECT_MOST`] and
/// [`CONNECT_TIMEOUT`]).
const ORPHAN_AFTER: std::time::Duration = std::time::Duration::from_secs(10);
/// How many times a commit the database aborted for a deadlock or a serialization failure is
/// tried again.
const RETRIES: u32 = 3;

/// The store on a PostgreSQL database.
pub struct PostgresStore {
    pool: Pool,
    /// Where it is, without a password: what messages name.
    target: String,
    /// This replica's number, which the requests it opens carry.
    replica: i64,
    /// What other replicas commit.
    changes: broadcast::Sender<Change>,
    /// The connection holding this replica's advisory lock and listening for the others'
    /// changes (the lock goes with it).
    listener: Listener,
    /// Whether this replica holds its lock and listens: while it does not, it opens no request
    /// (the others could take it for an orphan).
    held: Arc<AtomicBool>,
    /// Other replicas seen without their lock, and since when.
    missing: std::sync::Mutex<std::collections::HashMap<i64, std::time::Instant>>,
}

/// The listening task, stopped when this is dropped (also when opening the store is given up
/// half way).
struct Listener(tokio::task::JoinHandle<()>);

impl Drop for Listener {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("target", &self.target)
            .field("replica", &self.replica)
            .finish_non_exhaustive()
    }
}

/// A database error, said with where it happened, of the kind its SQLSTATE class says.
fn failed(what: &str, error: &tokio_postgres::Error) -> StoreError {
    let (message, code) = match error.as_db_error() {
        Some(db) => (
            format!("{what}: {} ({})", db.message(), db.code().code()),
            Some(db.code().code().to_owned()),
        ),
        None => (format!("{what}: {error}"), None),
    };
    match code.as_deref() {
        // lock_not_available, and a statement cancelled by the lock timeout.
        Some("55P03" | "57014") => StoreError::Locked {
            message,
            source: None,
        },
        // data_corrupted, index_corrupted.
        Some("XX001" | "XX002") => StoreError::damaged(message),
        _ => StoreError::unavailable(message),
    }
}

/// An error and its causes, said in one line (a pool's error says only its own part: "error
/// performing TLS handshake", where its cause says which certificate was refused, and why).
fn causes(error: &dyn std::error::Error) -> String {
    let mut said = error.to_string();
    let mut cause = error.source();
    while let Some(next) = cause {
        let next_said = next.to_string();
        if !said.contains(&next_said) {
            said.push_str(": ");
            said.push_str(&next_said);
        }
        cause = next.source();
    }
    said
}

/// Whether the database gave up on a transaction another one was in the way of: tried again.
fn retryable(error: &tokio_postgres::Error) -> bool {
    error.code().is_some_and(|code| {
        *code == tokio_postgres::error::SqlState::T_R_DEADLOCK_DETECTED
            || *code == tokio_postgres::error::SqlState::T_R_SERIALIZATION_FAILURE
    })
}

fn parse(url: &str) -> Result<tokio_postgres::Config, StoreError> {
    parse_with_roots(url).map(|(config, _)| config)
}

/// A connection string, and the certificate file its `sslrootcert` names (libpq's option, which
/// the driver does not read: taken out here).
fn parse_with_roots(url: &str) -> Result<(tokio_postgres::Config, Option<PathBuf>), StoreError> {
    let (url, roots) = without_root_certificates(url);
    let config = tokio_postgres::Config::from_str(&url).map_err(|error| {
        StoreError::unavailable(format!(
            "the store is not a PostgreSQL connection string ({error}): write \
             postgres://USER@HOST:PORT/DATABASE"
        ))
    })?;
    Ok((config, roots))
}

/// `url` without its `sslrootcert` option, and that option's file: in a URL's query
/// (percent-encoded), or among `key=value` pairs (plain or in single quotes).
fn without_root_certificates(url: &str) -> (String, Option<PathBuf>) {
    const KEY: &str = "sslrootcert=";
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let Some((base, query)) = url.split_once('?') else {
            return (url.to_owned(), None);
        };
        let mut roots = None;
        let kept: Vec<&str> = query
            .split('&')
            .filter(|pair| match pair.strip_prefix(KEY) {
                Some(value) => {
                    let value = percent_encoding::percent_decode_str(value).decode_utf8_lossy();
                    roots = Some(PathBuf::from(value.as_ref()));
                    false
                }
                None => true,
            })
            .collect();
        let url = if kept.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        return (url, roots);
    }
    let Some(at) = url
        .find(KEY)
        .filter(|&at| at == 0 || url[..at].ends_with(char::is_whitespace))
    else {
        return (url.to_owned(), None);
    };
    let rest = &url[at + KEY.len()..];
    let (value, after) = match rest.strip_prefix('\'') {
        Some(quoted) => match quoted.split_once('\'') {
            Some((value, after)) => (value, after),
            None => (quoted, ""),
        },
        None => rest.split_at(rest.find(char::is_whitespace).unwrap_or(rest.len())),
    };
    (
        format!("{}{}", &url[..at], after.trim_start()),
        Some(PathBuf::from(value)),
    )
}

/// Whether the connection string reaches a host off this machine over TCP and says nothing of
/// `sslmode`: then TLS is required, not merely preferred (libpq's default, which a machine in
/// between can turn into no TLS at all). Loopback hosts and Unix sockets keep the default.
fn off_this_machine_unsaid(config: &tokio_postgres::Config, url: &str) -> bool {
    if url.contains("sslmode=") {
        return false;
    }
    config.get_hosts().iter().any(|host| match host {
        tokio_postgres::config::Host::Tcp(name) => {
            let name = name.trim_start_matches('[').trim_end_matches(']');
            let loopback = name.eq_ignore_ascii_case("localhost")
                || name
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|address| address.is_loopback());
            !loopback
        }
        #[cfg(unix)]
        tokio_postgres::config::Host::Unix(_) => false,
    })
}

/// How connections are encrypted: TLS (rustls) whenever the connection string's `sslmode`
/// asks for it (`require`; `prefer`, the default, when the server offers it; never on a Unix
/// socket), the server's certificate checked against `roots` (a PEM file, libpq's
/// `sslrootcert`) or else the system's certificate authorities, and its name against the host.
/// Without `over_tcp` (every host a Unix socket, where no TLS is spoken) the system's
/// authorities are not read.
fn tls(roots: Option<&Path>, over_tcp: bool) -> Result<MakeRustlsConnect, StoreError> {
    let mut store = rustls::RootCertStore::empty();
    match roots {
        Some(path) => {
            let unreadable = |error: &dyn std::fmt::Display| {
                StoreError::unavailable(format!(
                    "cannot read the certificate authorities in {} (`sslrootcert`): {error}",
                    path.display()
                ))
            };
            use rustls_pki_types::pem::PemObject;
            for certificate in rustls_pki_types::CertificateDer::pem_file_iter(path)
                .map_err(|error| unreadable(&error))?
            {
                let certificate = certificate.map_err(|error| unreadable(&error))?;
                store.add(certificate).map_err(|error| unreadable(&error))?;
            }
            if store.is_empty() {
                return Err(unreadable(&"it holds no certificate"));
            }
        }
        None if !over_tcp => {}
        None => {
            // What cannot be read of the system's is left out; a server none of the rest
            // vouches for is then refused, not trusted.
            let found = rustls_native_certs::load_native_certs();
            let _ = store.add_parsable_certificates(found.certs);
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| StoreError::unavailable(format!("TLS cannot be set up: {error}")))?
        .with_root_certificates(store)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// What a connection string names, without its password.
fn describe(config: &tokio_postgres::Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|host| match host {
            tokio_postgres::config::Host::Tcp(name) => name.clone(),
            #[cfg(unix)]
            tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    format!(
        "PostgreSQL database `{}` on {}",
        config.get_dbname().unwrap_or("(the user's)"),
        if hosts.is_empty() {
            "the default host".to_owned()
        } else {
            hosts.join(", ")
        }
    )
}

impl PostgresStore {
    /// What a connection string names, without its password (for messages), or why it is not
    /// one.
    pub fn describe(url: &str) -> Result<String, StoreError> {
        parse(url).map(|config| describe(&config))
    }

    /// Connects to the database `url` names (a `postgres://` URL or `key=value` pairs, as
    /// libpq takes them), creating or upgrading its tables, and takes ownership of it.
    pub async fn open(url: &str) -> Result<PostgresStore, StoreError> {
        let (mut config, roots) = parse_with_roots(url)?;
        let over_tcp = config
            .get_hosts()
            .iter()
            .any(|host| matches!(host, tokio_postgres::config::Host::Tcp(_)));
        let tls = tls(roots.as_deref(), over_tcp)?;
        if off_this_machine_unsaid(&config, url) {
            config.ssl_mode(tokio_postgres::config::SslMode::Require);
        }
        // A database that does not answer is said so in bounded time, and a connection whose
        // peer is gone is noticed.
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        config.keepalives(true);
        config.keepalives_idle(std::time::Duration::from_secs(30));
        // A pipeline cut off half way (the network gone before its COMMIT) must not leave the
        // counter row locked on the server for every replica: the server ends such a
        // transaction itself.
        let idle = "-c idle_in_transaction_session_timeout=10s";
        let options = match config.get_options() {
            Some(given) => format!("{given} {idle}"),
            None => idle.to_owned(),
        };
        config.options(&options);
        let target = describe(&config);
        let manager = Manager::from_config(
            config.clone(),
            tls.clone(),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(std::time::Duration::from_secs(10)))
            .create_timeout(Some(CONNECT_TIMEOUT))
            .recycle_timeout(Some(CONNECT_TIMEOUT))
            .build()
            .map_err(|error| {
                StoreError::unavailable(format!("cannot make a pool for the {target}: {error}"))
            })?;
        let client = pool.get().await.map_err(|error| {
            StoreError::unavailable(format!(
                "cannot connect to the {target}: {}",
                causes(&error)
            ))
        })?;
        migrate(&client, &target).await?;
        let replica: i64 = client
            .query_one("SELECT nextval('replicas')", &[])
            .await
            .map_err(|error| failed(&format!("cannot join the {target}"), &error))?
            .get(0);
        drop(client);
        let (changes, _) = broadcast::channel(CHANGES_HELD);
        let (ready, started) = oneshot::channel();
        let held = Arc::new(AtomicBool::new(false));
        let listener = Listener(tokio::spawn(listen(
            config,
            tls,
            replica,
            changes.clone(),
            Arc::clone(&held),
            ready,
        )));
        started
            .await
            .map_err(|_| StoreError::unavailable(format!("cannot listen to the {target}")))??;
        Ok(PostgresStore {
            pool,
            target,
            replica,
            changes,
            listener,
            held,
            missing: std::sync::Mutex::default(),
        })
    }

    /// This replica's number (the requests it opens carry it).
    pub fn replica(&self) -> i64 {
        self.replica
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.pool.get().await.map_err(|error| {
            StoreError::unavailable(format!(
                "cannot reach the {}: {}",
                self.target,
                causes(&error)
            ))
        })
    }

    /// Every row of a query, mapped by `map`.
    async fn all<T>(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
        map: impl Fn(&Row) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        let client = self.client().await?;
        let statement = client
            .prepare_cached(sql)
            .await
            .map_err(|error| failed("cannot read", &error))?;
        let rows = client
            .query(&statement, params)
            .await
            .map_err(|error| failed("cannot read", &error))?;
        rows.iter().map(map).collect()
    }

    /// The first row of a query, if any, mapped by `map`.
    async fn first<T>(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
        map: impl Fn(&Row) -> Result<T, StoreError>,
    ) -> Result<Option<T>, StoreError> {
        let client = self.client().await?;
        let statement = client
            .prepare_cached(sql)
            .await
            .map_err(|error| failed("cannot read", &error))?;
        let row = client
            .query_opt(&statement, params)
            .await
            .map_err(|error| failed("cannot read", &error))?;
        row.as_ref().map(map).transpose()
    }

    /// One number a query counts.
    async fn count(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<i64, StoreError> {
        Ok(self
            .first(sql, params, |row| column(row, 0))
            .await?
            .unwrap_or(0))
    }

    async fn select_events(
        &self,
        after: i64,
        filter: &EventFilter,
        limit: u32,
        newest_first: bool,
    ) -> Result<Vec<EventRecord>, StoreError> {
        let mut sql = String::from(
            "SELECT seq, type, time, session, request_id, tool_call_id, body FROM events \
             WHERE seq > $1",
        );
        let mut params: Vec<Box<dyn ToSql + Sync + Send>> = vec![Box::new(after)];
        let mut and = |sql: &mut String, condition: &str, value: Box<dyn ToSql + Sync + Send>| {
            params.push(value);
            sql.push_str(&format!(" AND {condition} ${}", params.len()));
        };
        if let Some(session) = &filter.session {
            and(&mut sql, "session =", Box::new(clean(session).into_owned()));
        }
        if let Some(request) = &filter.request_id {
            and(
                &mut sql,
                "request_id =",
                Box::new(clean(request).into_owned()),
            );
        }
        if let Some(since) = &filter.since {
            and(&mut sql, "time >=", Box::new(since.clone()));
        }
        if !filter.kinds.is_empty() {
            let kinds: Vec<String> = filter.kinds.iter().map(|k| clean(k).into_owned()).collect();
            and(&mut sql, "type = ANY(", Box::new(kinds));
            sql.push(')');
        }
        params.push(Box::new(i64::from(limit)));
        sql.push_str(&format!(
            " ORDER BY seq {} LIMIT ${}",
            if newest_first { "DESC" } else { "ASC" },
            params.len()
        ));
        let client = self.client().await?;
        let statement = client
            .prepare_cached(&sql)
            .await
            .map_err(|error| failed("cannot read the events", &error))?;
        let rows = client
            .query_raw(
                &statement,
                params.iter().map(|p| &**p as &(dyn ToSql + Sync)),
            )
            .await
            .map_err(|error| failed("cannot read the events", &error))?;
        let mut rows = std::pin::pin!(rows);
        // A page ends early once it holds PAGE_BYTES of events (a thousand large calls would
        // be a gigabyte); the rest of the rows are not read.
        let (mut events, mut bytes) = (Vec::new(), 0usize);
        while let Some(row) = rows
            .try_next()
            .await
            .map_err(|error| failed("cannot read the events", &error))?
        {
            let event = event_from_row(&row)?;
            bytes = bytes.saturating_add(event.body.as_str().len());
            events.push(event);
            if bytes >= crate::PAGE_BYTES {
                break;
            }
        }
        Ok(events)
    }
}

/// A column's value, or an error naming it.
fn column<'a, T: tokio_postgres::types::FromSql<'a>>(
    row: &'a Row,
    index: impl tokio_postgres::row::RowIndex + std::fmt::Display,
) -> Result<T, StoreError> {
    row.try_get(index)
        .map_err(|error| failed("a stored row cannot be read", &error))
}

fn json_column(row: &Row, name: &str) -> Result<Value, StoreError> {
    let text: String = column(row, name)?;
    Ok(from_stored(text.as_bytes())?)
}

fn decision_from_row(row: &Row) -> Result<DecisionRow, StoreError> {
    let status: String = column(row, "status")?;
    Ok(DecisionRow {
        id: column(row, "id")?,
        status: if status == "pending" {
            DecisionStatus::Pending
        } else {
            DecisionStatus::Decided
        },
        call: json_column(row, "call")?,
        result: JsonText::parse(column(row, "result")?)?,
        created: column(row, "created")?,
        updated: column(row, "updated")?,
    })
}

fn event_from_row(row: &Row) -> Result<EventRecord, StoreError> {
    Ok(EventRecord {
        seq: column(row, "seq")?,
        kind: column(row, "type")?,
        time: column(row, "time")?,
        session: column(row, "session")?,
        request_id: column(row, "request_id")?,
        tool_call_id: column(row, "tool_call_id")?,
        body: JsonText::parse(column(row, "body")?)?,
    })
}

fn pending_from_row(row: &Row) -> Result<PendingRecord, StoreError> {
    Ok(PendingRecord {
        id: column(row, "id")?,
        kind: column(row, "kind")?,
        session: column(row, "session")?,
        created: column(row, "created")?,
        request: json_column(row, "request")?,
    })
}

fn session_from_row(row: &Row) -> Result<SessionRow, StoreError> {
    Ok(SessionRow {
        id: column(row, "id")?,
        snapshot: json_column(row, "snapshot")?,
        updated: column(row, "updated")?,
    })
}

fn grant_from_row(row: &Row) -> Result<Grant, StoreError> {
    let body: String = column(row, "body")?;
    let mut grant: Grant = from_stored(body.as_bytes())?;
    let uses: Option<i64> = column(row, "uses_left")?;
    grant.uses_left = uses.map(|uses| u32::try_from(uses.max(0)).unwrap_or(u32::MAX));
    Ok(grant)
}

/// Holds this replica's lock and hands on the other replicas' changes, making its connection
/// again whenever it is lost (waits doubling up to [`RECONNECT_MOST`]), for as long as the
/// store runs. `held` says whether the lock is held now; `ready` hears how the first connection
/// went.
async fn listen(
    config: tokio_postgres::Config,
    tls: MakeRustlsConnect,
    replica: i64,
    changes: broadcast::Sender<Change>,
    held: Arc<AtomicBool>,
    ready: oneshot::Sender<Result<(), StoreError>>,
) {
    let mut ready = Some(ready);
    let mut wait = std::time::Duration::from_millis(50);
    loop {
        match listening(&config, &tls, replica).await {
            Ok((client, mut notices)) => {
                held.store(true, Ordering::SeqCst);
                match ready.take() {
                    Some(ready) => {
                        let _ = ready.send(Ok(()));
                    }
                    // Whatever was committed while it was gone is to be looked at.
                    None => {
                        let _ = changes.send(Change::Resync);
                    }
                }
                wait = std::time::Duration::from_millis(50);
                while let Some(payload) = notices.recv().await {
                    if let Some(change) = change_of(&payload, replica) {
                        let _ = changes.send(change);
                    }
                }
                held.store(false, Ordering::SeqCst);
                drop(client);
            }
            Err(error) => {
                if let Some(ready) = ready.take() {
                    let _ = ready.send(Err(error));
                    return;
                }
            }
        }
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(RECONNECT_MOST);
    }
}

/// A connection that listens and holds `replica`'s lock; its notices' payloads come on the
/// receiver until it is lost. It listens first (nothing committed once the lock is held goes
/// unheard), then takes the lock, waiting (bounded) while the server still holds it for the
/// connection this one replaces.
async fn listening(
    config: &tokio_postgres::Config,
    tls: &MakeRustlsConnect,
    replica: i64,
) -> Result<(Client, mpsc::UnboundedReceiver<String>), StoreError> {
    let target = describe(config);
    let mut config = config.clone();
    // The server notices a lost daemon host by its keepalives (its lock then goes), not only
    // when the process ends.
    let keepalives =
        "-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3";
    let options = match config.get_options() {
        Some(given) => format!("{given} {keepalives}"),
        None => keepalives.to_owned(),
    };
    config.options(&options);
    let (client, mut connection) = config
        .connect(tls.clone())
        .await
        .map_err(|error| failed(&format!("cannot connect to the {target}"), &error))?;
    let (notices, received) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(Ok(message)) = messages.next().await {
            if let tokio_postgres::AsyncMessage::Notification(notice) = message
                && notices.send(notice.payload().to_owned()).is_err()
            {
                break;
            }
        }
    });
    let fail =
        |error: tokio_postgres::Error| failed(&format!("cannot listen to the {target}"), &error);
    client
        .batch_execute(&format!("LISTEN {CHANNEL}"))
        .await
        .map_err(fail)?;
    let deadline = std::time::Instant::now() + ORPHAN_AFTER;
    loop {
        let locked: bool = client
            .query_one("SELECT pg_try_advisory_lock($1)", &[&replica])
            .await
            .map_err(fail)?
            .get(0);
        if locked {
            return Ok((client, received));
        }
        if std::time::Instant::now() >= deadline {
            return Err(StoreError::unavailable(format!(
                "replica {replica}'s lock on the {target} is still held by a connection that \
                 was lost"
            )));
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// What a notice says, unless this replica sent it: `REPLICA SEQ CLOSED` (the id closed, empty
/// when none, may hold spaces).
fn change_of(payload: &str, replica: i64) -> Option<Change> {
    let (from, rest) = payload.split_once(' ')?;
    if from.parse::<i64>().ok()? == replica {
        return None;
    }
    let (seq, closed) = rest.split_once(' ')?;
    Some(Change::Committed {
        seq: seq.parse().ok()?,
        closed: Some(closed.to_owned()).filter(|id| !id.is_empty()),
    })
}

async fn migrate(client: &Client, target: &str) -> Result<(), StoreError> {
    let fail =
        |error: tokio_postgres::Error| failed(&format!("cannot set up the {target}"), &error);
    client
        .execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(fail)?;
    let result = async {
        client
            .batch_execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations \
                 (version BIGINT PRIMARY KEY, applied TEXT NOT NULL)",
            )
            .await
            .map_err(fail)?;
        let applied: i64 = client
            .query_one(
                "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
                &[],
            )
            .await
            .map_err(fail)?
            .get(0);
        let known = i64::try_from(MIGRATIONS.len()).unwrap_or(i64::MAX);
        if applied > known {
            return Err(StoreError::damaged(format!(
                "the database has schema version {applied}, newer than this toolgate knows \
                 ({known})"
            )));
        }
        for (index, migration) in MIGRATIONS.iter().enumerate() {
            let version = i64::try_from(index + 1).unwrap_or(i64::MAX);
            if version <= applied {
                continue;
            }
            client
                .batch_execute(&format!("BEGIN; {migration};"))
                .await
                .map_err(fail)?;
            if version == GRANT_KEYS {
                file_grants(client).await.map_err(fail)?;
            }
            client
                .batch_execute(&format!(
                    "INSERT INTO schema_migrations (version, applied) \
                     VALUES ({version}, '{}'); COMMIT;",
                    rfc3339(SystemTime::now())
                ))
                .await
                .map_err(fail)?;
        }
        Ok(())
    }
    .await;
    if result.is_err() {
        // A failed migration leaves its transaction aborted: end it before the lock goes.
        let _ = client.batch_execute("ROLLBACK").await;
    }
    client
        .execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(fail)?;
    result
}

/// Why a commit wrote nothing: a condition of the batch (answered as it is), or a failure.
enum Refused {
    Not(Committed),
    Failed(StoreError),
    Database(tokio_postgres::Error),
    /// The connection failed in the middle: it is not given back to the pool.
    Lost(tokio_postgres::Error),
}

impl From<tokio_postgres::Error> for Refused {
    fn from(error: tokio_postgres::Error) -> Refused {
        Refused::Database(error)
    }
}

impl From<serde_json::Error> for Refused {
    fn from(error: serde_json::Error) -> Refused {
        Refused::Failed(error.into())
    }
}

/// Text as PostgreSQL keeps it: a NUL (which its text cannot hold, and SQLite's can) is written
/// U+FFFD, the same way wherever it is written or looked up, so one such name does not make a
/// whole commit (a batch of events) fail.
/// Writes the keys of every stored grant (those stored before grants were filed by them), in
/// the migration's transaction. A grant that cannot be read keeps the empty keys, where no
/// lookup but one of the whole tool finds it, and answers nothing, as before.
async fn file_grants(client: &Client) -> Result<(), tokio_postgres::Error> {
    let rows = client.query("SELECT id, body FROM grants", &[]).await?;
    for row in rows {
        let (id, body): (String, String) = (row.get(0), row.get(1));
        if let Ok(grant) = from_stored::<Grant>(body.as_bytes()) {
            client
                .execute(
                    "UPDATE grants SET scope_key = $1, target_key = $2 WHERE id = $3",
                    &[&clean(&grant.scope_key()), &clean(&grant.target_key()), &id],
                )
                .await?;
        }
    }
    Ok(())
}

fn clean(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains('\0') {
        std::borrow::Cow::Owned(text.replace('\0', "\u{FFFD}"))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// [`clean`], of text that may be missing.
fn clean_opt(text: Option<&str>) -> Option<std::borrow::Cow<'_, str>> {
    text.map(clean)
}

/// The statements a commit runs (prepared once per connection, then cached). Those whose
/// effect is a condition return a row per row they touched.
mod sql {
    /// Read committed whatever the database's default: a statement waiting on a row another
    /// commit locked (the counter, a pending request, a grant) reads it again once that commit
    /// ends, instead of failing.
    pub(super) const BEGIN: &str = "BEGIN ISOLATION LEVEL READ COMMITTED";
    pub(super) const COMMIT: &str = "COMMIT";
    pub(super) const ROLLBACK: &str = "ROLLBACK";
    pub(super) const CLOSE: &str = "WITH closed AS (DELETE FROM pending WHERE id = $1 \
         RETURNING 1) SELECT toolgate_expect(EXISTS (SELECT 1 FROM closed), $2)";
    pub(super) const OPEN: &str = "WITH opened AS (INSERT INTO pending \
         (id, kind, session, created, request, owner) VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (id) DO NOTHING RETURNING 1) \
         SELECT toolgate_expect(EXISTS (SELECT 1 FROM opened), $7)";
    /// A grant to revoke (`$2` is `true`) or to spend a use of (`false`: it must have one
    /// left, or no count), locked until the commit.
    pub(super) const LOCK_GRANT: &str = "WITH found AS (SELECT uses_left FROM grants \
         WHERE id = $1 FOR UPDATE) SELECT toolgate_expect(EXISTS (SELECT 1 FROM found \
         WHERE $2 OR uses_left IS NULL OR uses_left > 0), $3)";
    /// Taken before [`SAME_GRANT`] looks, in a statement of its own (so that statement's
    /// snapshot sees what the holder before committed): one transaction at a time stores a
    /// lasting grant of a tool.
    pub(super) const LOCK_TOOL_GRANTS: &str =
        "SELECT pg_advisory_xact_lock(hashtextextended('toolgate grants of ' || $1, 0))";
    /// No stored grant answers the same calls for good as the lasting grant `$2` (JSON) of
    /// tool `$1` (see `Grant::lasts_like`); else `$3` followed by the stored one's id. Alike:
    /// the same JSON once what names and dates a grant is taken away (what is left is its
    /// effect, tool, target and scope, and its count or expiry, which a lasting grant has not),
    /// with an escaped NUL (which `jsonb` refuses, and text keeps) read as U+FFFD on both sides.
    pub(super) const SAME_GRANT: &str = "WITH same AS (SELECT id FROM grants \
         WHERE tool = $1 AND scope_key = $4 AND target_key = $5 AND uses_left IS NULL \
           AND replace(body, '\\u0000', '\\ufffd')::jsonb \
               - 'id' - 'created_by' - 'created_at' - 'request_id' - 'reason' \
             = replace($2::text, '\\u0000', '\\ufffd')::jsonb \
               - 'id' - 'created_by' - 'created_at' - 'request_id' - 'reason' \
         ORDER BY created, id LIMIT 1) \
         SELECT toolgate_expect(NOT EXISTS (SELECT 1 FROM same), \
           $3 || COALESCE((SELECT id FROM same), ''))";
    /// Taken before [`SESSION_WAS`] looks, in a statement of its own (see
    /// [`LOCK_TOOL_GRANTS`]): one transaction at a time saves a session it read.
    pub(super) const LOCK_SESSION: &str =
        "SELECT pg_advisory_xact_lock(hashtextextended('toolgate session ' || $1, 0))";
    /// Session `$1` is saved with time `$2`, or not saved when `$2` is null; else `$3`.
    pub(super) const SESSION_WAS: &str = "SELECT toolgate_expect(CASE WHEN $2::text IS NULL \
         THEN NOT EXISTS (SELECT 1 FROM sessions WHERE id = $1) \
         ELSE EXISTS (SELECT 1 FROM sessions WHERE id = $1 AND updated = $2::text) END, $3)";
    pub(super) const NEW_GRANT: &str = "WITH added AS (INSERT INTO grants \
         (id, tool, uses_left, body, created, scope_key, target_key) \
         VALUES ($1, $2, $3, $4, $5, $7, $8) \
         ON CONFLICT (id) DO NOTHING RETURNING 1) \
         SELECT toolgate_expect(EXISTS (SELECT 1 FROM added), $6)";
    pub(super) const SPEND: &str =
        "UPDATE grants SET uses_left = uses_left - 1 WHERE id = $1 AND uses_left IS NOT NULL";
    pub(super) const REVOKE: &str = "DELETE FROM grants WHERE id = $1";
    pub(super) const DECISION: &str = "INSERT INTO decisions \
         (id, status, call, result, created, updated) VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (id) DO UPDATE SET status = excluded.status, result = excluded.result, \
         updated = excluded.updated";
    pub(super) const SESSION: &str = "INSERT INTO sessions (id, snapshot, updated) \
         VALUES ($1, $2, $3) ON CONFLICT (id) DO UPDATE SET snapshot = excluded.snapshot, \
         updated = excluded.updated";
    /// Numbers the events from the counter row, inserts them, and notifies the other replicas
    /// (`REPLICA SEQ CLOSED`), in one statement.
    pub(super) const EVENTS: &str = "WITH counter AS (UPDATE event_counter \
         SET last = last + $1 WHERE id = 1 RETURNING last), \
         written AS (INSERT INTO events (seq, type, time, session, request_id, tool_call_id, body) \
           SELECT counter.last - $1 + e.n, e.type, e.time, e.session, e.request_id, \
                  e.tool_call_id, e.body \
           FROM counter, unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], \
                                $7::text[]) \
             WITH ORDINALITY AS e(type, time, session, request_id, tool_call_id, body, n)) \
         SELECT counter.last FROM (SELECT toolgate_expect(EXISTS (SELECT 1 FROM counter), \
           'the event counter row is missing')) AS present CROSS JOIN counter CROSS JOIN LATERAL \
           (SELECT pg_notify($8, $9 || ' ' || counter.last || ' ' || $10)) AS notice";
    pub(super) const NOTIFY: &str = "SELECT pg_notify($1, $2)";
}

type Param<'a> = &'a (dyn ToSql + Sync);

/// Runs statements as one pipeline: all are sent before the first answer is read (one round
/// trip for all), in order. Each statement's answer, in the same order; an error only when a
/// statement could not be prepared (then nothing was sent).
async fn pipelined(
    client: &deadpool_postgres::ClientWrapper,
    statements: &[(&str, Vec<Param<'_>>)],
) -> Result<Vec<Result<Vec<Row>, tokio_postgres::Error>>, tokio_postgres::Error> {
    let mut prepared = Vec::with_capacity(statements.len());
    for (text, _) in statements {
        prepared.push(client.prepare_cached(text).await?);
    }
    Ok(futures_util::future::join_all(
        prepared
            .iter()
            .zip(statements)
            .map(|(statement, (_, params))| client.query(statement, params)),
    )
    .await)
}

/// Writes `batch` in one transaction, sent whole in one round trip: `BEGIN`, the batch's
/// conditions (each checked inside its statement, in the SQLite store's order: close, open,
/// revoke, spend, the grants named as stored, no stored grant like a lasting one to store, new
/// grants, the session as it was read, each against the store as it was before the batch), its writes,
/// and `COMMIT`. A condition that does not hold raises an error that ends the transaction (the
/// COMMIT sent after it then rolls back), and says which condition it was. The connection is
/// left outside any transaction whatever happens, unless it is lost ([`Refused::Lost`]).
async fn write(
    client: &deadpool_postgres::ClientWrapper,
    batch: &Batch,
    replica: i64,
) -> Result<Vec<i64>, Refused> {
    // What the statements bind, made first so it outlives them.
    let open = match &batch.open {
        Some(request) => Some((
            clean(&request.id),
            clean(&request.kind),
            clean_opt(request.session.as_deref()),
            clean(&request.created),
            serde_json::to_string(&request.request)?,
        )),
        None => None,
    };
    let close = batch.close.as_deref().map(clean);
    let revoke = batch.revoke.as_deref().map(clean);
    let spend = batch.spend.as_deref().map(clean);
    let grants = batch
        .grants
        .iter()
        .map(|grant| {
            Ok((
                clean(&grant.id),
                clean(&grant.tool),
                grant.uses_left.map(i64::from),
                serde_json::to_string(grant)?,
                rfc3339(grant.created_at),
                (
                    clean(&grant.scope_key()).into_owned(),
                    clean(&grant.target_key()).into_owned(),
                ),
            ))
        })
        .collect::<Result<Vec<_>, serde_json::Error>>()?;
    let decision = match &batch.decision {
        Some(decision) => Some((
            clean(&decision.id),
            decision.status.as_str(),
            serde_json::to_string(&decision.call)?,
            decision.result.as_str(),
            clean(&decision.created),
            clean(&decision.updated),
        )),
        None => None,
    };
    let session = match &batch.session {
        Some(session) => Some((
            clean(&session.id),
            serde_json::to_string(&session.snapshot)?,
            clean(&session.updated),
        )),
        None => None,
    };
    let count = i64::try_from(batch.events.len()).unwrap_or(i64::MAX);
    let column = |pick: fn(&EventRecord) -> Option<&str>| -> Vec<Option<String>> {
        batch
            .events
            .iter()
            .map(|event| pick(event).map(|text| clean(text).into_owned()))
            .collect()
    };
    let events = [
        column(|e| Some(&e.kind)),
        column(|e| Some(&e.time)),
        column(|e| e.session.as_deref()),
        column(|e| e.request_id.as_deref()),
        column(|e| e.tool_call_id.as_deref()),
        column(|e| Some(e.body.as_str())),
    ];
    let from = replica.to_string();
    let closed: &str = close.as_deref().unwrap_or_default();
    let notice = format!("{from} 0 {closed}");

    // The conditions, with BEGIN, each saying which it is when it does not hold (in the SQLite
    // store's order: the first that fails ends the transaction).
    let grant_exists: Vec<String> = grants
        .iter()
        .map(|(id, ..)| format!("{GRANT_EXISTS}{id}"))
        .collect();
    let already_pending = open
        .as_ref()
        .map(|(id, ..)| format!("{ALREADY_PENDING}{id}"))
        .unwrap_or_default();
    let mut checks: Vec<(&str, Vec<Param<'_>>)> = vec![(sql::BEGIN, vec![])];
    if let Some(id) = &close {
        checks.push((sql::CLOSE, vec![id, &NOT_PENDING]));
    }
    if let Some((id, kind, session, created, request)) = &open {
        checks.push((
            sql::OPEN,
            vec![
                id,
                kind,
                session,
                created,
                request,
                &replica,
                &already_pending,
            ],
        ));
    }
    if let Some(id) = &revoke {
        checks.push((sql::LOCK_GRANT, vec![id, &true, &NO_GRANT]));
    }
    if let Some(id) = &spend {
        checks.push((sql::LOCK_GRANT, vec![id, &false, &NO_GRANT]));
    }
    let kept: Vec<std::borrow::Cow<'_, str>> =
        batch.grants_kept.iter().map(|id| clean(id)).collect();
    for id in &kept {
        // Locked until the commit: a revocation waits for it, or came first.
        checks.push((sql::LOCK_GRANT, vec![id, &true, &NO_GRANT]));
    }
    for (grant, (_, tool, _, body, _, (scope, target))) in batch.grants.iter().zip(&grants) {
        if grant.lasts() {
            checks.push((sql::LOCK_TOOL_GRANTS, vec![tool]));
            checks.push((
                sql::SAME_GRANT,
                vec![tool, body, &SAME_GRANT, scope, target],
            ));
        }
    }
    for ((id, tool, uses, body, created, (scope, target)), exists) in
        grants.iter().zip(&grant_exists)
    {
        checks.push((
            sql::NEW_GRANT,
            vec![id, tool, uses, body, created, exists, scope, target],
        ));
    }
    let session_was = batch
        .session_was
        .as_ref()
        .map(|was| was.as_deref().map(clean));
    if let (Some((id, ..)), Some(was)) = (&session, &session_was) {
        checks.push((sql::LOCK_SESSION, vec![id]));
        checks.push((sql::SESSION_WAS, vec![id, was, &SESSION_CHANGED]));
    }
    // The writes, with COMMIT.
    let mut writes: Vec<(&str, Vec<Param<'_>>)> = Vec::new();
    if let Some(id) = &spend {
        writes.push((sql::SPEND, vec![id]));
    }
    if let Some(id) = &revoke {
        writes.push((sql::REVOKE, vec![id]));
    }
    if let Some((id, status, call, result, created, updated)) = &decision {
        writes.push((
            sql::DECISION,
            vec![id, status, call, result, created, updated],
        ));
    }
    if let Some((id, snapshot, updated)) = &session {
        writes.push((sql::SESSION, vec![id, snapshot, updated]));
    }
    // Last: the counter row stays locked until the commit, and only that long.
    if count > 0 {
        writes.push((
            sql::EVENTS,
            vec![
                &count, &events[0], &events[1], &events[2], &events[3], &events[4], &events[5],
                &CHANNEL, &from, &closed,
            ],
        ));
    } else if close.is_some() {
        writes.push((sql::NOTIFY, vec![&CHANNEL, &notice]));
    }
    writes.push((sql::COMMIT, vec![]));

    checks.extend(writes);
    let answers = run(client, &checks).await?;
    if count == 0 {
        return Ok(Vec::new());
    }
    let last: i64 = answers
        .iter()
        .rev()
        .nth(1)
        .and_then(|rows| rows.first())
        .and_then(|row| row.try_get(0).ok())
        .ok_or_else(|| Refused::Failed(StoreError::unavailable("the events were not numbered")))?;
    Ok((last - count + 1..=last).collect())
}

/// [`pipelined`], inside a transaction: when a statement fails, the transaction is ended (a
/// COMMIT sent with it ends it too, as a rollback; the ROLLBACK after it is then a no-op), and
/// a connection lost on the way is said so.
async fn run(
    client: &deadpool_postgres::ClientWrapper,
    statements: &[(&str, Vec<Param<'_>>)],
) -> Result<Vec<Vec<Row>>, Refused> {
    let answers = match pipelined(client, statements).await {
        Ok(answers) => answers,
        // Nothing was sent (a statement could not be prepared): outside any transaction.
        Err(error) if error.is_closed() => return Err(Refused::Lost(error)),
        Err(error) => return Err(Refused::Database(error)),
    };
    let ended = statements
        .last()
        .is_some_and(|(text, _)| *text == sql::COMMIT)
        && answers.last().is_some_and(Result::is_ok);
    let mut failed = None;
    let mut rows = Vec::with_capacity(answers.len());
    for answer in answers {
        match answer {
            Ok(answer) if failed.is_none() => rows.push(answer),
            Ok(_) => {}
            // The first failure is the one to tell: those after it only say the transaction
            // is aborted.
            Err(error) => {
                failed.get_or_insert(error);
            }
        }
    }
    let Some(error) = failed else {
        return Ok(rows);
    };
    // A failure the server did not report (a lost connection, or a value the client could
    // not send while the rest of the pipeline went): what was committed is not known, and the
    // connection is not used again.
    if error.is_closed() || error.as_db_error().is_none() {
        return Err(Refused::Lost(error));
    }
    // A COMMIT sent after the failure ended the transaction (as a rollback); otherwise it is
    // ended here.
    if !ended {
        rollback(client).await?;
    }
    Err(refusal(error))
}

/// Ends the transaction a refused batch began.
async fn rollback(client: &deadpool_postgres::ClientWrapper) -> Result<(), Refused> {
    match pipelined(client, &[(sql::ROLLBACK, vec![])]).await {
        Ok(answers) => match answers.into_iter().next() {
            Some(Err(error)) => Err(Refused::Lost(error)),
            _ => Ok(()),
        },
        Err(error) => Err(Refused::Lost(error)),
    }
}

/// What a batch's condition says when it does not hold (see `sql::CLOSE` and the others).
const NOT_PENDING: &str = "not_pending";
const ALREADY_PENDING: &str = "already_pending:";
const NO_GRANT: &str = "no_grant";
const GRANT_EXISTS: &str = "grant_exists:";
const SAME_GRANT: &str = "same_grant:";
const SESSION_CHANGED: &str = "session_changed";

/// A failed statement: a condition of the batch that did not hold, or the database's failure.
fn refusal(error: tokio_postgres::Error) -> Refused {
    let condition = error
        .as_db_error()
        .filter(|db| db.code().code() == "TG001")
        .map(|db| db.message().to_owned());
    match condition.as_deref() {
        Some(NOT_PENDING) => Refused::Not(Committed::NotPending),
        Some(NO_GRANT) => Refused::Not(Committed::NoGrant),
        Some(SESSION_CHANGED) => Refused::Not(Committed::SessionChanged),
        Some(other) => {
            if let Some(id) = other.strip_prefix(SAME_GRANT) {
                Refused::Not(Committed::SameGrant(id.to_owned()))
            } else if let Some(id) = other.strip_prefix(ALREADY_PENDING) {
                Refused::Failed(StoreError::Conflict(format!(
                    "request `{id}` is already pending"
                )))
            } else if let Some(id) = other.strip_prefix(GRANT_EXISTS) {
                Refused::Failed(StoreError::Conflict(format!(
                    "grant `{id}` is already stored"
                )))
            } else {
                Refused::Database(error)
            }
        }
        None => Refused::Database(error),
    }
}

#[async_trait]
impl Store for PostgresStore {
    async fn commit(&self, batch: Batch) -> Result<Committed, StoreError> {
        if batch == Batch::default() {
            return Ok(Committed::Written(Vec::new()));
        }
        crate::checked(&batch)?;
        if batch.open.is_some() && !self.held.load(Ordering::SeqCst) {
            // The other replicas could take a request opened now for an orphan.
            return Err(StoreError::unavailable(format!(
                "this daemon has lost its connection to the {} that shows it is running; \
                 it opens no request until that connection is back",
                self.target
            )));
        }
        let pool = self.pool.clone();
        let target = self.target.clone();
        let replica = self.replica;
        // In a task of its own: see the module's documentation.
        let task = tokio::spawn(async move {
            let client = pool.get().await.map_err(|error| {
                StoreError::unavailable(format!("cannot reach the {target}: {}", causes(&error)))
            })?;
            let mut tries = 0;
            loop {
                tries += 1;
                match write(&client, &batch, replica).await {
                    Ok(seqs) => return Ok(Committed::Written(seqs)),
                    Err(Refused::Not(committed)) => return Ok(committed),
                    Err(Refused::Failed(error)) => return Err(error),
                    Err(Refused::Database(error)) if retryable(&error) && tries < RETRIES => {}
                    Err(Refused::Database(error)) => {
                        return Err(failed("the commit failed", &error));
                    }
                    Err(Refused::Lost(error)) => {
                        // Whether it was committed is not known: said as a failure, and the
                        // connection is not used again.
                        drop(deadpool_postgres::Object::take(client));
                        return Err(failed("the connection was lost during a commit", &error));
                    }
                }
            }
        });
        task.await.map_err(|error| {
            StoreError::unavailable(format!("the commit's task failed: {error}"))
        })?
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
        self.count("SELECT last FROM event_counter WHERE id = 1", &[])
            .await
    }

    async fn prunable(&self, before: &str) -> Result<Pruned, StoreError> {
        let events = self
            .count("SELECT COUNT(*) FROM events WHERE time < $1", &[&before])
            .await?;
        let decisions = self
            .count(
                "SELECT COUNT(*) FROM decisions WHERE status = 'decided' AND updated < $1",
                &[&before],
            )
            .await?;
        Ok(Pruned {
            events: u64::try_from(events).unwrap_or_default(),
            decisions: u64::try_from(decisions).unwrap_or_default(),
        })
    }

    async fn prune(&self, before: &str, limit: u32) -> Result<Pruned, StoreError> {
        let mut client = self.client().await?;
        let fail = |error: tokio_postgres::Error| failed("cannot prune", &error);
        let tx = client.transaction().await.map_err(fail)?;
        let limit = i64::from(limit);
        let events = tx
            .execute(
                "DELETE FROM events WHERE seq IN \
                 (SELECT seq FROM events WHERE time < $1 ORDER BY time LIMIT $2)",
                &[&before, &limit],
            )
            .await
            .map_err(fail)?;
        let decisions = tx
            .execute(
                "DELETE FROM decisions WHERE id IN (SELECT id FROM decisions \
                 WHERE status = 'decided' AND updated < $1 ORDER BY updated LIMIT $2)",
                &[&before, &limit],
            )
            .await
            .map_err(fail)?;
        tx.commit().await.map_err(fail)?;
        Ok(Pruned { events, decisions })
    }

    async fn pending(&self) -> Result<Vec<PendingRecord>, StoreError> {
        self.all(
            "SELECT id, kind, session, created, request FROM pending ORDER BY created, id",
            &[],
            pending_from_row,
        )
        .await
    }

    async fn pending_page(
        &self,
        session: Option<&str>,
        limit: u32,
    ) -> Result<(Vec<PendingRecord>, u64), StoreError> {
        let limit = i64::from(limit);
        let (page, total) = match session.map(clean) {
            Some(session) => (
                self.all(
                    "SELECT id, kind, session, created, request FROM pending \
                     WHERE session = $1 ORDER BY created, id LIMIT $2",
                    &[&session, &limit],
                    pending_from_row,
                )
                .await?,
                self.count(
                    "SELECT COUNT(*) FROM pending WHERE session = $1",
                    &[&session],
                )
                .await?,
            ),
            None => (
                self.all(
                    "SELECT id, kind, session, created, request FROM pending \
                     ORDER BY created, id LIMIT $1",
                    &[&limit],
                    pending_from_row,
                )
                .await?,
                self.count("SELECT COUNT(*) FROM pending", &[]).await?,
            ),
        };
        Ok((page, u64::try_from(total).unwrap_or(0)))
    }

    async fn pending_request(&self, id: &str) -> Result<Option<PendingRecord>, StoreError> {
        self.first(
            "SELECT id, kind, session, created, request FROM pending WHERE id = $1",
            &[&clean(id)],
            pending_from_row,
        )
        .await
    }

    async fn decision(&self, id: &str) -> Result<Option<DecisionRow>, StoreError> {
        self.first(
            "SELECT id, status, call, result, created, updated FROM decisions WHERE id = $1",
            &[&clean(id)],
            decision_from_row,
        )
        .await
    }

    async fn decisions_page(
        &self,
        query: &DecisionQuery,
        limit: u32,
    ) -> Result<Vec<DecisionRow>, StoreError> {
        let (created, id) = query.lower_bound();
        let session = query.session.as_deref().map(clean);
        self.all(
            "SELECT id, status, call, result, created, updated FROM decisions \
             WHERE (created, id) > ($1, $2) \
             AND ($3::text IS NULL OR (call::jsonb -> 'context' ->> 'session') = $3) \
             ORDER BY created, id LIMIT $4",
            &[&clean(&created), &clean(&id), &session, &i64::from(limit)],
            decision_from_row,
        )
        .await
    }

    async fn session(&self, id: &str) -> Result<Option<SessionRow>, StoreError> {
        self.first(
            "SELECT id, snapshot, updated FROM sessions WHERE id = $1",
            &[&clean(id)],
            session_from_row,
        )
        .await
    }

    async fn sessions(&self) -> Result<Vec<SessionRow>, StoreError> {
        self.all(
            "SELECT id, snapshot, updated FROM sessions ORDER BY updated DESC, id",
            &[],
            session_from_row,
        )
        .await
    }

    async fn tokens(&self) -> Result<Vec<TokenRow>, StoreError> {
        self.all(
            "SELECT name, role, hash, created FROM tokens ORDER BY name",
            &[],
            |row| {
                Ok(TokenRow {
                    name: column(row, 0)?,
                    role: column(row, 1)?,
                    hash: column(row, 2)?,
                    created: column(row, 3)?,
                })
            },
        )
        .await
    }

    async fn add_token(&self, token: TokenRow) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let added = client
            .execute(
                "INSERT INTO tokens (name, role, hash, created) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT DO NOTHING",
                &[
                    &clean(&token.name),
                    &token.role,
                    &token.hash,
                    &token.created,
                ],
            )
            .await
            .map_err(|error| failed("cannot store the token", &error))?;
        Ok(added == 1)
    }

    async fn remove_token(&self, name: &str) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let removed = client
            .execute("DELETE FROM tokens WHERE name = $1", &[&clean(name)])
            .await
            .map_err(|error| failed("cannot remove the token", &error))?;
        Ok(removed == 1)
    }

    /// Closes the pool and leaves: the replica's lock goes with its connection.
    async fn close(&self) {
        self.pool.close();
        self.listener.0.abort();
    }

    fn changes(&self) -> Option<broadcast::Receiver<Change>> {
        Some(self.changes.subscribe())
    }

    fn shared(&self) -> bool {
        true
    }

    async fn orphaned(&self) -> Result<Vec<PendingRecord>, StoreError> {
        // A replica runs while its lock is held (a single-number advisory lock is listed with
        // the number's high half as `classid`, its low half as `objid`, and `objsubid` 1). A
        // lock missing for a moment (its connection being made again) is not a stopped
        // replica: an owner is taken for stopped once its lock was missing at two looks
        // `ORPHAN_AFTER` apart (a request without an owner, from before replicas, at once).
        let unlocked: Vec<(Option<i64>, PendingRecord)> = self
            .all(
                "SELECT id, kind, session, created, request, owner FROM pending p \
                 WHERE (p.owner IS NULL OR p.owner <> $1) AND NOT EXISTS (SELECT 1 FROM pg_locks l \
                   WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 \
                   AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
                   AND l.classid::bigint = (p.owner >> 32) \
                   AND l.objid::bigint = (p.owner & 4294967295)) \
                 ORDER BY created, id",
                &[&self.replica],
                |row| Ok((column(row, "owner")?, pending_from_row(row)?)),
            )
            .await?;
        let now = std::time::Instant::now();
        let mut missing = self
            .missing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let owners: std::collections::HashSet<i64> =
            unlocked.iter().filter_map(|(owner, _)| *owner).collect();
        // An owner seen with its lock again is forgotten.
        missing.retain(|owner, _| owners.contains(owner));
        for owner in &owners {
            missing.entry(*owner).or_insert(now);
        }
        Ok(unlocked
            .into_iter()
            .filter(|(owner, _)| {
                owner.is_none_or(|owner| {
                    missing
                        .get(&owner)
                        .is_some_and(|since| now.duration_since(*since) >= ORPHAN_AFTER)
                })
            })
            .map(|(_, record)| record)
            .collect())
    }

    async fn still_pending(&self, ids: &[String]) -> Result<Vec<String>, StoreError> {
        let ids: Vec<String> = ids.iter().map(|id| clean(id).into_owned()).collect();
        self.all(
            "SELECT id FROM pending WHERE id = ANY($1)",
            &[&ids],
            |row| column(row, 0),
        )
        .await
    }
}

#[async_trait]
impl GrantStore for PostgresStore {
    async fn insert(&self, grant: Grant) -> Result<(), toolgate_runtime::grants::StoreError> {
        crate::grant_writes::insert(self, grant).await
    }

    async fn for_tool(
        &self,
        tool: &str,
    ) -> Result<Vec<Grant>, toolgate_runtime::grants::StoreError> {
        self.all(
            "SELECT uses_left, body FROM grants WHERE tool = $1 ORDER BY created, id",
            &[&clean(tool)],
            grant_from_row,
        )
        .await
        .map_err(crate::grant_writes::error)
    }

    async fn applying(
        &self,
        lookup: &toolgate_runtime::Lookup,
    ) -> Result<Vec<Grant>, toolgate_runtime::grants::StoreError> {
        let keys = |keys: &[String]| -> Vec<String> {
            keys.iter().map(|key| clean(key).into_owned()).collect()
        };
        self.all(
            "SELECT uses_left, body FROM grants WHERE tool = $1 AND scope_key = ANY($2) \
             AND target_key = ANY($3) ORDER BY created, id",
            &[
                &clean(&lookup.tool),
                &keys(&lookup.scopes),
                &keys(&lookup.targets),
            ],
            grant_from_row,
        )
        .await
        .map_err(crate::grant_writes::error)
    }

    async fn use_once(&self, id: &str) -> Result<bool, toolgate_runtime::grants::StoreError> {
        crate::grant_writes::use_once(self, id).await
    }

    async fn list(&self) -> Result<Vec<Grant>, toolgate_runtime::grants::StoreError> {
        self.all(
            "SELECT uses_left, body FROM grants ORDER BY created, id",
            &[],
            grant_from_row,
        )
        .await
        .map_err(crate::grant_writes::error)
    }

    async fn revoke(&self, id: &str) -> Result<bool, toolgate_runtime::grants::StoreError> {
        crate::grant_writes::revoke(self, id).await
    }
}

#[cfg(test)]
mod connection_string_tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// libpq's `sslrootcert`, which the driver does not read, is taken out of either form of
    /// connection string, and its file kept; the rest is left as it was.
    #[test]
    fn the_root_certificates_option_is_taken_out_of_either_form() {
        let cases = [
            (
                "postgres://u@db:5432/t?sslmode=require&sslrootcert=%2Fetc%2Fca%20x.pem",
                "postgres://u@db:5432/t?sslmode=require",
                Some("/etc/ca x.pem"),
            ),
            (
                "postgresql://u@db/t?sslrootcert=/ca.pem",
                "postgresql://u@db/t",
                Some("/ca.pem"),
            ),
            ("postgres://u@db/t", "postgres://u@db/t", None),
            (
                "host=db sslrootcert='/a b/ca.pem' sslmode=require",
                "host=db sslmode=require",
                Some("/a b/ca.pem"),
            ),
            ("sslrootcert=/ca.pem host=db", "host=db", Some("/ca.pem")),
            // A value that only ends in the key's name is not the key.
            (
                "host=db application_name=xsslrootcert=1",
                "host=db application_name=xsslrootcert=1",
                None,
            ),
        ];
        for (given, left, roots) in cases {
            let (url, found) = without_root_certificates(given);
            assert_eq!(url, left, "{given}");
            assert_eq!(found.as_deref(), roots.map(Path::new), "{given}");
        }
        assert!(parse_with_roots("host=db sslrootcert=/ca.pem sslmode=require").is_ok());
    }

    /// A database off this machine is spoken to over TLS unless the connection string says
    /// otherwise; on this machine (loopback, a Unix socket) libpq's default stays.
    #[test]
    fn tls_is_required_off_this_machine_unless_said_otherwise() {
        let required = |url: &str| off_this_machine_unsaid(&parse(url).unwrap(), url);
        assert!(required("postgres://u@db.example.com/t"));
        assert!(required("host=10.0.0.5 dbname=t"));
        assert!(!required("postgres://u@db.example.com/t?sslmode=disable"));
        assert!(!required("host=db sslmode=prefer"));
        assert!(!required("postgres://u@localhost/t"));
        assert!(!required("postgres://u@127.0.0.1:5433/t"));
        assert!(!required("host=::1 dbname=t"));
        assert!(!required("host=/run/postgresql dbname=t"));
    }
}
