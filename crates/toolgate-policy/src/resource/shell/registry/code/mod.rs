//! Code for what a record cannot say as data: programs with a language of their own (sed, awk,
//! jq, find's expressions, git's revisions and pathspecs, SQLite's dot-commands), and programs
//! whose options or operands decide what the others are (tar's modes, a copy's destination, a
//! wrapper's command). Each function runs after the record has read the arguments, and asks the
//! record about options by name ([`Reading::has`], [`Reading::values`]), so the two cannot
//! disagree about them.

mod archives;
mod git;
mod jq;
mod net;
pub(crate) mod program_text;
mod search;
mod sed;

pub(crate) use archives::{compressor, cpio, seven_zip, tar, unzip, zip};
pub(crate) use git::{after_colons, git};
pub(crate) use jq::jq;
pub(crate) use net::{curl, file_url_path, httpie, rsync, wget};
pub(crate) use search::{fd, find, grep};
pub(crate) use sed::sed;

use super::{Kind, Reading, UseKind};
use crate::resource::shell::{FindingKind, placed_in};

/// A program that reads the folders it is given whole (`diff` compares what they hold).
pub(crate) fn recursive_always(r: &mut Reading<'_>) {
    r.recursive = true;
}

/// `shuf`: with `-e` or `-i` its operands are what it shuffles, not files.
pub(crate) fn shuf(r: &mut Reading<'_>) {
    if r.has("-e") || r.has("-i") {
        r.uses.retain(|u| !u.origin.starts_with("operand"));
    }
}

/// `hostname NAME` sets the machine's name.
pub(crate) fn hostname(r: &mut Reading<'_>) {
    if !r.operands.is_empty() {
        r.risk("`hostname NAME` sets the machine's name");
    }
}

/// `date`: an operand other than `+FORMAT` is a time to set the clock to.
pub(crate) fn date(r: &mut Reading<'_>) {
    for text in r.operand_texts() {
        if !text.starts_with('+') {
            r.risk(format!(
                "`date {text}` sets the system clock to the time it names"
            ));
        }
    }
}

/// `tree` gives each letter of a cluster that takes a value the next argument in turn
/// (`-Lo 2 FILE`): only `-o` written alone names its file as read here.
pub(crate) fn tree(r: &mut Reading<'_>) {
    let clusters: Vec<&str> = r
        .args
        .iter()
        .copied()
        .filter(|a| a.starts_with('-') && !a.starts_with("--") && *a != "-o" && a.contains('o'))
        .collect();
    for cluster in clusters {
        r.risk(format!(
            "`tree {cluster}` writes a file toolgate cannot name"
        ));
    }
}

/// Pagers run commands given at their prompt.
pub(crate) fn pager(r: &mut Reading<'_>) {
    let name = r.name;
    r.risk(format!("`{name}` is a pager, which can run commands"));
}

/// awk: its program is the first operand unless given by `-f`, `-E`, `-i` or `-l` (a file
/// toolgate does not read) or `-e`; one that can run commands or write files is not let
/// through. Operands after it are files, except `NAME=value` assignments.
pub(crate) fn awk(r: &mut Reading<'_>) {
    let from_file = ["-f", "-E", "-i", "-l"].iter().any(|o| r.has(o));
    let mut operands = r.operand_texts().into_iter();
    let program: Option<String> = if from_file {
        None
    } else {
        match r.values("-e").first() {
            Some(text) => Some((*text).to_owned()),
            None => operands.next().map(str::to_owned),
        }
    };
    let safe = program.as_deref().is_some_and(|text| {
        !["system", "|", ">", "getline", "ENVIRON", "close", "fflush"]
            .iter()
            .any(|s| text.contains(s))
    });
    if !safe {
        r.flag(
            FindingKind::ProgramText,
            "the awk program can run commands or write files",
        );
    }
    for (i, file) in operands.enumerate() {
        let assignment = file.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
        if !assignment {
            r.push(file, UseKind::Read, format!("file {}", i + 1));
        }
    }
}

