//! The embedded store: one SQLite file in WAL mode, one writer, a few readers, and a commit
//! journal in front of them.
//!
//! A commit is one record appended to the journal (see [`crate::journal`]): one `write`, and
//! with [`Durability::Full`] one flush. A thread applies journaled commits to the database in
//! the background, many per transaction; reads apply what is still queued first, so they see
//! every commit that returned before them. A SQLite transaction of the same rows costs several times as much
//! right after an idle pause (seven pages written to the write-ahead log, each with its
//! header), which is the state an approval finds the daemon in.
//!
//! Statements run on the calling thread through rusqlite: handing each statement to a driver's
//! worker thread (sqlx's design) cost about as much per statement as a whole HTTP request on
//! the machines we measure on (`cargo bench -p toolgate-store --bench commit`). With
//! [`Durability::Full`] the disk flush dominates, and writes tell tokio's multi-threaded runtime
//! they block (`block_in_place`) so other tasks move to another thread meanwhile.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fs::File;
use std::io::Seek;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OpenFlags, Row, Transaction, TransactionBehavior};
use serde_json::Value;
use toolgate_runtime::{Grant, GrantStore};

use crate::journal::{self, Entry};
use crate::mapped::{Mapping, Span, populate_writable};
use crate::record::{
    DecisionRow, DecisionStatus, EventFilter, EventRecord, JsonText, PendingRecord, SessionRow,
    StoreError, rfc3339,
};
use crate::{Batch, Committed, Pruned, Store};

/// The schema, one migration per entry; applied in order, each in its own transaction.
const MIGRATIONS: &[&str] = &[
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
];

/// How often the applier looks at the journal while commits keep coming. It is not woken by
/// each: waking a thread is a system call on the commit's path (7-16 µs of an approval's round
/// trip on the machines we measure on). Nor does it look every 2 ms, as it first did: with the
/// journal also flushed in the background ([`Durability::Process`]), a look every 2 ms (a
/// transaction for a commit or two each time) put an approval's round trip at 1.54× a trivial
/// request, every 10 ms at 1.45× (medians of seven alternating runs of
/// `cargo bench -p toolgate-server --bench daemon`; 2 ms without the background flush: 1.46×).
const APPLY_POLL: Duration = Duration::from_millis(10);

/// After this many looks in a row find nothing (a tenth of a second), the applier sleeps until
/// a commit wakes it (or [`APPLY_EVERY`] passes): an idle daemon does not wake up every few
/// milliseconds.
const IDLE_POLLS: u32 = 10;

/// How long the applier waits before it tries again after an apply failed (the database
/// locked by another program, say).
const APPLY_RETRY: Duration = Duration::from_millis(100);

/// How often a sleeping applier looks at the journal when no commit woke it.
const APPLY_EVERY: Duration = Duration::from_secs(1);

/// Writing starts again from the top of the journal once everything in it is applied and it
/// holds more than this.
const TRUNCATE_ABOVE: u64 = 1 << 20;

/// Past this, an apply that leaves commits queued (they came while it ran) applies those too,
/// holding commits off meanwhile, so that writing can start again from the top: under steady
/// load the file would otherwise grow without end (see `SqliteStore::catch_up`).
const WRAP_ABOVE: u64 = if cfg!(test) { 2 << 20 } else { 8 << 20 };

/// The most commits journaled and not yet applied. Past it, a commit first waits for them to be
/// applied: a burst the applier is behind on slows down, and while another program holds the
/// database's write lock (which stops the applier), commits are refused after the busy
/// timeout instead of piling up in memory without bound.
const MAX_QUEUED: usize = if cfg!(test) { 64 } else { 16_384 };

/// The most bytes of records journaled and not yet applied, bounded as [`MAX_QUEUED`] bounds
/// their number: large calls reach it first (a queued commit holds about twice its record in
/// memory).
const MAX_QUEUED_BYTES: usize = if cfg!(test) { 256 << 10 } else { 64 << 20 };

/// How long closing waits for the database (and for a write in progress) before it leaves
/// the journal to the next start.
const CLOSE_WAIT: Duration = Duration::from_millis(200);

/// How long after a write found the database locked others are told so without waiting.
const LOCKED_OUT_FOR: Duration = Duration::from_secs(1);

/// How long a write waits for another program's lock on the database.
const BUSY_TIMEOUT: Duration = Duration::from_secs(if cfg!(test) { 1 } else { 10 });

/// What a prune removes, counts and deletes alike (`?1`: the time before which).
/// The highest event number ever given: the log's, or, when pruning removed the newest events,
/// the one SQLite keeps for an `AUTOINCREMENT` table (`sqlite_sequence`), so a number is never
/// given twice (a client resuming from `Last-Event-ID` would hear other events under it).
const HIGHEST_SEQ: &str = "SELECT MAX(COALESCE((SELECT MAX(seq) FROM events), 0), \
     COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0))";

const PRUNED_EVENTS: &str = "time < ?1";
const PRUNED_DECISIONS: &str = "status = 'decided' AND updated < ?1";

/// How often, at most, a journal written with [`Durability::Process`] waits to be flushed to
/// the disk while commits keep coming: what a power loss can cost. A commit after a quiet
/// moment is flushed at once, off its path; so is the last of a burst.
const FLUSH_EVERY: Duration = Duration::from_millis(100);

/// How much of the journal's file is allocated at a time.
const JOURNAL_GROWTH: u64 = 1 << 20;

/// `len` bytes from `at` of the journal, as the mapped chunks hold them: each chunk's index,
/// where in it they start, and how many it holds.
fn chunk_parts(at: usize, len: usize) -> impl Iterator<Item = (usize, usize, usize)> {
    let chunk = JOURNAL_GROWTH as usize;
    let end = at.saturating_add(len);
    let mut at = at;
    std::iter::from_fn(move || {
        if at >= end {
            return None;
        }
        let within = at % chunk;
        let here = (end - at).min(chunk - within);
        let part = (at / chunk, within, here);
        at += here;
        Some(part)
    })
}

/// How far past the journal's end its mapped pages are made writable ahead of the records (see
/// [`Journal::ahead`]): after each flush, and each time the applier looks while commits come.
/// Past it (a burst of more than this between looks), copies fault as they would have. What it
/// costs: the pages it makes writable are dirty, so a flush writes them too (at most this much
/// more per flush, while commits come).
const PREPARED: u64 = 32 << 10;

/// What a commit survives. Spelled `full` and `process` in files and on the command line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// The daemon's crash and the machine's: every commit is flushed to the disk (`fsync`)
    /// before it returns (`synchronous = FULL`). A disk flush per commit: on the machines we
    /// measure on, more than a whole trivial HTTP request.
    Full,
    /// The daemon's crash (`kill -9`) loses nothing: commits reach the operating system
    /// before they return. A power loss or kernel crash loses at most the last moment's: a
    /// thread of its own flushes the journal to the disk, right after a commit that follows a
    /// quiet moment and every 100 ms while commits keep coming, and the database's files are
    /// flushed before the journal is written again from the top or emptied; the store then
    /// starts from the commits that reached the disk, in order, up to where the journal breaks.
    /// Redis's `appendfsync everysec` and SQLite's `synchronous = NORMAL` in WAL mode make the
    /// same trade.
    #[default]
    Process,
}

impl Durability {
    /// SQLite's `synchronous` for it, in WAL mode.
    fn synchronous(self) -> &'static str {
        match self {
            Durability::Full => "FULL",
            Durability::Process => "NORMAL",
        }
    }
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
    /// Commits journaled and not yet applied, and what committing needs to know.
    journal: Mutex<Journal>,
    /// For each table, how many journaled commits that write it are not applied yet: a read
    /// of a table catches up only when one is.
    unapplied: [AtomicU64; Table::COUNT],
    /// The thread that applies journaled commits.
    applier: OnceLock<std::thread::Thread>,
    /// The thread that flushes the journal (with [`Durability::Process`]).
    flusher: OnceLock<std::thread::Thread>,
    /// Whether it sleeps until woken.
    flusher_asleep: AtomicBool,
    /// Whether it sleeps until woken (else it looks every [`APPLY_POLL`]).
    applier_asleep: AtomicBool,
    /// When a write last found the database locked by another program past the busy timeout.
    locked_out: Mutex<Option<Instant>>,
    /// Stops the writer's statement in progress (a wait for another program's lock) when the
    /// store closes.
    interrupt: rusqlite::InterruptHandle,
    /// Set when the store closes: the applier and the flusher stop.
    closing: AtomicBool,
    /// The number of the last commit journaled.
    journaled: AtomicU64,
    /// The number of the last commit known to be on the disk in the journal.
    flushed: AtomicU64,
    /// The number of the last commit known to be on the disk in the database: the journal is
    /// written again from the top only once it is the last journaled.
    applied_on_disk: AtomicU64,
    /// With [`Durability::Process`], the journal's file again, for the flusher thread to flush
    /// it without holding the journal (commits go on meanwhile).
    flush: Option<File>,
    /// How many applies the applier thread tried.
    #[cfg(test)]
    applies_tried: AtomicU64,
}

/// What a read reads, and a commit writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Table {
    Events,
    Pending,
    Decisions,
    Grants,
    Sessions,
}

impl Table {
    const COUNT: usize = 5;

    /// The tables `batch` writes.
    fn written_by(batch: &Batch) -> impl Iterator<Item = Table> + use<> {
        [
            (!batch.events.is_empty()).then_some(Table::Events),
            (batch.open.is_some() || batch.close.is_some()).then_some(Table::Pending),
            batch.decision.is_some().then_some(Table::Decisions),
            (!batch.grants.is_empty() || batch.revoke.is_some() || batch.spend.is_some())
                .then_some(Table::Grants),
            batch.session.is_some().then_some(Table::Sessions),
        ]
        .into_iter()
        .flatten()
    }
}

/// The journal's file and the state commits are checked against.
///
/// The file is allocated ahead (zeros written, [`JOURNAL_GROWTH`] at a time) and records are
/// written in place: a flush then writes the record alone, not the file's new size too, which
/// made a flushed commit about a third slower. Once everything in it is applied, writing starts
/// again from the top; the records left further down are older than the new ones, so reading
/// stops at them (see [`journal::decode`]).
struct Journal {
    file: File,
    /// Where the next record goes.
    length: u64,
    /// How much of the file is allocated.
    allocated: u64,
    next_lsn: u64,
    next_seq: i64,
    /// The ids of the pending requests, as of the last commit.
    pending: HashSet<String>,
    /// The grants' ids and use counts, as of the last commit.
    grants: HashMap<String, Option<u32>>,
    /// Journaled, not yet applied, oldest first.
    queue: VecDeque<Entry>,
    /// Journaled and not yet applied: the queue and the commits being applied.
    unapplied: usize,
    /// The database's number, carried by each record.
    store: u64,
    /// The records' bytes of the queue.
    queued_bytes: usize,
    /// The records' bytes of the queue and of the commits being applied.
    unapplied_bytes: usize,
    /// The last record's bytes: the next is encoded into the same memory.
    buffer: Vec<u8>,
    /// Whether records are copied into a mapping of the file rather than written with
    /// `pwrite`: with [`Durability::Process`], where no flush follows (with a flush, the pages
    /// a copy dirtied made `fdatasync` slower than the `pwrite` it saved).
    mapped: bool,
    /// The allocated file, [`JOURNAL_GROWTH`] bytes per mapping, in order (when mapped).
    chunks: Vec<Mapping>,
}

impl Journal {
    /// Writes one record where the last one ended (allocating more of the file first when it
    /// does not fit). A write that fails is not acknowledged, and the next record is written in
    /// its place; its header is zeroed meanwhile, so that a restart before then stops reading
    /// there instead of applying a commit its caller was told failed (a flush can fail after
    /// the write put the whole record in the file).
    fn append(&mut self, record: &[u8], flush: bool) -> Result<(), StoreError> {
        let end = self.length + record.len() as u64;
        let written = self.grow(end).and_then(|()| {
            if self.mapped {
                self.copy(record, self.length)?;
            } else {
                self.file.write_all_at(record, self.length)?;
            }
            if flush { self.file.sync_data() } else { Ok(()) }
        });
        match written {
            Ok(()) => {
                self.length = end;
                Ok(())
            }
            Err(error) => {
                self.unwrite(flush);
                Err(StoreError(format!(
                    "the commit journal could not be written: {error}"
                )))
            }
        }
    }

