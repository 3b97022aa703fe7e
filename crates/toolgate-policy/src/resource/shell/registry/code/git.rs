//! git: its revisions (`REV:PATH` reads `PATH` as it was), pathspecs (`'*.rs'`, `:(glob)…`),
//! and the subcommands whose options decide whether they read or change (`branch`, `tag`,
//! `config`).

use super::super::{Kind, Reading, UseKind};

/// Long options of git that run code, write files or leave the repository, written out in
/// full: any unambiguous abbreviation of one (`--upload-pa`) is that option. Options a
/// subcommand's record lists are read with the record; these catch the rest.
const RISKY_LONG: &[&str] = &[
    "upload-pack",
    "receive-pack",
    "exec",
    "output",
    "ext-diff",
    "textconv",
    "open-files-in-pager",
    "config-env",
    "exec-path",
    "git-dir",
    "work-tree",
    "paginate",
];

/// Subcommands that run programs of their own choosing.
const RUNS_PROGRAMS: &[&str] = &[
    "difftool",
    "mergetool",
    "filter-branch",
    "filter-repo",
    "daemon",
    "instaweb",
    "hook",
    "upload-pack",
    "receive-pack",
    "shell",
    "remote-ext",
    "remote-fd",
    "http-backend",
    "p4",
    "svn",
    "cvsimport",
    "cvsserver",
    "archimport",
    "web--browse",
    "gui",
    "citool",
    "gitk",
    "imap-send",
    "quiltimport",
];

pub(crate) fn git(r: &mut Reading<'_>) {
    if r.values("--exec-path").iter().any(|v| !v.is_empty()) {
        r.risk("`git --exec-path=…` makes git run its programs from another folder");
    }
    let Some(sub) = r.sub_words.first().copied() else {
        return;
    };
    let after: Vec<&str> = r
        .sub_at
        .and_then(|i| r.args.get(i + 1..))
        .unwrap_or_default()
        .to_vec();
    // Options the record does not know that abbreviate one that runs code or writes.
    for option in r.unknown_options.clone() {
        let long = option
            .strip_prefix("--")
            .map(|l| l.split('=').next().unwrap_or(l));
        let risky = match long {
            Some(name) => {
                !name.is_empty()
                    && !name.starts_with("no-")
                    && RISKY_LONG.iter().any(|r| r.starts_with(name))
            }
            None => match sub {
                "clone" | "fetch" | "ls-remote" | "pull" | "archive" => option.starts_with("-u"),
                "grep" => option.starts_with("-O"),
                "rebase" => option.starts_with("-x"),
                "diff" | "log" | "show" | "format-patch" => option.starts_with("-o"),
                _ => false,
            },
        };
        if risky {
            r.risk(format!(
                "`git {sub} {option}` can make git run a program or write a file"
            ));
        }
    }
    if RUNS_PROGRAMS.contains(&sub) {
        r.risk(format!(
            "`git {sub}` can run programs or change git's configuration"
        ));
    }
    if sub.starts_with("credential") {
        r.risk(format!("`git {sub}` hands out stored credentials"));
    }
    r.recursive |= goes_into_folders(sub, &after, r);
    revisions_and_pathspecs(r, sub);
    match sub {
        "apply" | "am" => {
            let only_checks = after.iter().any(|a| {
                matches!(
                    *a,
                    "--check" | "--stat" | "--numstat" | "--summary" | "--show-current-patch"
                )
            });
            if !only_checks {
                r.risk(format!(
                    "`git {sub}` writes the files its patch names, which the command does not show"
                ));
            }
        }
        "branch" => {
            if branch_changes(&after) {
                r.risk(
                    "`git branch` with these options deletes, renames, copies or rewrites branches",
                );
            } else {
                r.kind_override = Some(Kind::Reads);
            }
        }
        "tag" => {
            let listing = r.has("-l")
                || r.operands.is_empty()
                || [
                    "--contains",
                    "--no-contains",
                    "--merged",
                    "--no-merged",
                    "--points-at",
                ]
                .iter()
                .any(|o| r.has(o));
            if listing && !r.has("-d") && !r.has("-a") {
                r.kind_override = Some(Kind::Reads);
            }
        }
        "config" if r.sub_words.len() == 1 => {
            const READS: &[&str] = &[
                "-l",
                "--get",
                "--get-all",
                "--get-regexp",
                "--get-urlmatch",
                "--list",
            ];
            const WRITES: &[&str] = &[
                "--unset",
                "--unset-all",
                "--add",
                "--replace-all",
                "--rename-section",
                "--remove-section",
                "-e",
            ];
            let reads = READS.iter().any(|o| r.has(o));
            let writes = WRITES.iter().any(|o| r.has(o)) || (!reads && r.operands.len() >= 2);
            if writes {
                r.risk("`git config` can run programs or change git's configuration");
            } else {
                r.kind_override = Some(Kind::Reads);
            }
        }
        "config"
            if r.sub_words
                .get(1)
                .is_some_and(|s| *s != "get" && *s != "list") =>
        {
            r.risk("`git config` can run programs or change git's configuration");
        }
        "clone" => {
            if let [(_, source)] = r.operands.as_slice() {
                let name = repository_name(source);
                r.push(name, UseKind::Write, "the folder `git clone` makes");
            }
        }
        "init" => {
            let dir = r.operands.first().map_or(".", |(_, d)| *d).to_owned();
            r.uses.retain(|u| !u.origin.starts_with("operand"));
            r.push(
                dir,
                UseKind::Write,
                "the folder `git init` makes a repository of",
            );
        }
        "submodule" if r.sub_words.get(1) == Some(&"add") => {
            if let [(_, source)] = r.operands.as_slice() {
                let name = repository_name(source);
                r.push(name, UseKind::Write, "the folder `git submodule add` makes");
            }
        }
        _ => {}
    }
}

