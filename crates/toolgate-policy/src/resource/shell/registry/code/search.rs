//! Searchers: which operand is the pattern and which are files, whether they go into folders
//! (and skip hidden files there), and find's expressions.

use super::super::{Kind, Reading, UseKind};
use crate::resource::shell::FindingKind;

/// grep and its kin, ripgrep, ag, ack, ugrep: the pattern is the first operand unless one is
/// given by option (`-e`, `-f`) or none is needed (`rg --files`); the other operands are files
/// (or folders) read, and a recursive search that names none searches the folder it runs in.
pub(crate) fn grep(r: &mut Reading<'_>) {
    let always_recursive = matches!(r.name, "rg" | "ag" | "ack" | "ack-grep");
    if always_recursive {
        r.recursive = true;
    }
    // `-d recurse`, `--directories=rec`: any start of the keyword.
    if r.knows("--directories").is_some()
        && r.values("--directories")
            .iter()
            .any(|v| !v.is_empty() && "recurse".starts_with(v))
    {
        r.recursive = true;
    }
    let pattern_given = match r.name {
        "rg" => r.has("-e") || r.has("-f") || r.has("--files") || r.has("--type-list"),
        "ag" | "ack" | "ack-grep" => false,
        _ => r.has_if_known("-e") || r.has_if_known("-f"),
    };
    let mut operands = r.operand_texts().into_iter();
    if !pattern_given {
        operands.next();
    }
    let mut named = false;
    for (i, file) in operands.enumerate() {
        named = true;
        r.push(file, UseKind::Read, format!("file {}", i + 1));
    }
    if r.recursive && !named {
        r.push(".", UseKind::Read, "the folder it searches, named by none");
    }
    // ripgrep and ag skip hidden files and folders unless told not to.
    let hidden = match r.name {
        "rg" => r.has("--hidden") || r.has("-.") || r.values_given("--unrestricted") >= 2,
        "ag" => r.has("--hidden") || r.has("--unrestricted"),
        "ack" | "ack-grep" => true,
        _ => true,
    };
    r.skips_hidden = !hidden;
}

/// fd: the first operand is its pattern, the others the folders it searches (the one it runs
/// in when none); hidden files are skipped unless told not to.
pub(crate) fn fd(r: &mut Reading<'_>) {
    r.recursive = true;
    if !r.uses.iter().any(|u| u.kind == UseKind::Read) {
        r.push(".", UseKind::Read, "the folder it searches, named by none");
    }
    r.skips_hidden = !(r.has("--hidden") || r.has("--unrestricted"));
}

/// find: options (`-H`, `-L`, `-P`, `-D WHAT`, `-O3`), then the folders it starts from (the one
/// it runs in when none), then its expression. It lists names; it acts on what it finds only
/// with `-exec`, `-ok` (whose commands are read as commands of their own) and `-delete`, and
/// writes files with `-fprint`, `-fls`.
pub(crate) fn find(r: &mut Reading<'_>) {
    let args = r.args.clone();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        match *a {
            "-H" | "-P" => i += 1,
            "-L" => {
                r.follows = true;
                i += 1;
            }
            "-D" => i += 2,
            o if o.starts_with("-O") => i += 1,
            _ => break,
        }
    }
    let mut starts = 0;
    while let Some(a) = args
        .get(i)
        .filter(|a| !a.starts_with('-') && !matches!(**a, "(" | "!" | ")" | ","))
    {
        starts += 1;
        r.push(*a, UseKind::Read, format!("start folder {starts}"));
        i += 1;
    }
    if starts == 0 {
        r.push(
            ".",
            UseKind::Read,
            "the folder it starts from, named by none",
        );
    }
    let mut acts = false;
    while let Some(a) = args.get(i) {
        match *a {
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                acts = true;
                r.flag(
                    FindingKind::RiskyOption,
                    format!("`find {a}` runs a command for each file"),
                );
                let end = args
                    .iter()
                    .skip(i + 1)
                    .position(|w| matches!(*w, ";" | "+"))
                    .map_or(args.len(), |p| i + 1 + p);
                let spawned: Vec<String> = args
                    .get(i + 1..end)
                    .unwrap_or_default()
                    .iter()
                    .map(|w| (*w).to_owned())
                    .collect();
                if !spawned.is_empty() {
                    r.spawned.push(spawned);
                }
                i = end + 1;
                continue;
            }
            "-delete" | "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                acts |= *a == "-delete";
                r.flag(
                    FindingKind::RiskyOption,
                    format!("`find {a}` deletes or writes files"),
                );
            }
            "-follow" => r.follows = true,
            "-newer" | "-anewer" | "-cnewer" | "-samefile" => {
                if let Some(file) = args.get(i + 1) {
                    r.push(*file, UseKind::Read, format!("`{a}`'s value"));
                }
                i += 1;
            }
            o if o.starts_with("-newer") && o.len() == 8 => {
                if let Some(file) = args.get(i + 1) {
                    r.push(*file, UseKind::Read, format!("`{a}`'s value"));
                }
                i += 1;
            }
            "-files0-from" => r.flag(
                FindingKind::RiskyOption,
                "`find -files0-from` reads the folders it starts from from a file",
            ),
            _ => {}
        }
        i += 1;
    }
    // It reads names only, unless it acts on what it finds.
    r.recursive = acts;
    if !acts {
        r.follows = false;
    }
    if r.findings.is_empty() {
        r.kind_override = Some(Kind::Reads);
    }
}
