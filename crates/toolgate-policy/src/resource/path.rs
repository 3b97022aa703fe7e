//! Workspace confinement: resolving a path the way the filesystem will, and checking it against
//! the workspace roots (DESIGN §5).
//!
//! A path is trimmed; empty or containing NUL → invalid. `file://` URLs become paths; `\` is read
//! as a separator and drive letters or UNC names are foreign (a Windows path on POSIX is never
//! inside). `~` is the home folder. A relative path is joined to the call's working folder. The
//! path is then resolved through symlinks: an existing path as `realpath` does; a missing path
//! through its first existing ancestor, the rest appended (a dangling symlink counts as escaping,
//! a symlink loop is an error). When the path contains `..`, it is resolved both as the kernel
//! does (symlinks first, then `..`) and as tools that normalise strings first do (`..` first,
//! then symlinks): it is inside only if both readings are. Inside means equal to a root, or below
//! it component by component, so `/ws-evil` is not inside `/ws`.
//!
//! What a path check cannot see: a hard link inside the workspace to a file outside it (it *is*
//! inside, as far as any path is concerned), and a symlink swapped in between the check and the
//! use. In-process tools avoid both by opening files through [`crate::ConfinedDir`].

use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};

use serde::Serialize;

/// `ELOOP`: 40 on Linux, 62 on macOS and the BSDs.
#[cfg(target_os = "linux")]
const ELOOP: i32 = 40;
#[cfg(not(target_os = "linux"))]
const ELOOP: i32 = 62;

/// How many symlinks one resolution may follow (as Linux's `MAXSYMLINKS`).
const MAX_SYMLINKS: u32 = 40;

/// A path resolved for checking.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ResolvedPath {
    /// The path as the call gave it.
    pub given: String,
    /// Absolute and normalised without touching the filesystem (`..` removed as text).
    pub absolute: PathBuf,
    /// Resolved as the kernel does: through every symlink.
    pub resolved: PathBuf,
    /// The reading of a tool that normalises `..` before opening, when it differs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alternative: Option<PathBuf>,
    /// The workspace root the path is inside, if any.
    pub root: Option<PathBuf>,
}

impl ResolvedPath {
    /// Every absolute reading of the path: resolved, the alternative, and the unresolved one.
    pub fn readings(&self) -> impl Iterator<Item = &Path> {
        std::iter::once(self.resolved.as_path())
            .chain(self.alternative.as_deref())
            .chain(std::iter::once(self.absolute.as_path()))
    }
}

/// Why a path cannot be checked; every one of these denies.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "problem", content = "detail", rename_all = "kebab-case")]
pub enum PathProblem {
    /// Empty (or only whitespace).
    Empty,
    /// Contains a NUL byte.
    Nul,
    /// A Windows drive or UNC path, or a URL that is not `file://`.
    Foreign(String),
    /// `~user`, or `~` with no known home folder.
    Home,
    /// A symlink whose target does not exist (it could be created anywhere later).
    Dangling(PathBuf),
    /// Too many symlinks (a loop).
    Loop(PathBuf),
    /// The filesystem refused to say (permission denied, …).
    Unresolvable(String),
}

impl fmt::Display for PathProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathProblem::Empty => f.write_str("the path is empty"),
            PathProblem::Nul => f.write_str("the path contains a NUL byte"),
            PathProblem::Foreign(why) => write!(f, "{why}"),
            PathProblem::Home => f.write_str("`~` cannot be resolved here"),
            PathProblem::Dangling(p) => {
                write!(
                    f,
                    "`{}` is a dangling symlink, which counts as escaping",
                    p.display()
                )
            }
            PathProblem::Loop(p) => write!(f, "too many symlinks at `{}` (a loop)", p.display()),
            PathProblem::Unresolvable(why) => write!(f, "the path cannot be resolved: {why}"),
        }
    }
}

/// Where relative paths start and which folders count as inside.
#[derive(Clone, Debug)]
pub(crate) struct PathContext<'a> {
    /// Canonical workspace roots.
    pub(crate) roots: &'a [PathBuf],
    /// The folder relative paths are joined to (absolute).
    pub(crate) cwd: &'a Path,
    /// The home folder, for `~`.
    pub(crate) home: Option<&'a Path>,
}