/// What git's revisions and pathspecs name: `REV:PATH` (and `-L RANGE:PATH`) read `PATH` as it
/// was; a pathspec with a pattern (`'*.rs'`, `:(glob)src/**`) reads every file it matches,
/// which toolgate finds; magic it does not follow asks.
fn revisions_and_pathspecs(r: &mut Reading<'_>, sub: &str) {
    let mut reads: Vec<(String, String)> = Vec::new();
    let mut patterns: Vec<(String, String)> = Vec::new();
    let mut risky: Vec<String> = Vec::new();
    let mut uses = std::mem::take(&mut r.uses);
    uses.retain(|u| {
        if !u.origin.starts_with("operand") || !matches!(u.kind, UseKind::Read | UseKind::Write) {
            return true;
        }
        let text = u.text.as_str();
        if let Some((words, pattern)) = text.strip_prefix(":(").and_then(|m| m.split_once(')')) {
            let words: Vec<&str> = words.split(',').map(str::trim).collect();
            if words.contains(&"exclude") {
                return false;
            }
            if words
                .iter()
                .all(|w| matches!(*w, "glob" | "icase" | "top" | "literal"))
            {
                if words.contains(&"literal") {
                    reads.push((pattern.to_owned(), u.origin.clone()));
                } else {
                    patterns.push((pattern.to_owned(), u.origin.clone()));
                }
            } else {
                risky.push(text.to_owned());
            }
            return false;
        }
        if text.starts_with(":!") || text.starts_with(":^") {
            return false;
        }
        // A revision's path: every name after a colon (where the path starts depends on the
        // revision's syntax: `HEAD@{2000-01-01T00:00}:.env`).
        if text.contains(':') {
            reads.extend(after_colons(text).map(|p| (p.to_owned(), u.origin.clone())));
        }
        if text.contains(['*', '?', '[']) {
            patterns.push((text.trim_start_matches(":/").to_owned(), u.origin.clone()));
            return false;
        }
        true
    });
    r.uses = uses;
    for (text, origin) in reads {
        r.push(text, UseKind::Mentioned, origin);
    }
    // A pattern names files; only a command that reads what they hold reads them.
    if r.recursive {
        for (pattern, origin) in patterns {
            r.push(pattern, UseKind::Pathspec, origin);
        }
    }
    for value in r.values("-L") {
        let paths: Vec<String> = after_colons(value).map(str::to_owned).collect();
        for path in paths {
            r.push(path, UseKind::Mentioned, "`-L`'s value");
        }
    }
    for text in risky {
        r.risk(format!(
            "`git {sub}` is given the pathspec `{text}`, whose magic toolgate does not follow"
        ));
    }
}

