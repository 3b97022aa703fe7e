//! The commit journal of versions up to 0.1, retired.
//!
//! Those versions appended each commit to `toolgate.db.journal` and applied it to the database
//! moments later. A daemon of such a version that stopped (or was killed) in between left
//! commits only its journal holds: the store applies them, in order and each once, when it
//! opens the database, then removes the journal for good.

use std::fs::File;
use std::io::Seek;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, Transaction, TransactionBehavior};
use toolgate_runtime::Grant;

use super::journal::{self, Entry};
use super::writer::{insert_event, put_decision, put_session};
use crate::record::{StoreError, rfc3339};

/// Commits applied per transaction.
const RECOVER_CHUNK: usize = 1024;

/// How often the versions that wrote a journal with `durability = "process"` flushed it.
const FLUSH_EVERY_MS: u32 = 100;

/// The journal next to the database at `path`.
pub(super) fn journal_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".journal");
    PathBuf::from(name)
}

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
        insert_event(tx, event, Some(*seq))?;
    }
    if let Some(decision) = &batch.decision {
        put_decision(tx, decision, &serde_json::to_string(&decision.call)?)?;
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
        put_session(tx, session, &serde_json::to_string(&session.snapshot)?)?;
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

/// Applies what a commit journal left by an earlier version holds that the database does not
/// (that daemon stopped in between), then retires it: the database's files are flushed, the
/// journal removed (and its removal flushed), and the next migration drops the journal's table.
///
/// The journal is refused, left as it is and named, when applying it would lose or invent
/// commits: when it is not a file, when it continues from a later commit than the database has
/// (an older `toolgate.db` restored next to a newer journal), or when a damaged record has
/// commits after it that the database lacks. Moving it aside starts from the database as it is.
pub(super) fn retire(connection: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let journal_path = journal_path(path);
    let named = |error: &dyn std::fmt::Display| {
        StoreError::unavailable(format!(
            "the commit journal {}: {error}",
            journal_path.display()
        ))
    };
    let refused = |why: String| {
        StoreError::damaged(format!(
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
    match std::fs::symlink_metadata(&journal_path) {
        Ok(meta) if meta.is_file() => {}
        Ok(_) => return Err(refused("it is not a regular file".into())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(named(&error)),
    }
    if super::schema::version(connection)? > super::schema::JOURNAL_SCHEMA {
        return Err(refused(format!(
            "{} no longer keeps which of its commits were applied (a journal of an earlier \
             version put back next to a database that retired its own)",
            path.display()
        )));
    }
    let file = File::open(&journal_path).map_err(|e| named(&e))?;
    let size = file.metadata().map_err(|e| named(&e))?.len();
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
            FLUSH_EVERY_MS
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
    // Everything the file held is in the database now, and on the disk (with `process`, what
    // the last run applied may not be, whether or not anything was left to apply here): then
    // the journal goes, and its going is on the disk before the next migration forgets what
    // it applied.
    flush_database_files(path).map_err(|e| named(&e))?;
    std::fs::remove_file(&journal_path).map_err(|e| named(&e))?;
    if let Some(folder) = path.parent() {
        let folder = if folder.as_os_str().is_empty() {
            Path::new(".")
        } else {
            folder
        };
        File::open(folder)
            .and_then(|folder| folder.sync_all())
            .map_err(|e| named(&e))?;
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )]

    use super::*;
    use crate::sqlite::{Durability, SqliteStore, schema};
    use crate::{
        Batch, DecisionRow, DecisionStatus, EventFilter, EventRecord, JsonText, PendingRecord,
        Store,
    };
    use serde_json::json;
    use toolgate_runtime::{Effect, GrantScope, GrantStore, GrantTarget};

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

    /// A database as versions up to 0.1 left it: the schema up to the journal's last version.
    fn old_database(path: &Path) -> Connection {
        let mut connection = Connection::open(path).unwrap();
        schema::migrate(&mut connection, schema::JOURNAL_SCHEMA).unwrap();
        connection
    }

    /// Events of `kinds` numbered from 1, applied from the journal's commits 1, 2, …
    fn applied_events(connection: &Connection, kinds: &[&str]) {
        for (seq, kind) in kinds.iter().enumerate() {
            let record = event(kind, "r");
            connection
                .execute(
                    "INSERT INTO events (seq, type, time, body) VALUES (?, ?, ?, ?)",
                    (seq + 1, &record.kind, &record.time, record.body.as_str()),
                )
                .unwrap();
        }
        connection
            .execute("UPDATE journal SET applied_lsn = ?", [kinds.len()])
            .unwrap();
    }

    /// The journal is gone, and with it the table of what it applied.
    fn assert_retired(path: &Path) {
        assert!(!journal_path(path).exists(), "the journal is removed");
        let connection = Connection::open(path).unwrap();
        let tables: i64 = connection
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE name = 'journal'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(tables, 0, "the journal's table is dropped");
    }

    /// A store version 0.1.0 wrote, killed while another program held the database's write
    /// lock: its journal holds six commits the database lacks (an answer, three requests
    /// opened, an allowed call's decision, and an answer to one of them). The store applies
    /// them and retires the journal.
    #[tokio::test]
    async fn a_store_written_by_version_0_1_0_is_upgraded_with_what_its_journal_held() {
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/journal-0.1.0");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolgate.db");
        std::fs::copy(fixture.join("toolgate.db"), &path).unwrap();
        std::fs::copy(fixture.join("toolgate.db.journal"), journal_path(&path)).unwrap();
        assert_eq!(applied_lsn(&path), 5);

        let store = SqliteStore::open_with(&path, Durability::Process)
            .await
            .unwrap();
        assert_retired(&path);
        let events = store
            .events_after(0, &EventFilter::default(), 1000)
            .await
            .unwrap();
        let seqs: Vec<i64> = events.iter().map(|e| e.seq).collect();
        let count = i64::try_from(events.len()).unwrap();
        assert_eq!(seqs, (1..=count).collect::<Vec<_>>(), "no gap");
        assert!(count > 4, "the journal's events were applied: {count}");
        // Three requests asked first: one answered before the lock, one answered behind it.
        // Of the three asked behind the lock, one was answered.
        let decisions = [
            (
                "6069e26c-27cb-446c-8684-89cbfcf96475",
                DecisionStatus::Decided,
            ),
            (
                "397b1f09-8ce3-4b2c-96a9-0d31cbe12e42",
                DecisionStatus::Decided,
            ),
            (
                "72b7ff2b-302b-4790-8ef5-eaa6cbffda51",
                DecisionStatus::Pending,
            ),
            (
                "92e72a9d-5db1-4407-b271-d45dfe42b0fe",
                DecisionStatus::Decided,
            ),
            (
                "b9568b0d-86ed-4bea-a79b-465356630248",
                DecisionStatus::Pending,
            ),
            (
                "fe13c1f5-3509-4f2c-aef2-7d1ac64240da",
                DecisionStatus::Pending,
            ),
        ];
        for (id, status) in decisions {
            let decision = store.decision(id).await.unwrap().unwrap();
            assert_eq!(decision.status, status, "{id}");
        }
        let mut pending: Vec<String> = store
            .pending()
            .await
            .unwrap()
            .into_iter()
            .map(|p| p.id)
            .collect();
        pending.sort();
        assert_eq!(
            pending,
            [
                "72b7ff2b-302b-4790-8ef5-eaa6cbffda51",
                "b9568b0d-86ed-4bea-a79b-465356630248",
                "fe13c1f5-3509-4f2c-aef2-7d1ac64240da",
            ]
        );
        // The allow-always answer given before the lock is a grant.
        assert_eq!(store.list().await.unwrap().len(), 1);
        // And it goes on from there.
        let next = store.append(&[event("next", "r")]).await.unwrap();
        assert_eq!(next, [count + 1]);
    }

    /// What a daemon that died before its commits were applied leaves: the database without
    /// them, the journal with them (and maybe a record cut short). The next start applies each
    /// once, in order, and carries on from there.
    #[tokio::test]
    async fn journaled_commits_the_database_lacks_are_applied_when_it_opens() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolgate.db");
        let connection = old_database(&path);
        let request = pending("r1");
        connection
            .execute(
                "INSERT INTO pending (id, kind, session, created, request) VALUES (?, ?, ?, ?, ?)",
                (
                    &request.id,
                    &request.kind,
                    &request.session,
                    &request.created,
                    request.request.to_string(),
                ),
            )
            .unwrap();
        applied_events(&connection, &["permission_requested"]);
        drop(connection);
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
        assert_retired(&path);
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
    fn three_commits_applied(dir: &Path) -> (PathBuf, PathBuf) {
        let path = dir.join("toolgate.db");
        let connection = old_database(&path);
        applied_events(&connection, &["applied"; 3]);
        drop(connection);
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
            let (path, journal_file) = three_commits_applied(dir.path());
            std::fs::write(&journal_file, &bytes).unwrap();
            let store = SqliteStore::open_with(&path, Durability::Process)
                .await
                .unwrap_or_else(|e| panic!("{case}: {e}"));
            assert_retired(&path);
            assert_eq!(
                store.last_seq().await.unwrap(),
                i64::try_from(kept).unwrap(),
                "{case}"
            );
            // It goes on after what it kept.
            let next = store.append(&[event("next", "r")]).await.unwrap();
            assert_eq!(next, [i64::try_from(kept).unwrap() + 1], "{case}");
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
            let (path, journal_file) = three_commits_applied(dir.path());
            std::fs::write(&journal_file, &bytes).unwrap();
            let error = SqliteStore::open_with(&path, Durability::Process)
                .await
                .unwrap_err()
                .to_string();
            assert!(error.contains(why), "{case}: {error}");
            assert_eq!(std::fs::read(&journal_file).unwrap(), bytes, "{case}: kept");
            assert_eq!(applied_lsn(&path), 3, "{case}: nothing applied");
        }
    }

    /// A journal that applying would lose or invent commits from is refused, named and left
    /// as it is, with the database untouched; one whose odd records hold nothing the database
    /// lacks is not.
    #[tokio::test]
    async fn a_journal_that_does_not_follow_the_database_is_refused_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let (path, journal_file) = three_commits_applied(dir.path());
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
            let error = SqliteStore::open(&path).await.unwrap_err().to_string();
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
        let error = SqliteStore::open(&path).await.unwrap_err().to_string();
        assert!(error.contains("not a regular file"), "{error}");
        std::fs::remove_file(&journal_file).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(&journal_file)
            .status()
            .unwrap();
        assert!(made.success());
        let error = SqliteStore::open(&path).await.unwrap_err().to_string();
        assert!(error.contains("not a regular file"), "{error}");
        std::fs::remove_file(&journal_file).unwrap();

        // Records from before the journal started again from the top, after a torn last one:
        // all in the database, so nothing is lost.
        let mut torn = record(4);
        torn.truncate(torn.len() - 5);
        torn.resize(torn.len() + 5, 0);
        std::fs::write(&journal_file, [torn, record(2), record(3)].concat()).unwrap();
        let store = SqliteStore::open(&path).await.unwrap();
        assert_retired(&path);
        assert_eq!(store.last_seq().await.unwrap(), 3);
        drop(store);

        // A journal put back next to the database that retired its own: the database no
        // longer says which commits it applied.
        std::fs::write(&journal_file, [record(3), record(4)].concat()).unwrap();
        let error = SqliteStore::open(&path).await.unwrap_err().to_string();
        assert!(error.contains("no longer keeps which"), "{error}");
        assert!(journal_file.exists(), "kept");

        // Damage among commits the database has, and a forged last record (the largest
        // number there is): nothing is lost, so the store opens and carries on.
        let dir = tempfile::tempdir().unwrap();
        let (path, journal_file) = three_commits_applied(dir.path());
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
        assert_retired(&path);
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
}
