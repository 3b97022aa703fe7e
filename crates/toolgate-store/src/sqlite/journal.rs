//! The commit journal's records, as versions up to 0.1 wrote them: read once, to apply what a
//! journal left next to the database holds and retire it (see [`super::retire`]).
//!
//! Those versions appended each commit's record to `toolgate.db.journal` and applied it to the
//! database moments later, in a transaction that also stored the record's number (its LSN),
//! so a record was applied exactly once.
//!
//! A record is its payload's length (4 bytes, little-endian), the payload's CRC-32 (4 bytes)
//! and the payload: JSON of the LSN, the events' sequence numbers and the [`Batch`]. Reading
//! stops where writing stopped: at a record cut short or damaged with nothing after it (a
//! machine crash can leave a partly written last record, never acknowledged, because with
//! `Durability::Full` a commit returns only after the flush); at zeros (the file is allocated
//! ahead); or at an older record (once everything is applied, writing starts again from the
//! top). What no crash leaves is reported for the store to refuse: a damaged record followed
//! by its successor, and a record whose number skips ahead.

use serde::{Deserialize, Serialize};

use crate::Batch;
#[cfg(test)]
use crate::record::StoreError;

/// One commit, as journaled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Entry {
    /// Its number: increasing, never reused.
    pub(crate) lsn: u64,
    /// The database it belongs to (its `journal.store`; 0 in records written before there was
    /// one): a journal copied next to another database is refused, not applied to it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) store: u64,
    /// Written by a store that does not flush each commit ([`Durability::Process`]): it flushes
    /// the journal every moment instead, so a power loss may have kept any part of what came
    /// after the last flush and lost the rest. A break in such a journal is where that loss
    /// begins, not damage: what reads whole before it is applied, what follows it is lost. (A
    /// journal holds the records of one run, so one record says it for all.)
    ///
    /// [`Durability::Process`]: crate::Durability::Process
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) lazy: bool,
    /// The sequence numbers of `batch.events`, in order.
    pub(crate) seqs: Vec<i64>,
    pub(crate) batch: Batch,
}

pub(crate) const HEADER: usize = 8;

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// How deeply a record's JSON nests, when deeper than `limit`: its payload's (the header is
/// binary, and a byte of it may look like a quote or a bracket).
#[cfg(test)]
pub(crate) fn nests_deeper(record: &[u8], limit: usize) -> Option<usize> {
    crate::record::nests_deeper(record.get(HEADER..).unwrap_or_default(), limit)
}

/// The bytes of `entry`'s record.
#[cfg(test)]
pub(crate) fn encode(entry: &Entry) -> Result<Vec<u8>, StoreError> {
    let mut record = Vec::new();
    encode_into(&mut record, entry)?;
    Ok(record)
}

/// Replaces what `record` holds with `entry`'s record (a buffer used again keeps its memory).
#[cfg(test)]
pub(crate) fn encode_into(record: &mut Vec<u8>, entry: &Entry) -> Result<(), StoreError> {
    record.clear();
    record.extend_from_slice(&[0; HEADER]);
    serde_json::to_writer(&mut *record, entry)?;
    let (header, payload) = record.split_at_mut(HEADER);
    let length = u32::try_from(payload.len())
        .map_err(|_| StoreError::Refused("a commit of more than 4 GiB".into()))?;
    let crc = crc32(payload);
    for (slot, byte) in header
        .iter_mut()
        .zip(length.to_le_bytes().into_iter().chain(crc.to_le_bytes()))
    {
        *slot = byte;
    }
    Ok(())
}

/// The whole records at the start of `bytes`, in order, up to the first that is cut short,
/// damaged, unreadable or does not follow the one before.
#[cfg(test)]
pub(crate) fn decode(bytes: &[u8]) -> Vec<Entry> {
    let mut reader = Reader::new(bytes, bytes.len() as u64);
    std::iter::from_fn(|| reader.next().ok().flatten()).collect()
}

