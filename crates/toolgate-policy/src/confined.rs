//! A confined opener for in-process tools: files are opened beneath a folder and never outside
//! it, with no window between checking a path and using it.
//!
//! A path check (the workspace guard) resolves a path and compares it with the roots; between that
//! check and the tool's `open`, a symlink can be swapped in. Tools that open files through
//! [`ConfinedDir`] close that window: on Linux the kernel resolves the path with `openat2` and
//! `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`, refusing any step (symlink, `..`, absolute path,
//! `/proc` magic link) that would leave the folder. Elsewhere, and on kernels without `openat2`,
//! each component is opened in turn relative to the previous one with `O_NOFOLLOW`, `..` is
//! tracked within the folder, and symlinks are refused. On platforms without `openat` the opener
//! falls back to resolving and checking the path, which is racy; it says so in its docs.
//!
//! Hard links are beyond any path-based confinement: a hard link inside the folder to a file
//! outside it *is* inside the folder. Keep the workspace on a filesystem where the agent cannot
//! create hard links to files it must not reach, or run the tool in a sandbox.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};

/// How to open a file beneath a [`ConfinedDir`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenMode {
    /// Open for writing (else read-only).
    pub write: bool,
    /// Create the file if it does not exist.
    pub create: bool,
    /// Truncate an existing file.
    pub truncate: bool,
    /// Append to the file.
    pub append: bool,
}

impl OpenMode {
    /// Read-only.
    pub const READ: OpenMode = OpenMode {
        write: false,
        create: false,
        truncate: false,
        append: false,
    };
    /// Write, creating or truncating.
    pub const WRITE: OpenMode = OpenMode {
        write: true,
        create: true,
        truncate: true,
        append: false,
    };
}

/// A folder files are opened beneath.
///
/// ```rust,standalone_crate
/// use toolgate_policy::{ConfinedDir, OpenMode};
/// let dir = tempfile::tempdir()?;
/// let ws = ConfinedDir::open(dir.path())?;
/// ws.write("notes.txt", b"hello")?;
/// assert_eq!(ws.read("notes.txt")?, b"hello");
/// assert!(ws.read("../outside.txt").is_err());
/// assert!(ws.open_file("/etc/passwd", OpenMode::READ).is_err());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct ConfinedDir {
    root: PathBuf,
    #[cfg(unix)]
    fd: std::os::fd::OwnedFd,
}

fn escape(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("`{}` is outside the confined folder", path.display()),
    )
}