/// cp, mv, install: with `-t DIR` every operand is a source; otherwise the last is the
/// destination. What lands in a destination folder is written too (`mv hooks .git` writes
/// `.git/hooks`). `cp -l`/`-s` link to their sources instead of copying them.
pub(crate) fn copy(r: &mut Reading<'_>) {
    let operands = r.operand_texts();
    let target = r.values("-t").last().map(|t| (*t).to_owned());
    r.uses.retain(|u| !u.origin.starts_with("operand"));
    let links = r.name == "cp" && (r.has("-l") || r.has("-s"));
    let (folder, sources): (Option<String>, Vec<&str>) = match (&target, operands.split_last()) {
        (Some(dir), _) => (Some(dir.clone()), operands.clone()),
        (None, Some((last, sources))) if !sources.is_empty() => {
            (Some((*last).to_owned()), sources.to_vec())
        }
        (None, _) => (None, operands.clone()),
    };
    for (i, source) in sources.iter().enumerate() {
        // What `mv` moves is gone from where it was: written there.
        let kind = if links {
            UseKind::Linked
        } else if r.name == "mv" {
            UseKind::Write
        } else {
            UseKind::Read
        };
        r.push(*source, kind, format!("source {}", i + 1));
    }
    if target.is_none()
        && let Some(dest) = &folder
    {
        r.push(dest.clone(), UseKind::Write, "the destination");
    }
    if let Some(folder) = folder {
        for source in &sources {
            let trimmed = source.trim_end_matches('/');
            let name = trimmed.rsplit('/').next().unwrap_or(trimmed);
            if !name.is_empty() && name != "." && name != ".." {
                r.push(
                    format!("{}/{name}", folder.trim_end_matches('/')),
                    UseKind::Unknown,
                    "what lands in the destination, should it be a folder",
                );
            }
        }
    }
    if r.name == "cp" && r.has("-s") {
        r.made_links = true;
    }
}

/// ln and link: the last operand (or `-t`'s folder) is the link written; the others are what
/// it leads to. A symbolic link's relative target is read from the folder the link is in.
pub(crate) fn link(r: &mut Reading<'_>) {
    let operands = r.operand_texts();
    let symbolic = r.name == "ln" && r.has("-s");
    let target = r.values_if_known("-t").last().map(|t| (*t).to_owned());
    r.uses.retain(|u| !u.origin.starts_with("operand"));
    let (name, targets): (Option<String>, Vec<&str>) = match (&target, operands.split_last()) {
        (Some(dir), _) => (Some(dir.clone()), operands.clone()),
        (None, Some((last, rest))) if !rest.is_empty() => (Some((*last).to_owned()), rest.to_vec()),
        (None, Some((only, _))) => (Some(".".to_owned()), vec![*only]),
        (None, None) => (None, Vec::new()),
    };
    if let Some(name) = &name {
        r.push(name.clone(), UseKind::Write, "the link it makes");
    }
    let folders: Vec<String> = match &name {
        Some(last) if symbolic => {
            let last = last.trim_end_matches('/');
            let parent = match last.rsplit_once('/') {
                Some(("", _)) => "/".to_owned(),
                Some((parent, _)) => parent.to_owned(),
                None => ".".to_owned(),
            };
            vec![parent, last.to_owned()]
        }
        _ => Vec::new(),
    };
    // A link made in a folder the last operand names lands inside it.
    if let Some(folder) = &name {
        for text in &targets {
            let trimmed = text.trim_end_matches('/');
            let base = trimmed.rsplit('/').next().unwrap_or(trimmed);
            if !base.is_empty() && base != "." && base != ".." {
                r.push(
                    format!("{}/{base}", folder.trim_end_matches('/')),
                    UseKind::Unknown,
                    "the link, should it land in that folder",
                );
            }
        }
    }
    for (i, text) in targets.into_iter().enumerate() {
        r.push(text, UseKind::Linked, format!("target {}", i + 1));
        if !text.starts_with('/') && !text.starts_with('~') {
            for folder in &folders {
                r.push(
                    format!("{folder}/{text}"),
                    UseKind::Linked,
                    format!("target {}", i + 1),
                );
            }
        }
    }
    r.made_links = symbolic;
}