/// Turns the text of a path into an absolute, lexically normalised path.
pub(crate) fn absolute(
    given: &str,
    cwd: &Path,
    home: Option<&Path>,
) -> Result<PathBuf, PathProblem> {
    raw_absolute(given, cwd, home).map(|p| normalize(&p))
}

/// Turns the text of a path into an absolute path, keeping `.` and `..` for the walk.
fn raw_absolute(given: &str, cwd: &Path, home: Option<&Path>) -> Result<PathBuf, PathProblem> {
    let mut text = given.trim().to_owned();
    if text.is_empty() {
        return Err(PathProblem::Empty);
    }
    if text.contains('\0') {
        return Err(PathProblem::Nul);
    }
    if strip_prefix_ignore_case(&text, "file:").is_some() {
        let url = ::url::Url::parse(&text)
            .map_err(|e| PathProblem::Foreign(format!("invalid file URL: {e}")))?;
        if url
            .host_str()
            .is_some_and(|h| !h.is_empty() && h != "localhost")
        {
            return Err(PathProblem::Foreign("a file URL on another host".into()));
        }
        text = percent_decode(url.path());
        if text.contains('\0') {
            return Err(PathProblem::Nul);
        }
    }
    let bytes = text.as_bytes();
    if bytes.len() >= 2
        && bytes.first().is_some_and(u8::is_ascii_alphabetic)
        && bytes.get(1) == Some(&b':')
    {
        return Err(PathProblem::Foreign(format!("`{given}` is a Windows path")));
    }
    if text.starts_with("\\\\") {
        return Err(PathProblem::Foreign(format!(
            "`{given}` is a Windows network path"
        )));
    }
    if text.contains('\\') {
        text = text.replace('\\', "/");
    }
    for (variable, base) in [
        ("$HOME", home),
        ("${HOME}", home),
        ("$PWD", Some(cwd)),
        ("${PWD}", Some(cwd)),
    ] {
        if let Some(rest) = text.strip_prefix(variable)
            && (rest.is_empty() || rest.starts_with('/'))
        {
            return Ok(base
                .ok_or(PathProblem::Home)?
                .join(rest.trim_start_matches('/')));
        }
    }
    Ok(if let Some(rest) = text.strip_prefix('~') {
        if !(rest.is_empty() || rest.starts_with('/')) {
            return Err(PathProblem::Home);
        }
        home.ok_or(PathProblem::Home)?
            .join(rest.trim_start_matches('/'))
    } else if text.starts_with('/') {
        PathBuf::from(text)
    } else {
        cwd.join(text)
    })
}

fn strip_prefix_ignore_case<'t>(text: &'t str, prefix: &str) -> Option<&'t str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let hex = |j: usize| bytes.get(j).and_then(|c| (*c as char).to_digit(16));
        match (b, hex(i + 1), hex(i + 2)) {
            (b'%', Some(h), Some(l)) => {
                out.push(u8::try_from(h * 16 + l).unwrap_or(b'?'));
                i += 3;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Removes `.` and `..` as text and collapses separators.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::Normal(name) => out.push(name),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

fn has_parent_dir(path: &Path) -> bool {
    path.components().any(|c| c == Component::ParentDir)
}

/// Resolves a path the way the filesystem will and finds the root it is inside.
///
/// `roots` must be canonical (resolved) folders; `cwd` is where a relative path starts; `~` is the
/// `HOME` of this process.
///
/// ```rust,standalone_crate
/// use toolgate_policy::path::resolve_in;
/// let dir = tempfile::tempdir()?;
/// let root = std::fs::canonicalize(dir.path())?;
/// let inside = resolve_in("src/main.rs", &[root.clone()], &root).unwrap();
/// assert_eq!(inside.root.as_deref(), Some(root.as_path()));
/// let outside = resolve_in("../elsewhere", &[root.clone()], &root).unwrap();
/// assert_eq!(outside.root, None);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn resolve_in(given: &str, roots: &[PathBuf], cwd: &Path) -> Result<ResolvedPath, PathProblem> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    resolve(
        given,
        &PathContext {
            roots,
            cwd,
            home: home.as_deref(),
        },
    )
}

