//! Archivers: what an archiver reads and writes depends on its mode (create, extract, list),
//! which its options select.

use super::super::{Reading, UseKind};
use crate::resource::shell::placed_in;

/// tar: in extract mode it reads the archive (`-f`) and writes into the last `-C` folder (they
/// add up: `-C .git -C hooks` is `.git/hooks`) or the one it runs in; in create mode it writes
/// the archive and reads its operands (relative to `-C`); otherwise it reads the archive.
pub(crate) fn tar(r: &mut Reading<'_>) {
    let mut folder: Option<String> = None;
    for dir in r.values("-C") {
        folder = Some(placed_in(folder.as_deref(), dir));
    }
    let archives: Vec<String> = r
        .values("-f")
        .into_iter()
        .filter(|a| *a != "-")
        .map(str::to_owned)
        .collect();
    let extract = r.modes.contains(&"x");
    let create = r.modes.contains(&"c");
    for archive in archives {
        let kind = if create && !extract {
            UseKind::Write
        } else {
            UseKind::Read
        };
        r.push(archive, kind, "`--file`'s value");
    }
    if extract {
        r.push(
            folder.clone().unwrap_or_else(|| ".".to_owned()),
            UseKind::Into,
            "the folder it unpacks into",
        );
    } else if create {
        let operands = r.operand_texts();
        for (i, file) in operands.into_iter().enumerate() {
            r.push(
                placed_in(folder.as_deref(), file),
                UseKind::Read,
                format!("file {}", i + 1),
            );
        }
    }
    // `--no-recursion` counts until a later `--recursion` turns it back.
    r.recursive = !r.has("--no-recursion") || r.has("--recursion");
}

/// zip: the archive (its first operand) is written; the other operands are read, and with
/// `-R` its patterns are matched from the folder it runs in down. It follows links unless
/// `-y`.
pub(crate) fn zip(r: &mut Reading<'_>) {
    if r.has("-R") {
        r.push(
            ".",
            UseKind::Read,
            "the folder `-R` matches its patterns in",
        );
    }
    if r.args.contains(&"-TT") {
        r.risk("`zip -TT` runs a program to test the archive");
    }
    r.follows = r.recursive && !r.has("--symlinks");
}

/// unzip: the archive is read; its members go into `-d`'s folder, or the one it runs in,
/// unless it only lists, tests or prints them.
pub(crate) fn unzip(r: &mut Reading<'_>) {
    r.recursive = true;
    let only_looks = ["-l", "-t", "-p", "-c", "-Z", "-v", "-z"]
        .iter()
        .any(|o| r.has(o));
    if !only_looks && r.values("-d").is_empty() {
        r.push(".", UseKind::Into, "the folder it unpacks into");
    }
}

/// 7-Zip: the first operand is its command (`a` adds, `x`/`e` extract, `l` lists, `t` tests,
/// `d`/`u`/`rn` change the archive), the second the archive.
pub(crate) fn seven_zip(r: &mut Reading<'_>) {
    r.uses.retain(|u| !u.origin.starts_with("operand"));
    let operands = r.operand_texts();
    let command = operands.first().copied().unwrap_or("");
    let mut rest = operands.into_iter().skip(1);
    let writes = matches!(command, "a" | "d" | "u" | "rn");
    if let Some(archive) = rest.next() {
        let kind = if writes {
            UseKind::Write
        } else {
            UseKind::Read
        };
        r.push(archive, kind, "the archive");
    }
    if matches!(command, "a" | "u") {
        for (i, file) in rest.enumerate() {
            r.push(file, UseKind::Read, format!("file {}", i + 1));
        }
    }
    if matches!(command, "x" | "e") && r.values("-o").is_empty() {
        r.push(".", UseKind::Into, "the folder it unpacks into");
    }
    r.recursive = true;
    r.follows = !r.has("--snl");
}

/// cpio: `-o` and `-p` read the names of what they take from their input; `-i` unpacks into
/// the folder it runs in (or `-D`'s); `-p` copies into its operand.
pub(crate) fn cpio(r: &mut Reading<'_>) {
    let archive = r.values("-F").first().map(|a| (*a).to_owned());
    if r.modes.contains(&"c") || r.modes.contains(&"p") {
        r.risk("`cpio` reads the names of the files it takes from a file or its input");
    }
    if r.modes.contains(&"p")
        && let Some((_, dir)) = r.operands.last()
    {
        let dir = (*dir).to_owned();
        r.push(dir, UseKind::Into, "the folder it copies into");
    }
    if r.modes.contains(&"x") {
        r.recursive = true;
        // Into the folder it runs in, or `-D`'s (the folder it works in).
        r.push(".", UseKind::Into, "the folder it unpacks into");
    }
    if let Some(archive) = archive {
        let kind = if r.modes.contains(&"c") {
            UseKind::Write
        } else {
            UseKind::Read
        };
        r.push(archive, kind, "`-F`'s value");
    }
}

/// gzip and its kin replace each file they are given, unless they write to their output
/// (`-c`) or only list or test.
pub(crate) fn compressor(r: &mut Reading<'_>) {
    if r.has("-c") || r.has("-l") || r.has("-t") {
        for u in &mut r.uses {
            if u.origin.starts_with("operand") && u.kind == UseKind::Write {
                u.kind = UseKind::Read;
            }
        }
    }
    if r.has("--recursive") {
        r.recursive = true;
    }
}