    /// Zeroes the header where the next record goes, as far as the file lets it (best effort:
    /// the disk may be what failed): whatever a failed append left there is then not read.
    fn unwrite(&mut self, flush: bool) {
        let zeros = [0u8; journal::HEADER];
        if self.length + zeros.len() as u64 > self.allocated {
            return;
        }
        let zeroed = if self.mapped {
            self.copy(&zeros, self.length)
        } else {
            self.file.write_all_at(&zeros, self.length)
        };
        if zeroed.is_ok() && flush {
            let _ = self.file.sync_data();
        }
    }

    /// Where the next [`PREPARED`] bytes of records go, as far as the file is allocated (the
    /// commit that needs more allocates it, as before): the pages to make writable ahead of
    /// the copies (see [`populate_writable`]), outside this lock. Nothing when records are
    /// written with `pwrite`.
    fn ahead(&self) -> Vec<Span> {
        if !self.mapped {
            return Vec::new();
        }
        let (Ok(at), Ok(len)) = (usize::try_from(self.length), usize::try_from(PREPARED)) else {
            return Vec::new();
        };
        chunk_parts(at, len)
            .map_while(|(index, within, here)| Some(self.chunks.get(index)?.span(within, here)))
            .flatten()
            .collect()
    }

    /// Copies `bytes` into the mapped chunks from `at` (allocated: see [`Journal::grow`]).
    fn copy(&mut self, bytes: &[u8], at: u64) -> std::io::Result<()> {
        let at = usize::try_from(at).map_err(std::io::Error::other)?;
        let mut rest = bytes;
        for (index, within, here) in chunk_parts(at, bytes.len()) {
            let mapping = self
                .chunks
                .get_mut(index)
                .ok_or_else(|| std::io::Error::other("a record past the allocated journal"))?;
            let (part, after) = rest.split_at(here);
            mapping.write(within, part)?;
            rest = after;
        }
        Ok(())
    }

    /// Allocates the file up to at least `end`, zeros and all, and maps what it allocates when
    /// records are copied (see [`Journal::mapped`]).
    fn grow(&mut self, end: u64) -> std::io::Result<()> {
        let chunk = usize::try_from(JOURNAL_GROWTH).map_err(std::io::Error::other)?;
        while self.allocated < end {
            let grown = self
                .file
                .write_all_at(&vec![0u8; chunk], self.allocated)
                .and_then(|()| {
                    if self.mapped {
                        self.chunks
                            .push(Mapping::new(&self.file, self.allocated, chunk)?);
                    }
                    Ok(())
                });
            if let Err(error) = grown {
                // A full disk: what part of the chunk was written is given back, so the space
                // a person frees goes to the next try (and to the database).
                let _ = self.file.set_len(self.allocated);
                return Err(error);
            }
            self.allocated += JOURNAL_GROWTH;
        }
        Ok(())
    }
}

/// The journal's queue, emptied, and its records' bytes.
fn take_queue(journal: &mut Journal) -> (Vec<Entry>, usize) {
    let bytes = std::mem::take(&mut journal.queued_bytes);
    (journal.queue.drain(..).collect(), bytes)
}

fn journal_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".journal");
    PathBuf::from(name)
}

/// Applies journaled commits in one transaction, with the LSN of the last.
fn apply(connection: &mut Connection, entries: &[Entry]) -> Result<(), StoreError> {
    let Some(last) = entries.last() else {
        return Ok(());
    };
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    for entry in entries {
        apply_entry(&tx, entry)?;
    }
    tx.prepare_cached("UPDATE journal SET applied_lsn = ? WHERE id = 1")?
        .execute([i64::try_from(last.lsn).unwrap_or(i64::MAX)])?;
    tx.commit()?;
    Ok(())
}

/// One commit's rows. What the commit decided (whether the request was still pending, the
/// events' numbers) was decided when it was journaled; nothing here can refuse it.
fn apply_entry(tx: &Transaction<'_>, entry: &Entry) -> Result<(), StoreError> {
    let batch = &entry.batch;
    if let Some(id) = &batch.close {
        tx.prepare_cached("DELETE FROM pending WHERE id = ?")?
            .execute([id])?;
    }
    if let Some(request) = &batch.open {
        tx.prepare_cached(
            "INSERT OR REPLACE INTO pending (id, kind, session, created, request) VALUES (?, ?, ?, ?, ?)",
        )?
        .execute((
            &request.id,
            &request.kind,
            &request.session,
            &request.created,
            serde_json::to_string(&request.request)?,
        ))?;
    }
    for (event, seq) in batch.events.iter().zip(&entry.seqs) {
        insert_event(tx, event, *seq)?;
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
            decision.result.as_str(),
            &decision.created,
            &decision.updated,
        ))?;
    }
    for grant in &batch.grants {
        insert_grant(tx, grant)?;
    }
    if let Some(id) = &batch.revoke {
        tx.prepare_cached("DELETE FROM grants WHERE id = ?")?
            .execute([id])?;
    }
    if let Some(id) = &batch.spend {
        tx.prepare_cached(
            "UPDATE grants SET uses_left = uses_left - 1 WHERE id = ? AND uses_left > 0",
        )?
        .execute([id])?;
    }
    if let Some(session) = &batch.session {
        tx.prepare_cached(
            "INSERT INTO sessions (id, snapshot, updated) VALUES (?, ?, ?) \
             ON CONFLICT (id) DO UPDATE SET snapshot = excluded.snapshot, updated = excluded.updated",
        )?
        .execute((
            &session.id,
            serde_json::to_string(&session.snapshot)?,
            &session.updated,
        ))?;
    }
    Ok(())
}

/// The journal's records from its start.
fn from_start(
    mut file: &File,
    size: u64,
) -> std::io::Result<journal::Reader<std::io::BufReader<&File>>> {
    file.rewind()?;
    Ok(journal::Reader::new(std::io::BufReader::new(file), size))
}

/// Commits applied per transaction when the journal is recovered.
const RECOVER_CHUNK: usize = 1024;

/// Applies what the journal holds that the database does not (the daemon stopped in between),
/// empties the journal and returns its state.
///
/// The journal is refused, left as it is and named, when applying it would lose or invent
/// commits: when it is not a file, when it continues from a later commit than the database has
/// (an older `toolgate.db` restored next to a newer journal), or when a damaged record has
/// commits after it that the database lacks. Moving it aside starts from the database as it is.
fn recover(
    connection: &mut Connection,
    path: &Path,
    durability: Durability,
) -> Result<Journal, StoreError> {
    let journal_path = journal_path(path);
    let named = |error: &dyn std::fmt::Display| {
        StoreError(format!(
            "the commit journal {}: {error}",
            journal_path.display()
        ))
    };
    let refused = |why: String| {
        StoreError(format!(
            "the commit journal {} is left as it is: {why}. Move it aside to start from the \
             database as it is (the commits only it holds are then not applied)",
            journal_path.display()
        ))
    };
    // What else leaves the journal and the database out of step: with `process`, neither file
    // waits for the disk, and the kernel writes them back each at its own time.
    let out_of_step = |why: String| {
        refused(format!(
            "{why} (a restored backup does this, and so does a power loss or system crash while \
             the daemon ran with durability = \"process\", which does not wait for the disk)"
        ))
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&journal_path)
        .map_err(|e| named(&e))?;
    let size = file.metadata().map_err(|e| named(&e))?;
    if !size.is_file() {
        return Err(refused("it is not a regular file".into()));
    }
    let size = size.len();
    let (applied, store): (i64, i64) = connection.query_row(
        "SELECT applied_lsn, store FROM journal WHERE id = 1",
        [],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )?;
    let applied = u64::try_from(applied).unwrap_or(0);
    let store = u64::try_from(store).unwrap_or(0);

    // First, whether it can be applied as a whole; nothing is written until it is known.
    let mut reader = from_start(&file, size).map_err(|e| named(&e))?;
    let mut expected = applied.saturating_add(1);
    let mut ahead = None;
    // Whether the run that wrote it flushed it every moment rather than at each commit (see
    // `Entry::lazy`), and where such a journal breaks: the commits from there on were lost
    // with the machine, as that durability allows.
    let mut lazy = false;
    let mut cut = None;
    while let Some(entry) = reader.next().map_err(|e| named(&e))? {
        if entry.store != 0 && entry.store != store {
            return Err(refused(format!(
                "its commit {} belongs to another database (it is another data directory's \
                 journal, not {}'s)",
                entry.lsn,
                path.display()
            )));
        }
        lazy |= entry.lazy;
        if entry.lsn <= applied {
            continue;
        }
        if entry.lsn != expected {
            // Read past a damaged record the database lacks: a lazy journal ends there.
            if lazy && reader.damaged().last().is_some_and(|d| d.lsn == expected) {
                cut = Some(expected);
            } else {
                ahead = Some(entry.lsn);
            }
            break;
        }
        expected += 1;
    }
    if lazy
        && cut.is_none()
        && let journal::End::Gap { found, .. } = reader.end()
        && found > applied
    {
        cut = Some(expected);
    }
    if let Some(damage) = reader.damaged().iter().find(|d| d.lsn > applied)
        && cut.is_none()
    {
        return Err(out_of_step(format!(
            "the record at byte {} (commit {}) is damaged, and commits after it follow",
            damage.offset, damage.lsn
        )));
    }
    if let Some(ahead) = ahead {
        return Err(out_of_step(format!(
            "it continues from commit {ahead}, and the database ({}) has commits up to \
             {applied} only; the database is older than its journal, so the commits in between \
             are missing",
            path.display()
        )));
    }
    if let journal::End::Gap {
        offset,
        expected,
        found,
    } = reader.end()
        && found > applied
        && cut.is_none()
    {
        return Err(out_of_step(format!(
            "the record at byte {offset} is commit {found}, where commit {expected} was due"
        )));
    }
    // Past where reading stopped, nothing newer may follow: a damaged header or a record cut
    // by damage (not by a crash) would otherwise hide the commits after it.
    let after = match cut {
        Some(_) => None,
        None => journal::whole_record_after(&file, reader.stopped_at(), size, expected - 1)
            .map_err(|e| named(&e))?,
    };
    // A journal nothing whole was read from says whether it is lazy by the record found.
    let lazy = lazy
        || after.is_some_and(|(at, _)| {
            journal::entry_at(&file, at, size).is_ok_and(|e| e.is_some_and(|e| e.lazy))
        });
    if lazy && after.is_some() {
        cut = Some(expected);
    }
    if let Some((at, lsn)) = after
        && !lazy
    {
        return Err(out_of_step(format!(
            "reading stopped at byte {} (a damaged or cut record), and a whole record of commit \
             {lsn}, which the database lacks, follows at byte {at}",
            reader.stopped_at()
        )));
    }
    if let Some(damage) = reader.damaged().first()
        && damage.lsn <= applied
    {
        // Nothing the database lacks: worth a word all the same.
        eprintln!(
            "toolgate: the commit journal {} has a damaged record at byte {} (commit {}, \
             already in the database)",
            journal_path.display(),
            damage.offset,
            damage.lsn
        );
    }

    if let Some(cut) = cut {
        eprintln!(
            "toolgate: the commit journal {} breaks at commit {cut}: it was written with \
             durability = \"process\", which flushes it to the disk every {} ms, and a power \
             loss or system crash kept only part of what came after the last flush. The commits \
             before the break are applied; those from commit {cut} on are lost",
            journal_path.display(),
            FLUSH_EVERY.as_millis()
        );
    }

    // Then applied, a chunk per transaction, up to the break of a lazy journal.
    let mut reader = from_start(&file, size).map_err(|e| named(&e))?;
    let mut chunk = Vec::new();
    while let Some(entry) = reader.next().map_err(|e| named(&e))? {
        if cut.is_some_and(|cut| entry.lsn >= cut) {
            break;
        }
        if entry.lsn > applied {
            chunk.push(entry);
        }
        if chunk.len() >= RECOVER_CHUNK {
            apply(connection, &chunk)?;
            chunk.clear();
        }
    }
    apply(connection, &chunk)?;
    let last = expected - 1;
    // Everything the file held is in the database now, and on the disk (with `process`, what
    // the last run applied may not be, whether or not anything was left to apply here): a clean
    // allocation from the top.
    flush_database_files(path).map_err(|e| named(&e))?;
    file.set_len(0).map_err(|e| named(&e))?;
    let mut journal = Journal {
        file,
        length: 0,
        allocated: 0,
        next_lsn: last + 1,
        next_seq: 0,
        pending: HashSet::new(),
        grants: HashMap::new(),
        queue: VecDeque::new(),
        unapplied: 0,
        store,
        queued_bytes: 0,
        unapplied_bytes: 0,
        buffer: Vec::new(),
        mapped: durability == Durability::Process,
        chunks: Vec::new(),
    };
    journal.grow(JOURNAL_GROWTH).map_err(|e| named(&e))?;
    journal.file.sync_all().map_err(|e| named(&e))?;
    journal.ahead().into_iter().for_each(populate_writable);
    let next_seq: i64 = connection.query_row(HIGHEST_SEQ, [], |row| row.get::<_, i64>(0))? + 1;
    let pending = all(connection, "SELECT id FROM pending", [], |row| {
        Ok(row.get::<_, String>(0)?)
    })?;
    journal.next_seq = next_seq;
    journal.pending = pending.into_iter().collect();
    let grants = all(connection, "SELECT id, uses_left FROM grants", [], |row| {
        let uses: Option<i64> = row.get(1)?;
        Ok((row.get::<_, String>(0)?, uses.map(count_of)))
    })?;
    journal.grants = grants.into_iter().collect();
    Ok(journal)
}