/// Resolves a path that a command only mentions: through the filesystem when it exists, as text
/// otherwise (a file that does not exist cannot be read, so it has nothing to hide).
pub(crate) fn resolve_mention(
    given: &str,
    ctx: &PathContext<'_>,
) -> Result<ResolvedPath, PathProblem> {
    let raw = raw_absolute(given, ctx.cwd, ctx.home)?;
    let absolute = normalize(&raw);
    if is_per_process(&absolute)
        || std::fs::symlink_metadata(&absolute).is_ok()
        || std::fs::symlink_metadata(&raw).is_ok()
    {
        return resolve(given, ctx);
    }
    let root = ctx.roots.iter().find(|r| absolute.starts_with(r)).cloned();
    Ok(ResolvedPath {
        given: given.to_owned(),
        resolved: absolute.clone(),
        absolute,
        alternative: None,
        root,
    })
}

/// Resolves a path whose last name is not followed, for a command that acts on a link itself
/// (`rm link`, `mv link x`): its folder resolved as [`resolve`] does, the name appended. A path
/// ending in `/`, `.` or `..` is resolved whole (`rm -r link/` goes through the link).
pub(crate) fn resolve_link_itself(
    given: &str,
    ctx: &PathContext<'_>,
) -> Result<ResolvedPath, PathProblem> {
    let raw = raw_absolute(given, ctx.cwd, ctx.home)?;
    let last = given.trim_end().rsplit('/').next().unwrap_or("");
    let name = match raw.components().next_back() {
        Some(Component::Normal(name)) if !matches!(last, "" | "." | ".." | "~") => name.to_owned(),
        _ => return resolve(given, ctx),
    };
    let Some(parent) = raw.parent().and_then(Path::to_str) else {
        return resolve(given, ctx);
    };
    let folder = resolve(parent, ctx)?;
    let resolved = folder.resolved.join(&name);
    let alternative = folder.alternative.as_ref().map(|a| a.join(&name));
    let root = root_of(ctx.roots, &resolved, alternative.as_deref());
    Ok(ResolvedPath {
        given: given.to_owned(),
        absolute: normalize(&raw),
        resolved,
        alternative,
        root,
    })
}

/// The root a resolved path is inside, in both its readings.
fn root_of(roots: &[PathBuf], resolved: &Path, alternative: Option<&Path>) -> Option<PathBuf> {
    roots
        .iter()
        .find(|root| resolved.starts_with(root) && alternative.is_none_or(|a| a.starts_with(root)))
        .cloned()
}

/// Resolves a path through the filesystem and finds the root it is inside.
pub(crate) fn resolve(given: &str, ctx: &PathContext<'_>) -> Result<ResolvedPath, PathProblem> {
    let raw = raw_absolute(given, ctx.cwd, ctx.home)?;
    let absolute = normalize(&raw);
    let (resolved, alternative) = if is_per_process(&absolute) {
        // `/proc/self/cwd`, `/dev/fd/3`: what they lead to depends on the process that opens
        // them, not on the one evaluating the call. Read as written, never followed, so never
        // inside a root; but a process's root and folder are, for the commands an agent runs,
        // `/` and the folder it runs in, and deny rules see the path there too
        // (`/proc/self/root/home/me/.ssh/id_ed25519` is `~/.ssh/id_ed25519`).
        // The walk follows links as the kernel would for the agent's command, each before the
        // `..` after it (`/proc/self/root/var/run/../home` is `/home`, `/var/run` being a link).
        let alternative = if through_process_links(&raw) {
            Some(walk(&raw, ctx.cwd)?.0)
        } else {
            None
        };
        (absolute.clone(), alternative)
    } else if has_parent_dir(&raw) {
        let kernel = walk(&raw, ctx.cwd)?.0;
        let lexical = resolve_existing_prefix(&absolute)?;
        let alternative = (lexical != kernel).then_some(lexical);
        (kernel, alternative)
    } else {
        // A link on the way whose target goes through `/proc/self/cwd` leads, for the agent's
        // command, into the agent's folder, not this process's: walked again as the agent
        // (also when, for this process, the link dangles).
        match resolve_existing_prefix(&absolute) {
            Ok(resolved) if resolved == absolute => (resolved, None),
            here => match (walk(&raw, ctx.cwd), here) {
                (Ok((agent, true)), Ok(resolved)) => {
                    let alternative = (agent != resolved).then_some(agent);
                    (resolved, alternative)
                }
                (Ok((agent, true)), Err(_)) => (agent, None),
                (_, here) => (here?, None),
            },
        }
    };
    let root = root_of(ctx.roots, &resolved, alternative.as_deref());
    Ok(ResolvedPath {
        given: given.to_owned(),
        absolute,
        resolved,
        alternative,
        root,
    })
}