/// chmod, chown, chgrp: the first operand is the mode or owner, unless `--reference` gives it.
pub(crate) fn mode_operand(r: &mut Reading<'_>) {
    if r.has("--reference")
        && let Some((_, first)) = r.operands.first()
    {
        let first = (*first).to_owned();
        r.push(first, UseKind::Write, "operand 1");
    }
}

/// dd: `if=FILE` is read, `of=FILE` written.
pub(crate) fn dd(r: &mut Reading<'_>) {
    for text in r.operand_texts() {
        if let Some(file) = text.strip_prefix("if=") {
            r.push(file, UseKind::Read, "`if=`");
        } else if let Some(file) = text.strip_prefix("of=") {
            r.push(file, UseKind::Write, "`of=`");
        }
    }
}

/// mktemp makes its file in `-p`'s folder, in the system's temporary folder (no template,
/// `-t`, `--tmpdir`), or where its template says.
pub(crate) fn mktemp(r: &mut Reading<'_>) {
    if !r.values("-p").is_empty() {
        return;
    }
    let template = r.operand_texts().first().map(|t| (*t).to_owned());
    let folder = match template {
        _ if r.has("-t") || r.has("--tmpdir") => "/tmp".to_owned(),
        None => "/tmp".to_owned(),
        Some(t) => match t.rsplit_once('/') {
            Some((dir, _)) if !dir.is_empty() => dir.to_owned(),
            Some(_) => "/".to_owned(),
            None => ".".to_owned(),
        },
    };
    r.push(folder, UseKind::Into, "the folder it makes its file in");
}

/// patch writes the files its diff names, which the command does not show.
pub(crate) fn patch(r: &mut Reading<'_>) {
    // `-d DIR` makes DIR the folder it works in (and relative paths relative to it).
    if r.has("-d") {
        r.push(".", UseKind::Into, "the folder it patches files in");
    }
    if !r.has("--dry-run") {
        r.risk("`patch` writes the files its diff names, which the command does not show");
    }
}

/// A program that can do more than its arguments show: an editor or a program that opens
/// files with others, a key store, a queue that runs commands later.
pub(crate) fn always_risky(r: &mut Reading<'_>) {
    let name = r.name;
    r.risk(format!(
        "`{name}` can run programs or use keys in ways its arguments do not show"
    ));
}

/// gh: `gh auth token` prints the token it signs in with.
pub(crate) fn gh(r: &mut Reading<'_>) {
    if r.sub_words.first() == Some(&"auth") && r.sub_words.get(1) == Some(&"token") {
        r.risk("`gh auth token` prints the token it signs in with");
    }
}

/// env: `NAME=value` words before the command are its environment.
pub(crate) fn env(r: &mut Reading<'_>) {
    let mut at = r.runs;
    while let Some(i) = at {
        let Some(word) = r.args.get(i).copied() else {
            at = None;
            break;
        };
        let Some((name, value)) = word.split_once('=') else {
            break;
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            break;
        }
        let mut findings = Vec::new();
        crate::resource::shell::programs::check_assignment(name, Some(value), &mut findings);
        r.findings.extend(findings);
        at = (i + 1 < r.args.len()).then_some(i + 1);
    }
    r.runs = at;
    if r.runs.is_none() && r.script.is_none() {
        // Without a command, env prints the environment.
        r.kind_override = Some(Kind::Reads);
        r.risk(DUMPS_THE_ENVIRONMENT);
    }
}