/// Where reading a journal stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// Where writing stopped: the file's end, zeros (the file is allocated ahead), a record cut
    /// short (a crash while it was written: never acknowledged) or an older record (writing
    /// started again from the top).
    Written,
    /// At a whole record whose number skips ahead of the one before: no commit leaves that.
    Gap {
        offset: u64,
        expected: u64,
        found: u64,
    },
}

/// Reads a journal's records one at a time, never holding more than one, and never reading
/// past `size` bytes (a damaged length cannot make it allocate more).
pub(crate) struct Reader<R> {
    source: R,
    /// Where the next record starts.
    offset: u64,
    size: u64,
    last: Option<u64>,
    end: Option<End>,
    /// Where the record that stopped reading starts.
    stopped_at: Option<u64>,
    damaged: Vec<Damage>,
}

/// A damaged record (its CRC does not match, or it is not an entry) with a whole record after
/// it, the one numbered next but one: no crash leaves that. Reading goes on after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Damage {
    /// Where it starts.
    pub(crate) offset: u64,
    /// The number it had (the one before its successor's).
    pub(crate) lsn: u64,
}

/// What one record held.
enum Read {
    Entry(Box<Entry>),
    /// Its header is whole and its length fits, but it is damaged.
    Damaged,
    /// Cut short, or zeros: the end of what was written.
    End,
}

impl<R: std::io::Read> Reader<R> {
    /// A reader of the `size` bytes `source` holds.
    pub(crate) fn new(source: R, size: u64) -> Reader<R> {
        Reader {
            source,
            offset: 0,
            size,
            last: None,
            end: None,
            stopped_at: None,
            damaged: Vec::new(),
        }
    }

    /// Where reading stopped (`Written` until it has).
    pub(crate) fn end(&self) -> End {
        self.end.unwrap_or(End::Written)
    }

    /// Where the record that stopped reading starts (where reading is, until it has stopped).
    pub(crate) fn stopped_at(&self) -> u64 {
        self.stopped_at.unwrap_or(self.offset)
    }

    /// The damaged records read past so far.
    pub(crate) fn damaged(&self) -> &[Damage] {
        &self.damaged
    }

    /// The next record, or `None` once reading has stopped (see [`Reader::end`]).
    pub(crate) fn next(&mut self) -> std::io::Result<Option<Entry>> {
        if self.end.is_some() {
            return Ok(None);
        }
        let mut at = self.offset;
        let entry = match self.read_one()? {
            Read::Entry(entry) => *entry,
            Read::End => return Ok(self.stop(End::Written, at)),
            Read::Damaged => {
                // What follows tells a torn end from damage in the middle.
                let after = self.offset;
                match self.read_one()? {
                    Read::Entry(next)
                        if next.lsn > 1
                            && self
                                .last
                                .is_none_or(|last| Some(next.lsn) == last.checked_add(2)) =>
                    {
                        self.damaged.push(Damage {
                            offset: at,
                            lsn: next.lsn - 1,
                        });
                        // Its successor follows it as it would have followed the damaged one.
                        self.last = Some(next.lsn - 1);
                        at = after;
                        *next
                    }
                    _ => return Ok(self.stop(End::Written, at)),
                }
            }
        };
        match self.last {
            Some(last) if entry.lsn <= last => Ok(self.stop(End::Written, at)),
            Some(last) if Some(entry.lsn) != last.checked_add(1) => Ok(self.stop(
                End::Gap {
                    offset: at,
                    expected: last.saturating_add(1),
                    found: entry.lsn,
                },
                at,
            )),
            _ => {
                self.last = Some(entry.lsn);
                Ok(Some(entry))
            }
        }
    }

    fn stop(&mut self, end: End, at: u64) -> Option<Entry> {
        self.end = Some(end);
        self.stopped_at = Some(at);
        None
    }

    /// One record; a file shorter than it said reads as the end of what was written.
    fn read_one(&mut self) -> std::io::Result<Read> {
        match self.read_record() {
            Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => Ok(Read::End),
            read => read,
        }
    }

