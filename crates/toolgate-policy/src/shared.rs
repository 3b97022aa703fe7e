//! A policy that can be loaded again while it is used: the daemon and the gateways hold a
//! [`SharedPolicy`], put a new policy in force whole, and see their files change through
//! [`FileStamps`].

use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::SystemTime;

use crate::Policy;

/// A policy that can be replaced while it is used: each reader takes the one in force (an
/// evaluation runs whole under one policy), and a new one is put in force whole.
#[derive(Clone, Debug)]
pub struct SharedPolicy(Arc<RwLock<Arc<Policy>>>);

impl SharedPolicy {
    /// `policy`, in force.
    pub fn new(policy: impl Into<Arc<Policy>>) -> SharedPolicy {
        SharedPolicy(Arc::new(RwLock::new(policy.into())))
    }

    /// The policy in force.
    pub fn get(&self) -> Arc<Policy> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Puts `policy` in force.
    pub fn set(&self, policy: impl Into<Arc<Policy>>) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = policy.into();
    }
}

impl From<Policy> for SharedPolicy {
    fn from(policy: Policy) -> SharedPolicy {
        SharedPolicy::new(policy)
    }
}

impl From<Arc<Policy>> for SharedPolicy {
    fn from(policy: Arc<Policy>) -> SharedPolicy {
        SharedPolicy::new(policy)
    }
}

/// What is known of a file without reading it: its modification time, length and inode, or
/// nothing when it is missing.
type Stamp = Option<(SystemTime, u64, u64)>;

fn stamp(path: &Path) -> Stamp {
    let meta = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&meta);
    #[cfg(not(unix))]
    let inode = 0;
    Some((meta.modified().ok()?, meta.len(), inode))
}

/// Policy files, and whether they changed since they were last looked at: written, replaced
/// (an editor's save by rename), made or removed.
#[derive(Clone, Debug)]
pub struct FileStamps {
    files: Vec<PathBuf>,
    seen: Vec<Stamp>,
}

impl FileStamps {
    /// The files, as they are now.
    pub fn new(files: Vec<PathBuf>) -> FileStamps {
        let seen = files.iter().map(|file| stamp(file)).collect();
        FileStamps { files, seen }
    }

    /// The files.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// Whether any of them changed since the last look (or since they were stamped first).
    pub fn changed(&mut self) -> bool {
        let now: Vec<Stamp> = self.files.iter().map(|file| stamp(file)).collect();
        let changed = now != self.seen;
        self.seen = now;
        changed
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_change_made_removed_or_renamed_over_is_seen_once() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("policy.toml");
        std::fs::write(&file, "version = 1\n").unwrap();
        let mut stamps = FileStamps::new(vec![file.clone()]);
        assert!(!stamps.changed());
        std::fs::write(&file, "version = 1\nmode = \"deny-all\"\n").unwrap();
        assert!(stamps.changed());
        assert!(!stamps.changed(), "seen once");
        let fresh = dir.path().join("policy.toml.new");
        std::fs::write(&fresh, "version = 1\nmode = \"deny-all\"\n").unwrap();
        std::fs::rename(&fresh, &file).unwrap();
        assert!(stamps.changed(), "renamed over: another file");
        std::fs::remove_file(&file).unwrap();
        assert!(stamps.changed());
        std::fs::write(&file, "version = 1\n").unwrap();
        assert!(stamps.changed());
    }

    #[test]
    fn a_shared_policy_is_replaced_whole() {
        let shared = SharedPolicy::new(Policy::from_toml("a.toml", "version = 1\n").unwrap());
        let held = shared.get();
        shared.set(Policy::from_toml("b.toml", "version = 1\nmode = \"deny-all\"\n").unwrap());
        assert_eq!(
            held.files().next().unwrap().0,
            "a.toml",
            "a reader keeps the one it took"
        );
        assert_eq!(shared.get().files().next().unwrap().0, "b.toml");
    }
}