const DUMPS_THE_ENVIRONMENT: &str =
    "prints every environment variable, the credentials among them (API keys, tokens)";

/// The shell's builtins that assign variables by name (`read`, `mapfile`, `getopts`), make a
/// name run another program (`hash -p`), or print every variable (`set`, `export -p`,
/// `declare -p` alone).
pub(crate) fn shell_builtin(r: &mut Reading<'_>) {
    let operands: Vec<&str> = r.operand_texts();
    let assigned: Vec<&str> = match r.name {
        "read" => operands.clone(),
        "mapfile" | "readarray" => operands.last().copied().into_iter().collect(),
        "getopts" => operands.get(1).copied().into_iter().collect(),
        _ => Vec::new(),
    };
    let mut findings = Vec::new();
    for name in assigned.into_iter().chain(r.values_if_known("-a")) {
        crate::resource::shell::programs::check_assignment(name, None, &mut findings);
    }
    r.findings.extend(findings);
    if r.name == "hash" && r.has_if_known("-p") {
        r.risk("`hash -p` makes a name run the program it gives");
    }
    let prints_all = match r.name {
        "set" => r.args.is_empty(),
        "export" | "declare" | "typeset" | "readonly" | "local" => {
            operands.is_empty()
                && r.given
                    .iter()
                    .all(|g| matches!(g.name.to_string().as_str(), "-p" | "-x" | "-r" | "-g"))
        }
        _ => false,
    };
    if prints_all {
        r.risk(format!(
            "`{}` {DUMPS_THE_ENVIRONMENT}",
            r.args
                .iter()
                .fold(r.name.to_owned(), |a, w| format!("{a} {w}"))
        ));
    }
}

/// `source FILE` (`. FILE`): a file named without a `/` is looked up in `$PATH` first.
pub(crate) fn source(r: &mut Reading<'_>) {
    match r.operand_texts().first() {
        Some(file) if file.contains('/') => {}
        Some(file) => r.risk(format!(
            "`{} {file}` runs the first `{file}` in `$PATH`, which toolgate does not look up",
            r.name
        )),
        None => r.risk(format!("`{}` without a file", r.name)),
    }
}

/// apply_patch: the files its patch adds, updates, deletes or moves are written.
pub(crate) fn apply_patch(r: &mut Reading<'_>) {
    let Some(text) = r.operand_texts().first().copied() else {
        return r
            .risk("`apply_patch` reads its patch from its input, which toolgate does not read");
    };
    match crate::resource::patch::read(text) {
        Ok(patch) => {
            for (op, file) in patch.files {
                r.push(
                    file.clone(),
                    UseKind::Write,
                    format!("the file the patch {}", op.describe()),
                );
            }
        }
        Err(why) => r.risk(format!("`apply_patch`: {why}")),
    }
}

/// printenv: with no name it prints every variable; a name that looks like a credential's
/// (`GITHUB_TOKEN`) prints that credential.
pub(crate) fn printenv(r: &mut Reading<'_>) {
    let names: Vec<&str> = r.operand_texts();
    if names.is_empty() {
        return r.risk(format!("`printenv` {DUMPS_THE_ENVIRONMENT}"));
    }
    for name in names {
        if crate::resource::shell::looks_secret(name) {
            r.risk(format!(
                "`printenv {name}` prints what looks like a credential"
            ));
        }
    }
}

/// printf: `-v NAME` assigns the variable instead of printing (`printf -v HOME …` moves `~`).
pub(crate) fn printf(r: &mut Reading<'_>) {
    for name in r.values("-v") {
        let mut findings = Vec::new();
        crate::resource::shell::programs::check_assignment(name, None, &mut findings);
        r.findings.extend(findings);
    }
}

