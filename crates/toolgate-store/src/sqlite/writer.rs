//! The one thread that writes the SQLite database.
//!
//! Commits are handed to it in a queue. It takes every commit waiting at that moment and
//! writes them in one transaction (group commit): one write-ahead log append, and with
//! [`Durability::Full`](super::Durability::Full) one disk flush, for the whole group. Each
//! commit runs in a savepoint of its own, so one whose condition fails (the request no longer
//! pending, the grant gone) or whose rows are refused is rolled back alone and the others
//! stand. Each caller is answered once the transaction holding its commit is committed, or
//! failed: nothing is acknowledged before SQLite says it is written.
//!
//! The thread waits on other programs' locks (a `sqlite3` shell in a transaction, a backup),
//! never a runtime's worker; while it waits, commits queue up to a bound and are refused past
//! it.

use std::collections::VecDeque;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rusqlite::{Connection, ErrorCode};
use tokio::sync::oneshot;

use super::schema::BUSY_TIMEOUT;
use crate::record::{DecisionRow, EventRecord, SessionRow, StoreError};
use crate::{Batch, Committed};
use toolgate_runtime::Grant;

/// Commits waiting for the writer past which more are refused (the database is locked by
/// another program, or the disk is slow): each waiting caller holds a connection.
pub(super) const MAX_WAITING: usize = if cfg!(test) { 64 } else { 16_384 };

/// The same in bytes of rows.
pub(super) const MAX_WAITING_BYTES: usize = if cfg!(test) { 256 << 10 } else { 64 << 20 };

/// The most commits one transaction holds: a group's callers wait for its last one.
const MAX_GROUP: usize = 512;

/// Commits between two folds of the write-ahead log into the database, when the writer thread
/// folds it (see [`Writer::new`]): a commit writes a few pages of the log, so this keeps it
/// within a few megabytes, as SQLite's own threshold (1,000 pages) would. (A fold due is the
/// thread's next work: leaders leave the writer to it.)
const CHECKPOINT_EVERY: u64 = 256;

/// After a wait for another program's lock ran out, the writes in the moment after look once
/// without waiting, rather than each waiting a timeout of its own in turn.
const LOCKED_OUT_FOR: Duration = Duration::from_secs(1);

/// A commit's answer.
type Reply = oneshot::Sender<Result<Committed, StoreError>>;

/// Work for the writer thread, other than a commit (a prune, a checkpoint).
type Work = Box<dyn FnOnce(&mut Connection) + Send>;

/// A commit's rows, with the JSON they store written out by the caller (the writer thread only
/// runs statements).
pub(super) struct Rows {
    pub(super) batch: Batch,
    request: Option<String>,
    call: Option<String>,
    snapshot: Option<String>,
    grants: Vec<String>,
}

impl Rows {
    /// The rows of `batch` (already checked: see [`crate::checked`]).
    pub(super) fn of(batch: Batch) -> Result<Rows, StoreError> {
        let request = batch
            .open
            .as_ref()
            .map(|open| serde_json::to_string(&open.request))
            .transpose()?;
        let call = batch
            .decision
            .as_ref()
            .map(|decision| serde_json::to_string(&decision.call))
            .transpose()?;
        let snapshot = batch
            .session
            .as_ref()
            .map(|session| serde_json::to_string(&session.snapshot))
            .transpose()?;
        let grants = batch
            .grants
            .iter()
            .map(serde_json::to_string)
            .collect::<Result<_, _>>()?;
        Ok(Rows {
            batch,
            request,
            call,
            snapshot,
            grants,
        })
    }

    /// About how many bytes they hold.
    fn bytes(&self) -> usize {
        let events: usize = self
            .batch
            .events
            .iter()
            .map(|event| event.body.as_str().len())
            .sum();
        let texts = [&self.request, &self.call, &self.snapshot]
            .into_iter()
            .flatten()
            .chain(&self.grants)
            .map(String::len)
            .sum::<usize>();
        events + texts
    }
}

enum Job {
    Commit {
        rows: Box<Rows>,
        bytes: usize,
        reply: Reply,
    },
    Run(Work),
}

#[derive(Default)]
struct Waiting {
    jobs: VecDeque<Job>,
    commits: usize,
    bytes: usize,
    closed: bool,
}

