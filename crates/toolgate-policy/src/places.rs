//! Places outside the workspace a call may use: read-only places (dependency caches,
//! toolchains, the system's own files) and scratch places (the system's temporary folders),
//! built in and named by the policy (`[workspace] read`, `scratch`).

use std::path::{Path, PathBuf};

use crate::resource::matchers::{PathGlob, PathMatcher};
use crate::resource::path::ResolvedPath;

/// Read-only places every policy has: what dependency managers and toolchains keep outside
/// the project (whose sources an agent reads to understand a dependency), and the system's own
/// programs, headers and documentation. Secrets are not kept in any of them.
pub(crate) const BUILTIN_READ: &[&str] = &[
    // Rust
    "~/.cargo/registry",
    "~/.cargo/git",
    "~/.rustup/toolchains",
    // Go
    "~/go/pkg/mod",
    "~/sdk",
    // Python
    "~/.cache/pip",
    "~/.cache/uv",
    "~/.cache/pypoetry",
    "~/.local/share/uv/python",
    "~/.local/lib/python*",
    "~/.pyenv/versions",
    "~/.local/pipx/venvs",
    // JavaScript
    "~/.npm/_logs",
    "~/.nvm/versions",
    "~/.volta/tools",
    "~/.bun/install/cache",
    "~/.cache/deno",
    "~/.cache/ms-playwright",
    "~/.local/share/pnpm",
    // Java, Kotlin
    "~/.m2/repository",
    "~/.gradle/caches",
    "~/.gradle/wrapper/dists",
    // The system's programs, libraries, headers and documentation.
    "/usr",
    "/opt/homebrew",
    "/Library/Developer/CommandLineTools",
    "/etc/os-release",
    "/etc/lsb-release",
    "/etc/debian_version",
    "/etc/alpine-release",
    "/etc/timezone",
    "/etc/localtime",
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/version",
    "/proc/loadavg",
    "/proc/uptime",
];

/// Scratch places every policy has: the system's temporary folders, which programs, tests and
/// agents write to as a matter of course (Codex's workspace-write sandbox lets them too).
/// `/private/tmp` is where macOS keeps `/tmp`; elsewhere it is an ordinary path.
#[cfg(target_os = "macos")]
pub(crate) const BUILTIN_SCRATCH: &[&str] = &["/tmp", "/var/tmp", "/private/tmp", "/dev/shm"];
/// Scratch places every policy has: the system's temporary folders, which programs, tests and
/// agents write to as a matter of course (Codex's workspace-write sandbox lets them too).
#[cfg(not(target_os = "macos"))]
pub(crate) const BUILTIN_SCRATCH: &[&str] = &["/tmp", "/var/tmp", "/dev/shm"];

pub(crate) use crate::subject::OutsidePlace as Place;

/// The compiled places.
#[derive(Debug)]
pub(crate) struct Places {
    read: PathMatcher,
    scratch: PathMatcher,
    /// The scratch places as folders, to tell their top level from what lies below it.
    scratch_tops: Vec<PathBuf>,
    home: Option<PathBuf>,
}

impl Places {
    /// The built-in places and the policy's, `~` expanded with `home` and `$TMPDIR` with the
    /// temporary folder this process has.
    pub(crate) fn new(read: &[String], scratch: &[String], home: Option<&Path>) -> Places {
        let tmpdir = std::env::var_os("TMPDIR").map(PathBuf::from);
        let expand = |place: &str| -> Option<String> {
            match place.strip_prefix("$TMPDIR") {
                Some(rest) => tmpdir
                    .as_ref()
                    .map(|t| format!("{}{rest}", t.display().to_string().trim_end_matches('/'))),
                None => Some(place.to_owned()),
            }
        };
        // A place and everything in it.
        let globs = |place: String| {
            let place = place.trim_end_matches('/').to_owned();
            [format!("{place}/**"), place]
        };
        let compile = |builtin: &[&str], given: &[String], extra: Option<String>| {
            // The built-in places are known to be globs (a test compiles them): not checked
            // again at each load.
            let builtin = builtin
                .iter()
                .flat_map(|p| globs((*p).to_owned()))
                .filter_map(|glob| PathGlob::unchecked(&glob, home).ok());
            let given = given
                .iter()
                .filter_map(|p| expand(p))
                .chain(extra)
                .flat_map(globs)
                .filter_map(|glob| PathGlob::new(&glob, home).ok());
            PathMatcher::new(builtin.chain(given).collect())
        };
        let scratch_tops = BUILTIN_SCRATCH
            .iter()
            .map(|p| PathBuf::from(*p))
            .chain(tmpdir.clone())
            .collect();
        Places {
            read: compile(BUILTIN_READ, read, None),
            scratch: compile(
                BUILTIN_SCRATCH,
                scratch,
                tmpdir.as_ref().map(|t| t.display().to_string()),
            ),
            scratch_tops,
            home: home.map(Path::to_path_buf),
        }
    }