/// `ionice -p`, `prlimit --pid`, `taskset -p`, `chrt -p` act on a running process and run
/// nothing.
pub(crate) fn on_a_process(r: &mut Reading<'_>) {
    let acts = match r.name {
        "ionice" => r.has("-p") || r.has("-P") || r.has("-u"),
        "prlimit" => r.has("-p"),
        _ => r.has("-p"),
    };
    if acts {
        r.runs = None;
    }
}

/// `command -v NAME` and `-V` say what a name is; they run nothing.
pub(crate) fn command_builtin(r: &mut Reading<'_>) {
    if r.has("-v") || r.has("-V") {
        r.runs = None;
        r.kind_override = Some(Kind::Reads);
    }
}

/// sudo, doas, su, chroot: the command runs with other permissions.
pub(crate) fn elevated(r: &mut Reading<'_>) {
    let name = r.name;
    let how = match name {
        "su" => "as another user",
        _ => "with elevated permissions",
    };
    r.flag(
        FindingKind::Elevated,
        format!("`{name}` runs a command {how}"),
    );
}

/// xargs runs its command with arguments read from its input.
pub(crate) fn xargs(r: &mut Reading<'_>) {
    r.risk("`xargs` runs a command with arguments read from its input");
}

/// watch hands its words, joined by spaces, to `sh -c`; with `-x` it runs them as they are.
pub(crate) fn watch(r: &mut Reading<'_>) {
    if r.has("-x") {
        r.runs = r.operands.first().map(|(i, _)| *i);
    } else if !r.operands.is_empty() {
        r.script = Some(r.operand_texts().join(" "));
    }
}

/// runuser: `-u USER` runs the command after its options; otherwise its first operand is the
/// user and `-c` gives the command line.
pub(crate) fn runuser(r: &mut Reading<'_>) {
    elevated(r);
    if !r.has("-u") {
        r.runs = None;
    }
}

/// chroot runs its command with another root folder.
pub(crate) fn chroot(r: &mut Reading<'_>) {
    r.flag(
        FindingKind::Elevated,
        "`chroot` runs a command with another root folder",
    );
}

/// script runs `-c`'s command line, or else a shell that reads its input; it writes its log to
/// its operand, or `typescript`.
pub(crate) fn script(r: &mut Reading<'_>) {
    if r.script.is_none() {
        r.risk("`script` starts a shell that reads commands from its input");
    }
    if r.operands.is_empty() {
        r.push("typescript", UseKind::Write, "the log it writes");
    }
}

/// tmux: new sessions, windows and panes run the shell command given at their end; other
/// subcommands type into a shell or run tmux commands.
pub(crate) fn tmux(r: &mut Reading<'_>) {
    let Some(sub) = r.sub_words.first().copied() else {
        r.risk("`tmux` starts a shell that reads commands from its input");
        return;
    };
    match sub {
        "new-session" | "new-window" | "split-window" | "respawn-pane" | "respawn-window"
        | "run-shell" | "pipe-pane" | "display-popup" => {
            if r.operands.is_empty() {
                r.risk(format!(
                    "`tmux {sub}` starts a shell that reads commands from its input"
                ));
            } else {
                r.script = Some(r.operand_texts().join(" "));
            }
        }
        "send-keys" | "source-file" | "if-shell" | "load-buffer" | "command-prompt"
        | "bind-key" | "set-hook" | "set-option" => {
            r.risk(format!(
                "`tmux {sub}` types or runs commands in another shell"
            ));
        }
        _ => {}
    }
}

/// at, batch, crontab: run commands later, read from their input or a file.
pub(crate) fn reads_commands(r: &mut Reading<'_>) {
    let name = r.name;
    r.flag(
        FindingKind::Eval,
        format!("`{name}` runs commands it reads from its input or a file, later"),
    );
}

/// sg: runs `-c`'s command line, or its words after the group, as another group.
pub(crate) fn sg(r: &mut Reading<'_>) {
    r.flag(
        FindingKind::Elevated,
        "`sg` runs a command as another group",
    );
    let words: Vec<&str> = r.operand_texts().into_iter().skip(1).collect();
    if !words.is_empty() {
        r.script = Some(words.join(" "));
    }
}