/// What waits for the writer.
#[derive(Default)]
pub(super) struct Queue {
    waiting: Mutex<Waiting>,
    ready: Condvar,
    /// Transactions of commits committed so far.
    pub(super) transactions: AtomicU64,
    /// Set when the write-ahead log is due to be folded into the database (see
    /// [`CHECKPOINT_EVERY`]): the writer thread does it.
    checkpoint_due: AtomicBool,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Queue {
    /// Hands a commit to the writer; its answer comes on the receiver. Refused when the queue
    /// is full or closed.
    /// With `wake`, the writer thread is woken for it; without, the caller leads it (see
    /// [`lead`]).
    pub(super) fn commit(
        &self,
        rows: Rows,
        path: &Path,
        wake: bool,
    ) -> Result<oneshot::Receiver<Result<Committed, StoreError>>, StoreError> {
        let bytes = rows.bytes();
        let (reply, answer) = oneshot::channel();
        let mut waiting = lock(&self.waiting);
        if waiting.closed {
            return Err(StoreError::unavailable("the store is closed"));
        }
        // A commit larger than the bound is taken when nothing waits.
        let too_much =
            waiting.commits > 0 && waiting.bytes.saturating_add(bytes) > MAX_WAITING_BYTES;
        if waiting.commits >= MAX_WAITING || too_much {
            return Err(StoreError::Unavailable {
                message: format!(
                    "{} commits ({} KiB) are waiting to be written to {} (is another program \
                     holding its write lock, or is the disk this slow?)",
                    waiting.commits,
                    waiting.bytes >> 10,
                    path.display()
                ),
                source: None,
            });
        }
        waiting.commits += 1;
        waiting.bytes += bytes;
        waiting.jobs.push_back(Job::Commit {
            rows: Box::new(rows),
            bytes,
            reply,
        });
        drop(waiting);
        if wake {
            self.wake();
        }
        Ok(answer)
    }

    /// Wakes the writer thread.
    fn wake(&self) {
        self.ready.notify_one();
    }

    /// Hands other work to the writer, run between two groups of commits.
    pub(super) fn run(&self, work: Work) -> Result<(), StoreError> {
        let mut waiting = lock(&self.waiting);
        if waiting.closed {
            return Err(StoreError::unavailable("the store is closed"));
        }
        waiting.jobs.push_back(Job::Run(work));
        drop(waiting);
        self.ready.notify_one();
        Ok(())
    }

    /// No more work is taken; the writer ends once what waits is done.
    pub(super) fn close(&self) {
        lock(&self.waiting).closed = true;
        self.ready.notify_all();
    }

    /// Waits until there is work (or a checkpoint is due); `false` once closed and empty.
    fn wait(&self) -> bool {
        let mut waiting = lock(&self.waiting);
        loop {
            if !waiting.jobs.is_empty() || self.checkpoint_due.load(Ordering::Acquire) {
                return true;
            }
            if waiting.closed {
                return false;
            }
            waiting = self
                .ready
                .wait(waiting)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// The next jobs, without waiting: one piece of work, or the commits waiting (at most
    /// [`MAX_GROUP`]) up to the next piece of work.
    fn take(&self, commits_only: bool) -> Option<Next> {
        let mut waiting = lock(&self.waiting);
        let mut group = Vec::new();
        while group.len() < MAX_GROUP {
            match waiting.jobs.pop_front() {
                Some(Job::Commit { rows, bytes, reply }) => {
                    waiting.commits -= 1;
                    waiting.bytes -= bytes;
                    group.push((*rows, reply));
                }
                Some(Job::Run(work)) if group.is_empty() && !commits_only => {
                    return Some(Next::Run(work));
                }
                Some(job @ Job::Run(_)) => {
                    waiting.jobs.push_front(job);
                    break;
                }
                None => break,
            }
        }
        (!group.is_empty()).then_some(Next::Group(group))
    }

    /// Puts a group taken back at the front, in order.
    fn give_back(&self, group: Vec<(Rows, Reply)>) {
        let mut waiting = lock(&self.waiting);
        for (rows, reply) in group.into_iter().rev() {
            let bytes = rows.bytes();
            waiting.commits += 1;
            waiting.bytes += bytes;
            waiting.jobs.push_front(Job::Commit {
                rows: Box::new(rows),
                bytes,
                reply,
            });
        }
    }

    fn is_empty(&self) -> bool {
        lock(&self.waiting).jobs.is_empty()
    }
}

/// Writes the commits waiting, on the calling thread, when the writer is free: a caller that
/// finds nobody writing leads one group (its own commit and those that came with it), sparing
/// two thread hand-offs; otherwise, or when another program holds the database's lock (the
/// leader does not wait for it), the writer thread is woken to do it. Used with
/// [`Durability::Process`](super::Durability::Process), where a commit is a write to the
/// operating system and no disk flush: the caller's thread is busy for about as long as the
/// hand-offs would have taken.
pub(super) fn lead(writer: &Mutex<Writer>, queue: &Queue) {
    // A fold due is the thread's: leaders taking the writer again and again would keep it
    // from its turn.
    if queue.checkpoint_due.load(Ordering::Acquire) {
        queue.wake();
        return;
    }
    let mut writer = match writer.try_lock() {
        Ok(writer) => writer,
        Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => {
            // The writer (thread or leader) finishes its group first; the thread takes this.
            queue.wake();
            return;
        }
    };
    if let Some(Next::Group(group)) = queue.take(true) {
        let commits = group.len();
        let grouped = writer.commit_group(group, false);
        let left = grouped.given_back.as_ref().map_or(0, Vec::len);
        queue
            .transactions
            .fetch_add(grouped.committed, Ordering::Relaxed);
        writer.count_toward_checkpoint(commits - left, queue);
        if let Some(group) = grouped.given_back {
            queue.give_back(group);
        }
    }
    drop(writer);
    // What came meanwhile, or waits behind other work, or was given back: the thread's.
    if !queue.is_empty() {
        queue.wake();
    }
}

enum Next {
    Group(Vec<(Rows, Reply)>),
    Run(Work),
}

/// What writing a group did.
struct Grouped {
    /// Transactions committed.
    committed: u64,
    /// The commits not begun (an impatient writer met another program's lock), in order.
    given_back: Option<Vec<(Rows, Reply)>>,
}

/// Closes the queue and drops what waits in it (its callers hear that the writer stopped) when
/// the writer thread ends.
struct Stopped(Arc<Queue>);

impl Drop for Stopped {
    fn drop(&mut self) {
        let mut waiting = lock(&self.0.waiting);
        waiting.closed = true;
        waiting.jobs.clear();
        waiting.commits = 0;
        waiting.bytes = 0;
    }
}

/// The file the store opened, to notice it deleted or replaced under the running daemon.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Identity {
    device: u64,
    inode: u64,
}

impl Identity {
    /// The identity of the file at `path` now.
    pub(super) fn of(path: &Path) -> std::io::Result<Identity> {
        let meta = std::fs::metadata(path)?;
        Ok(Identity {
            device: meta.dev(),
            inode: meta.ino(),
        })
    }
}

/// The write connection and what writing needs to know.
pub(super) struct Writer {
    connection: Connection,
    path: PathBuf,
    identity: Identity,
    /// When a wait for another program's lock last ran out.
    locked_out: Option<Instant>,
    /// Whether the write-ahead log is folded by the writer thread (see [`CHECKPOINT_EVERY`])
    /// rather than by SQLite at the commit that crosses its threshold.
    folds: bool,
    /// Commits since the last fold.
    since_fold: u64,
}

impl Writer {
    /// With `folds`, SQLite's own checkpoints are turned off: the writer thread folds the log
    /// every [`CHECKPOINT_EVERY`] commits, so a commit led on a caller's thread never
    /// waits for one (a checkpoint flushes the disk).
    pub(super) fn new(
        connection: Connection,
        path: &Path,
        folds: bool,
    ) -> Result<Writer, StoreError> {
        if folds {
            connection.pragma_update(None, "wal_autocheckpoint", 0)?;
        }
        Ok(Writer {
            connection,
            path: path.to_owned(),
            identity: Identity::of(path)?,
            locked_out: None,
            folds,
            since_fold: 0,
        })
    }

    /// Counts commits written (or refused) toward the next fold, and says when it is due.
    fn count_toward_checkpoint(&mut self, commits: usize, queue: &Queue) {
        if !self.folds {
            return;
        }
        self.since_fold += u64::try_from(commits).unwrap_or(u64::MAX);
        if self.since_fold >= CHECKPOINT_EVERY && !queue.checkpoint_due.swap(true, Ordering::AcqRel)
        {
            // Said under the queue's lock, so the thread sees it or is woken by it.
            drop(lock(&queue.waiting));
            queue.wake();
        }
    }

    /// Folds the write-ahead log into the database as far as readers allow (a passive
    /// checkpoint: it waits for nobody); the log starts again from its top at the next write.
    fn fold(&mut self) {
        self.since_fold = 0;
        let _ = self
            .connection
            .execute_batch("PRAGMA wal_checkpoint(PASSIVE)");
    }

    /// Starts the writer thread; it ends once `queue` is closed and empty.
    pub(super) fn start(
        writer: Arc<Mutex<Writer>>,
        queue: Arc<Queue>,
    ) -> Result<std::thread::JoinHandle<()>, StoreError> {
        let handle = std::thread::Builder::new()
            .name("toolgate-store-write".into())
            .spawn(move || {
                // However the thread ends (a panic included), what waits is answered: the
                // queue closes, and the commits in it hear that the writer stopped.
                let _stopped = Stopped(Arc::clone(&queue));
                while queue.wait() {
                    let mut writer = lock(&writer);
                    if queue.checkpoint_due.swap(false, Ordering::AcqRel) {
                        writer.fold();
                    }
                    match queue.take(false) {
                        Some(Next::Run(work)) => work(&mut writer.connection),
                        Some(Next::Group(group)) => {
                            // Patient: waits for another program's lock (never gives back).
                            let commits = group.len();
                            let grouped = writer.commit_group(group, true);
                            queue
                                .transactions
                                .fetch_add(grouped.committed, Ordering::Relaxed);
                            writer.count_toward_checkpoint(commits, &queue);
                        }
                        None => {}
                    }
                }
            })?;
        Ok(handle)
    }

    /// Whether the database file is still the one opened: one deleted, moved away or replaced
    /// (a backup restored over it) would take commits nobody reads.
    fn still_there(&self) -> Result<(), StoreError> {
        let gone = |how: String| {
            StoreError::unavailable(format!(
                "the database {} {how} while the daemon ran; nothing more is written to the file \
                 it opened. Restart the daemon to open the file now at that path",
                self.path.display()
            ))
        };
        match Identity::of(&self.path) {
            Ok(identity) if identity == self.identity => Ok(()),
            Ok(_) => Err(gone("was replaced by another file".into())),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                Err(gone("was deleted or moved".into()))
            }
            Err(error) => Err(gone(format!("cannot be looked at ({error})"))),
        }
    }

    /// Begins a transaction that holds the write lock. A `patient` one waits for another
    /// program's lock at most [`BUSY_TIMEOUT`], and not at all right after such a wait ran out;
    /// an impatient one (a leader on a caller's thread) does not wait: `Ok(false)` when the
    /// lock is taken.
    fn begin(&mut self, patient: bool) -> Result<bool, StoreError> {
        let recently = self
            .locked_out
            .is_some_and(|at| at.elapsed() < LOCKED_OUT_FOR);
        let hurried = recently || !patient;
        if hurried {
            self.connection.busy_timeout(Duration::ZERO)?;
        }
        let begun = self
            .connection
            .prepare_cached("BEGIN IMMEDIATE")
            .and_then(|mut statement| statement.execute([]).map(drop));
        if hurried {
            self.connection.busy_timeout(BUSY_TIMEOUT)?;
        }
        match begun {
            Ok(()) => {
                if patient {
                    self.locked_out = None;
                }
                Ok(true)
            }
            Err(error) => {
                let error = StoreError::from(error);
                if let StoreError::Locked { message, source } = error {
                    if !patient {
                        return Ok(false);
                    }
                    if !recently {
                        self.locked_out = Some(Instant::now());
                    }
                    return Err(StoreError::Locked {
                        message: format!(
                            "{} is locked by another program (is it holding a write \
                             transaction?): {message}",
                            self.path.display()
                        ),
                        source,
                    });
                }
                Err(error)
            }
        }
    }

    fn statement(&self, sql: &str) -> Result<(), StoreError> {
        self.connection.prepare_cached(sql)?.execute([])?;
        Ok(())
    }

    /// Rolls back what a failed transaction left, if it left one.
    fn abandon(&self) {
        if !self.connection.is_autocommit() {
            let _ = self.connection.execute_batch("ROLLBACK");
        }
    }

    /// Writes a group of commits in as few transactions as failures allow, and answers each.
    /// An impatient writer (see [`Writer::begin`]) gives back what it has not begun when
    /// another program holds the database's lock.
    fn commit_group(&mut self, group: Vec<(Rows, Reply)>, patient: bool) -> Grouped {
        let mut committed = 0;
        let mut group: VecDeque<(Rows, Reply)> = group.into();
        while !group.is_empty() {
            let begun = self.still_there().and_then(|()| self.begin(patient));
            if let Ok(false) = begun {
                return Grouped {
                    committed,
                    given_back: Some(group.into()),
                };
            }
            if let Err(error) = begun {
                self.abandon();
                for (_, reply) in group {
                    let _ = reply.send(Err(error.again()));
                }
                return Grouped {
                    committed,
                    given_back: None,
                };
            }
            let mut answered: Vec<(Reply, Result<Committed, StoreError>)> = Vec::new();
            let mut lost = None;
            while let Some((rows, reply)) = group.pop_front() {
                match self.one(&rows) {
                    Ok(result) => answered.push((reply, result)),
                    // The transaction cannot go on (SQLite rolls back the whole transaction
                    // on some errors: a full disk, an I/O error): the commits before it in the
                    // group are not written either; those after it get a transaction of their
                    // own.
                    Err(error) => {
                        answered.push((reply, Err(error.again())));
                        lost = Some(error);
                        break;
                    }
                }
            }
            let failed = match lost {
                Some(error) => Some(error),
                None => self.statement("COMMIT").err(),
            };
            if let Some(error) = failed {
                self.abandon();
                for (reply, _) in answered {
                    let _ = reply.send(Err(error.again()));
                }
                continue;
            }
            committed += 1;
            for (reply, result) in answered {
                let _ = reply.send(result);
            }
        }
        Grouped {
            committed,
            given_back: None,
        }
    }

    /// One commit in a savepoint: released when written, rolled back when its condition fails
    /// or one of its statements fails (its answer). `Err` when the transaction cannot go on.
    fn one(&self, rows: &Rows) -> Result<Result<Committed, StoreError>, StoreError> {
        self.statement("SAVEPOINT one")?;
        let written = write(&self.connection, rows);
        if self.connection.is_autocommit() {
            return written.map(Ok);
        }
        match written {
            Ok(Committed::Written(seqs)) => {
                self.statement("RELEASE one")?;
                Ok(Ok(Committed::Written(seqs)))
            }
            other => {
                self.statement("ROLLBACK TO one")?;
                self.statement("RELEASE one")?;
                Ok(other)
            }
        }
    }
}

/// Whether `error` is a broken uniqueness constraint.
fn taken(error: &rusqlite::Error) -> bool {
    matches!(
        error,
        rusqlite::Error::SqliteFailure(failure, _) if failure.code == ErrorCode::ConstraintViolation
    )
}

/// One commit's statements, conditions first (in the order the PostgreSQL store checks them):
/// the request to close still pending, the request to open not pending, the grant to revoke or
/// spend there (with a use left), the grants named as stored there, no stored grant like a
/// lasting one to store, the grants to store new, the session to save as it was read; then the
/// rows. A failed condition
/// returns without writing more; the caller rolls back what was written.
fn write(connection: &Connection, rows: &Rows) -> Result<Committed, StoreError> {
    let batch = &rows.batch;
    if let Some(id) = &batch.close {
        let closed = connection
            .prepare_cached("DELETE FROM pending WHERE id = ?")?
            .execute([id])?;
        if closed == 0 {
            return Ok(Committed::NotPending);
        }
    }
    if let (Some(request), Some(text)) = (&batch.open, &rows.request) {
        let opened = connection
            .prepare_cached(
                "INSERT INTO pending (id, kind, session, created, request) VALUES (?, ?, ?, ?, ?)",
            )?
            .execute((
                &request.id,
                &request.kind,
                &request.session,
                &request.created,
                text,
            ));
        match opened {
            Err(error) if taken(&error) => {
                return Err(StoreError::Conflict(format!(
                    "request `{}` is already pending",
                    request.id
                )));
            }
            opened => drop(opened?),
        }
    }
    if let Some(id) = &batch.revoke {
        let revoked = connection
            .prepare_cached("DELETE FROM grants WHERE id = ?")?
            .execute([id])?;
        if revoked == 0 {
            return Ok(Committed::NoGrant);
        }
    }
    if let Some(id) = &batch.spend {
        let uses: Option<Option<i64>> = connection
            .prepare_cached("SELECT uses_left FROM grants WHERE id = ?")?
            .query_row([id], |row| row.get(0))
            .map(Some)
            .or_else(|error| match error {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                error => Err(error),
            })?;
        match uses {
            None | Some(Some(..=0)) => return Ok(Committed::NoGrant),
            // Uses without end: nothing to count.
            Some(None) => {}
            Some(Some(_)) => {
                connection
                    .prepare_cached("UPDATE grants SET uses_left = uses_left - 1 WHERE id = ?")?
                    .execute([id])?;
            }
        }
    }
    for id in &batch.grants_kept {
        let kept = connection
            .prepare_cached("SELECT 1 FROM grants WHERE id = ?")?
            .exists([id])?;
        if !kept {
            return Ok(Committed::NoGrant);
        }
    }
    for grant in batch.grants.iter().filter(|grant| grant.lasts()) {
        // Grants alike are filed alike.
        let mut statement = connection.prepare_cached(
            "SELECT body FROM grants WHERE tool = ? AND scope_key = ? AND target_key = ? \
             AND uses_left IS NULL",
        )?;
        let mut stored = statement.query((&grant.tool, grant.scope_key(), grant.target_key()))?;
        while let Some(row) = stored.next()? {
            let body: String = row.get(0)?;
            // One that cannot be read answers nothing, and is left for its own reader to say.
            if let Ok(same) = crate::record::from_stored::<Grant>(body.as_bytes())
                && same.lasts_like(grant)
            {
                return Ok(Committed::SameGrant(same.id));
            }
        }
    }
    for (grant, body) in batch.grants.iter().zip(&rows.grants) {
        let stored = connection
            .prepare_cached(
                "INSERT INTO grants (id, tool, uses_left, body, created, scope_key, target_key) \
                 VALUES (?, ?, ?, ?, ?, ?, ?)",
            )?
            .execute((
                &grant.id,
                &grant.tool,
                grant.uses_left.map(i64::from),
                body,
                crate::record::rfc3339(grant.created_at),
                grant.scope_key(),
                grant.target_key(),
            ));
        match stored {
            Err(error) if taken(&error) => {
                return Err(StoreError::Conflict(format!(
                    "grant `{}` is already stored",
                    grant.id
                )));
            }
            stored => drop(stored?),
        }
    }
    if let (Some(session), Some(was)) = (&batch.session, &batch.session_was) {
        let saved: Option<String> = connection
            .prepare_cached("SELECT updated FROM sessions WHERE id = ?")?
            .query_row([&session.id], |row| row.get(0))
            .map(Some)
            .or_else(|error| match error {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                error => Err(error),
            })?;
        if saved != *was {
            return Ok(Committed::SessionChanged);
        }
    }
    let mut seqs = Vec::with_capacity(batch.events.len());
    for event in &batch.events {
        // Numbered by SQLite (`AUTOINCREMENT`): one past the highest ever given, never reused
        // after a prune, and given again only when the savepoint is rolled back.
        seqs.push(insert_event(connection, event, None)?);
    }
    if let (Some(decision), Some(call)) = (&batch.decision, &rows.call) {
        put_decision(connection, decision, call)?;
    }
    if let (Some(session), Some(snapshot)) = (&batch.session, &rows.snapshot) {
        put_session(connection, session, snapshot)?;
    }
    Ok(Committed::Written(seqs))
}

/// Inserts an event: numbered `seq`, or by SQLite when `None`. Returns its number.
pub(super) fn insert_event(
    connection: &Connection,
    event: &EventRecord,
    seq: Option<i64>,
) -> Result<i64, StoreError> {
    connection
        .prepare_cached(
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
    Ok(connection.last_insert_rowid())
}

/// Creates a decision, or updates its status, result and update time (`call`, its call as
/// JSON, is kept from its creation).
pub(super) fn put_decision(
    connection: &Connection,
    decision: &DecisionRow,
    call: &str,
) -> Result<(), StoreError> {
    connection
        .prepare_cached(
            "INSERT INTO decisions (id, status, call, result, created, updated) \
             VALUES (?, ?, ?, ?, ?, ?) \
             ON CONFLICT (id) DO UPDATE SET status = excluded.status, \
             result = excluded.result, updated = excluded.updated",
        )?
        .execute((
            &decision.id,
            decision.status.as_str(),
            call,
            decision.result.as_str(),
            &decision.created,
            &decision.updated,
        ))?;
    Ok(())
}

/// Saves a session's snapshot (`snapshot`, as JSON), created or replacing the one saved.
pub(super) fn put_session(
    connection: &Connection,
    session: &SessionRow,
    snapshot: &str,
) -> Result<(), StoreError> {
    connection
        .prepare_cached(
            "INSERT INTO sessions (id, snapshot, updated) VALUES (?, ?, ?) \
             ON CONFLICT (id) DO UPDATE SET snapshot = excluded.snapshot, \
             updated = excluded.updated",
        )?
        .execute((&session.id, snapshot, &session.updated))?;
    Ok(())
}