    fn read_record(&mut self) -> std::io::Result<Read> {
        let left = self.size.saturating_sub(self.offset);
        let mut header = [0u8; HEADER];
        if left < HEADER as u64 {
            return Ok(Read::End);
        }
        self.source.read_exact(&mut header)?;
        let [l0, l1, l2, l3, c0, c1, c2, c3] = header;
        let length = u32::from_le_bytes([l0, l1, l2, l3]);
        if length == 0 || u64::from(length) > left - HEADER as u64 {
            return Ok(Read::End);
        }
        let mut payload = vec![0u8; usize::try_from(length).unwrap_or(usize::MAX)];
        self.source.read_exact(&mut payload)?;
        self.offset += HEADER as u64 + u64::from(length);
        if crc32(&payload) != u32::from_le_bytes([c0, c1, c2, c3]) {
            return Ok(Read::Damaged);
        }
        // Read as stored JSON is: a record older versions wrote nested past serde_json's limit is
        // whole, not damaged.
        Ok(match crate::record::from_stored::<Entry>(&payload) {
            // Numbers SQLite can store, and a number for each event.
            Ok(entry)
                if entry.lsn >= 1
                    && i64::try_from(entry.lsn).is_ok()
                    && entry.seqs.len() == entry.batch.events.len() =>
            {
                Read::Entry(Box::new(entry))
            }
            _ => Read::Damaged,
        })
    }
}

/// What every record's payload starts with (an entry's first field, its number).
const MARKER: &[u8] = br#"{"lsn":"#;

/// The record at byte `at` of `file` (`size` bytes), when a whole one is there.
pub(crate) fn entry_at(
    mut file: &std::fs::File,
    at: u64,
    size: u64,
) -> std::io::Result<Option<Entry>> {
    use std::io::Seek;
    file.seek(std::io::SeekFrom::Start(at))?;
    Reader::new(std::io::BufReader::new(file), size.saturating_sub(at)).next()
}

/// The first whole record numbered above `above` that starts at or after byte `from` of
/// `file` (`size` bytes): its offset and number. Every place a record could start is looked at,
/// so a damaged header or a cut record does not hide what follows it. No crash leaves a whole
/// record after where writing stopped, other than older ones (from before the journal started
/// again from the top, all applied): one numbered above what was read means damage lost the
/// records in between.
pub(crate) fn whole_record_after(
    file: &std::fs::File,
    from: u64,
    size: u64,
    above: u64,
) -> std::io::Result<Option<(u64, u64)>> {
    use std::os::unix::fs::FileExt;
    const CHUNK: usize = 1 << 20;
    let mut buffer = vec![0u8; CHUNK];
    let mut start = from;
    while start < size {
        let want = usize::try_from((size - start).min(CHUNK as u64)).unwrap_or(CHUNK);
        let Some(chunk) = buffer.get_mut(..want) else {
            break;
        };
        file.read_exact_at(chunk, start)?;
        let mut i = 0;
        while let Some(found) = chunk
            .get(i..)
            .and_then(|rest| rest.windows(MARKER.len()).position(|w| w == MARKER))
        {
            let payload = start + (i + found) as u64;
            i += found + 1;
            let Some(at) = payload.checked_sub(HEADER as u64).filter(|at| *at >= from) else {
                continue;
            };
            if let Some(lsn) = whole_record_at(file, at, size, above)? {
                return Ok(Some((at, lsn)));
            }
        }
        if want < CHUNK {
            break;
        }
        // The next chunk overlaps this one by a marker's length, so none is split unseen.
        start += (CHUNK - MARKER.len()) as u64;
    }
    Ok(None)
}

