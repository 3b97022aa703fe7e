//! The shell's side of program knowledge: peeling the wrappers off a command (`sudo`, `env`,
//! `timeout`, `python -m`, …), reading the command that finally runs with its record, and the
//! environment variables that change what later programs do. What each program does lives in
//! the [registry](super::registry).

use super::registry::{self, Reading};
use super::{CommandReading, Finding, FindingKind, Word};

/// The basename of a program as written (`/usr/bin/git` → `git`).
pub(crate) fn basename(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

fn finding(kind: FindingKind, detail: impl Into<String>) -> Finding {
    Finding {
        kind,
        detail: detail.into(),
    }
}

/// Variables that change what later programs run or load, whatever the program: the shell's
/// own, the dynamic linker's, and whole families named by prefix or suffix. Program-specific
/// ones live in the programs' records ([`registry::Env`]).
fn is_risky_variable(name: &str) -> bool {
    const EXACT: &[&str] = &[
        "PATH",
        "ENV",
        "BASH_ENV",
        "IFS",
        "PS4",
        "PROMPT_COMMAND",
        "SHELLOPTS",
        "BASHOPTS",
        "EDITOR",
        "VISUAL",
        "PAGER",
        "MANPAGER",
        "BROWSER",
        "LESSOPEN",
        "LESSCLOSE",
        "HOME",
        "ZDOTDIR",
        "PERL5OPT",
        "RUBYOPT",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
        "JDK_JAVA_OPTIONS",
        "CDPATH",
        "GLOBIGNORE",
        "TMPDIR",
        "SHELL",
        "CC",
        "CXX",
        "CPP",
        "LD",
        "AR",
        "AS",
        "MAKE",
    ];
    EXACT.contains(&name)
        || ["LD_", "DYLD_", "BASH_FUNC_", "XDG_"]
            .iter()
            .any(|p| name.starts_with(p))
        || [
            "PATH", "_COMMAND", "_PAGER", "_EDITOR", "_SSH", "LIB", "_WRAPPER", "FLAGS", "ASKPASS",
            "_HOME",
        ]
        .iter()
        .any(|s| name.ends_with(s))
        || registry::reads_variable(name).is_some()
}

/// Checks `NAME=value` assignments. `value` is the value as written, when known: a pager set to
/// `cat` or to nothing (`PAGER=cat git log`, `GIT_PAGER= git diff`) runs no other program.
pub(crate) fn check_assignment(name: &str, value: Option<&str>, findings: &mut Vec<Finding>) {
    let pager = matches!(name, "PAGER" | "MANPAGER") || name.ends_with("_PAGER");
    let plain = value.is_some_and(|v| {
        matches!(
            v,
            "" | "cat" | "'cat'" | "\"cat\"" | "''" | "\"\"" | "/bin/cat" | "/usr/bin/cat"
        )
    });
    // Cargo's display settings change how it prints, not what it runs.
    let display = name.starts_with("CARGO_TERM_") || name == "CARGO_INCREMENTAL";
    let lints = matches!(name, "RUSTFLAGS" | "RUSTDOCFLAGS") && value.is_some_and(plain_rust_flags);
    if (pager && plain) || display || lints {
        return;
    }
    if is_risky_variable(name) {
        let why = registry::reads_variable(name)
            .map_or("changes what later programs run", |(_, why)| why);
        findings.push(finding(
            FindingKind::RiskyVariable,
            format!("setting `{name}` {why}"),
        ));
    }
}

/// Whether rustc's or rustdoc's flags only set lint levels, `cfg`s and code generation knobs
/// that run nothing and read no file (`-D warnings`, `--cfg docsrs`, `-C opt-level=3`), unlike a
/// linker, a plugin, a library path or an `@FILE` of more flags.
fn plain_rust_flags(value: &str) -> bool {
    let value = value.trim_matches(|c| c == '\'' || c == '"');
    let mut words = value.split_ascii_whitespace();
    const CODEGEN: &[&str] = &[
        "opt-level",
        "debuginfo",
        "target-cpu",
        "codegen-units",
        "debug-assertions",
        "overflow-checks",
        "force-frame-pointers",
        "strip",
        "panic",
        "lto",
        "incremental",
        "embed-bitcode",
        "instrument-coverage",
        "symbol-mangling-version",
    ];
    let codegen = |setting: &str| {
        let key = setting.split('=').next().unwrap_or(setting);
        CODEGEN.contains(&key) && !setting.contains(['/', '@'])
    };
    while let Some(word) = words.next() {
        let ok = match word {
            "-D" | "-W" | "-A" | "-F" | "--cfg" | "--cap-lints" | "--check-cfg" => {
                words.next().is_some_and(|w| !w.contains(['/', '@']))
            }
            "-C" => words.next().is_some_and(codegen),
            "--document-private-items"
            | "--document-hidden-items"
            | "--show-type-layout"
            | "-Zunstable-options"
            | "--generate-link-to-definition" => true,
            w if w.starts_with("-D") || w.starts_with("-W") || w.starts_with("-A") => {
                !w.contains(['/', '@'])
            }
            w if w.starts_with("--cfg=") || w.starts_with("--cap-lints=") => {
                !w.contains(['/', '@'])
            }
            w => w.strip_prefix("-C").is_some_and(codegen),
        };
        if !ok {
            return false;
        }
    }
    true
}

/// What unwrapping an argv found.
#[derive(Default)]
pub(crate) struct Unwrapped {
    /// The wrappers' argvs, outermost first (each including what it wraps).
    pub(crate) wrappers: Vec<Vec<Word>>,
    /// What finally runs.
    pub(crate) argv: Vec<Word>,
    pub(crate) findings: Vec<Finding>,
    /// A command line to analyse in place of `argv` (`sh -c LINE`).
    pub(crate) script: Option<String>,
    /// Commands that a program runs (`find -exec …`), analysed as commands of their own.
    pub(crate) spawned: Vec<Vec<Word>>,
    /// Files, folders and URLs the wrappers touch themselves (`strace -o FILE`, `flock FILE`).
    pub(crate) wrapper_uses: Vec<registry::Use>,
    /// The reading of what finally runs.
    pub(crate) reading: Option<CommandReading>,
    /// Files, folders and URLs what finally runs touches.
    pub(crate) uses: Vec<registry::Use>,
    /// Whether it reaches the network.
    pub(crate) network: bool,
}

/// The values of an argv's words; a word whose value is unknown is given as its text (the
/// syntax has already said what it cannot see in it).
fn texts(words: &[Word]) -> Vec<&str> {
    words
        .iter()
        .map(|w| w.value().unwrap_or(w.text.as_str()))
        .collect()
}

/// Peels wrappers off an argv, layer by layer, and reads what finally runs.
pub(crate) fn unwrap(argv: Vec<Word>) -> Unwrapped {
    let mut out = Unwrapped::default();
    let mut current = argv;
    for _ in 0..16 {
        let Some(name) = current.first().and_then(Word::value).map(str::to_owned) else {
            break;
        };
        let words = texts(&current);
        let args = words.get(1..).unwrap_or_default();
        let reading = registry::read(&name, args);
        let runs = reading.runs;
        if let Some(script) = reading.script.clone() {
            for layer in out.wrappers.iter().chain(std::iter::once(&current)) {
                settle_open_words(&mut out.findings, layer, None);
            }
            keep(&mut out, &reading, true);
            out.script = Some(script);
            out.argv = current;
            return out;
        }
        match runs.map(|i| i + 1) {
            Some(start) if start < current.len() => {
                keep(&mut out, &reading, true);
                let rest = current.get(start..).unwrap_or_default().to_vec();
                out.wrappers.push(std::mem::replace(&mut current, rest));
            }
            _ => {
                keep(&mut out, &reading, false);
                settle_open_words(&mut out.findings, &current, Some(&reading));
                out.argv = current;
                for layer in &out.wrappers {
                    settle_open_words(&mut out.findings, layer, None);
                }
                return out;
            }
        }
    }
    for layer in out.wrappers.iter().chain(std::iter::once(&current)) {
        settle_open_words(&mut out.findings, layer, None);
    }
    out.argv = current;
    out
}

/// Reports what is not known about the words of `argv` ([`Word::open`]), except where it
/// cannot matter: an argument `reading` takes as data (a message, a pattern) whose value bash
/// does not split and that cannot be an option, or any argument of a program that only
/// prints. A value that expands a variable named like a credential still asks: it would be
/// shown.
fn settle_open_words(findings: &mut Vec<Finding>, argv: &[Word], reading: Option<&Reading<'_>>) {
    let inert = reading
        .and_then(|r| r.program)
        .is_some_and(registry::Program::is_inert);
    for (i, word) in argv.iter().enumerate() {
        let Some(open) = &word.open else { continue };
        let data = i
            .checked_sub(1)
            .and_then(|at| reading?.data.iter().find(|(d, _)| *d == at))
            .is_some_and(|(_, operand)| {
                // A network program's operands are where it goes (`dig`, `ping`).
                !open.splits
                    && (!operand
                        || (open.lead.is_some_and(|c| c != '-') && !reading.is_some_and(|r| r.net)))
            });
        if !(inert || data) {
            findings.extend(open.findings.iter().cloned());
            continue;
        }
        for name in &open.secrets {
            findings.push(finding(
                FindingKind::DynamicArguments,
                format!("`${name}` looks like a credential: its value would be shown"),
            ));
        }
    }
}

/// Keeps what a reading found: a wrapper's findings and the files it touches itself, or the
/// whole reading of what finally runs.
fn keep(out: &mut Unwrapped, reading: &Reading<'_>, wrapper: bool) {
    out.findings.extend(reading.findings.iter().cloned());
    // A wrapper's options end where its command starts: one it does not know leaves that
    // place unknown.
    if wrapper && !reading.unknown_options.is_empty() {
        let name = reading.name;
        let option = reading.unknown_options.first().copied().unwrap_or_default();
        out.findings.push(finding(
            FindingKind::Unsupported,
            format!(
                "`{name}`: its option `{option}` is not one toolgate knows, so toolgate cannot tell which program it runs"
            ),
        ));
    }
    if wrapper {
        out.wrapper_uses.extend(reading.uses.iter().cloned());
        return;
    }
    out.uses = reading.uses.clone();
    out.network = reading.net;
    out.spawned = reading
        .spawned
        .iter()
        .map(|argv| argv.iter().map(|w| Word::literal(w)).collect())
        .collect();
    out.reading = Some(CommandReading::of(reading));
}

/// Whether a here-document or here-string fed to `argv` runs as a program: it is a shell or an
/// interpreter reading its input.
pub(crate) fn reads_program_from_stdin(argv: &[Word]) -> bool {
    argv.first()
        .and_then(Word::value)
        .and_then(registry::find)
        .is_some_and(|p| p.interpreter)
}

/// Whether a program runs whatever it is given: a shell, an interpreter, a wrapper that runs
/// another program, a package runner. Matched on the basename.
pub(crate) fn runs_anything(program: &str) -> bool {
    matches!(basename(program), "eval" | "source" | ".")
        || registry::find(program).is_some_and(registry::Program::runs_anything)
}

/// Whether a program's subcommand runs whatever it is given (`npm exec`, `uv run`).
pub(crate) fn subcommand_runs_anything(program: &str, word: &str) -> bool {
    registry::find(program).is_some_and(|p| p.sub_runs_anything(word))
}

/// An argv without its program's own options before its subcommand (`git --no-pager -C src
/// log` is `git log`, `cargo -q test` is `cargo test`), for command patterns: what runs is the
/// subcommand. With `all`, every such option goes (deny and ask rules: `git -c x=y push` is
/// still a push); without, only those that change nothing a rule could care about (options
/// that take no value and have no effect, and folders, which are checked as paths), so `git -c
/// core.pager=sh log` is not `git log` to an allow rule. `None` when nothing goes.
pub(crate) fn without_global_options(argv: &[Word], all: bool) -> Option<Vec<Word>> {
    let program = argv.first()?;
    let name = program.value()?;
    let record = registry::find(name)?;
    if record.subs.is_empty() {
        return None;
    }
    let words = texts(argv);
    let reading = registry::read(name, words.get(1..).unwrap_or_default());
    // The first subcommand's word.
    let at = reading.first_sub_at?;
    if at == 0 {
        return None;
    }
    let plain = reading.given.iter().filter(|g| g.at < at).all(|g| {
        matches!(
            (g.opt.takes, g.opt.effect),
            (registry::Takes::Nothing, registry::Effect::None)
                | (
                    registry::Takes::Value(registry::Role::Folder),
                    registry::Effect::None
                )
        )
    }) && reading
        .unknown_options
        .iter()
        .all(|u| argv.iter().skip(1).take(at).all(|w| w.value() != Some(u)));
    if !all && !plain {
        return None;
    }
    Some(
        std::iter::once(program.clone())
            .chain(argv.iter().skip(1 + at).cloned())
            .collect(),
    )
}

/// `path` as seen from `folder` (`-C .git` then `hooks` is `.git/hooks`); an absolute or
/// `~` path, or no folder, leaves it as it is.
pub(crate) fn placed_in(folder: Option<&str>, path: &str) -> String {
    match folder {
        Some(f) if !path.starts_with('/') && !path.starts_with('~') => {
            format!("{}/{path}", f.trim_end_matches('/'))
        }
        _ => path.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn risky_variables() {
        for name in [
            "PATH",
            "LD_PRELOAD",
            "GIT_SSH_COMMAND",
            "PYTHONPATH",
            "PAGER",
            "GIT_PAGER",
            "BASH_ENV",
            "RUSTC_WRAPPER",
            "RUSTFLAGS",
            "CFLAGS",
            "CARGO_BUILD_RUSTC",
            "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER",
            "npm_config_script_shell",
            "NPM_CONFIG_SCRIPT_SHELL",
            "Npm_Config_Node_Options",
            "XDG_CONFIG_HOME",
            "CARGO_HOME",
            "SSH_ASKPASS",
            "CC",
            "PYTEST_ADDOPTS",
            "MAKEFLAGS",
            "GOFLAGS",
            "NODE_OPTIONS",
            "PIP_INDEX_URL",
        ] {
            assert!(is_risky_variable(name), "{name}");
        }
        for name in [
            "LANG",
            "RUST_LOG",
            "RUST_BACKTRACE",
            "NO_COLOR",
            "CI",
            "TZ",
            "TERM",
            "PYTHONUNBUFFERED",
            "NODE_ENV",
            "DEBUG",
        ] {
            assert!(!is_risky_variable(name), "{name}");
        }
    }
}