/// Starts the thread that applies journaled commits. While commits keep coming it looks at the
/// journal every [`APPLY_POLL`] and applies what is queued; after [`IDLE_POLLS`] looks that
/// find nothing it sleeps until a commit wakes it. It ends with the store.
fn start_applier(shared: &Arc<Shared>) -> Result<(), StoreError> {
    let weak: Weak<Shared> = Arc::downgrade(shared);
    let handle = std::thread::Builder::new()
        .name("toolgate-store-apply".into())
        .spawn(move || {
            let mut idle = 0;
            loop {
                let Some(shared) = weak.upgrade() else {
                    return;
                };
                if shared.closing.load(Ordering::SeqCst) {
                    return;
                }
                let store = SqliteStore { shared };
                if lock(&store.shared.journal).unapplied > 0 {
                    #[cfg(test)]
                    store.shared.applies_tried.fetch_add(1, Ordering::SeqCst);
                    // A failure stays queued: the next look, or the next read, tries again —
                    // not at once: while another program holds the database's lock a write
                    // fails without waiting (see `LOCKED_OUT_FOR`), and trying again at once
                    // would spin.
                    let pause = match store.write(|_| Ok(())) {
                        Ok(()) => APPLY_POLL,
                        Err(_) => APPLY_RETRY,
                    };
                    // While commits come, the journal's next pages are kept writable.
                    store.shared.prepare_journal();
                    idle = 0;
                    drop(store);
                    std::thread::park_timeout(pause);
                    continue;
                }
                idle += 1;
                if idle < IDLE_POLLS {
                    drop(store);
                    std::thread::park_timeout(APPLY_POLL);
                    continue;
                }
                // To sleep: said first, then the queue looked at again, so a commit either
                // finds it asleep (and wakes it) or is seen here.
                store.shared.applier_asleep.store(true, Ordering::SeqCst);
                if lock(&store.shared.journal).unapplied > 0 {
                    store.shared.applier_asleep.store(false, Ordering::SeqCst);
                    continue;
                }
                let shared = Arc::downgrade(&store.shared);
                drop(store);
                std::thread::park_timeout(APPLY_EVERY);
                if let Some(shared) = shared.upgrade() {
                    shared.applier_asleep.store(false, Ordering::SeqCst);
                }
                idle = 0;
            }
        })?;
    let _ = shared.applier.set(handle.thread().clone());
    Ok(())
}

/// With [`Durability::Process`], starts the thread that flushes the journal to the disk, off
/// the commits' path and apart from the applier (which may wait on another program's lock on
/// the database): at once when a commit comes after a quiet moment, then every [`FLUSH_EVERY`]
/// while commits keep coming; with nothing to flush it sleeps until a commit wakes it. It ends
/// with the store (which flushes the journal as it closes).
fn start_flusher(shared: &Arc<Shared>) -> Result<(), StoreError> {
    if shared.flush.is_none() {
        return Ok(());
    }
    let weak: Weak<Shared> = Arc::downgrade(shared);
    let handle = std::thread::Builder::new()
        .name("toolgate-store-flush".into())
        .spawn(move || {
            loop {
                let Some(shared) = weak.upgrade() else {
                    return;
                };
                if shared.closing.load(Ordering::SeqCst) {
                    return;
                }
                if shared.flush_journal() {
                    drop(shared);
                    std::thread::park_timeout(FLUSH_EVERY);
                    continue;
                }
                // To sleep: said first, then looked again, so a commit either finds it asleep
                // (and wakes it) or is seen here.
                shared.flusher_asleep.store(true, Ordering::SeqCst);
                if shared.journaled.load(Ordering::SeqCst) > shared.flushed.load(Ordering::SeqCst) {
                    shared.flusher_asleep.store(false, Ordering::SeqCst);
                    continue;
                }
                drop(shared);
                std::thread::park_timeout(APPLY_EVERY);
                if let Some(shared) = weak.upgrade() {
                    shared.flusher_asleep.store(false, Ordering::SeqCst);
                }
            }
        })?;
    let _ = shared.flusher.set(handle.thread().clone());
    Ok(())
}

impl Shared {
    /// Makes the journal's mapped pages writable ahead of the next records (see
    /// [`Journal::ahead`]), outside its lock.
    fn prepare_journal(&self) {
        if self.closing.load(Ordering::SeqCst) {
            return;
        }
        let spans = lock(&self.journal).ahead();
        spans.into_iter().for_each(populate_writable);
    }

    /// Flushes the journal when a commit reached it since the last flush (with
    /// [`Durability::Process`]; with `Full` every commit was): whether there was one.
    fn flush_journal(&self) -> bool {
        let Some(file) = &self.flush else {
            return false;
        };
        let journaled = self.journaled.load(Ordering::SeqCst);
        if journaled <= self.flushed.load(Ordering::SeqCst) {
            return false;
        }
        // A failure is tried again at the next look; the commits are in the journal already.
        if file.sync_data().is_ok() {
            self.flushed.store(journaled, Ordering::SeqCst);
            self.prepare_journal();
        }
        true
    }

    /// Notes that the database on the disk holds every commit up to `upto` (applied: the caller
    /// knows), flushing its files first with [`Durability::Process`] (its write-ahead log holds
    /// what the applies since the last checkpoint wrote, not flushed with `synchronous =
    /// NORMAL`; with `Full` each transaction was). Before the journal is written again from the
    /// top.
    fn flush_database(&self, upto: u64) -> std::io::Result<()> {
        if self.durability == Durability::Process {
            flush_database_files(&self.path)?;
        }
        self.applied_on_disk.fetch_max(upto, Ordering::AcqRel);
        Ok(())
    }
}

