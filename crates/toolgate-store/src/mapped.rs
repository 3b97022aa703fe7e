//! The commit journal's file, mapped into memory a chunk at a time.
//!
//! Copying a record into a shared mapping of the file puts it in the operating system's page
//! cache, where it survives the daemon's crash, without a system call: a `pwrite` of the same
//! record cost about 40 µs on the approval path after an idle pause (the file's times are
//! updated and the filesystem journals the inode), a copy about 4 µs
//! (`cargo bench -p toolgate-server --bench daemon`). A flush (`fdatasync`) still writes the
//! pages a copy dirtied — and write-protects them, so a copy into a page after a flush faults
//! (as does the first copy into a page never written through the mapping): the page's blocks
//! and the file's times are seen to in the fault, ~10% of an answer's time in the daemon
//! (`perf` on the bench). [`populate_writable`] takes those faults ahead, off the commit's path.
//!
//! The chunks are allocated (zeros written) before they are mapped, so a copy never needs a new
//! block: a full disk is met when a chunk is allocated, as an error. What a mapping cannot
//! survive is the file shrinking under it (the process gets `SIGBUS`); the file belongs to the
//! daemon that holds the data directory's lock, and is only ever cut while nothing is mapped.

#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::ptr::NonNull;

/// `len` bytes of a file, mapped shared, readable and writable.
pub(crate) struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: a mapping is memory this value owns alone (it is unmapped when the value drops, and
// no reference into it outlives a call); moving it to another thread moves that ownership.
unsafe impl Send for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `file` from `offset`. The file must hold them (allocated, not
    /// sparse) for as long as the mapping lives.
    pub(crate) fn new(file: &File, offset: u64, len: usize) -> io::Result<Mapping> {
        // SAFETY: a new mapping at an address the kernel chooses: it overlaps no memory Rust
        // knows of. The file is open for reading and writing, as the protection asks.
        let ptr = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                len,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::SHARED,
                file,
                offset,
            )
        }?;
        let ptr = NonNull::new(ptr.cast::<u8>())
            .ok_or_else(|| io::Error::other("the journal was mapped at address 0"))?;
        Ok(Mapping { ptr, len })
    }

    /// How many bytes are mapped.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Copies `bytes` to `at`; an error when they do not fit.
    pub(crate) fn write(&mut self, at: usize, bytes: &[u8]) -> io::Result<()> {
        let fits = at
            .checked_add(bytes.len())
            .is_some_and(|end| end <= self.len);
        if !fits {
            return Err(io::Error::other(format!(
                "{} bytes at {at} do not fit a mapping of {}",
                bytes.len(),
                self.len
            )));
        }
        // SAFETY: `at..at + bytes.len()` lies inside the mapping (checked above), which is
        // valid for writes while `self` lives; `&mut self` makes this the only access through
        // it, and `bytes` cannot overlap it (no reference into the mapping is ever handed out).
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr.as_ptr().add(at), bytes.len());
        }
        Ok(())
    }

    /// Where the pages holding `at..at + len` are (cut to the mapping), for
    /// [`populate_writable`]; `None` when none are.
    pub(crate) fn span(&self, at: usize, len: usize) -> Option<Span> {
        let page = rustix::param::page_size();
        let start = at / page * page;
        let end = at.saturating_add(len).min(self.len);
        (start < end).then(|| Span {
            start: (self.ptr.as_ptr() as usize).saturating_add(start),
            len: end - start,
        })
    }
}

/// Pages of a mapping, by address: what [`populate_writable`] is given.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Span {
    start: usize,
    len: usize,
}

/// Makes `span`'s pages writable now, as a write to each would, without writing (Linux's
/// `MADV_POPULATE_WRITE`): a flush write-protects the pages it wrote, and a page never written
/// through the mapping is mapped read-only, so the next copy into one faults — the file
/// system's bookkeeping of the page and the file's times, on the commit's path. Done ahead of
/// the copies, off that path; best effort (a kernel before 5.14 refuses it, and the copy faults
/// as before). Other systems: nothing.
pub(crate) fn populate_writable(span: Span) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    // SAFETY: `MADV_POPULATE_WRITE` reads and writes no byte of the range: it only faults its
    // pages in as a write would. The span was taken from a live mapping; the caller no longer
    // holds the lock that keeps it alive, but the journal's mappings are unmapped only when the
    // store is dropped, and a range unmapped or mapped otherwise since is refused by the kernel
    // (or faulted in unchanged) — nothing Rust knows of changes either way.
    unsafe {
        let _ = rustix::mm::madvise(
            span.start as *mut std::ffi::c_void,
            span.len,
            rustix::mm::Advice::LinuxPopulateWrite,
        );
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let _ = span;
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once; nothing points into it.
        let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::os::unix::fs::FileExt;

    use super::*;

    /// A new file to map, readable and writable, in a folder removed with the guard.
    fn scratch() -> (tempfile::TempDir, std::fs::File) {
        let dir = tempfile::tempdir().unwrap();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(dir.path().join("j"))
            .unwrap();
        (dir, file)
    }

    #[test]
    fn copies_reach_the_file_and_stay_in_bounds() {
        let (_dir, file) = scratch();
        file.write_all_at(&[0; 8192], 0).unwrap();
        let mut mapping = Mapping::new(&file, 4096, 4096).unwrap();
        assert_eq!(mapping.len(), 4096);
        mapping.write(10, b"record").unwrap();
        mapping.write(4090, b"tail!!").unwrap();
        assert!(mapping.write(4091, b"tail!!").is_err());
        assert!(mapping.write(usize::MAX, b"x").is_err());
        drop(mapping);
        let mut read = [0u8; 6];
        file.read_exact_at(&mut read, 4096 + 10).unwrap();
        assert_eq!(&read, b"record");
        file.read_exact_at(&mut read, 8186).unwrap();
        assert_eq!(&read, b"tail!!");
    }

    #[test]
    fn populating_changes_nothing_and_stays_in_the_mapping() {
        let page = rustix::param::page_size();
        let (_dir, file) = scratch();
        let text: Vec<u8> = (0..3 * page).map(|i| (i % 251) as u8).collect();
        file.write_all_at(&text, 0).unwrap();
        file.sync_all().unwrap();
        let mut mapping = Mapping::new(&file, page as u64, 2 * page).unwrap();
        let base = mapping.ptr.as_ptr() as usize;
        // From the page that holds the start, cut at the mapping's end.
        let span = mapping.span(page + 4, 100 * page).unwrap();
        assert_eq!((span.start - base, span.len), (page, page));
        let span = mapping.span(10, 5).unwrap();
        assert_eq!((span.start - base, span.len), (0, 15));
        assert!(mapping.span(2 * page, 1).is_none());
        assert!(mapping.span(usize::MAX, usize::MAX).is_none());
        populate_writable(mapping.span(0, 2 * page).unwrap());
        mapping.write(page, b"after").unwrap();
        drop(mapping);
        let mut read = vec![0u8; 3 * page];
        file.read_exact_at(&mut read, 0).unwrap();
        let mut expected = text.clone();
        expected[2 * page..2 * page + 5].copy_from_slice(b"after");
        assert_eq!(read, expected);
    }
}