/// An interpreter runs a script file (its first operand), program text given by option, a
/// module (`python -m`), or what it reads from its input.
pub(crate) fn interpreter(r: &mut Reading<'_>) {
    let given_code = r
        .findings
        .iter()
        .any(|f| f.kind == FindingKind::ProgramText);
    see_through_program_text(r);
    let queries = r
        .args
        .iter()
        .take_while(|a| a.starts_with('-'))
        .any(|a| matches!(*a, "--version" | "-V" | "--help" | "-h" | "-v" | "-version"));
    let has_code = given_code;
    let interactive = r
        .args
        .iter()
        .take_while(|a| a.starts_with('-'))
        .any(|a| *a == "-i");
    let reads_input = r.operands.first().is_some_and(|(_, s)| *s == "-")
        || (r.operands.is_empty()
            && r.runs.is_none()
            && r.script.is_none()
            && !has_code
            && !queries)
        || interactive;
    if reads_input {
        let name = r.name;
        r.flag(
            FindingKind::Eval,
            format!("`{name}` reads a program from its input"),
        );
    }
    if queries && r.operands.is_empty() && !has_code {
        r.kind_override = Some(Kind::Reads);
    }
}

/// Program text given by an option (`python -c`, `node -e`/`-p`, `tsx -e`): read by
/// [`program_text`]. Text it sees through is no finding, and the files it opens by name are
/// read; otherwise the finding says what the text reaches.
fn see_through_program_text(r: &mut Reading<'_>) {
    use super::{Role, Takes};
    let lang = match r.name {
        n if n.starts_with("python") || n == "pypy" || n == "pypy3" => program_text::Lang::Python,
        "node" | "nodejs" | "tsx" | "ts-node" | "bun" | "deno" => program_text::Lang::JavaScript,
        _ => return,
    };
    let texts: Vec<&str> = r
        .given
        .iter()
        .filter(|g| {
            matches!(
                g.opt.takes,
                Takes::Value(Role::Code) | Takes::Attached(Role::Code)
            )
        })
        .filter_map(|g| g.value)
        .collect();
    let [text] = texts.as_slice() else { return };
    let reading = program_text::read(text, lang);
    let name = r.name;
    match reading.risk {
        Some(why) => {
            for f in &mut r.findings {
                if f.kind == FindingKind::ProgramText {
                    f.detail = format!("`{name}` is given program text to run: {why}");
                }
            }
        }
        None => {
            r.findings.retain(|f| f.kind != FindingKind::ProgramText);
            for file in reading.reads {
                r.push(file, UseKind::Read, "a file its program text opens");
            }
        }
    }
}

/// A shell: `-c` runs its first operand as a command line; `-s`, or no operand, reads commands
/// from its input; otherwise it runs the script file its first operand names. Options it does
/// not know leave how it runs unknown.
pub(crate) fn shell(r: &mut Reading<'_>) {
    let name = r.name;
    if !r.unknown_options.is_empty() {
        r.flag(
            FindingKind::Unsupported,
            format!("options of `{name}` toolgate does not follow"),
        );
        return;
    }
    // `+o NAME` and `+O NAME` turn settings off, as `-o`/`-O` turn them on.
    let mut operands: Vec<(usize, &str)> = Vec::new();
    let mut skip = false;
    for (i, text) in r.operands.clone() {
        if skip {
            skip = false;
            continue;
        }
        if operands.is_empty() && text.starts_with('+') {
            skip = matches!(text, "+o" | "+O");
            continue;
        }
        operands.push((i, text));
    }
    if r.modes.contains(&"c") {
        match operands.first() {
            Some((_, line)) => r.script = Some((*line).to_owned()),
            None => r.flag(
                FindingKind::Unsupported,
                format!("`{name} -c` is given no command line"),
            ),
        }
        return;
    }
    if r.has("-s") || operands.is_empty() || operands.first().is_some_and(|(_, f)| *f == "-") {
        r.flag(
            FindingKind::Eval,
            format!("`{name}` reads commands from its input"),
        );
        return;
    }
    if let Some((_, file)) = operands.first() {
        let file = (*file).to_owned();
        r.push(file, UseKind::Read, "the script it runs");
    }
}