    /// The place every reading of a resolved path outside the workspace lies in, if they share
    /// one (a path read differently by tools that normalise `..` first must be in the place both
    /// ways). A scratch place never reaches into the home folder, nor into the folder that holds
    /// a workspace root, when those lie in it (a workspace or a home folder made in `/tmp`:
    /// their neighbours are someone's, not scratch).
    pub(crate) fn of(&self, resolved: &ResolvedPath, roots: &[PathBuf]) -> Option<Place> {
        let scratch = |p: &Path| {
            self.scratch.is_match_loosening(p, &[], false)
                && !self
                    .home
                    .as_deref()
                    .is_some_and(|h| self.in_scratch_below(h) && p.starts_with(h))
                && !roots.iter().any(|r| {
                    r.parent().is_some_and(|holder| {
                        self.in_scratch_below(holder) && p.starts_with(holder)
                    })
                })
        };
        let read = |p: &Path| self.read.is_match_loosening(p, &[], false);
        if resolved.readings().all(scratch) {
            Some(Place::Scratch)
        } else if resolved.readings().all(|p| read(p) || scratch(p)) {
            Some(Place::ReadOnly)
        } else {
            None
        }
    }

    /// Whether `folder` lies inside a scratch place, below its top (`/tmp/x`, not `/tmp`).
    fn in_scratch_below(&self, folder: &Path) -> bool {
        self.scratch.is_match_loosening(folder, &[], false)
            && !self.scratch_tops.iter().any(|t| t == folder)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_built_in_places_are_globs_that_compile() {
        for place in BUILTIN_READ.iter().chain(BUILTIN_SCRATCH) {
            for glob in [format!("{place}/**"), (*place).to_owned()] {
                let glob = PathGlob::new(&glob, Some(Path::new("/home/u"))).unwrap();
                PathMatcher::new(vec![glob]).compile().unwrap();
            }
        }
    }

    fn resolved(path: &str) -> ResolvedPath {
        ResolvedPath {
            given: path.to_owned(),
            absolute: PathBuf::from(path),
            resolved: PathBuf::from(path),
            alternative: None,
            root: None,
        }
    }

    #[test]
    fn places_hold_what_lies_below_them() {
        let places = Places::new(
            &["~/vendor/docs".to_owned()],
            &["~/scratch".to_owned()],
            Some(Path::new("/home/u")),
        );
        let of = |p: &str| places.of(&resolved(p), &[]);
        assert_eq!(of("/tmp/pytest.log"), Some(Place::Scratch));
        assert_eq!(of("/tmp"), Some(Place::Scratch));
        assert_eq!(of("/home/u/scratch/x"), Some(Place::Scratch));
        assert_eq!(
            of("/home/u/.cargo/registry/src/index.crates.io-1/serde-1.0.0/src/lib.rs"),
            Some(Place::ReadOnly)
        );
        assert_eq!(
            of("/home/u/.local/lib/python3.11/site-packages/x.py"),
            Some(Place::ReadOnly)
        );
        assert_eq!(of("/usr/include/stdio.h"), Some(Place::ReadOnly));
        assert_eq!(of("/home/u/vendor/docs/a.md"), Some(Place::ReadOnly));
        assert_eq!(of("/home/u/.cargo/credentials.toml"), None);
        assert_eq!(of("/home/u/.ssh/id_ed25519"), None);
        assert_eq!(of("/tmpx/a"), None);
        assert_eq!(of("/etc/passwd"), None);
        assert_eq!(of("/proc/self/environ"), None);
        // A workspace and a home folder made in the temporary folder: their neighbours are not
        // scratch, the rest of it is.
        let places = Places::new(&[], &[], Some(Path::new("/tmp/t1/home")));
        let roots = [PathBuf::from("/tmp/t2/fixture/ws")];
        let of = |p: &str| places.of(&resolved(p), &roots);
        assert_eq!(of("/tmp/t1/home/.bashrc"), None);
        assert_eq!(of("/tmp/t2/fixture/ws-evil/x"), None);
        assert_eq!(of("/tmp/t2/other"), Some(Place::Scratch));
        assert_eq!(of("/tmp/pytest.log"), Some(Place::Scratch));
        assert_eq!(
            of("/tmp/t1/home/.cargo/registry/src/a.rs"),
            Some(Place::ReadOnly)
        );
    }
}
