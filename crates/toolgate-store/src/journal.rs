//! The commit journal: what makes a commit cost one `write` instead of a SQLite transaction.
//!
//! A commit appends one record to `toolgate.db.journal` (and flushes it with
//! [`Durability::Full`](crate::Durability::Full)) and returns; the record is applied to the
//! SQLite database moments later, in a transaction that also stores the record's number (its
//! LSN), so a record is applied exactly once. Reads catch up first, so they see every commit
//! that returned before them. When the daemon starts, the records the database has not
//! applied yet (it stopped, or crashed, in between) are applied before anything else happens.
//!
//! A record is its payload's length (4 bytes, little-endian), the payload's CRC-32 (4 bytes)
//! and the payload: JSON of the LSN, the events' sequence numbers and the [`Batch`]. Reading
//! stops at the first record that is cut short, does not match its CRC, or is not newer than
//! the one before it: a machine crash can leave a partly written last record (never
//! acknowledged, because with `Durability::Full` a commit returns only after the flush); the
//! file is allocated ahead, so zeros follow the last record; and once everything is applied,
//! writing starts again from the top, so older records may follow the newer ones.

use serde::{Deserialize, Serialize};

use crate::Batch;
use crate::record::StoreError;

/// One commit, as journaled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Entry {
    /// Its number: increasing, never reused.
    pub(crate) lsn: u64,
    /// The sequence numbers of `batch.events`, in order.
    pub(crate) seqs: Vec<i64>,
    pub(crate) batch: Batch,
}

const HEADER: usize = 8;

/// The bytes of `entry`'s record.
pub(crate) fn encode(entry: &Entry) -> Result<Vec<u8>, StoreError> {
    let payload = serde_json::to_vec(entry)?;
    let length = u32::try_from(payload.len())
        .map_err(|_| StoreError("a commit of more than 4 GiB".into()))?;
    let mut record = Vec::with_capacity(HEADER + payload.len());
    record.extend_from_slice(&length.to_le_bytes());
    record.extend_from_slice(&crc32(&payload).to_le_bytes());
    record.extend_from_slice(&payload);
    Ok(record)
}

/// The whole records at the start of `bytes`, in order, up to the first that is cut short,
/// damaged, unreadable or not newer than the one before.
pub(crate) fn decode(bytes: &[u8]) -> Vec<Entry> {
    let mut entries: Vec<Entry> = Vec::new();
    let mut rest = bytes;
    while let Some((header, after)) = rest.split_first_chunk::<HEADER>() {
        let [l0, l1, l2, l3, c0, c1, c2, c3] = *header;
        let Ok(length) = usize::try_from(u32::from_le_bytes([l0, l1, l2, l3])) else {
            break;
        };
        let Some((payload, next)) = after.split_at_checked(length) else {
            break;
        };
        if crc32(payload) != u32::from_le_bytes([c0, c1, c2, c3]) {
            break;
        }
        let Ok(entry) = serde_json::from_slice::<Entry>(payload) else {
            break;
        };
        if entries.last().is_some_and(|before| before.lsn >= entry.lsn) {
            break;
        }
        entries.push(entry);
        rest = next;
    }
    entries
}

/// CRC-32 (IEEE 802.3, as zlib computes it), one table lookup per byte.
pub(crate) fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        let index = usize::from((crc as u8) ^ byte);
        crc = (crc >> 8) ^ CRC_TABLE.get(index).copied().unwrap_or_default();
    }
    !crc
}

// `n` stays below 256 by the loop's bound; a constant cannot use `get_mut`.
#[allow(clippy::indexing_slicing)]
const CRC_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut n = 0;
    while n < 256 {
        let mut c = n as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 == 1 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        table[n] = c;
        n += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;
    use crate::EventRecord;

    fn entry(lsn: u64) -> Entry {
        Entry {
            lsn,
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
}