/// pytest: `-p NAME` loads a plugin (`-p no:NAME` turns one off); `-o` can set options that
/// load plugins or write elsewhere. Its operands are paths, perhaps with `::test` after them.
pub(crate) fn pytest(r: &mut Reading<'_>) {
    for plugin in r.values("-p") {
        if !plugin.starts_with("no:") {
            r.risk(format!(
                "`pytest -p {plugin}` loads a plugin, which runs code toolgate does not read"
            ));
        }
    }
    for setting in r.values("--override-ini") {
        let key = setting.split('=').next().unwrap_or(setting).trim();
        if matches!(
            key,
            "addopts"
                | "cache_dir"
                | "required_plugins"
                | "pythonpath"
                | "confcutdir"
                | "tmp_path_retention_policy"
        ) {
            r.risk(format!(
                "`pytest -o {setting}` sets an option that loads plugins or writes elsewhere"
            ));
        }
    }
    for u in &mut r.uses {
        if u.origin.starts_with("operand")
            && let Some((path, _)) = u.text.split_once("::")
        {
            u.text = path.to_owned();
        }
    }
}

/// pre-commit: `install` writes git's hook (`.git/hooks/pre-commit`, or `-t`'s kinds).
pub(crate) fn pre_commit(r: &mut Reading<'_>) {
    if matches!(r.sub_words.first(), Some(&("install" | "uninstall"))) {
        let kinds = r.values("-t");
        let kinds = if kinds.is_empty() {
            vec!["pre-commit"]
        } else {
            kinds
        };
        let hooks: Vec<String> = kinds
            .into_iter()
            .map(|k| format!(".git/hooks/{k}"))
            .collect();
        for hook in hooks {
            r.push(hook, UseKind::Write, "the git hook it installs");
        }
    }
}

/// pnpm, yarn and bun run a package script named as if it were a subcommand (`pnpm lint`);
/// bun also runs a file so named (`bun x.ts`).
pub(crate) fn package_script(r: &mut Reading<'_>) {
    if let Some(word) = r.unknown_sub.take() {
        if r.name == "bun" && (word.contains('.') || word.contains('/')) {
            r.push(word, UseKind::Read, "the file it runs");
        }
        r.sub_words.push("run");
    }
}

/// gofmt and goimports go into the folders they are given; with `-w` they rewrite the files.
pub(crate) fn gofmt(r: &mut Reading<'_>) {
    r.recursive = true;
    if r.has("-w") {
        for u in &mut r.uses {
            if u.kind == UseKind::Read {
                u.kind = UseKind::Write;
            }
        }
    }
}

/// java: an agent given by option (`-javaagent:x.jar`) runs code of its own.
pub(crate) fn java(r: &mut Reading<'_>) {
    let agents: Vec<&str> = r
        .args
        .iter()
        .copied()
        .filter(|a| {
            [
                "-javaagent:",
                "-agentlib:",
                "-agentpath:",
                "-XX:OnOutOfMemoryError",
                "-XX:OnError",
            ]
            .iter()
            .any(|p| a.starts_with(p))
        })
        .collect();
    for agent in agents {
        r.risk(format!("`java {agent}` runs code toolgate does not read"));
    }
}