impl ConfinedDir {
    /// Opens the folder.
    pub fn open(root: impl AsRef<Path>) -> io::Result<ConfinedDir> {
        let root = std::fs::canonicalize(root.as_ref())?;
        #[cfg(unix)]
        {
            use rustix::fs::{Mode, OFlags, openat};
            let fd = openat(
                rustix::fs::CWD,
                &root,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            Ok(ConfinedDir { root, fd })
        }
        #[cfg(not(unix))]
        {
            Ok(ConfinedDir { root })
        }
    }

    /// The folder, resolved.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Opens a file beneath the folder; any path that would leave it is refused.
    pub fn open_file(&self, relative: impl AsRef<Path>, mode: OpenMode) -> io::Result<File> {
        let relative = relative.as_ref();
        if relative.is_absolute() {
            return Err(escape(relative));
        }
        #[cfg(target_os = "linux")]
        {
            match self.open_beneath(relative, mode) {
                Err(e) if e.raw_os_error() == Some(38) => {} // ENOSYS: a kernel before 5.6
                other => return other,
            }
        }
        self.open_walking(relative, mode)
    }

    /// Reads a whole file beneath the folder.
    pub fn read(&self, relative: impl AsRef<Path>) -> io::Result<Vec<u8>> {
        let mut data = Vec::new();
        self.open_file(relative, OpenMode::READ)?
            .read_to_end(&mut data)?;
        Ok(data)
    }

    /// Writes a whole file beneath the folder, creating or truncating it.
    pub fn write(&self, relative: impl AsRef<Path>, data: &[u8]) -> io::Result<()> {
        self.open_file(relative, OpenMode::WRITE)?.write_all(data)
    }

    #[cfg(unix)]
    fn flags(mode: OpenMode) -> rustix::fs::OFlags {
        use rustix::fs::OFlags;
        let mut flags = OFlags::CLOEXEC | OFlags::NOCTTY;
        flags |= if mode.write {
            OFlags::WRONLY
        } else {
            OFlags::RDONLY
        };
        if mode.create {
            flags |= OFlags::CREATE;
        }
        if mode.truncate {
            flags |= OFlags::TRUNC;
        }
        if mode.append {
            flags |= OFlags::APPEND;
        }
        flags
    }

    #[cfg(target_os = "linux")]
    fn open_beneath(&self, relative: &Path, mode: OpenMode) -> io::Result<File> {
        use rustix::fs::{Mode, ResolveFlags, openat2};
        let fd = openat2(
            &self.fd,
            relative,
            Self::flags(mode),
            // openat2 refuses a mode without O_CREAT.
            if mode.create {
                Mode::from_raw_mode(0o644)
            } else {
                Mode::empty()
            },
            ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
        )
        .map_err(|e| {
            if e == rustix::io::Errno::XDEV || e == rustix::io::Errno::LOOP {
                escape(relative)
            } else {
                io::Error::from(e)
            }
        })?;
        Ok(File::from(fd))
    }

    /// Opens component by component from the folder, refusing symlinks and `..` above it.
    #[cfg(unix)]
    pub(crate) fn open_walking(&self, relative: &Path, mode: OpenMode) -> io::Result<File> {
        use rustix::fs::{Mode, OFlags, openat};
        use std::os::fd::OwnedFd;
        let names: Vec<&std::ffi::OsStr> = {
            let mut stack: Vec<&std::ffi::OsStr> = Vec::new();
            for component in relative.components() {
                match component {
                    Component::Normal(n) => stack.push(n),
                    Component::CurDir => {}
                    Component::ParentDir => {
                        if stack.pop().is_none() {
                            return Err(escape(relative));
                        }
                    }
                    Component::RootDir | Component::Prefix(_) => return Err(escape(relative)),
                }
            }
            stack
        };
        let Some((last, folders)) = names.split_last() else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "no file name"));
        };
        let mut current: Option<OwnedFd> = None;
        for folder in folders {
            let next = {
                let base = current.as_ref().unwrap_or(&self.fd);
                openat(
                    base,
                    *folder,
                    OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .map_err(|e| {
                    if e == rustix::io::Errno::LOOP || e == rustix::io::Errno::NOTDIR {
                        escape(relative)
                    } else {
                        io::Error::from(e)
                    }
                })?
            };
            current = Some(next);
        }
        let base = current.as_ref().unwrap_or(&self.fd);
        let fd = openat(
            base,
            *last,
            Self::flags(mode) | OFlags::NOFOLLOW,
            Mode::from_raw_mode(0o644),
        )
        .map_err(|e| {
            if e == rustix::io::Errno::LOOP {
                escape(relative)
            } else {
                io::Error::from(e)
            }
        })?;
        Ok(File::from(fd))
    }

    /// Resolves the path and checks it is inside the folder, then opens it. Racy: a symlink
    /// swapped in between the check and the open is followed.
    #[cfg(not(unix))]
    pub(crate) fn open_walking(&self, relative: &Path, mode: OpenMode) -> io::Result<File> {
        let joined = self.root.join(relative);
        let parent = joined.parent().ok_or_else(|| escape(relative))?;
        let resolved = std::fs::canonicalize(parent)?;
        if !resolved.starts_with(&self.root) {
            return Err(escape(relative));
        }
        std::fs::OpenOptions::new()
            .read(!mode.write)
            .write(mode.write)
            .create(mode.create)
            .truncate(mode.truncate)
            .append(mode.append)
            .open(joined)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn fixture() -> (tempfile::TempDir, ConfinedDir) {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        std::fs::write(ws.join("a.txt"), b"a").unwrap();
        std::fs::write(dir.path().join("secret"), b"s").unwrap();
        symlink(dir.path().join("secret"), ws.join("link-out")).unwrap();
        symlink(dir.path(), ws.join("dir-out")).unwrap();
        let confined = ConfinedDir::open(&ws).unwrap();
        (dir, confined)
    }

    #[test]
    fn opens_inside_and_refuses_escapes() {
        let (_dir, ws) = fixture();
        assert_eq!(ws.read("a.txt").unwrap(), b"a");
        assert_eq!(ws.read("sub/../a.txt").unwrap(), b"a");
        ws.write("sub/new.txt", b"n").unwrap();
        assert_eq!(ws.read("sub/new.txt").unwrap(), b"n");
        for escape in [
            "../secret",
            "link-out",
            "dir-out/secret",
            "/etc/passwd",
            "sub/../../secret",
        ] {
            assert!(ws.read(escape).is_err(), "{escape}");
        }
        assert!(ws.write("link-out", b"x").is_err());
        assert_eq!(
            std::fs::read(ws.root().parent().unwrap().join("secret")).unwrap(),
            b"s"
        );
    }

    #[test]
    fn the_portable_walk_refuses_the_same_escapes() {
        let (_dir, ws) = fixture();
        assert!(ws.open_walking(Path::new("a.txt"), OpenMode::READ).is_ok());
        assert!(
            ws.open_walking(Path::new("sub/../a.txt"), OpenMode::READ)
                .is_ok()
        );
        for escape in [
            "../secret",
            "link-out",
            "dir-out/secret",
            "sub/../../secret",
        ] {
            assert!(
                ws.open_walking(Path::new(escape), OpenMode::READ).is_err(),
                "{escape}"
            );
        }
        assert!(
            ws.open_walking(Path::new("link-out"), OpenMode::WRITE)
                .is_err()
        );
    }
}