/// The number of the record at `at`, when a whole one numbered above `above` is there.
fn whole_record_at(
    file: &std::fs::File,
    at: u64,
    size: u64,
    above: u64,
) -> std::io::Result<Option<u64>> {
    use std::os::unix::fs::FileExt;
    let mut header = [0u8; HEADER];
    file.read_exact_at(&mut header, at)?;
    let [l0, l1, l2, l3, c0, c1, c2, c3] = header;
    let length = u64::from(u32::from_le_bytes([l0, l1, l2, l3]));
    let payload = at + HEADER as u64;
    if length == 0 || length > size.saturating_sub(payload) {
        return Ok(None);
    }
    // The number first (cheap), the checksum only for a record that would matter.
    let mut head = [0u8; 32];
    let head = head
        .get_mut(..usize::try_from(length.min(32)).unwrap_or(32))
        .unwrap_or_default();
    file.read_exact_at(head, payload)?;
    let digits: Vec<u8> = head
        .get(MARKER.len()..)
        .unwrap_or_default()
        .iter()
        .copied()
        .take_while(u8::is_ascii_digit)
        .collect();
    let lsn = std::str::from_utf8(&digits)
        .ok()
        .and_then(|d| d.parse::<u64>().ok());
    // A number SQLite can store, as the reader requires.
    let Some(lsn) = lsn.filter(|lsn| *lsn > above && i64::try_from(*lsn).is_ok()) else {
        return Ok(None);
    };
    let mut crc = crc32fast::Hasher::new();
    let mut piece = vec![0u8; usize::try_from(length.min(1 << 20)).unwrap_or(1 << 20)];
    let mut done = 0u64;
    while done < length {
        let n = usize::try_from((length - done).min(piece.len() as u64)).unwrap_or(0);
        let Some(part) = piece.get_mut(..n) else {
            break;
        };
        file.read_exact_at(part, payload + done)?;
        crc.update(part);
        done += n as u64;
    }
    Ok((crc.finalize() == u32::from_le_bytes([c0, c1, c2, c3])).then_some(lsn))
}