/// Maven, Gradle and their kin: a goal or task that deploys or publishes publishes.
pub(crate) fn build_goals(r: &mut Reading<'_>) {
    let publishes = r.operand_texts().iter().any(|goal| {
        let goal = goal.rsplit(':').next().unwrap_or(goal);
        matches!(
            goal,
            "deploy" | "release" | "publish" | "perform" | "uploadArchives" | "deploy-file"
        ) || goal.starts_with("publish")
    });
    if publishes {
        r.acts.push("publish");
    }
}

/// make: `-f -` reads the makefile from its input; `SHELL=…` and `MAKEFLAGS=…` operands change
/// how recipes run.
pub(crate) fn make(r: &mut Reading<'_>) {
    if r.values("--file").contains(&"-") {
        r.uses.retain(|u| u.text != "-");
        r.flag(
            FindingKind::Eval,
            "`make -f -` reads its makefile from its input",
        );
    }
    for text in r.operand_texts() {
        let name = text
            .split_once('=')
            .map(|(n, _)| n.trim_end_matches([':', '+', '?']));
        if matches!(
            name,
            Some("SHELL" | ".SHELLFLAGS" | "MAKEFLAGS" | "MAKEFILES" | "MAKE")
        ) {
            r.risk(format!("`make {text}` changes how make runs its recipes"));
        } else if let Some((_, value)) = text.split_once('=')
            && value.contains(['/', '$', '`', ';', '|', '&'])
        {
            // `make test VENV=/tmp/other`: a variable given to make replaces the makefile's,
            // and a path or a command in it changes which programs the recipes run.
            r.risk(format!(
                "`make {text}` replaces a makefile variable with a path or a command, which changes what the recipes run"
            ));
        }
    }
    // A makefile from elsewhere than the folder make works in: its recipes are not the
    // project's (`make -f /tmp/x.mk`).
    for file in r.values("--file") {
        if file.starts_with('/') || file.starts_with('~') || file.starts_with("..") {
            r.risk(format!(
                "`make -f {file}` runs the recipes of a makefile outside the project"
            ));
        }
    }
}

/// SQLite's shell: its first operand is the database; the rest are SQL and dot-commands, some
/// of which run programs or write and read other files. With none, it reads them from its input.
pub(crate) fn sqlite(r: &mut Reading<'_>) {
    const DOT: &[&str] = &[
        ".shell",
        ".system",
        ".output",
        ".once",
        ".import",
        ".read",
        ".load",
        ".save",
        ".backup",
        ".restore",
        ".open",
        ".excel",
        ".log",
        ".cd",
        ".clone",
        ".archive",
        ".ar",
        ".dbinfo-x",
        ".trace",
    ];
    const SQL: &[&str] = &[
        "load_extension",
        "writefile",
        "readfile",
        "edit(",
        "attach",
        "vacuum into",
        "fts3_tokenizer",
    ];
    let texts: Vec<String> = r
        .operand_texts()
        .into_iter()
        .skip(1)
        .chain(r.values("--cmd"))
        .chain(r.values("--init"))
        .map(str::to_owned)
        .collect();
    if r.has("--readonly") {
        for u in &mut r.uses {
            if u.kind == UseKind::Write {
                u.kind = UseKind::Read;
            }
        }
    }
    r.uses.retain(|u| u.text != ":memory:");
    if texts.is_empty() && r.operands.len() <= 1 {
        r.flag(
            FindingKind::Eval,
            "`sqlite3` reads SQL and dot-commands from its input, which toolgate does not see",
        );
    }
    for text in texts {
        let lower = text.to_ascii_lowercase();
        let dot = text
            .split([';', '\n'])
            .map(str::trim)
            .any(|line| DOT.iter().any(|d| line.starts_with(d)));
        if dot || SQL.iter().any(|s| lower.contains(s)) {
            r.risk(format!(
                "`{text}` runs a program or reads or writes files other than the database"
            ));
        }
    }
}

/// Where a relative path given to a program lands when it works in `folder`.
#[allow(dead_code)]
fn placed(folder: Option<&str>, path: &str) -> String {
    placed_in(folder, path)
}