/// Flushes `path` and its write-ahead log (when there is one) to the disk.
fn flush_database_files(path: &Path) -> std::io::Result<()> {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    for file in [path.to_owned(), PathBuf::from(wal)] {
        match File::open(&file) {
            Ok(file) => file.sync_all()?,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
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
    connection.busy_timeout(BUSY_TIMEOUT)?;
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

/// Makes the database's files readable by their owner alone (the audit log holds every call's
/// arguments): each is created with mode 0600, or has the group's and others' bits taken away.
/// SQLite makes its `-wal` and `-shm` files with the database's mode.
fn keep_private(path: &Path) -> Result<(), StoreError> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut names = vec![path.to_owned()];
    for suffix in ["-wal", "-shm", ".journal", ".lock", ".lock-journal"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        names.push(PathBuf::from(name));
    }
    for (index, name) in names.iter().enumerate() {
        let failed =
            |e: std::io::Error| StoreError(format!("cannot keep {} private: {e}", name.display()));
        match std::fs::symlink_metadata(name) {
            Ok(meta) if meta.is_file() => {
                let mode = meta.permissions().mode();
                if mode & 0o077 != 0 {
                    std::fs::set_permissions(name, std::fs::Permissions::from_mode(mode & 0o700))
                        .map_err(failed)?;
                }
            }
            // Not a file: SQLite or the journal's checks say what is wrong with it.
            Ok(_) => {}
            // The database, the journal and the lock are made here, private from the start.
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
            keep_private(path)?;
            let owner = owner_lock(path)?;
            let mut writer = connect(path, durability, false)?;
            migrate(&mut writer)?;
            let journal = recover(&mut writer, path, durability)?;
            let journaled = journal.next_lsn.saturating_sub(1);
            let flush = match durability {
                Durability::Full => None,
                Durability::Process => Some(journal.file.try_clone()?),
            };
            let reader = connect(path, durability, true)?;
            let interrupt = writer.get_interrupt_handle();
            let shared = Arc::new(Shared {
                path: path.to_owned(),
                durability,
                _owner: Mutex::new(owner),
                writer: Mutex::new(writer),
                readers: Mutex::new(vec![reader]),
                journal: Mutex::new(journal),
                unapplied: Default::default(),
                applier: OnceLock::new(),
                applier_asleep: AtomicBool::new(false),
                flusher: OnceLock::new(),
                flusher_asleep: AtomicBool::new(false),
                locked_out: Mutex::new(None),
                interrupt,
                closing: AtomicBool::new(false),
                journaled: AtomicU64::new(journaled),
                flushed: AtomicU64::new(journaled),
                applied_on_disk: AtomicU64::new(journaled),
                flush,
                #[cfg(test)]
                applies_tried: AtomicU64::new(0),
            });
            start_applier(&shared)?;
            start_flusher(&shared)?;
            Ok(SqliteStore { shared })
        })
        .map_err(|error: StoreError| {
            // SQLite's words for SQLITE_BUSY: say which file, and what holds it.
            if error.0.contains("database is locked") {
                StoreError(format!(
                    "{} is locked by another program (is it holding a write transaction?): {}",
                    path.display(),
                    error.0
                ))
            } else {
                error
            }
        })
    }

    /// Runs `work` on the writer, once the journal's queue is applied.
    fn write<T>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let run = || {
            let mut writer = lock(&self.shared.writer);
            // Another program held the database's write lock past the busy timeout a moment
            // ago: those who waited behind that try look once without waiting, rather than
            // each waiting a timeout of its own in turn.
            let recently =
                lock(&self.shared.locked_out).is_some_and(|at| at.elapsed() < LOCKED_OUT_FOR);
            if recently {
                writer.busy_timeout(Duration::ZERO)?;
            }
            let result = self.catch_up(&mut writer).and_then(|()| work(&mut writer));
            if recently {
                writer.busy_timeout(BUSY_TIMEOUT)?;
            }
            let busy = matches!(&result, Err(error) if error.0.contains("database is locked"));
            let mut locked_out = lock(&self.shared.locked_out);
            match (busy, recently) {
                // SQLite's words for SQLITE_BUSY, after the whole timeout.
                (true, false) => *locked_out = Some(Instant::now()),
                (true, true) => {}
                (false, _) => *locked_out = None,
            }
            drop(locked_out);
            result
        };
        match self.shared.durability {
            // A disk flush: long enough for tokio to move other tasks away.
            Durability::Full => blocking(run),
            Durability::Process => run(),
        }
    }

    /// Whether a commit that returned and writes `table` is not in the database yet.
    fn behind(&self, table: Table) -> bool {
        self.shared
            .unapplied
            .get(table as usize)
            .is_some_and(|count| count.load(Ordering::Acquire) > 0)
    }

    /// Applies the journal's queue (the writer is held), and starts the journal again from
    /// the top when it can.
    ///
    /// Writing goes back to the top of the journal when the queue is empty after an apply. While
    /// commits keep coming, new ones are queued during every apply and it seldom is, so past
    /// [`WRAP_ABOVE`] what was queued meanwhile (an apply's worth of milliseconds) is applied
    /// again with the journal held, commits waiting, and then it is: the file stays bounded.
    fn catch_up(&self, writer: &mut Connection) -> Result<(), StoreError> {
        self.apply_queue(writer)?;
        self.start_again(writer)
    }

    /// Applies what the journal's queue holds now (the writer is held).
    fn apply_queue(&self, writer: &mut Connection) -> Result<(), StoreError> {
        let (entries, bytes) = take_queue(&mut lock(&self.shared.journal));
        if entries.is_empty() {
            return Ok(());
        }
        let applied = apply(writer, &entries);
        self.count_applied(&mut lock(&self.shared.journal), entries, bytes, &applied);
        applied
    }

    /// After an apply: writing goes back to the top of the journal if everything is applied,
    /// past [`WRAP_ABOVE`] applying first what came meanwhile, with the journal held (the
    /// writer is held).
    fn start_again(&self, writer: &mut Connection) -> Result<(), StoreError> {
        let past = |journal: &Journal| journal.length > WRAP_ABOVE && !journal.queue.is_empty();
        // Read first, while nothing is taken: an error here leaves the queue as it is.
        let patience = if past(&lock(&self.shared.journal)) {
            let ms: i64 = writer.pragma_query_value(None, "busy_timeout", |row| row.get(0))?;
            Some(Duration::from_millis(u64::try_from(ms).unwrap_or(0)))
        } else {
            None
        };
        let mut journal = lock(&self.shared.journal);
        if let Some(patience) = patience
            && past(&journal)
        {
            let (entries, bytes) = take_queue(&mut journal);
            // The database was written a moment ago; should another program take its lock now,
            // commits do not wait for it: what was taken goes back to the queue.
            let applied = writer
                .busy_timeout(Duration::ZERO)
                .map_err(StoreError::from)
                .and_then(|()| apply(writer, &entries));
            let restored = writer.busy_timeout(patience);
            // Counted (or put back) whatever happens next.
            self.count_applied(&mut journal, entries, bytes, &applied);
            restored?;
        }
        self.start_from_top(journal, TRUNCATE_ABOVE)
    }

    /// Writes the journal again from the top when everything in it is applied and it holds
    /// more than `above` bytes, once the database on the disk holds every commit in it: with
    /// [`Durability::Process`], whose transactions are not flushed each, the database's files
    /// are flushed first, once, with the journal let go meanwhile (the writer is held, so what
    /// was applied stays applied).
    fn start_from_top<'a>(
        &'a self,
        mut journal: MutexGuard<'a, Journal>,
        above: u64,
    ) -> Result<(), StoreError> {
        let all_applied = |journal: &Journal| journal.queue.is_empty() && journal.length > above;
        if !all_applied(&journal) {
            return Ok(());
        }
        let last = journal.next_lsn.saturating_sub(1);
        if self.shared.applied_on_disk.load(Ordering::Acquire) < last {
            drop(journal);
            self.shared.flush_database(last)?;
            journal = lock(&self.shared.journal);
        }
        if all_applied(&journal)
            && self.shared.applied_on_disk.load(Ordering::Acquire)
                >= journal.next_lsn.saturating_sub(1)
        {
            // The next record goes at the top.
            journal.length = 0;
        }
        Ok(())
    }

    /// Counts `entries` (taken from the queue, `bytes` of records) applied; when `applied` is
    /// an error they go back to the front of the queue, in order: nothing journaled is dropped.
    fn count_applied(
        &self,
        journal: &mut Journal,
        entries: Vec<Entry>,
        bytes: usize,
        applied: &Result<(), StoreError>,
    ) {
        if applied.is_err() {
            for entry in entries.into_iter().rev() {
                journal.queue.push_front(entry);
            }
            journal.queued_bytes += bytes;
            return;
        }
        for table in entries
            .iter()
            .flat_map(|entry| Table::written_by(&entry.batch))
        {
            if let Some(count) = self.shared.unapplied.get(table as usize) {
                count.fetch_sub(1, Ordering::Release);
            }
        }
        journal.unapplied = journal.unapplied.saturating_sub(entries.len());
        journal.unapplied_bytes = journal.unapplied_bytes.saturating_sub(bytes);
    }

    /// Runs `work`, a read of `table`, on an idle reader (opening one when none is idle), once
    /// every commit that returned and writes `table` is applied.
    fn read<T>(
        &self,
        table: Table,
        work: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        if self.behind(table) {
            self.write(|_| Ok(()))?;
        }
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
        self.read(Table::Events, |connection| {
            let mut statement = connection.prepare_cached(&sql)?;
            let rows = statement.query_map(rusqlite::params_from_iter(values), event_from_row)?;
            // A page ends early once it holds PAGE_BYTES of events (a thousand large calls
            // would be a gigabyte).
            let (mut events, mut bytes) = (Vec::new(), 0usize);
            for row in rows {
                let event = row??;
                bytes = bytes.saturating_add(event.body.as_str().len());
                events.push(event);
                if bytes >= crate::PAGE_BYTES {
                    break;
                }
            }
            Ok(events)
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

fn insert_event(tx: &Transaction<'_>, event: &EventRecord, seq: i64) -> Result<(), StoreError> {
    tx.prepare_cached(
        "INSERT INTO events (seq, type, time, session, request_id, tool_call_id, body) \
         VALUES (?, ?, ?, ?, ?, ?, ?)",
    )?
    .execute((
        seq,
        &event.kind,
        &event.time,
        &event.session,
        &event.request_id,
        &event.tool_call_id,
        event.body.as_str(),
    ))?;
    Ok(())
}

/// A JSON column, or a row error naming it.
fn json_column(row: &Row<'_>, column: &str) -> Result<Value, StoreError> {
    let text: String = row.get(column)?;
    Ok(crate::record::from_stored(text.as_bytes())?)
}

fn event_from_row(row: &Row<'_>) -> rusqlite::Result<Result<EventRecord, StoreError>> {
    Ok(Ok(EventRecord {
        seq: row.get("seq")?,
        kind: row.get("type")?,
        time: row.get("time")?,
        session: row.get("session")?,
        request_id: row.get("request_id")?,
        tool_call_id: row.get("tool_call_id")?,
        body: match JsonText::parse(row.get("body")?) {
            Ok(body) => body,
            Err(error) => return Ok(Err(error.into())),
        },
    }))
}

fn grant_from_row(row: &Row<'_>) -> Result<Grant, StoreError> {
    let body: String = row.get("body")?;
    let mut grant: Grant = crate::record::from_stored(body.as_bytes())?;
    let uses: Option<i64> = row.get("uses_left")?;
    grant.uses_left = uses.map(count_of);
    Ok(grant)
}

/// A stored use count.
fn count_of(uses: i64) -> u32 {
    u32::try_from(uses.max(0)).unwrap_or(u32::MAX)
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

/// Stores a grant (a commit checked that its id is new).
fn insert_grant(connection: &Connection, grant: &Grant) -> Result<(), StoreError> {
    connection
        .prepare_cached(
            "INSERT OR REPLACE INTO grants (id, tool, uses_left, body, created) VALUES (?, ?, ?, ?, ?)",
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
        // Another program's lock makes applying the journal and the checkpoint wait; both are
        // only tidying (the journal keeps what is not applied for the next start), so each
        // waits a moment at most. The applier stops, and its wait in progress is cut short.
        self.shared.closing.store(true, Ordering::SeqCst);
        self.shared.interrupt.interrupt();
        blocking(|| {
            let deadline = Instant::now() + CLOSE_WAIT;
            let mut writer = loop {
                match self.shared.writer.try_lock() {
                    Ok(writer) => break writer,
                    Err(std::sync::TryLockError::Poisoned(p)) => break p.into_inner(),
                    Err(std::sync::TryLockError::WouldBlock) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err(std::sync::TryLockError::WouldBlock) => return,
                }
            };
            let _ = writer.busy_timeout(CLOSE_WAIT);
            let _ = self.catch_up(&mut writer).and_then(|()| {
                writer.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")?;
                // What came after the last flush on the disk too; and the database (another
                // program's read can keep the checkpoint from finishing) before the journal is
                // written again from the top.
                self.shared.flush_journal();
                self.start_from_top(lock(&self.shared.journal), 0)
            });
        });
    }

    async fn commit(&self, batch: Batch) -> Result<Committed, StoreError> {
        let (queued, bytes) = {
            let journal = lock(&self.shared.journal);
            (journal.unapplied, journal.unapplied_bytes)
        };
        if queued >= MAX_QUEUED || bytes >= MAX_QUEUED_BYTES {
            self.write(|_| Ok(())).map_err(|error| {
                StoreError(format!(
                    "{queued} commits ({} KiB) are waiting to be applied to {} (is another \
                     program holding its write lock?): {error}",
                    bytes >> 10,
                    self.shared.path.display()
                ))
            })?;
        }
        let mut journal = lock(&self.shared.journal);
        if let Some(id) = &batch.close
            && !journal.pending.contains(id)
        {
            return Ok(Committed::NotPending);
        }
        if let Some(request) = &batch.open
            && batch.close.as_ref() != Some(&request.id)
            && journal.pending.contains(&request.id)
        {
            return Err(StoreError(format!(
                "request `{}` is already pending",
                request.id
            )));
        }
        let mut batch = batch;
        if let Some(id) = &batch.revoke
            && !journal.grants.contains_key(id)
        {
            return Ok(Committed::NoGrant);
        }
        if let Some(id) = &batch.spend {
            match journal.grants.get(id) {
                None | Some(Some(0)) => return Ok(Committed::NoGrant),
                // Uses without end: nothing to count.
                Some(None) => batch.spend = None,
                Some(Some(_)) => {}
            }
        }
        if let Some(grant) = batch
            .grants
            .iter()
            .find(|grant| journal.grants.contains_key(&grant.id))
        {
            return Err(StoreError(format!(
                "grant `{}` is already stored",
                grant.id
            )));
        }
        if batch == Batch::default() {
            return Ok(Committed::Written(Vec::new()));
        }
        let count = i64::try_from(batch.events.len()).unwrap_or(i64::MAX);
        let entry = Entry {
            lsn: journal.next_lsn,
            store: journal.store,
            lazy: self.shared.durability == Durability::Process,
            seqs: (journal.next_seq..journal.next_seq.saturating_add(count)).collect(),
            batch,
        };
        let mut record = std::mem::take(&mut journal.buffer);
        journal::encode_into(&mut record, &entry)?;
        // What serde_json cannot read back (in the journal at the next start, in the database,
        // in a client) is not committed.
        if let Some(nested) = journal::nests_deeper(&record, crate::record::MAX_NESTING) {
            journal.buffer = record;
            return Err(StoreError(format!(
                "the commit nests {nested} levels deep (arrays and objects within each other), \
                 more than the {} the store keeps",
                crate::record::MAX_NESTING
            )));
        }
        let appended = match self.shared.durability {
            Durability::Full => blocking(|| journal.append(&record, true)),
            Durability::Process => journal.append(&record, false),
        };
        let size = record.len();
        journal.buffer = record;
        appended?;
        self.shared
            .journaled
            .store(journal.next_lsn, Ordering::SeqCst);
        journal.next_lsn += 1;
        journal.next_seq = journal.next_seq.saturating_add(count);
        if let Some(id) = &entry.batch.close {
            journal.pending.remove(id);
        }
        if let Some(request) = &entry.batch.open {
            journal.pending.insert(request.id.clone());
        }
        for grant in &entry.batch.grants {
            journal.grants.insert(grant.id.clone(), grant.uses_left);
        }
        if let Some(id) = &entry.batch.revoke {
            journal.grants.remove(id);
        }
        if let Some(Some(uses)) = entry
            .batch
            .spend
            .as_ref()
            .and_then(|id| journal.grants.get_mut(id))
        {
            *uses = uses.saturating_sub(1);
        }
        let seqs = entry.seqs.clone();
        for table in Table::written_by(&entry.batch) {
            if let Some(count) = self.shared.unapplied.get(table as usize) {
                count.fetch_add(1, Ordering::Release);
            }
        }
        journal.queue.push_back(entry);
        journal.unapplied += 1;
        journal.queued_bytes += size;
        journal.unapplied_bytes += size;
        drop(journal);
        if self.shared.applier_asleep.load(Ordering::SeqCst)
            && let Some(applier) = self.shared.applier.get()
        {
            applier.unpark();
        }
        if self.shared.flusher_asleep.load(Ordering::SeqCst)
            && let Some(flusher) = self.shared.flusher.get()
        {
            flusher.unpark();
        }
        Ok(Committed::Written(seqs))
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

    async fn prunable(&self, before: &str) -> Result<Pruned, StoreError> {
        let count = |table: Table, sql: String| {
            self.read(table, |connection| {
                Ok(connection.query_row(&sql, [before], |row| row.get::<_, i64>(0))?)
            })
        };
        let events = count(
            Table::Events,
            format!("SELECT COUNT(*) FROM events WHERE {PRUNED_EVENTS}"),
        )?;
        let decisions = count(
            Table::Decisions,
            format!("SELECT COUNT(*) FROM decisions WHERE {PRUNED_DECISIONS}"),
        )?;
        Ok(Pruned {
            events: u64::try_from(events).unwrap_or_default(),
            decisions: u64::try_from(decisions).unwrap_or_default(),
        })
    }

    async fn prune(&self, before: &str, limit: u32) -> Result<Pruned, StoreError> {
        // Many rows may go: other tasks move to another thread meanwhile, whatever the
        // durability.
        let (events, decisions) = blocking(|| {
            self.write(|connection| {
                let tx = connection.transaction()?;
                let events = tx.execute(
                    &format!(
                        "DELETE FROM events WHERE seq IN \
                         (SELECT seq FROM events WHERE {PRUNED_EVENTS} ORDER BY time LIMIT ?2)"
                    ),
                    rusqlite::params![before, limit],
                )?;
                let decisions = tx.execute(
                    &format!(
                        "DELETE FROM decisions WHERE id IN (SELECT id FROM decisions \
                         WHERE {PRUNED_DECISIONS} ORDER BY updated LIMIT ?2)"
                    ),
                    rusqlite::params![before, limit],
                )?;
                tx.commit()?;
                Ok((events, decisions))
            })
        })?;
        Ok(Pruned {
            events: events as u64,
            decisions: decisions as u64,
        })
    }

    async fn last_seq(&self) -> Result<i64, StoreError> {
        self.read(Table::Events, |connection| {
            Ok(connection.query_row(HIGHEST_SEQ, [], |row| row.get(0))?)
        })
    }

    async fn pending(&self) -> Result<Vec<PendingRecord>, StoreError> {
        self.read(Table::Pending, |connection| {
            all(
                connection,
                "SELECT id, kind, session, created, request FROM pending ORDER BY created, id",
                [],
                pending_from_row,
            )
        })
    }

    async fn pending_page(
        &self,
        session: Option<&str>,
        limit: u32,
    ) -> Result<(Vec<PendingRecord>, u64), StoreError> {
        self.read(Table::Pending, |connection| {
            // A session's are read by its index (a `?1 IS NULL OR session = ?1` would not be).
            let (page, total): (Vec<PendingRecord>, i64) = match session {
                Some(session) => (
                    all(
                        connection,
                        "SELECT id, kind, session, created, request FROM pending \
                         WHERE session = ?1 ORDER BY created, id LIMIT ?2",
                        (session, limit),
                        pending_from_row,
                    )?,
                    connection.query_row(
                        "SELECT COUNT(*) FROM pending WHERE session = ?1",
                        [session],
                        |row| row.get(0),
                    )?,
                ),
                None => (
                    all(
                        connection,
                        "SELECT id, kind, session, created, request FROM pending \
                         ORDER BY created, id LIMIT ?1",
                        [limit],
                        pending_from_row,
                    )?,
                    connection.query_row("SELECT COUNT(*) FROM pending", [], |row| row.get(0))?,
                ),
            };
            Ok((page, u64::try_from(total).unwrap_or(0)))
        })
    }

    async fn pending_request(&self, id: &str) -> Result<Option<PendingRecord>, StoreError> {
        self.read(Table::Pending, |connection| {
            first(
                connection,
                "SELECT id, kind, session, created, request FROM pending WHERE id = ?",
                [id],
                pending_from_row,
            )
        })
    }

    async fn decision(&self, id: &str) -> Result<Option<DecisionRow>, StoreError> {
        self.read(Table::Decisions, |connection| {
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
                        result: JsonText::parse(row.get("result")?)?,
                        created: row.get("created")?,
                        updated: row.get("updated")?,
                    })
                },
            )
        })
    }

    async fn session(&self, id: &str) -> Result<Option<SessionRow>, StoreError> {
        self.read(Table::Sessions, |connection| {
            first(
                connection,
                "SELECT id, snapshot, updated FROM sessions WHERE id = ?",
                [id],
                session_from_row,
            )
        })
    }

    async fn sessions(&self) -> Result<Vec<SessionRow>, StoreError> {
        self.read(Table::Sessions, |connection| {
            all(
                connection,
                "SELECT id, snapshot, updated FROM sessions ORDER BY updated DESC, id",
                [],
                session_from_row,
            )
        })
    }
}

#[async_trait]
impl GrantStore for SqliteStore {
    async fn insert(&self, grant: Grant) -> Result<(), toolgate_runtime::grants::StoreError> {
        crate::grant_writes::insert(self, grant).await
    }

    async fn for_tool(
        &self,
        tool: &str,
    ) -> Result<Vec<Grant>, toolgate_runtime::grants::StoreError> {
        self.read(Table::Grants, |connection| {
            all(
                connection,
                "SELECT uses_left, body FROM grants WHERE tool = ? ORDER BY created, id",
                [tool],
                grant_from_row,
            )
        })
        .map_err(crate::grant_writes::error)
    }

    async fn use_once(&self, id: &str) -> Result<bool, toolgate_runtime::grants::StoreError> {
        crate::grant_writes::use_once(self, id).await
    }

    async fn list(&self) -> Result<Vec<Grant>, toolgate_runtime::grants::StoreError> {
        self.read(Table::Grants, |connection| {
            all(
                connection,
                "SELECT uses_left, body FROM grants ORDER BY created, id",
                [],
                grant_from_row,
            )
        })
        .map_err(crate::grant_writes::error)
    }

    async fn revoke(&self, id: &str) -> Result<bool, toolgate_runtime::grants::StoreError> {
        crate::grant_writes::revoke(self, id).await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::*;

    #[test]
    fn a_span_of_the_journal_is_cut_where_its_chunks_meet() {
        let chunk = JOURNAL_GROWTH as usize;
        let parts = |at, len| chunk_parts(at, len).collect::<Vec<_>>();
        assert_eq!(parts(10, 20), [(0, 10, 20)]);
        assert_eq!(parts(chunk - 4, 10), [(0, chunk - 4, 4), (1, 0, 6)]);
        assert_eq!(
            parts(chunk - 1, chunk + 2),
            [(0, chunk - 1, 1), (1, 0, chunk), (2, 0, 1)]
        );
        assert!(parts(5, 0).is_empty());
    }
    use crate::{DecisionRow, DecisionStatus, EventFilter, EventRecord, JsonText, PendingRecord};
    use serde_json::json;
    use toolgate_runtime::{Effect, GrantScope, GrantTarget};

    fn event(kind: &str, request: &str) -> EventRecord {
        EventRecord::new(kind, json!({"request_id": request}))
    }

    /// The types of the (first ten) events after `after`, in order.
    async fn kinds_after(store: &SqliteStore, after: i64) -> Vec<String> {
        store
            .events_after(after, &EventFilter::default(), 10)
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.kind)
            .collect()
    }

    fn pending(id: &str) -> PendingRecord {
        PendingRecord {
            id: id.into(),
            kind: "external".into(),
            session: Some("s".into()),
            created: "2026-11-22T00:00:00.000000Z".into(),
            request: json!({"tool": "t"}),
        }
    }

    /// Alice's grant of `git` commands in session `s`, with `uses` uses.
    fn git_grant(uses: Option<u32>) -> Grant {
        let mut grant = Grant::new(
            Effect::Allow,
            "bash",
            GrantTarget::Command {
                prefix: vec!["git".into()],
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

    fn applied_lsn(path: &Path) -> u64 {
        let connection = Connection::open(path).unwrap();
        let lsn: i64 = connection
            .query_row("SELECT applied_lsn FROM journal", [], |row| row.get(0))
            .unwrap();
        u64::try_from(lsn).unwrap()
    }

    /// What a daemon that died before its commits were applied leaves: the database without
    /// them, the journal with them (and maybe a record cut short). The next start applies each
    /// once, in order, and carries on from there.
    #[tokio::test]
    async fn journaled_commits_the_database_lacks_are_applied_when_it_opens() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolgate.db");
        let store = SqliteStore::open(&path).await.unwrap();
        store
            .commit(Batch {
                open: Some(pending("r1")),
                events: vec![event("permission_requested", "r1")],
                ..Batch::default()
            })
            .await
            .unwrap();
        store.close().await;
        drop(store);
        let applied = applied_lsn(&path);
        assert_eq!(applied, 1);

        let grant = git_grant(None);
        let decision = DecisionRow {
            id: "r1".into(),
            status: DecisionStatus::Decided,
            call: json!({"tool": "t"}),
            result: JsonText::of(&json!({"decision": "allow"})).unwrap(),
            created: "2026-11-22T00:00:00.000000Z".into(),
            updated: "2026-11-22T00:00:01.000000Z".into(),
        };
        let entries = [
            // Already applied: skipped.
            Entry {
                lsn: applied,
                store: 0,
                lazy: false,
                seqs: vec![1],
                batch: Batch {
                    events: vec![event("duplicate", "r1")],
                    ..Batch::default()
                },
            },
            Entry {
                lsn: applied + 1,
                store: 0,
                lazy: false,
                seqs: vec![2],
                batch: Batch {
                    close: Some("r1".into()),
                    events: vec![event("permission_resolved", "r1")],
                    decision: Some(decision.clone()),
                    grants: vec![grant.clone()],
                    ..Batch::default()
                },
            },
            Entry {
                lsn: applied + 2,
                store: 0,
                lazy: false,
                seqs: vec![3, 4],
                batch: Batch {
                    open: Some(pending("r2")),
                    events: vec![event("permission_requested", "r2"), event("note", "r2")],
                    ..Batch::default()
                },
            },
        ];
        let mut bytes = Vec::new();
        for entry in &entries {
            bytes.extend(journal::encode(entry).unwrap());
        }
        // A last record cut short: never acknowledged.
        let cut = journal::encode(&Entry {
            lsn: applied + 3,
            store: 0,
            lazy: false,
            seqs: vec![5],
            batch: Batch {
                events: vec![event("torn", "r3")],
                ..Batch::default()
            },
        })
        .unwrap();
        bytes.extend(&cut[..cut.len() / 2]);
        std::fs::write(journal_path(&path), &bytes).unwrap();

        let store = SqliteStore::open(&path).await.unwrap();
        let left = std::fs::read(journal_path(&path)).unwrap();
        assert!(
            journal::decode(&left).is_empty(),
            "the journal starts clean"
        );
        assert_eq!(applied_lsn(&path), applied + 2);
        let kinds: Vec<(i64, String)> = store
            .events_after(0, &EventFilter::default(), 100)
            .await
            .unwrap()
            .into_iter()
            .map(|e| (e.seq, e.kind))
            .collect();
        assert_eq!(
            kinds,
            [
                (1, "permission_requested".to_owned()),
                (2, "permission_resolved".to_owned()),
                (3, "permission_requested".to_owned()),
                (4, "note".to_owned()),
            ]
        );
        assert_eq!(store.decision("r1").await.unwrap(), Some(decision));
        let grants: Vec<String> = store
            .list()
            .await
            .unwrap()
            .into_iter()
            .map(|g| g.id)
            .collect();
        assert_eq!(grants, [grant.id]);
        let ids: Vec<String> = store
            .pending()
            .await
            .unwrap()
            .into_iter()
            .map(|p| p.id)
            .collect();
        assert_eq!(ids, ["r2"]);

        // Commits carry on from what was recovered: r1 is no longer pending, r2 is.
        let again = store
            .close_request("r1", &event("permission_resolved", "r1"))
            .await
            .unwrap();
        assert_eq!(again, None);
        let closed = store
            .close_request("r2", &event("permission_resolved", "r2"))
            .await
            .unwrap();
        assert_eq!(closed, Some(5));
        drop(store);
        let store = SqliteStore::open(&path).await.unwrap();
        assert_eq!(store.last_seq().await.unwrap(), 5);
        assert!(store.pending().await.unwrap().is_empty());
        assert_eq!(applied_lsn(&path), applied + 3);
    }

    /// A commit that cannot be journaled is refused, and the next one takes its place: what
    /// was committed before and after is read back, in order and without a gap, and survives a
    /// restart.
    #[tokio::test]
    async fn a_commit_that_cannot_be_journaled_is_refused_and_the_next_takes_its_place() {
        for durability in [Durability::Full, Durability::Process] {
            a_commit_that_cannot_be_journaled_is_refused_and_the_next_takes_its_place_with(
                durability,
            )
            .await;
        }
    }

    async fn a_commit_that_cannot_be_journaled_is_refused_and_the_next_takes_its_place_with(
        durability: Durability,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolgate.db");
        let store = SqliteStore::open_with(&path, durability).await.unwrap();
        store.append(&[event("kept", "a")]).await.unwrap();
        // A record that needs more of the file, which refuses writes (as a full disk would).
        let (kept, length) = {
            let mut journal = lock(&store.shared.journal);
            let read_only = File::open(journal_path(&path)).unwrap();
            let length = journal.length;
            journal.length = journal.allocated - 4;
            (std::mem::replace(&mut journal.file, read_only), length)
        };
        let error = store.append(&[event("lost", "a")]).await.unwrap_err();
        assert!(error.0.contains("could not be written"), "{error}");
        {
            let mut journal = lock(&store.shared.journal);
            assert_eq!(journal.length, journal.allocated - 4, "nothing was taken");
            journal.file = kept;
            journal.length = length;
        }
        assert_eq!(store.append(&[event("after", "a")]).await.unwrap(), [2]);
        let kinds = |events: Vec<EventRecord>| -> Vec<String> {
            events.into_iter().map(|e| e.kind).collect()
        };
        let read = store
            .events_after(0, &EventFilter::default(), 10)
            .await
            .unwrap();
        assert_eq!(kinds(read), ["kept", "after"]);
        drop(store);
        let store = SqliteStore::open_with(&path, durability).await.unwrap();
        let read = store
            .events_after(0, &EventFilter::default(), 10)
            .await
            .unwrap();
        assert_eq!(kinds(read), ["kept", "after"]);
    }

    /// A page of events ends with the one that brings it to `PAGE_BYTES`, oldest first and
    /// newest first alike; one event larger than that is a page of its own.
    #[tokio::test]
    async fn a_page_of_events_is_bounded_in_bytes_too() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("toolgate.db"))
            .await
            .unwrap();
        let large = "x".repeat(crate::PAGE_BYTES / 3);
        for i in 0..5 {
            let event = EventRecord::new("large", json!({"n": i, "blob": large}));
            store.append(&[event]).await.unwrap();
        }
        let filter = EventFilter::default();
        let seqs =
            |events: Vec<EventRecord>| -> Vec<i64> { events.iter().map(|e| e.seq).collect() };
        assert_eq!(
            seqs(store.events_after(0, &filter, 10).await.unwrap()),
            [1, 2, 3]
        );
        assert_eq!(
            seqs(store.events_after(3, &filter, 10).await.unwrap()),
            [4, 5]
        );
        assert_eq!(seqs(store.latest(&filter, 10).await.unwrap()), [5, 4, 3]);
        assert_eq!(
            seqs(store.events_after(0, &filter, 2).await.unwrap()),
            [1, 2]
        );
        let huge = EventRecord::new("huge", json!({"blob": "y".repeat(crate::PAGE_BYTES)}));
        store.append(&[huge]).await.unwrap();
        assert_eq!(seqs(store.events_after(5, &filter, 10).await.unwrap()), [6]);
    }

    /// A commit nested deeper than serde_json reads back is refused, and nothing of it is kept;
    /// what older versions stored that deep (past 128 levels) is read all the same, so one
    /// such request neither breaks the pending list nor stops the store from opening.
    #[tokio::test]
    async fn json_nested_past_what_serde_json_reads_is_refused_and_read_when_stored_before() {
        let nested = |levels: usize| {
            let text = format!("{}{}", "[".repeat(levels), "]".repeat(levels));
            serde_json::from_str::<Value>(&text).unwrap()
        };
        let deep = |id: &str, levels: usize| PendingRecord {
            request: json!({"call": {"args": {"x": nested(levels)}}}),
            ..pending(id)
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolgate.db");
        let store = SqliteStore::open(&path).await.unwrap();
        let open = |record| Batch {
            open: Some(record),
            ..Batch::default()
        };
        store.commit(open(deep("fits", 90))).await.unwrap();
        let error = store.commit(open(deep("deep", 120))).await.unwrap_err();
        assert!(error.0.contains("levels deep"), "{error}");
        store.commit(open(pending("after"))).await.unwrap();
        // Opened at the same time: listed by id.
        let ids = |records: Vec<PendingRecord>| -> Vec<String> {
            records.into_iter().map(|r| r.id).collect()
        };
        assert_eq!(ids(store.pending().await.unwrap()), ["after", "fits"]);
        store.close().await;
        drop(store);

        // As an older version stored it: 127 levels of arguments in a request.
        let stored = deep("old", 127);
        let connection = Connection::open(&path).unwrap();
        connection
            .execute(
                "INSERT INTO pending (id, kind, session, created, request) VALUES (?, ?, ?, ?, ?)",
                (
                    &stored.id,
                    &stored.kind,
                    &stored.session,
                    &stored.created,
                    serde_json::to_string(&stored.request).unwrap(),
                ),
            )
            .unwrap();
        drop(connection);
        let store = SqliteStore::open(&path).await.unwrap();
        let listed = store.pending().await.unwrap();
        assert_eq!(ids(listed.clone()), ["after", "fits", "old"]);
        assert_eq!(listed[2].request, stored.request);
        assert_eq!(
            store.pending_request("old").await.unwrap().unwrap().request,
            stored.request
        );
        store.close().await;
        drop(store);

        // And a journal record an older version wrote that deep is a commit, not damage.
        let lsn = applied_lsn(&path) + 1;
        let record = journal::encode(&Entry {
            lsn,
            store: 0,
            lazy: false,
            seqs: Vec::new(),
            batch: open(deep("journaled", 125)),
        })
        .unwrap();
        std::fs::write(journal_path(&path), record).unwrap();
        let store = SqliteStore::open(&path).await.unwrap();
        assert_eq!(applied_lsn(&path), lsn);
        assert_eq!(
            ids(store.pending().await.unwrap()),
            ["after", "fits", "journaled", "old"]
        );
    }

    /// A commit whose flush failed after its record was written (the caller told it failed)
    /// is not applied by the next start: its header is zeroed.
    #[tokio::test]
    async fn a_failed_append_is_not_applied_at_the_next_start() {
        for durability in [Durability::Full, Durability::Process] {
            for unwritten in [false, true] {
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("toolgate.db");
                let store = SqliteStore::open_with(&path, durability).await.unwrap();
                store.append(&[event("kept", "a")]).await.unwrap();
                {
                    // What a failed flush leaves: the next record, whole, where it goes, and
                    // the journal's state as it was.
                    let mut journal = lock(&store.shared.journal);
                    let entry = Entry {
                        lsn: journal.next_lsn,
                        store: journal.store,
                        lazy: durability == Durability::Process,
                        seqs: vec![journal.next_seq],
                        batch: Batch {
                            events: vec![event("failed", "b")],
                            ..Batch::default()
                        },
                    };
                    let record = journal::encode(&entry).unwrap();
                    let at = journal.length;
                    if journal.mapped {
                        journal.copy(&record, at).unwrap();
                    } else {
                        journal.file.write_all_at(&record, at).unwrap();
                    }
                    if unwritten {
                        journal.unwrite(durability == Durability::Full);
                    }
                }
                store.close().await;
                drop(store);
                let reopened = SqliteStore::open_with(&path, durability).await.unwrap();
                let kinds = kinds_after(&reopened, 0).await;
                // Left as it was, the record is read as a commit (what zeroing prevents).
                let expected = if unwritten {
                    vec!["kept"]
                } else {
                    vec!["kept", "failed"]
                };
                assert_eq!(kinds, expected, "{durability:?}");
            }
        }
    }

    /// Under steady load commits come during every apply, so the queue is seldom empty after
    /// one: past WRAP_ABOVE, what came meanwhile is applied too and writing starts again from
    /// the top (the file would grow without end otherwise); below it, a queued commit keeps the
    /// journal where it is.
    #[tokio::test]
    async fn a_journal_under_steady_load_starts_again_from_the_top() {
        for durability in [Durability::Full, Durability::Process] {
            a_journal_under_steady_load_starts_again_from_the_top_with(durability).await;
        }
    }

    // The writer is held across commits on purpose: the test applies by hand, as the applier
    // does, and commits in between.
    #[allow(clippy::await_holding_lock)]
    async fn a_journal_under_steady_load_starts_again_from_the_top_with(durability: Durability) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolgate.db");
        let store = SqliteStore::open_with(&path, durability).await.unwrap();
        let long = "x".repeat(4096);
        let mut writer = lock(&store.shared.writer);
        let mut written = 0;
        let commit_during_an_apply = async |store: &SqliteStore, writer: &mut Connection| {
            store
                .append(&[EventRecord::new("long", json!({"text": long}))])
                .await
                .unwrap();
            store.apply_queue(writer).unwrap();
            // This one comes while the apply runs.
            store.append(&[event("short", "a")]).await.unwrap();
            store.start_again(writer).unwrap();
        };
        // Past TRUNCATE_ABOVE, below WRAP_ABOVE: the queued commit is left to the next apply,
        // and the journal keeps growing.
        while lock(&store.shared.journal).length <= TRUNCATE_ABOVE {
            commit_during_an_apply(&store, &mut writer).await;
            written += 2;
            assert_eq!(lock(&store.shared.journal).unapplied, 1);
            assert!(written < 2000, "the journal grows");
        }
        let mut longest = 0;
        loop {
            let before = lock(&store.shared.journal).length;
            longest = longest.max(before);
            commit_during_an_apply(&store, &mut writer).await;
            written += 2;
            let journal = lock(&store.shared.journal);
            if journal.length == 0 {
                // Written again from the top only with the database on the disk up to its last
                // commit (with `process`, its files flushed for it), and `synchronous` as it was.
                assert_eq!(
                    store.shared.applied_on_disk.load(Ordering::Acquire),
                    journal.next_lsn - 1
                );
                let synchronous: i64 = writer
                    .pragma_query_value(None, "synchronous", |row| row.get(0))
                    .unwrap();
                assert_eq!(
                    synchronous,
                    if durability == Durability::Full { 2 } else { 1 }
                );
                // Everything was applied, the last commit too, once this round passed WRAP_ABOVE.
                assert!(
                    before + 2 * 5000 > WRAP_ABOVE,
                    "started again at {before} bytes"
                );
                assert_eq!((journal.unapplied, journal.queue.len()), (0, 0));
                break;
            }
            assert_eq!(journal.unapplied, 1);
            assert!(
                written < 4000,
                "the journal grows past {} bytes",
                journal.length
            );
        }
        assert!(longest <= WRAP_ABOVE + 2 * 4096 + 1024, "{longest}");
        drop(writer);
        // And it goes on from the top, every commit in the database once.
        store.append(&[event("short", "b")]).await.unwrap();
        assert_eq!(store.last_seq().await.unwrap(), written + 1);
        store.close().await;
        drop(store);
        let reopened = SqliteStore::open_with(&path, durability).await.unwrap();
        assert_eq!(reopened.last_seq().await.unwrap(), written + 1);
        let events = reopened
            .events_after(0, &EventFilter::default(), u32::MAX)
            .await
            .unwrap();
        assert_eq!(events.len(), usize::try_from(written + 1).unwrap());
        assert!(events.windows(2).all(|w| w[1].seq == w[0].seq + 1));
    }

    /// Once everything is applied, writing starts again from the top of the journal: the older
    /// records left below the new ones are never applied again.
    #[tokio::test]
    async fn a_journal_written_again_from_the_top_is_recovered_exactly() {
        for durability in [Durability::Full, Durability::Process] {
            a_journal_written_again_from_the_top_is_recovered_exactly_with(durability).await;
        }
    }

    // The writer is held across a commit on purpose: a commit does not need it.
    #[allow(clippy::await_holding_lock)]
    async fn a_journal_written_again_from_the_top_is_recovered_exactly_with(
        durability: Durability,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolgate.db");
        let store = SqliteStore::open_with(&path, durability).await.unwrap();
        // Long events, so the journal passes the size at which it starts again.
        let long = "x".repeat(4096);
        let mut written = 0;
        while lock(&store.shared.journal).length <= TRUNCATE_ABOVE {
            store
                .append(&[EventRecord::new("long", json!({"text": long}))])
                .await
                .unwrap();
            written += 1;
            assert!(written < 1000, "the journal grows");
        }
        // A read applies everything, and the next record goes at the top. (Or the applier
        // thread did, and may still be flushing the database before it writes from the top:
        // it holds the writer until it is done.)
        assert_eq!(store.last_seq().await.unwrap(), written);
        drop(lock(&store.shared.writer));
        assert_eq!(lock(&store.shared.journal).length, 0);
        // The daemon dies before the last commit is applied (the writer is held, so it cannot
        // be): its files as they are then.
        let copy = tempfile::tempdir().unwrap();
        let copied = copy.path().join("toolgate.db");
        {
            let _writer = lock(&store.shared.writer);
            store.append(&[event("short", "a")]).await.unwrap();
            std::fs::copy(&path, &copied).unwrap();
            for suffix in ["-wal", ".journal"] {
                let mut from = path.as_os_str().to_owned();
                from.push(suffix);
                let mut to = copied.as_os_str().to_owned();
                to.push(suffix);
                if std::fs::metadata(&from).is_ok() {
                    std::fs::copy(&from, &to).unwrap();
                }
            }
        }
        let written_lsn = u64::try_from(written).unwrap();
        assert_eq!(
            applied_lsn(&copied),
            written_lsn,
            "the last commit is only journaled"
        );
        let recovered = SqliteStore::open_with(&copied, durability).await.unwrap();
        assert_eq!(applied_lsn(&copied), written_lsn + 1);
        assert_eq!(recovered.last_seq().await.unwrap(), written + 1);
        let kinds = kinds_after(&recovered, written - 1).await;
        assert_eq!(kinds, ["long", "short"]);
    }

    fn record(lsn: u64) -> Vec<u8> {
        record_with(lsn, false)
    }

    /// A record as a store with [`Durability::Process`] writes it.
    fn lazy(lsn: u64) -> Vec<u8> {
        record_with(lsn, true)
    }

    fn record_with(lsn: u64, lazy: bool) -> Vec<u8> {
        journal::encode(&Entry {
            lsn,
            store: 0,
            lazy,
            seqs: vec![i64::try_from(lsn).unwrap()],
            batch: Batch {
                events: vec![event("journaled", "r")],
                ..Batch::default()
            },
        })
        .unwrap()
    }

    fn damaged(lsn: u64) -> Vec<u8> {
        damage(record(lsn))
    }

    fn damage(mut bytes: Vec<u8>) -> Vec<u8> {
        let last = bytes.len() - 2;
        bytes[last] ^= 0x20;
        bytes
    }

    fn headless(mut bytes: Vec<u8>) -> Vec<u8> {
        bytes[..8].fill(0);
        bytes
    }

    /// A database whose journal has applied commits 1 to 3, and the journal's path.
    async fn three_commits_applied(dir: &Path) -> (PathBuf, PathBuf) {
        let path = dir.join("toolgate.db");
        let store = SqliteStore::open(&path).await.unwrap();
        for _ in 0..3 {
            store.append(&[event("applied", "r")]).await.unwrap();
        }
        store.close().await;
        drop(store);
        assert_eq!(applied_lsn(&path), 3);
        let journal = journal_path(&path);
        (path, journal)
    }

    /// A journal written with `Durability::Process` is flushed every moment, not at each
    /// commit: a power loss may keep any part of what came after the last flush. Where it
    /// breaks, the commits that read whole before are applied and the store opens; what follows
    /// was lost with the machine (the same breaks in a journal flushed at each commit are
    /// damage, and refused: see the next test). What no power loss leaves is still refused.
    #[tokio::test]
    async fn a_lazy_journal_cut_by_a_power_loss_keeps_what_reads_whole_before_the_break() {
        let block_zeroed = {
            let records: Vec<Vec<u8>> = (4..40).map(lazy).collect();
            // The records that end before the zeros begin.
            let whole = records
                .iter()
                .scan(0, |end, r| {
                    *end += r.len();
                    Some(*end)
                })
                .take_while(|end| *end <= 900)
                .count();
            let mut bytes = records.concat();
            bytes[900..900 + 4096].fill(0);
            (bytes, 3 + u64::try_from(whole).unwrap())
        };
        let cases: [(&str, Vec<u8>, u64); 8] = [
            ("whole", [lazy(4), lazy(5)].concat(), 5),
            (
                "a zeroed header with commits after it",
                [lazy(4), headless(lazy(5)), lazy(6)].concat(),
                4,
            ),
            (
                "a damaged record with commits after it",
                [lazy(4), damage(lazy(5)), lazy(6)].concat(),
                4,
            ),
            (
                "two damaged records in a row",
                [lazy(4), damage(lazy(5)), damage(lazy(6)), lazy(7)].concat(),
                4,
            ),
            ("a skipped number", [lazy(4), lazy(6)].concat(), 4),
            (
                "the first record the database lacks without its header",
                [headless(lazy(4)), lazy(5)].concat(),
                3,
            ),
            (
                "the top written again, a page of it lost",
                [lazy(4), lazy(2), lazy(3), lazy(7)].concat(),
                4,
            ),
            (
                "a block of zeros over several records",
                block_zeroed.0,
                block_zeroed.1,
            ),
        ];
        for (case, bytes, kept) in cases {
            let dir = tempfile::tempdir().unwrap();
            let (path, journal_file) = three_commits_applied(dir.path()).await;
            std::fs::write(&journal_file, &bytes).unwrap();
            let store = SqliteStore::open_with(&path, Durability::Process)
                .await
                .unwrap_or_else(|e| panic!("{case}: {e}"));
            assert_eq!(applied_lsn(&path), kept, "{case}");
            assert_eq!(
                store.last_seq().await.unwrap(),
                i64::try_from(kept).unwrap(),
                "{case}"
            );
            // It goes on after what it kept.
            let next = store.append(&[event("next", "r")]).await.unwrap();
            assert_eq!(next, [i64::try_from(kept).unwrap() + 1], "{case}");
            store.close().await;
            drop(store);
            assert_eq!(applied_lsn(&path), kept + 1, "{case}");
        }

        // What a power loss does not leave is refused all the same.
        let refusals: [(&str, Vec<u8>, &str); 2] = [
            (
                "an older database",
                [lazy(6), lazy(7)].concat(),
                "continues from commit 6",
            ),
            (
                "another database's journal",
                journal::encode(&Entry {
                    lsn: 4,
                    store: 12345,
                    lazy: true,
                    seqs: vec![4],
                    batch: Batch {
                        events: vec![event("foreign", "r")],
                        ..Batch::default()
                    },
                })
                .unwrap(),
                "belongs to another database",
            ),
        ];
        for (case, bytes, why) in refusals {
            let dir = tempfile::tempdir().unwrap();
            let (path, journal_file) = three_commits_applied(dir.path()).await;
            std::fs::write(&journal_file, &bytes).unwrap();
            let error = SqliteStore::open_with(&path, Durability::Process)
                .await
                .unwrap_err()
                .0;
            assert!(error.contains(why), "{case}: {error}");
            assert_eq!(std::fs::read(&journal_file).unwrap(), bytes, "{case}: kept");
            assert_eq!(applied_lsn(&path), 3, "{case}: nothing applied");
        }
    }

    /// With `Durability::Process` the applier flushes the journal: a commit after a quiet
    /// moment at once, and while commits keep coming, every `FLUSH_EVERY`. Its records say
    /// they are lazy; with `Full`, where each commit is flushed before it returns, they do not.
    #[tokio::test]
    async fn a_lazy_store_flushes_its_journal_off_the_commits_path() {
        let flushed_up_to = async |store: &SqliteStore, lsn: u64| {
            let started = Instant::now();
            while store.shared.flushed.load(Ordering::Acquire) < lsn {
                assert!(
                    started.elapsed() < Duration::from_secs(10),
                    "commit {lsn} not flushed"
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolgate.db");
        let store = SqliteStore::open_with(&path, Durability::Process)
            .await
            .unwrap();
        store.append(&[event("first", "r")]).await.unwrap();
        flushed_up_to(&store, 1).await;
        for _ in 0..5 {
            store.append(&[event("more", "r")]).await.unwrap();
        }
        flushed_up_to(&store, 6).await;
        assert_eq!(store.shared.journaled.load(Ordering::Acquire), 6);
        let bytes = std::fs::read(journal_path(&path)).unwrap();
        let entries = journal::decode(&bytes);
        assert_eq!(entries.len(), 6);
        assert!(entries.iter().all(|e| e.lazy));
        drop(store);

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolgate.db");
        let store = SqliteStore::open_with(&path, Durability::Full)
            .await
            .unwrap();
        assert!(store.shared.flush.is_none());
        store.append(&[event("first", "r")]).await.unwrap();
        let bytes = std::fs::read(journal_path(&path)).unwrap();
        let entries = journal::decode(&bytes);
        assert_eq!(entries.len(), 1);
        assert!(!entries[0].lazy);
    }

    /// A journal that applying would lose or invent commits from is refused, named and left
    /// as it is, with the database untouched; one whose odd records hold nothing the database
    /// lacks is not.
    #[tokio::test]
    async fn a_journal_that_does_not_follow_the_database_is_refused_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let (path, journal_file) = three_commits_applied(dir.path()).await;
        let long = |lsn: u64| {
            let mut bytes = record(lsn);
            bytes[..4].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
            bytes
        };
        let block_zeroed = {
            let mut bytes: Vec<u8> = (4..40).flat_map(record).collect();
            bytes[900..900 + 4096].fill(0);
            bytes
        };
        let ours: i64 = Connection::open(&path)
            .unwrap()
            .query_row("SELECT store FROM journal", [], |row| row.get(0))
            .unwrap();
        assert!(ours > 0, "a database has its own number");
        let foreign = journal::encode(&Entry {
            lsn: 4,
            store: u64::try_from(ours).unwrap() ^ 1,
            lazy: false,
            seqs: vec![4],
            batch: Batch {
                events: vec![event("foreign", "r")],
                ..Batch::default()
            },
        })
        .unwrap();
        let refusals: [(&str, Vec<u8>, &str); 10] = [
            (
                "another database's journal",
                [foreign, record(5)].concat(),
                "belongs to another database",
            ),
            (
                "a zeroed header with commits after it",
                [record(4), headless(record(5)), record(6)].concat(),
                "a whole record of commit 6, which the database lacks, follows at byte",
            ),
            (
                "the first record the database lacks without its header",
                [headless(record(4)), record(5)].concat(),
                "reading stopped at byte 0",
            ),
            (
                "a length past the file's end",
                [record(4), long(5), record(6)].concat(),
                "commit 6, which the database lacks",
            ),
            (
                "a block of zeros over several records",
                block_zeroed,
                "which the database lacks, follows at byte",
            ),
            (
                "a record written twice",
                [record(4), record(4), record(5)].concat(),
                "commit 5, which the database lacks",
            ),
            (
                "two damaged records in a row",
                [record(4), damaged(5), damaged(6), record(7)].concat(),
                "commit 7, which the database lacks",
            ),
            (
                "an older database",
                [record(6), record(7)].concat(),
                "continues from commit 6",
            ),
            (
                "a damaged record with commits after it",
                [record(3), damaged(4), record(5)].concat(),
                "the record at byte",
            ),
            (
                "a skipped number",
                [record(4), record(6)].concat(),
                "is commit 6, where commit 5 was due",
            ),
        ];
        for (case, bytes, why) in refusals {
            std::fs::write(&journal_file, &bytes).unwrap();
            let error = SqliteStore::open(&path).await.unwrap_err().0;
            assert!(error.contains(why), "{case}: {error}");
            assert!(
                error.contains(&journal_file.display().to_string()) && error.contains("aside"),
                "{case}: {error}"
            );
            assert_eq!(std::fs::read(&journal_file).unwrap(), bytes, "{case}: kept");
            assert_eq!(applied_lsn(&path), 3, "{case}: nothing applied");
        }

        // Not a file: a FIFO would hang a read, /dev/zero never end one.
        std::fs::remove_file(&journal_file).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &journal_file).unwrap();
        let error = SqliteStore::open(&path).await.unwrap_err().0;
        assert!(error.contains("not a regular file"), "{error}");
        std::fs::remove_file(&journal_file).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(&journal_file)
            .status()
            .unwrap();
        assert!(made.success());
        let error = SqliteStore::open(&path).await.unwrap_err().0;
        assert!(error.contains("not a regular file"), "{error}");
        std::fs::remove_file(&journal_file).unwrap();

        // Records from before the journal started again from the top, after a torn last one:
        // all in the database, so nothing is lost.
        let mut torn = record(4);
        torn.truncate(torn.len() - 5);
        torn.resize(torn.len() + 5, 0);
        std::fs::write(&journal_file, [torn, record(2), record(3)].concat()).unwrap();
        drop(SqliteStore::open(&path).await.unwrap());
        assert_eq!(applied_lsn(&path), 3);

        // Damage among commits the database has, and a forged last record (the largest
        // number there is): nothing is lost, so the store opens and carries on.
        let forged = journal::encode(&Entry {
            lsn: u64::MAX,
            store: 0,
            lazy: false,
            seqs: vec![4],
            batch: Batch {
                events: vec![event("forged", "r")],
                ..Batch::default()
            },
        })
        .unwrap();
        std::fs::write(
            &journal_file,
            [damaged(2), record(3), record(4), forged].concat(),
        )
        .unwrap();
        let store = SqliteStore::open(&path).await.unwrap();
        assert_eq!(applied_lsn(&path), 4);
        assert_eq!(store.append(&[event("next", "r")]).await.unwrap(), [5]);
        let kinds = kinds_after(&store, 0).await;
        assert_eq!(
            kinds,
            ["applied", "applied", "applied", "journaled", "next"]
        );
        drop(store);
        let store = SqliteStore::open(&path).await.unwrap();
        assert_eq!(store.last_seq().await.unwrap(), 5);
    }

    /// A store in `dir` with event `first` applied and `queued` journaled behind another
    /// program's write lock, and that program's connection (which holds it).
    async fn queued_behind_a_lock(dir: &Path) -> (SqliteStore, Connection) {
        let path = dir.join("toolgate.db");
        let store = SqliteStore::open_with(&path, Durability::Process)
            .await
            .unwrap();
        store.append(&[event("first", "r")]).await.unwrap();
        let _ = store.last_seq().await.unwrap();
        let outside = Connection::open(&path).unwrap();
        outside.execute_batch("BEGIN IMMEDIATE").unwrap();
        store.append(&[event("queued", "r")]).await.unwrap();
        (store, outside)
    }

    /// Reads waiting behind one that found the database locked do not each wait a timeout of
    /// their own in turn (six in a row would take six timeouts); once the lock is let go, the
    /// next read goes through at once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 6)]
    async fn waiters_behind_a_locked_database_are_told_at_once() {
        let dir = tempfile::tempdir().unwrap();
        // Journaled, not applied: reading events must catch up first.
        let (store, outside) = queued_behind_a_lock(dir.path()).await;
        let started = std::time::Instant::now();
        let reads: Vec<_> = (0..6)
            .map(|_| {
                let store = store.clone();
                tokio::spawn(
                    async move { store.events_after(0, &EventFilter::default(), 10).await },
                )
            })
            .collect();
        for read in reads {
            let error = read.await.unwrap().unwrap_err();
            assert!(error.0.contains("database is locked"), "{error}");
        }
        assert!(
            started.elapsed() < BUSY_TIMEOUT * 3,
            "six waiters took {:?}",
            started.elapsed()
        );
        outside.execute_batch("ROLLBACK").unwrap();
        drop(outside);
        let kinds = kinds_after(&store, 0).await;
        assert_eq!(kinds, ["first", "queued"]);
    }

    /// While another program holds the database's lock, the applier tries again now and then,
    /// not in a loop: a write found the lock held tells the next ones at once for a second
    /// (`LOCKED_OUT_FOR`), and an applier that tried again at once spun through that second.
    #[tokio::test]
    async fn the_applier_does_not_spin_while_the_database_is_locked() {
        let dir = tempfile::tempdir().unwrap();
        let (store, outside) = queued_behind_a_lock(dir.path()).await;
        let before = store.shared.applies_tried.load(Ordering::SeqCst);
        // One busy timeout the applier waits out, then the second the writes after it are
        // told at once, and more.
        let held = BUSY_TIMEOUT + LOCKED_OUT_FOR + Duration::from_millis(500);
        tokio::time::sleep(held).await;
        let tried = store.shared.applies_tried.load(Ordering::SeqCst) - before;
        let most = u64::try_from(held.as_millis() / APPLY_RETRY.as_millis()).unwrap() + 2;
        assert!(
            (1..=most).contains(&tried),
            "the applier tried {tried} times in {held:?} (at most {most})"
        );
        outside.execute_batch("ROLLBACK").unwrap();
        drop(outside);
        let kinds = kinds_after(&store, 0).await;
        assert_eq!(kinds, ["first", "queued"]);
    }

    /// Saving a session, storing, spending and revoking grants are commits like the others:
    /// journaled, so another program's write lock does not hold them up, and applied at the
    /// next start when the daemon stopped first.
    #[tokio::test]
    async fn sessions_and_grants_are_journaled_past_another_programs_lock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolgate.db");
        let store = SqliteStore::open_with(&path, Durability::Process)
            .await
            .unwrap();
        let counted = git_grant(Some(2));
        let unlimited = git_grant(None);
        store.insert(counted.clone()).await.unwrap();
        store.insert(unlimited.clone()).await.unwrap();
        store.put_session("s1", &json!({"v": 1})).await.unwrap();
        let _ = store.sessions().await.unwrap();

        let outside = Connection::open(&path).unwrap();
        outside.execute_batch("BEGIN IMMEDIATE").unwrap();
        let started = std::time::Instant::now();
        store.put_session("s2", &json!({"v": 1})).await.unwrap();
        store.put_session("s1", &json!({"v": 2})).await.unwrap();
        assert!(store.use_once(&counted.id).await.unwrap());
        assert!(store.use_once(&counted.id).await.unwrap());
        assert!(!store.use_once(&counted.id).await.unwrap(), "no use left");
        assert!(store.use_once(&unlimited.id).await.unwrap());
        assert!(!store.use_once("nope").await.unwrap());
        let later = git_grant(None);
        store.insert(later.clone()).await.unwrap();
        let twice = store.insert(later.clone()).await.unwrap_err();
        assert!(twice.0.contains("already stored"), "{twice}");
        assert!(store.revoke(&later.id).await.unwrap());
        assert!(!store.revoke(&later.id).await.unwrap());
        assert!(!store.revoke("nope").await.unwrap());
        assert!(
            started.elapsed() < BUSY_TIMEOUT,
            "the writes waited for the lock: {:?}",
            started.elapsed()
        );
        store.close().await;
        drop(store);
        outside.execute_batch("ROLLBACK").unwrap();
        drop(outside);

        let store = SqliteStore::open_with(&path, Durability::Process)
            .await
            .unwrap();
        let sessions: Vec<(String, Value)> = store
            .sessions()
            .await
            .unwrap()
            .into_iter()
            .map(|row| (row.id, row.snapshot))
            .collect();
        assert_eq!(
            sessions,
            // Most recently saved first (by id when saved in the same microsecond).
            [
                ("s1".into(), json!({"v": 2})),
                ("s2".into(), json!({"v": 1}))
            ]
        );
        let grants = store.list().await.unwrap();
        assert_eq!(grants.len(), 2, "{grants:?}");
        let back = grants.iter().find(|g| g.id == counted.id).unwrap();
        assert_eq!(back.uses_left, Some(0));
        // What the store knows of its grants came back with it.
        assert!(!store.use_once(&counted.id).await.unwrap());
        assert!(store.use_once(&unlimited.id).await.unwrap());
        assert!(store.insert(unlimited.clone()).await.is_err());
        assert!(store.revoke(&unlimited.id).await.unwrap());
        assert_eq!(store.list().await.unwrap().len(), 1);
    }

    /// Closing while another program holds the write lock does not wait it out: what is not
    /// applied stays in the journal, and the next start applies it.
    #[tokio::test]
    async fn closing_leaves_to_the_next_start_what_a_locked_database_cannot_take() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolgate.db");
        let store = SqliteStore::open_with(&path, Durability::Process)
            .await
            .unwrap();
        store.append(&[event("first", "r")]).await.unwrap();
        let _ = store.last_seq().await.unwrap();
        let outside = Connection::open(&path).unwrap();
        outside.execute_batch("BEGIN IMMEDIATE").unwrap();
        store.append(&[event("queued", "r")]).await.unwrap();
        // Let the applier be in its wait for the lock.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let started = std::time::Instant::now();
        store.close().await;
        assert!(
            started.elapsed() < BUSY_TIMEOUT,
            "closing took {:?}",
            started.elapsed()
        );
        drop(store);
        outside.execute_batch("ROLLBACK").unwrap();
        drop(outside);
        let store = SqliteStore::open_with(&path, Durability::Process)
            .await
            .unwrap();
        let kinds = kinds_after(&store, 0).await;
        assert_eq!(kinds, ["first", "queued"]);
    }

    /// The bound counts bytes too: large commits reach it long before their number does.
    #[tokio::test]
    async fn large_commits_are_refused_past_a_bound_in_bytes_while_the_database_is_locked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolgate.db");
        let store = SqliteStore::open_with(&path, Durability::Process)
            .await
            .unwrap();
        store.append(&[event("first", "r")]).await.unwrap();
        let _ = store.last_seq().await.unwrap();
        let outside = Connection::open(&path).unwrap();
        outside.execute_batch("BEGIN IMMEDIATE").unwrap();
        let large = || EventRecord::new("large", json!({"pad": "x".repeat(32 << 10)}));
        let mut accepted = 0;
        let error = loop {
            match store.append(&[large()]).await {
                Ok(_) => accepted += 1,
                Err(error) => break error,
            }
            assert!(accepted < MAX_QUEUED, "bounded by bytes, not by number");
        };
        let bound = MAX_QUEUED_BYTES / (32 << 10);
        assert!(
            (bound..=bound + 1).contains(&accepted),
            "{accepted} accepted"
        );
        assert!(error.0.contains("KiB) are waiting"), "{error}");
        outside.execute_batch("ROLLBACK").unwrap();
        drop(outside);
        store.append(&[large()]).await.unwrap();
        assert_eq!(
            store.last_seq().await.unwrap(),
            i64::try_from(accepted).unwrap() + 2
        );
    }

    /// While another program holds the database's write lock, commits are journaled up to a
    /// bound, then refused with a reason; once the lock is let go, everything journaled is
    /// applied and commits go on.
    #[tokio::test]
    async fn commits_are_refused_past_a_bound_while_the_database_is_locked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolgate.db");
        let store = SqliteStore::open_with(&path, Durability::Process)
            .await
            .unwrap();
        store.append(&[event("first", "r")]).await.unwrap();
        let _ = store.last_seq().await.unwrap();
        let outside = Connection::open(&path).unwrap();
        outside.execute_batch("BEGIN IMMEDIATE").unwrap();
        let mut accepted = 0;
        let error = loop {
            match store.append(&[event("queued", "r")]).await {
                Ok(_) => accepted += 1,
                Err(error) => break error,
            }
            assert!(accepted <= MAX_QUEUED, "commits are bounded");
        };
        assert!(accepted >= MAX_QUEUED - 1, "{accepted} accepted");
        assert!(error.0.contains("write lock"), "{error}");
        outside.execute_batch("ROLLBACK").unwrap();
        drop(outside);
        let next = store.append(&[event("after", "r")]).await.unwrap()[0];
        assert_eq!(next, i64::try_from(accepted).unwrap() + 2);
        assert_eq!(store.last_seq().await.unwrap(), next);
    }
}