/// Whether a git subcommand reads or changes what is inside the folders it names, whole:
/// the content of every file under a pathspec (`git diff --no-index a b`, `git log -p --
/// ~/.ssh`, `git grep key -- dir`, `git archive HEAD dir`, `git add dir`, `git checkout --
/// dir`).
fn goes_into_folders(sub: &str, after: &[&str], r: &Reading<'_>) -> bool {
    if matches!(sub, "log" | "whatchanged") {
        // `git log` shows messages (and names with `--stat`); a patch shows what files held.
        return [
            "-p",
            "-u",
            "--patch",
            "--patch-with-stat",
            "--patch-with-raw",
            "--cc",
            "--binary",
            "--full-diff",
            "-L",
            "-U",
            "--word-diff",
            "--color-words",
        ]
        .iter()
        .any(|o| r.has(o))
            || after.contains(&"-c");
    }
    matches!(
        sub,
        "diff"
            | "show"
            | "format-patch"
            | "grep"
            | "archive"
            | "add"
            | "rm"
            | "checkout"
            | "restore"
            | "stash"
            | "blame"
            | "annotate"
    )
}

/// Whether `git branch`'s options change branches rather than list them.
fn branch_changes(args: &[&str]) -> bool {
    const LONG: &[&str] = &[
        "delete",
        "move",
        "copy",
        "force",
        "set-upstream-to",
        "unset-upstream",
        "edit-description",
        "track",
    ];
    let changing_option = args.iter().take_while(|a| **a != "--").any(|a| {
        if let Some(long) = a.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or(long);
            !name.is_empty() && LONG.iter().any(|o| o.starts_with(name))
        } else if let Some(short) = a.strip_prefix('-') {
            short.chars().any(|c| "dDmMcCfut".contains(c))
        } else {
            false
        }
    });
    // A name given outside listing (`--list`, `-l`, or an option that lists: `--contains X`)
    // makes a branch (`git branch evil`).
    const LISTING: &[&str] = &[
        "list",
        "contains",
        "no-contains",
        "merged",
        "no-merged",
        "points-at",
    ];
    const VALUED: &[&str] = &[
        "contains",
        "no-contains",
        "merged",
        "no-merged",
        "points-at",
        "sort",
        "format",
        "abbrev",
    ];
    let mut listing = false;
    let mut names = false;
    let mut rest = args.iter();
    while let Some(a) = rest.next() {
        if let Some(long) = a.strip_prefix("--").filter(|l| !l.is_empty()) {
            listing |= LISTING.iter().any(|o| long_prefix_of(a, o, 3));
            if !long.contains('=') && VALUED.iter().any(|o| long_prefix_of(a, o, 3)) {
                rest.next();
            }
        } else if let Some(short) = a.strip_prefix('-').filter(|s| !s.is_empty() && *a != "--") {
            listing |= short.contains('l');
        } else if *a != "--" {
            names = true;
        }
    }
    changing_option || (names && !listing)
}

/// The folder `git clone URL` makes: the URL's last name without `.git`.
fn repository_name(source: &str) -> String {
    let trimmed = source.trim_end_matches('/');
    let name = trimmed.rsplit('/').next().unwrap_or(trimmed);
    let name = name.rsplit(':').next().unwrap_or(name);
    name.strip_suffix(".git").unwrap_or(name).to_owned()
}

/// Every non-empty name after a colon in `arg`: the files a git revision (`REV:PATH`) or line
/// range (`-L RANGE:PATH`) may name, whatever its syntax puts before them.
pub(crate) fn after_colons(arg: &str) -> impl Iterator<Item = &str> {
    arg.match_indices(':')
        .filter_map(move |(i, _)| arg.get(i + 1..))
        .filter(|path| !path.is_empty())
}

/// Whether `arg` is `--name` or an abbreviation of it at least `min` letters long.
fn long_prefix_of(arg: &str, name: &str, min: usize) -> bool {
    let Some(given) = arg.strip_prefix("--") else {
        return false;
    };
    let given = given.split('=').next().unwrap_or(given);
    given.len() >= min && name.starts_with(given)
}
