//! Globs expanded against the file system, as the programs that expand them do: bash's
//! (`cat tests/*.py`) and the searchers' (`rg --glob '.env*'`, git's pathspecs, an agent's
//! grep tool), bounded in what they look through.

use std::path::{Path, PathBuf};

use globset::GlobBuilder;

/// How many folder entries one expansion looks through before toolgate stops.
pub(crate) const MAX_ENTRIES: usize = 50_000;

/// What an expansion found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Expansion {
    /// The names it stands for, written as bash writes them (relative when the pattern is).
    Matches(Vec<String>),
    /// Nothing matched: bash leaves the word as it is.
    Nothing,
    /// More than [`MAX_ENTRIES`] entries to look through, or a pattern that is not one.
    Unknown(String),
}

/// Folders a search of a project's files does not look in: git's own, and the ones tools fill
/// with what they fetch or build, which searchers skip (they are ignored by the project).
pub(crate) const UNSEARCHED_FOLDERS: &[&str] = &[
    ".git",
    "node_modules",
    "target",
    ".venv",
    "venv",
    "__pycache__",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".next",
    ".nuxt",
    ".turbo",
    ".gradle",
];

/// Whether a name has a glob character bash would expand.
pub(crate) fn has_glob(part: &str) -> bool {
    let mut escaped = false;
    for c in part.chars() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '*' | '?' | '[' => return true,
            _ => {}
        }
    }
    false
}

/// Expands `pattern` as bash does with `globstar` (`**` crosses folders): each `/`-separated
/// part with a glob character is matched against the names in the folders reached so far; a
/// name starting with `.` matches only a part that starts with `.`. `base` is the folder the
/// command runs in; `home` expands a leading `~/`.
pub(crate) fn expand_bash(pattern: &str, base: &Path, home: Option<&Path>) -> Expansion {
    let (root, shown_prefix, rest): (PathBuf, String, &str) =
        if let Some(rest) = pattern.strip_prefix("~/") {
            match home {
                Some(h) => (h.to_path_buf(), "~/".to_owned(), rest),
                None => return Expansion::Unknown("`~` cannot be expanded".into()),
            }
        } else if let Some(rest) = pattern.strip_prefix('/') {
            (PathBuf::from("/"), "/".to_owned(), rest)
        } else {
            (base.to_path_buf(), String::new(), pattern)
        };
    // (the folder on disk, the text bash prints for it)
    let mut current: Vec<(PathBuf, String)> = vec![(root, shown_prefix)];
    let mut seen = 0usize;
    let parts: Vec<&str> = rest.split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        if part.is_empty() {
            // `a//b` or a trailing `/`: folders only.
            for (_, shown) in &mut current {
                if !shown.ends_with('/') {
                    shown.push('/');
                }
            }
            continue;
        }
        let mut next = Vec::new();
        if !has_glob(part) {
            let literal = part.replace('\\', "");
            for (dir, shown) in current {
                let path = dir.join(&literal);
                if last || path.is_dir() {
                    next.push((path, joined(&shown, &literal)));
                }
            }
            current = next;
            if last {
                current.retain(|(p, _)| p.symlink_metadata().is_ok());
            }
            continue;
        }
        let globstar = *part == "**";
        let matcher = match GlobBuilder::new(part)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
        {
            Ok(g) => g.compile_matcher(),
            Err(e) => return Expansion::Unknown(format!("`{pattern}` is not a glob: {e}")),
        };
        let dotted = part.starts_with('.');
        for (dir, shown) in current {
            let mut stack = vec![(dir.clone(), shown.clone())];
            if globstar {
                // Zero folders, then every folder below, at any depth.
                next.push((dir.clone(), shown.clone()));
            }
            while let Some((folder, text)) = stack.pop() {
                let Ok(entries) = std::fs::read_dir(&folder) else {
                    continue;
                };
                for entry in entries.flatten() {
                    seen += 1;
                    if seen > MAX_ENTRIES {
                        return Expansion::Unknown(format!(
                            "`{pattern}` is matched against more than {MAX_ENTRIES} names"
                        ));
                    }
                    let name = entry.file_name();
                    let Some(name) = name.to_str() else { continue };
                    if name.starts_with('.') && !dotted {
                        continue;
                    }
                    let path = entry.path();
                    let is_dir = path.is_dir();
                    let shown = joined(&text, name);
                    if globstar {
                        if is_dir {
                            next.push((path.clone(), shown.clone()));
                            stack.push((path, shown));
                        } else if last {
                            next.push((path, shown));
                        }
                        continue;
                    }
                    if matcher.is_match(name) && (last || is_dir) {
                        next.push((path, shown));
                    }
                }
            }
        }
        current = next;
    }
    let mut names: Vec<String> = current
        .into_iter()
        .map(|(_, shown)| {
            if shown.ends_with('/') && !pattern.ends_with('/') {
                shown.trim_end_matches('/').to_owned()
            } else {
                shown
            }
        })
        .filter(|s| !s.is_empty())
        .collect();
    names.sort();
    names.dedup();
    if names.is_empty() {
        Expansion::Nothing
    } else {
        Expansion::Matches(names)
    }
}