/// Whether a path goes through `/proc/PID/root` or `/proc/PID/cwd` (also `self`,
/// `thread-self` and `task/TID/`) as written.
fn through_process_links(raw: &Path) -> bool {
    let mut out = PathBuf::from("/");
    for component in raw.components() {
        match component {
            Component::Normal(name) => {
                out.push(name);
                if process_link(&out).is_some() {
                    return true;
                }
            }
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    false
}

/// `root` or `cwd` when `path` is `/proc/{self,thread-self,PID}[/task/TID]/{root,cwd}`.
fn process_link(path: &Path) -> Option<&str> {
    let names: Vec<&str> = path
        .strip_prefix("/proc")
        .ok()?
        .components()
        .map(|c| c.as_os_str().to_str().unwrap_or_default())
        .collect();
    let number = |n: &str| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
    let link = match names.as_slice() {
        [process, link] if *process == "self" || *process == "thread-self" || number(process) => {
            *link
        }
        [process, "task", thread, link]
            if (*process == "self" || number(process)) && number(thread) =>
        {
            *link
        }
        _ => return None,
    };
    matches!(link, "root" | "cwd").then_some(link)
}

/// Paths whose links lead somewhere that depends on the process opening them: everything
/// under `/proc` (`/proc/self/cwd`, `/proc/1234/root`), `/dev/fd` and the standard streams.
fn is_per_process(path: &Path) -> bool {
    [
        "/proc",
        "/dev/fd",
        "/dev/stdin",
        "/dev/stdout",
        "/dev/stderr",
    ]
    .iter()
    .any(|prefix| path.starts_with(prefix))
}

/// Resolves an absolute path with no `..`: `realpath` when it exists, else its first existing
/// ancestor resolved and the rest appended.
pub(crate) fn resolve_existing_prefix(path: &Path) -> Result<PathBuf, PathProblem> {
    match std::fs::canonicalize(path) {
        Ok(resolved) => return Ok(resolved),
        Err(e) if is_loop(&e) => return Err(PathProblem::Loop(path.to_path_buf())),
        Err(e) if is_missing(&e) => {}
        Err(e) => return Err(PathProblem::Unresolvable(e.to_string())),
    }
    let mut rest = Vec::new();
    let mut ancestor = path.to_path_buf();
    loop {
        match std::fs::symlink_metadata(&ancestor) {
            Ok(meta) => {
                if meta.file_type().is_symlink() {
                    // It exists as a link, but realpath of the whole failed: either the link
                    // dangles or something below it is missing.
                    match std::fs::canonicalize(&ancestor) {
                        Ok(resolved) => return Ok(append(resolved, &rest)),
                        Err(e) if is_loop(&e) => return Err(PathProblem::Loop(ancestor)),
                        Err(_) => return Err(PathProblem::Dangling(ancestor)),
                    }
                }
                return match std::fs::canonicalize(&ancestor) {
                    Ok(resolved) => Ok(append(resolved, &rest)),
                    Err(e) if is_loop(&e) => Err(PathProblem::Loop(ancestor)),
                    Err(e) => Err(PathProblem::Unresolvable(e.to_string())),
                };
            }
            Err(e) if is_missing(&e) => {}
            Err(e) => return Err(PathProblem::Unresolvable(e.to_string())),
        }
        let Some(name) = ancestor.file_name().map(|n| n.to_os_string()) else {
            return Ok(append(PathBuf::from("/"), &rest));
        };
        rest.push(name);
        if !ancestor.pop() {
            return Ok(append(PathBuf::from("/"), &rest));
        }
    }
}

fn append(mut base: PathBuf, reversed: &[std::ffi::OsString]) -> PathBuf {
    for name in reversed.iter().rev() {
        base.push(name);
    }
    base
}

fn is_missing(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

fn is_loop(e: &io::Error) -> bool {
    e.raw_os_error() == Some(ELOOP)
}

/// Resolves a path component by component as the kernel does: each symlink is followed before
/// the next `..` applies. Once a component is missing the rest is applied as text (that is what
/// `mkdir -p` would create).
///
/// `/proc/PID/root` and `/proc/PID/cwd` (also `self`, `thread-self`, `task/TID/`), met on the
/// way as written or in a link's target, lead where they lead for the agent's command: `/` and
/// `cwd`. The flag says whether one was met.
fn walk(path: &Path, cwd: &Path) -> Result<(PathBuf, bool), PathProblem> {
    let mut pending: Vec<(std::ffi::OsString, bool)> = Vec::new();
    push_components(&mut pending, path, false);
    let mut resolved = PathBuf::from("/");
    let mut missing = false;
    let mut through_process = false;
    let mut hops = 0u32;
    while let Some((name, from_link)) = pending.pop() {
        if name == ".." {
            resolved.pop();
            continue;
        }
        let candidate = resolved.join(&name);
        if let Some(link) = process_link(&candidate) {
            hops += 1;
            if hops > MAX_SYMLINKS {
                return Err(PathProblem::Loop(candidate));
            }
            through_process = true;
            resolved = PathBuf::from("/");
            missing = false;
            if link == "cwd" {
                push_components(&mut pending, cwd, from_link);
            }
            continue;
        }
        if missing {
            resolved.push(&name);
            continue;
        }
        match std::fs::symlink_metadata(&candidate) {
            Ok(meta) if meta.file_type().is_symlink() => {
                hops += 1;
                if hops > MAX_SYMLINKS {
                    return Err(PathProblem::Loop(candidate));
                }
                let target = std::fs::read_link(&candidate)
                    .map_err(|e| PathProblem::Unresolvable(e.to_string()))?;
                if target.is_absolute() {
                    resolved = PathBuf::from("/");
                }
                push_components(&mut pending, &target, true);
            }
            Ok(_) => resolved = candidate,
            Err(e) if is_missing(&e) => {
                if from_link {
                    return Err(PathProblem::Dangling(candidate));
                }
                missing = true;
                resolved = candidate;
            }
            Err(e) => return Err(PathProblem::Unresolvable(e.to_string())),
        }
    }
    Ok((resolved, through_process))
}

/// Pushes a path's components onto a stack so they pop in order.
fn push_components(stack: &mut Vec<(std::ffi::OsString, bool)>, path: &Path, from_link: bool) {
    let names: Vec<std::ffi::OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some("..".into()),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect();
    stack.extend(names.into_iter().rev().map(|n| (n, from_link)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    struct Ws {
        _dir: tempfile::TempDir,
        root: PathBuf,
        outside: PathBuf,
    }

    fn ws() -> Ws {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let root = base.join("ws");
        let outside = base.join("outside");
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("src/a.rs"), "").unwrap();
        std::fs::write(outside.join("secret"), "").unwrap();
        std::fs::create_dir_all(base.join("ws-evil")).unwrap();
        Ws {
            _dir: dir,
            root,
            outside,
        }
    }

    fn check(ws: &Ws, given: &str) -> Result<ResolvedPath, PathProblem> {
        let roots = vec![ws.root.clone()];
        let home = ws.root.join("src");
        resolve(
            given,
            &PathContext {
                roots: &roots,
                cwd: &ws.root,
                home: Some(&home),
            },
        )
    }

    fn inside(ws: &Ws, given: &str) -> bool {
        check(ws, given).is_ok_and(|r| r.root.is_some())
    }

    #[test]
    fn plain_paths() {
        let w = ws();
        assert!(inside(&w, "src/a.rs"));
        assert!(inside(&w, "./src//a.rs"));
        assert!(
            inside(&w, "src/new/file.txt"),
            "missing paths resolve through their ancestor"
        );
        assert!(inside(&w, &w.root.display().to_string()), "the root itself");
        assert!(inside(&w, "src/deep/"), "trailing slash");
        assert!(inside(&w, "  src/a.rs  "), "trimmed");
        assert!(!inside(&w, "/etc/passwd"));
        assert!(!inside(&w, "../outside/secret"));
        assert!(
            !inside(&w, &format!("{}-evil/x", w.root.display())),
            "prefix boundary"
        );
        assert!(!inside(&w, "src/../../outside/secret"));
        assert!(
            !inside(&w, "src/missing/../../../outside/x"),
            "`..` through a missing folder"
        );
    }

    #[test]
    fn invalid_and_foreign_paths() {
        let w = ws();
        assert_eq!(check(&w, ""), Err(PathProblem::Empty));
        assert_eq!(check(&w, "   "), Err(PathProblem::Empty));
        assert_eq!(check(&w, "src/a\0.rs"), Err(PathProblem::Nul));
        assert!(matches!(
            check(&w, "C:\\Windows\\win.ini"),
            Err(PathProblem::Foreign(_))
        ));
        assert!(matches!(
            check(&w, "\\\\server\\share\\x"),
            Err(PathProblem::Foreign(_))
        ));
        assert!(
            !inside(&w, "..\\outside\\secret"),
            "backslashes are separators"
        );
        assert!(matches!(check(&w, "~root/.ssh"), Err(PathProblem::Home)));
        assert!(inside(&w, "~/a.rs"), "the test's home is inside");
    }

    #[test]
    fn file_urls_are_paths() {
        let w = ws();
        assert!(!inside(&w, "file:///etc/passwd"));
        assert!(inside(&w, &format!("file://{}/src/a.rs", w.root.display())));
        assert!(inside(
            &w,
            &format!("FILE://{}/src/%61.rs", w.root.display())
        ));
        assert!(!inside(
            &w,
            &format!("file://{}/src/%2e%2e/%2e%2e/outside", w.root.display())
        ));
        assert!(matches!(
            check(&w, "file://evil.example/etc/passwd"),
            Err(PathProblem::Foreign(_))
        ));
    }

    #[test]
    fn symlinks() {
        let w = ws();
        symlink(w.outside.join("secret"), w.root.join("link-out")).unwrap();
        symlink(w.root.join("src"), w.root.join("link-in")).unwrap();
        symlink(&w.outside, w.root.join("src/deep/up")).unwrap();
        symlink(w.root.join("nowhere"), w.root.join("dangling")).unwrap();
        symlink(w.root.join("loop2"), w.root.join("loop1")).unwrap();
        symlink(w.root.join("loop1"), w.root.join("loop2")).unwrap();
        assert!(!inside(&w, "link-out"));
        assert!(inside(&w, "link-in/a.rs"));
        assert!(!inside(&w, "src/deep/up/secret"));
        // `..` after a symlink climbs from the target, not from the link's folder.
        assert!(!inside(&w, "src/deep/up/../outside/secret"));
        assert!(matches!(
            check(&w, "dangling"),
            Err(PathProblem::Dangling(_))
        ));
        assert!(matches!(
            check(&w, "dangling/x"),
            Err(PathProblem::Dangling(_))
        ));
        assert!(matches!(check(&w, "loop1"), Err(PathProblem::Loop(_))));
        let r = check(&w, "link-in/a.rs").unwrap();
        assert_eq!(r.resolved, w.root.join("src/a.rs"));
        assert_eq!(r.absolute, w.root.join("link-in/a.rs"));
    }

    #[test]
    fn both_readings_of_dotdot_must_be_inside() {
        let w = ws();
        // link → ws/a/b/c: the kernel reading of link/../../.. is ws, the textual one is above ws.
        std::fs::create_dir_all(w.root.join("a/b/c")).unwrap();
        symlink(w.root.join("a/b/c"), w.root.join("link")).unwrap();
        let r = check(&w, "link/../../..").unwrap();
        assert_eq!(r.resolved, w.root.clone());
        assert_eq!(
            r.alternative.as_deref(),
            w.root.parent().and_then(Path::parent)
        );
        assert_eq!(r.root, None);
    }

    #[test]
    fn proc_and_dev_paths_are_outside() {
        let w = ws();
        assert!(!inside(&w, "/proc/self/root/etc/passwd"));
        assert!(!inside(&w, "/proc/self/cwd"));
        assert!(!inside(&w, "/dev/fd/0"));
    }

    /// `/proc/self/cwd` is the evaluating process's folder, which is not the agent's: even when
    /// it is the workspace, a path through it is not read as inside (nor as the folder's files).
    #[test]
    fn per_process_links_are_never_followed() {
        let w = ws();
        let here = std::env::current_dir().unwrap();
        let roots = [std::fs::canonicalize(&here).unwrap()];
        for given in [
            "/proc/self/cwd/Cargo.toml",
            "/proc/thread-self/cwd",
            &format!("/proc/{}/cwd/x", std::process::id()),
            "/dev/fd/3",
            "/dev/stdin",
            "/proc/self/cwd/../cwd/y",
        ] {
            let r = resolve_in(given, &roots, &here).unwrap();
            assert_eq!(r.resolved, r.absolute, "{given}");
            assert_eq!(r.root, None, "{given}");
        }
        assert!(!inside(&w, "/proc/self/cwd"));
    }

    /// A process's root and folder, for an agent's command, are `/` and the folder it runs
    /// in: deny rules see paths through them there, whatever comes in between.
    #[test]
    fn paths_through_a_process_root_or_folder_are_also_read_where_they_lead() {
        let cwd = Path::new("/work/app");
        for (given, leads) in [
            (
                "/proc/self/root/home/me/.ssh/id_rsa",
                "/home/me/.ssh/id_rsa",
            ),
            ("/proc/1/root/etc/shadow", "/etc/shadow"),
            ("/proc/thread-self/root/etc", "/etc"),
            ("/proc/self/task/12/root/x", "/x"),
            ("/proc/self/root/../home/me", "/home/me"),
            ("/proc/self/root/proc/self/root/home", "/home"),
            ("/proc/self/../self/root/etc", "/etc"),
            ("/proc/self/cwd/.env", "/work/app/.env"),
            ("/proc/self/cwd/../secrets", "/work/secrets"),
            (
                "/proc/self/root/proc/1/task/1/environ",
                "/proc/1/task/1/environ",
            ),
        ] {
            assert_eq!(
                walk(Path::new(given), cwd).unwrap(),
                (PathBuf::from(leads), true),
                "{given}"
            );
            assert!(through_process_links(Path::new(given)), "{given}");
        }
        // A link on the way is followed before the `..` after it, as the kernel does.
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(base.join("b/c")).unwrap();
        symlink(base.join("b/c"), base.join("a")).unwrap();
        let given = format!("/proc/self/root{}/a/../x", base.display());
        assert_eq!(
            walk(Path::new(&given), cwd).unwrap(),
            (base.join("b/x"), true)
        );
        // A link whose target goes through `/proc/self/cwd` leads into the agent's folder.
        symlink("/proc/self/cwd/../secrets", base.join("l")).unwrap();
        std::fs::create_dir_all(base.join("b/secrets")).unwrap();
        std::fs::create_dir_all(base.join("d/secrets")).unwrap();
        let agent = base.join("b/c");
        // For this process the link dangles: it is read where it leads for the agent.
        let r = resolve(
            base.join("l").to_str().unwrap(),
            &PathContext {
                roots: &[],
                cwd: &agent,
                home: None,
            },
        )
        .unwrap();
        assert_eq!(r.resolved, base.join("b/secrets"));
        // Where it leads for both, this process's reading is the path and the agent's the
        // alternative.
        symlink("/proc/self/cwd", base.join("here")).unwrap();
        let r = resolve(
            base.join("here/x").to_str().unwrap(),
            &PathContext {
                roots: &[],
                cwd: &agent,
                home: None,
            },
        )
        .unwrap();
        let own = std::fs::canonicalize(std::env::current_dir().unwrap()).unwrap();
        assert_eq!(r.resolved, own.join("x"));
        assert_eq!(r.alternative, Some(agent.join("x")));
        for given in [
            "/proc/self/environ",
            "/proc/self/fd/3",
            "/proc/self/rootx/a",
            "/proc/x/root/a",
            "/home/me",
        ] {
            assert!(!through_process_links(Path::new(given)), "{given}");
        }
        let w = ws();
        assert!(!inside(&w, "/proc/self/root/etc/passwd"));
        let given = format!("/proc/self/root{}/x", w.outside.display());
        let r = resolve_in(&given, std::slice::from_ref(&w.root), &w.root).unwrap();
        assert_eq!(r.alternative, Some(w.outside.join("x")));
        assert_eq!(r.root, None);
    }
}