/// CRC-32 (IEEE 802.3, as zlib computes it), with the processor's carry-less multiply where it
/// has one: a table lookup per byte took 11 µs of an approval's commit after an idle pause
/// (`cargo bench -p toolgate-server --bench daemon`).
pub(crate) fn crc32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;

    /// A record's nesting is its payload's, whatever its header's bytes look like.
    #[test]
    fn a_records_nesting_is_its_payloads() {
        let mut record = b"\"\"\"\"\"\"\"\"".to_vec();
        record.extend_from_slice(b"{\"a\": [[{}]]}");
        assert_eq!(nests_deeper(&record, 3), Some(4));
        assert_eq!(nests_deeper(&record, 4), None);
        let mut record = b"[[[[[[[[".to_vec();
        record.extend_from_slice(b"[1]");
        assert_eq!(nests_deeper(&record, 0), Some(1));
        assert_eq!(nests_deeper(b"\"\"", 0), None);
    }
    use crate::EventRecord;

    fn entry(lsn: u64) -> Entry {
        Entry {
            lsn,
            store: 0,
            lazy: false,
            seqs: vec![7],
            batch: Batch {
                close: Some(format!("r{lsn}")),
                events: vec![EventRecord::new(
                    "permission_resolved",
                    serde_json::json!({
                        "id": format!("r{lsn}"),
                        "text": "ünïcode ✓",
                        "timestamp": "2026-11-22T10:00:00.000000Z",
                    }),
                )],
                ..Batch::default()
            },
        }
    }

    #[test]
    fn crc32_is_zlibs() {
        assert_eq!(crc32(b""), 0);
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(
            crc32(b"The quick brown fox jumps over the lazy dog"),
            0x414F_A339
        );
    }

    /// Whatever the file holds, reading it returns (damaged records and headers, lengths near
    /// the limits, random bytes after whole records).
    #[test]
    fn reading_never_panics_on_any_bytes() {
        let whole = encode(&entry(1)).unwrap();
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for round in 0..2000 {
            let len = usize::try_from(next() % 300).unwrap();
            let mut bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if round % 3 == 0 {
                bytes = [whole.clone(), bytes].concat();
            }
            if round % 5 == 0 && bytes.len() >= 8 {
                // A header whose CRC matches its (random) payload.
                let payload_len = bytes.len() - 8;
                let payload = bytes[8..].to_vec();
                bytes[..4].copy_from_slice(&u32::try_from(payload_len).unwrap().to_le_bytes());
                bytes[4..8].copy_from_slice(&crc32(&payload).to_le_bytes());
            }
            let entries = decode(&bytes);
            assert!(entries.len() <= 1 + bytes.len() / HEADER);
        }
    }

    /// Every place a record could start is looked at: across the reading chunks' edges, past
    /// damage and garbage, and only records numbered above the bound count.
    #[test]
    fn a_whole_record_is_found_wherever_it_starts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j");
        let find = |bytes: &[u8], from: u64, above: u64| {
            std::fs::write(&path, bytes).unwrap();
            let file = std::fs::File::open(&path).unwrap();
            whole_record_after(&file, from, bytes.len() as u64, above).unwrap()
        };
        let record = encode(&entry(9)).unwrap();
        // Its marker split by the first chunk's end (1 MiB), and by nothing.
        for lead in [(1 << 20) - 11, (1 << 20) - 8, 5, 0] {
            let bytes = [vec![0u8; lead], record.clone()].concat();
            assert_eq!(find(&bytes, 0, 8), Some((lead as u64, 9)), "at {lead}");
            assert_eq!(
                find(&bytes, 0, 9),
                None,
                "numbered no higher than the bound"
            );
            assert_eq!(
                find(&bytes, lead as u64 + 1, 0),
                None,
                "starts before `from`"
            );
        }
        // A damaged copy is not whole; a later whole one is found.
        let mut damaged = record.clone();
        let last = damaged.len() - 3;
        damaged[last] ^= 1;
        let bytes = [
            damaged.clone(),
            b"{\"lsn\":12,garbage".to_vec(),
            record.clone(),
        ]
        .concat();
        let at = (damaged.len() + 17) as u64;
        assert_eq!(find(&bytes, 0, 0), Some((at, 9)));
        // Random bytes with markers in them: never a panic, never a record.
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..300 {
            let mut bytes: Vec<u8> = (0..200)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state as u8
                })
                .collect();
            let at = usize::try_from(state % 150).unwrap();
            bytes[at..at + MARKER.len()].copy_from_slice(MARKER);
            assert_eq!(find(&bytes, 0, 0), None);
        }
    }

    #[test]
    fn records_read_back_in_order() {
        let mut bytes = encode(&entry(1)).unwrap();
        bytes.extend(encode(&entry(2)).unwrap());
        assert_eq!(decode(&bytes), vec![entry(1), entry(2)]);
        assert_eq!(decode(&[]), Vec::new());
    }

    #[test]
    fn reading_stops_at_a_cut_or_damaged_record() {
        let first = encode(&entry(1)).unwrap();
        let second = encode(&entry(2)).unwrap();
        let whole = [first.clone(), second.clone()].concat();
        // Cut anywhere inside the second record: only the first is read.
        for cut in first.len()..whole.len() {
            assert_eq!(decode(&whole[..cut]), vec![entry(1)], "cut at {cut}");
        }
        // A flipped bit in the second record's payload, length or CRC.
        for at in [
            first.len(),
            first.len() + 5,
            first.len() + HEADER + 3,
            whole.len() - 1,
        ] {
            let mut damaged = whole.clone();
            damaged[at] ^= 0x10;
            assert_eq!(decode(&damaged), vec![entry(1)], "flipped at {at}");
        }
        // A record whose CRC matches but whose payload is not an entry.
        let payload = b"{\"not\": \"an entry\"}";
        let mut odd = first.clone();
        odd.extend_from_slice(&u32::try_from(payload.len()).unwrap().to_le_bytes());
        odd.extend_from_slice(&crc32(payload).to_le_bytes());
        odd.extend_from_slice(payload);
        assert_eq!(decode(&odd), vec![entry(1)]);
        // Zeros (the file is allocated ahead), and an older record after newer ones (writing
        // started again from the top).
        let zeros = [first.clone(), vec![0; 64]].concat();
        assert_eq!(decode(&zeros), vec![entry(1)]);
        let older = [second.clone(), first.clone()].concat();
        assert_eq!(decode(&older), vec![entry(2)]);
        // A length far past the end.
        let mut long = first;
        long.extend_from_slice(&u32::MAX.to_le_bytes());
        long.extend_from_slice(&0u32.to_le_bytes());
        assert_eq!(decode(&long), vec![entry(1)]);
    }

    fn read_all(bytes: &[u8]) -> (Vec<Entry>, End) {
        let mut reader = Reader::new(bytes, bytes.len() as u64);
        let entries = std::iter::from_fn(|| reader.next().unwrap()).collect();
        (entries, reader.end())
    }

    /// How reading ends tells where writing stopped from what no crash leaves.
    #[test]
    fn reading_tells_a_torn_end_from_damage_and_gaps() {
        let records: Vec<Vec<u8>> = (1..=3).map(|lsn| encode(&entry(lsn)).unwrap()).collect();
        let whole = records.concat();
        assert_eq!(
            read_all(&whole),
            (vec![entry(1), entry(2), entry(3)], End::Written)
        );
        // The last record torn, then zeros: where writing stopped.
        let mut torn = whole.clone();
        let last = whole.len() - records[2].len();
        torn[last + HEADER + 2] ^= 0x01;
        torn.extend([0; 32]);
        assert_eq!(read_all(&torn), (vec![entry(1), entry(2)], End::Written));
        // A record in the middle damaged, its successor whole: damage, named, and read past.
        let mut damaged = whole.clone();
        damaged[records[0].len() + HEADER + 2] ^= 0x01;
        let mut reader = Reader::new(&damaged[..], damaged.len() as u64);
        let entries: Vec<Entry> = std::iter::from_fn(|| reader.next().unwrap()).collect();
        assert_eq!(entries, vec![entry(1), entry(3)]);
        assert_eq!(
            reader.damaged(),
            [Damage {
                offset: records[0].len() as u64,
                lsn: 2
            }]
        );
        // The first record damaged: its number is taken from its successor's.
        let mut first = whole.clone();
        first[HEADER + 2] ^= 0x01;
        let mut reader = Reader::new(&first[..], first.len() as u64);
        let entries: Vec<Entry> = std::iter::from_fn(|| reader.next().unwrap()).collect();
        assert_eq!(entries, vec![entry(2), entry(3)]);
        assert_eq!(reader.damaged(), [Damage { offset: 0, lsn: 1 }]);
        // Damaged, and followed by a record that is not its successor: a torn end.
        let torn_then_old = [
            damaged[..records[0].len() + records[1].len()].to_vec(),
            records[0].clone(),
        ]
        .concat();
        assert_eq!(read_all(&torn_then_old), (vec![entry(1)], End::Written));
        // A number skipped.
        let gap = [records[0].clone(), records[2].clone()].concat();
        assert_eq!(
            read_all(&gap),
            (
                vec![entry(1)],
                End::Gap {
                    offset: records[0].len() as u64,
                    expected: 2,
                    found: 3
                }
            )
        );
        // Numbers SQLite cannot store, and events without numbers, are damage.
        for odd in [
            Entry {
                lsn: u64::MAX,
                store: 0,
                ..entry(1)
            },
            Entry { lsn: 0, ..entry(1) },
            Entry {
                seqs: vec![],
                ..entry(1)
            },
        ] {
            let bytes = encode(&odd).unwrap();
            assert_eq!(read_all(&bytes), (vec![], End::Written), "{odd:?}");
        }
        // A size larger than the bytes there are (the file shrank): the end.
        let mut reader = Reader::new(&whole[..], whole.len() as u64 + 100);
        assert_eq!(reader.next().unwrap(), Some(entry(1)));
        assert_eq!(reader.next().unwrap(), Some(entry(2)));
        assert_eq!(reader.next().unwrap(), Some(entry(3)));
        assert_eq!(reader.next().unwrap(), None);
        assert_eq!(reader.end(), End::Written);
    }
}