/// A glob split where its first glob character's part starts: the folders written out before
/// it (`src/app` of `src/app/**/*.ts`, empty for `*.md`) and the rest.
pub(crate) fn literal_prefix(pattern: &str) -> (&str, &str) {
    let mut start = 0;
    for (i, c) in pattern.char_indices() {
        if c == '/' {
            let part = &pattern[start..i];
            if has_glob(part) {
                break;
            }
            start = i + 1;
        }
    }
    if !has_glob(&pattern[start..]) {
        return (pattern, "");
    }
    (pattern[..start].trim_end_matches('/'), &pattern[start..])
}

/// A name shown under the folder shown as `folder`.
fn joined(folder: &str, name: &str) -> String {
    if folder.is_empty() || folder.ends_with('/') {
        format!("{folder}{name}")
    } else {
        format!("{folder}/{name}")
    }
}

/// The files under `base` a searcher's glob matches, as ripgrep reads `--glob`: a glob with a
/// `/` (or `anchored`) against each file's path below `base`, one without against its name;
/// hidden files too; [`UNSEARCHED_FOLDERS`] skipped. With `crossing`, `*` crosses `/` (git's
/// pathspecs).
pub(crate) fn search(
    pattern: &str,
    base: &Path,
    crossing: bool,
    anchored: bool,
) -> Result<Vec<PathBuf>, String> {
    let by_name = !anchored && !pattern.contains('/');
    let matcher = GlobBuilder::new(pattern.trim_start_matches("./"))
        .literal_separator(!crossing)
        .backslash_escape(true)
        .build()
        .map_err(|e| format!("`{pattern}` is not a glob: {e}"))?
        .compile_matcher();
    let mut folders = vec![base.to_path_buf()];
    let mut seen = 0usize;
    let mut matched = Vec::new();
    while let Some(dir) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES {
                return Err(format!(
                    "`{pattern}` is matched against more than {MAX_ENTRIES} files, more than \
                     toolgate looks through"
                ));
            }
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => {
                    if !UNSEARCHED_FOLDERS.iter().any(|f| entry.file_name() == *f) {
                        folders.push(path);
                    }
                }
                Ok(_) => {
                    let hit = if by_name && !crossing {
                        matcher.is_match(entry.file_name())
                    } else {
                        path.strip_prefix(base).is_ok_and(|r| matcher.is_match(r))
                    };
                    if hit {
                        matched.push(path);
                    }
                }
                Err(_) => {}
            }
        }
    }
    matched.sort();
    Ok(matched)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn bash_globs_expand_as_bash_does() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path();
        for f in [
            "tests/test_a.py",
            "tests/test_b.py",
            "tests/sub/test_c.py",
            "a.md",
            "b.md",
            ".env",
            ".env.example",
            "src/x.rs",
        ] {
            let p = base.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        let m = |p: &str| expand_bash(p, base, None);
        let names = |v: &[&str]| Expansion::Matches(v.iter().map(|s| (*s).to_owned()).collect());
        assert_eq!(
            m("tests/*.py"),
            names(&["tests/test_a.py", "tests/test_b.py"])
        );
        assert_eq!(m("*.md"), names(&["a.md", "b.md"]));
        assert_eq!(m("*"), names(&["a.md", "b.md", "src", "tests"]));
        assert_eq!(m(".e*"), names(&[".env", ".env.example"]));
        assert_eq!(
            m("**/*.py"),
            names(&["tests/sub/test_c.py", "tests/test_a.py", "tests/test_b.py"])
        );
        assert_eq!(m("*/x.rs"), names(&["src/x.rs"]));
        assert_eq!(m("*.txt"), Expansion::Nothing);
        let abs = format!("{}/*.md", base.display());
        assert_eq!(
            m(&abs),
            names(&[
                &format!("{}/a.md", base.display()),
                &format!("{}/b.md", base.display())
            ])
        );
    }

    #[test]
    fn searches_match_names_or_paths_below_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path();
        for f in [
            ".env",
            "config/.env.local",
            "node_modules/x/.env",
            "src/a.rs",
        ] {
            let p = base.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        let found = search(".env*", base, false, false).unwrap();
        assert_eq!(
            found,
            vec![base.join(".env"), base.join("config/.env.local")]
        );
        assert_eq!(
            search("src/*.rs", base, false, false).unwrap(),
            vec![base.join("src/a.rs")]
        );
        assert_eq!(search("*env*", base, true, false).unwrap().len(), 2);
        assert_eq!(
            search("*env*", &base.join("config"), false, true)
                .unwrap()
                .len(),
            1
        );
        assert!(search("*.local", base, false, true).unwrap().is_empty());
    }

    #[test]
    fn a_glob_splits_at_its_first_pattern() {
        assert_eq!(literal_prefix("src/app/**/*.ts"), ("src/app", "**/*.ts"));
        assert_eq!(literal_prefix("*.md"), ("", "*.md"));
        assert_eq!(literal_prefix("/etc/*/x"), ("/etc", "*/x"));
        assert_eq!(literal_prefix("./.env*"), (".", ".env*"));
        assert_eq!(literal_prefix("README.md"), ("README.md", ""));
    }
}
