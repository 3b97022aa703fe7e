//! What toolgate knows about programs, as data: one [`Program`] record per program (or family of
//! programs that read their arguments the same way), with the examples a test checks.
//!
//! A record says how the program reads its arguments (its [`Syntax`] and [`Opt`]ions, with the
//! value each option takes and what that value is), what its operands are (files it reads or
//! writes, folders, URLs, data, a command it runs), its subcommands, whether it reaches the
//! network, which environment variables change what it runs, and — for the few programs with a
//! language of their own (sed, awk, jq, find's expressions, git's revisions) — the code that
//! reads that language ([`Program::language`]). [`read`] applies a record to an argv and
//! returns a [`Reading`]: every file, folder and URL the command touches, with where each came
//! from, and what toolgate cannot see through.
//!
//! Adding a program is one record in `records/`, with examples; nothing else changes.

pub(crate) mod code;
mod read;
mod records;
#[cfg(test)]
mod tests;

pub(crate) use read::{Reading, Use, UseKind, read};

use rustc_hash::FxHashMap;
use std::sync::OnceLock;

/// How a program reads its options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Syntax {
    /// GNU `getopt_long`: short options clustered (`-rn`), a short option's value attached or
    /// the next word (`-ofile`, `-o file`), long options with `=value` or the next word, long
    /// options abbreviated to any unambiguous start (`--rec` for `--recursive`), options
    /// anywhere until `--` (unless the record stops at its first operand). Python's argparse
    /// and optparse, git's parse-options, curl and npm read theirs the same way.
    Gnu,
    /// Like [`Syntax::Gnu`], without abbreviations (clap, cobra/pflag: cargo, docker, gh).
    Exact,
    /// Go's `flag` package and programs like it: `-name` or `--name`, `-name=value` or
    /// `-name value` for options that take one, no clusters, no abbreviations.
    Go,
    /// Options are whole words starting with `-` (`find -name x`, `java -jar x`).
    Words,
    /// tar's: like [`Syntax::Gnu`], and a first word of letters without a dash is a cluster
    /// (`tar xzf a.tgz`), each letter that takes a value taking the next word in turn.
    Tar,
}

/// What an argument is to the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// Text the program uses but never opens: a pattern, a message, a name, a number.
    Data,
    /// A file (or folder) it reads.
    Read,
    /// A file (or folder) it writes.
    Write,
    /// A folder it puts files in (`cp -t DIR`, `unzip -d DIR`, `tar -x -C DIR`).
    Into,
    /// A folder it works in: later relative paths are relative to it (`git -C`, `make -C`).
    Folder,
    /// A URL it fetches (without a scheme, read as `http://`, as curl does).
    Url,
    /// A URL, or else a file or folder it reads (`git clone SRC`, `pip install SPEC`): a word
    /// with a scheme (`https://`, `git+https://`, `git@host:`) is a URL, one that looks like a
    /// path (`./x`, `../x`, `/x`, `~/x`, `x.whl`, `x.tgz`) a file, anything else a name.
    Source,
    /// Program text it runs (`python -c TEXT`, `node -e TEXT`).
    Code,
    /// A shell command line it runs (`sh -c LINE`, `su -c LINE`, `watch LINE`).
    Script,
    /// The command it runs: this word and every word after it (`env CMD…`, `xargs CMD…`).
    Command,
    /// A file it reads, whose content changes what it runs (`make -f FILE`, `pytest -c FILE`,
    /// `curl -K FILE`): read, and never seen through.
    Config,
    /// Data that may name a file to read: `@FILE` (`curl -d @FILE`, `--data-binary @FILE`),
    /// `NAME=@FILE` and `NAME=<FILE` (`curl -F`).
    AtFile,
    /// An operand toolgate does not know the meaning of: it may be a file the program reads or
    /// writes.
    Unknown,
}

/// What giving an option does, besides the value it takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Nothing toolgate needs to know.
    None,
    /// It makes the program run code, write files toolgate cannot name, or read files it
    /// cannot see: the command is never allowed without a person. The text says why.
    Risk(&'static str),
    /// It makes the program go into the folders among its operands.
    Recursive,
    /// It makes the program go into folders and follow the links it meets there.
    Follows,
    /// It keeps the program off the network (`--offline`, `--no-index`).
    Offline,
    /// It selects one of the program's modes (tar's `-x`, `-c`, `-t`; zip's; cpio's): the
    /// record's language code reads it.
    Mode(&'static str),
}

/// Whether and how an option takes a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Takes {
    /// No value (`-r`, `--recursive`).
    Nothing,
    /// A value: attached (`-ofile`, `--output=file`) or the next word.
    Value(Role),
    /// A value only when attached (`-i.bak`, `--in-place=.bak`, `--color=always`).
    Attached(Role),
    /// Two values, the next two words (`jq --arg NAME VALUE`); the second has this role.
    Two(Role),
}

/// One option of a program: its short letter(s) and long names are synonyms.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Opt {
    /// Short letters, each a synonym (`"rR"` for `rm`'s `-r` and `-R`), or `""`.
    pub(crate) short: &'static str,
    /// Long names without their dashes, separated by spaces (`"output"`, `"quiet silent"`; for
    /// [`Syntax::Words`] and [`Syntax::Go`], the names after the single dash).
    pub(crate) long: &'static str,
    pub(crate) takes: Takes,
    pub(crate) effect: Effect,
}

impl Opt {
    /// Its long names.
    pub(crate) fn longs(&self) -> impl Iterator<Item = &'static str> + use<> {
        self.long.split_ascii_whitespace()
    }

    /// The name people know the option by: its first long name, else its first letter.
    pub(crate) fn name(&self) -> String {
        match (self.longs().next(), self.short.chars().next()) {
            (Some(long), _) => format!("--{long}"),
            (None, Some(letter)) => format!("-{letter}"),
            (None, None) => String::from("-"),
        }
    }
}

/// An option that takes no value and changes nothing toolgate tracks.
pub(crate) const fn flag(short: &'static str, long: &'static str) -> Opt {
    Opt {
        short,
        long,
        takes: Takes::Nothing,
        effect: Effect::None,
    }
}

/// An option that takes a value with `role`.
pub(crate) const fn value(short: &'static str, long: &'static str, role: Role) -> Opt {
    Opt {
        short,
        long,
        takes: Takes::Value(role),
        effect: Effect::None,
    }
}

/// An option whose value is only ever attached (`--color=auto`, `-i.bak`).
pub(crate) const fn attached(short: &'static str, long: &'static str, role: Role) -> Opt {
    Opt {
        short,
        long,
        takes: Takes::Attached(role),
        effect: Effect::None,
    }
}

/// An option with an effect and no value.
pub(crate) const fn does(short: &'static str, long: &'static str, effect: Effect) -> Opt {
    Opt {
        short,
        long,
        takes: Takes::Nothing,
        effect,
    }
}

/// An option that makes the program run code or touch what toolgate cannot name, with no value.
pub(crate) const fn risk(short: &'static str, long: &'static str, why: &'static str) -> Opt {
    does(short, long, Effect::Risk(why))
}

/// An option that makes the program run code or touch what toolgate cannot name, with a value.
pub(crate) const fn risk_value(
    short: &'static str,
    long: &'static str,
    role: Role,
    why: &'static str,
) -> Opt {
    Opt {
        short,
        long,
        takes: Takes::Value(role),
        effect: Effect::Risk(why),
    }
}

/// What a program's operands are, by position.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Operands {
    /// The roles of the first operands, in order.
    pub(crate) first: &'static [Role],
    /// The role of every other operand.
    pub(crate) rest: Role,
    /// The role of the last operand when there are at least two (`cp SRC… DEST`).
    pub(crate) last: Option<Role>,
}

impl Operands {
    /// Every operand has this role.
    pub(crate) const fn all(role: Role) -> Operands {
        Operands {
            first: &[],
            rest: role,
            last: None,
        }
    }

    /// The role of operand `i` of `n`.
    pub(crate) fn role(&self, i: usize, n: usize) -> Role {
        if let Some(role) = self.first.get(i) {
            return *role;
        }
        match self.last {
            Some(last) if n >= 2 && i + 1 == n => last,
            _ => self.rest,
        }
    }
}

/// What a program (or subcommand) does, beyond the files, folders and URLs its record lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// It only reads what it is given and prints: its effects are the files it reads.
    Reads,
    /// It reads and writes the files its record names, and does nothing else.
    Writes,
    /// It fetches the URLs it is given (and writes the files its record names).
    Fetches,
    /// It runs code: the project's (builds, tests, scripts), a tool's plugins, or programs it
    /// is configured with. Its effects are not all listed.
    Runs,
}

/// Whether a program reaches the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Net {
    Never,
    Always,
    /// When it is given a URL (an operand or option with a URL role).
    WithUrls,
}

/// An environment variable a program reads that changes what it runs, loads or writes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Env {
    /// The name, or a prefix ending in `*` (`npm_config_*`).
    pub(crate) name: &'static str,
    /// Whether the program reads the name in any case (npm's configuration).
    pub(crate) any_case: bool,
    pub(crate) why: &'static str,
}

/// An environment variable with its name as the program reads it, exactly.
pub(crate) const fn env(name: &'static str, why: &'static str) -> Env {
    Env {
        name,
        any_case: false,
        why,
    }
}

/// An environment variable the program reads in any case (npm).
pub(crate) const fn env_any_case(name: &'static str, why: &'static str) -> Env {
    Env {
        name,
        any_case: true,
        why,
    }
}

/// A subcommand: how it reads its arguments and what it does.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sub {
    /// Its names (`["install", "i", "add"]`); the first is the one rules use.
    pub(crate) names: &'static [&'static str],
    pub(crate) kind: Kind,
    pub(crate) net: Net,
    pub(crate) options: &'static [Opt],
    /// More options it takes, shared with other subcommands (`git log`'s diff options).
    pub(crate) shared: &'static [Opt],
    pub(crate) operands: Operands,
    /// Its own subcommands (`git remote add`, `cargo help build`).
    pub(crate) subs: &'static [Sub],
    /// What else it does, for rules (`git send-pack` pushes: `["push"]`).
    pub(crate) acts: &'static [&'static str],
}

/// A subcommand with its names, kind and network, reading options and operands as its parent
/// does (add them with struct update syntax).
pub(crate) const fn sub(names: &'static [&'static str], kind: Kind, net: Net) -> Sub {
    Sub {
        names,
        kind,
        net,
        options: &[],
        shared: &[],
        operands: Operands::all(Role::Unknown),
        subs: &[],
        acts: &[],
    }
}

impl Sub {
    /// The subcommand taking these options too.
    pub(crate) const fn shared(self, shared: &'static [Opt]) -> Sub {
        Sub { shared, ..self }
    }

    /// The subcommand with these subcommands of its own.
    pub(crate) const fn with_subs(self, subs: &'static [Sub]) -> Sub {
        Sub { subs, ..self }
    }

    /// The subcommand with these operands.
    pub(crate) const fn with_operands(self, operands: Operands) -> Sub {
        Sub { operands, ..self }
    }
}

/// An example of a call and what toolgate must read in it, checked by a test for every record.
///
/// `expect` lists what the reading holds, space-separated, in any order: `read:PATH`,
/// `write:PATH`, `into:PATH`, `folder:PATH`, `url:URL`, `unknown:PATH` (an operand of unknown
/// meaning), `code`, `risk`, `net`, `recursive`, `follows`, `sub:NAME` (the subcommands, in
/// order), `runs:PROGRAM` (the command it runs), `script`, `kind:reads|writes|fetches|runs`.
/// Nothing else may be in the reading.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(
    not(test),
    expect(dead_code, reason = "the examples are read by the tests")
)]
pub(crate) struct Example {
    /// The argv, words separated by single spaces (write a space inside a word as `\s`).
    pub(crate) argv: &'static str,
    pub(crate) expect: &'static str,
}

/// An example (see [`Example`]).
pub(crate) const fn ex(argv: &'static str, expect: &'static str) -> Example {
    Example { argv, expect }
}

/// Code for a program with a language of its own, run after its arguments are read.
pub(crate) type Language = fn(&mut Reading<'_>);

/// One program, or a family that reads its arguments the same way.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Program {
    /// The names it runs as (basenames).
    pub(crate) names: &'static [&'static str],
    pub(crate) syntax: Syntax,
    /// Whether its options end at its first operand (wrappers: `env`, `timeout`, `nice`).
    pub(crate) options_first: bool,
    /// Whether every option it has is in the record: an option not in it is then one the
    /// program refuses, and harmless. Otherwise an unknown option may do anything, and a
    /// command with one is not seen through.
    pub(crate) complete: bool,
    pub(crate) kind: Kind,
    pub(crate) net: Net,
    pub(crate) options: &'static [Opt],
    pub(crate) operands: Operands,
    pub(crate) subs: &'static [Sub],
    /// Whether its subcommands take its own options too (npm's and cargo's global options).
    pub(crate) options_everywhere: bool,
    /// Whether a subcommand may be written as any unambiguous start of its name (`npm publ`).
    pub(crate) abbreviated_subs: bool,
    pub(crate) env: &'static [Env],
    /// Whether it runs program text it reads from its input (a shell, an interpreter): a
    /// here-document fed to it is a program.
    pub(crate) interpreter: bool,
    /// Whether a first word `+NAME` picks the toolchain that runs (rustup's proxies: `cargo
    /// +nightly build`).
    pub(crate) toolchain_first: bool,
    pub(crate) language: Option<Language>,
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "the examples are read by the tests")
    )]
    pub(crate) examples: &'static [Example],
}

/// A record with its names and kind: GNU syntax, operands of unknown meaning, no options.
/// Fill in the rest with struct update syntax.
pub(crate) const fn program(names: &'static [&'static str], kind: Kind) -> Program {
    Program {
        names,
        syntax: Syntax::Gnu,
        options_first: false,
        complete: false,
        kind,
        net: Net::Never,
        options: &[],
        operands: Operands::all(Role::Unknown),
        subs: &[],
        options_everywhere: false,
        abbreviated_subs: false,
        env: &[],
        interpreter: false,
        toolchain_first: false,
        language: None,
        examples: &[],
    }
}

impl Program {
    /// Whether nothing it is given can make it touch a file, a host or a program: its record
    /// is complete and every option and operand is data (`echo`, `sleep`, `seq`). An argument
    /// whose value is not known changes only what it prints.
    pub(crate) fn is_inert(&self) -> bool {
        let data = |role: Role| role == Role::Data;
        self.complete
            && self.subs.is_empty()
            && self.language.is_none()
            && self.net == Net::Never
            && !self.interpreter
            && self.options.iter().all(|o| {
                o.effect == Effect::None
                    && match o.takes {
                        Takes::Nothing => true,
                        Takes::Value(r) | Takes::Attached(r) | Takes::Two(r) => data(r),
                    }
            })
            && self.operands.first.iter().all(|r| data(*r))
            && data(self.operands.rest)
            && self.operands.last.is_none_or(data)
    }

    /// The record with these options.
    pub(crate) const fn with_options(self, options: &'static [Opt]) -> Program {
        Program { options, ..self }
    }

    /// Whether any level of the record (the program's, any subcommand's) has the option `name`.
    pub(crate) fn has_option_anywhere(&self, name: &str) -> bool {
        fn subs(list: &[Sub], name: &str) -> bool {
            list.iter().any(|s| {
                s.options
                    .iter()
                    .chain(s.shared)
                    .any(|o| read::named(o, name))
                    || subs(s.subs, name)
            })
        }
        self.options.iter().any(|o| read::named(o, name)) || subs(self.subs, name)
    }

    /// Whether it runs whatever it is given: an interpreter, a shell, a program whose operand or
    /// option is a command, a command line or program text. A standing permission for such a
    /// program can only safely cover one exact command.
    pub(crate) fn runs_anything(&self) -> bool {
        let runs = |role: Role| matches!(role, Role::Command | Role::Script | Role::Code);
        let operands = |o: &Operands| {
            o.first.iter().copied().any(runs) || runs(o.rest) || o.last.is_some_and(runs)
        };
        let options = |options: &[Opt]| {
            options.iter().any(|o| match o.takes {
                Takes::Value(role) | Takes::Attached(role) | Takes::Two(role) => runs(role),
                Takes::Nothing => false,
            })
        };
        // A program with subcommands runs what it is given only through one of them (`npm
        // exec`, whose `--call` is read as npm's own option): see `sub_runs_anything`.
        self.interpreter
            || operands(&self.operands)
            || (self.subs.is_empty() && options(self.options))
    }

    /// Whether its subcommand named `word` runs whatever it is given (`npm exec`, `uv run`,
    /// `poetry run`).
    pub(crate) fn sub_runs_anything(&self, word: &str) -> bool {
        let runs = |role: Role| matches!(role, Role::Command | Role::Script | Role::Code);
        self.subs.iter().any(|s| {
            s.names.iter().any(|n| n.split('=').next() == Some(word))
                && (s.operands.first.iter().copied().any(runs)
                    || runs(s.operands.rest)
                    || s.options.iter().any(|o| match o.takes {
                        Takes::Value(role) | Takes::Attached(role) | Takes::Two(role) => runs(role),
                        Takes::Nothing => false,
                    }))
        })
    }
}

/// The record whose program reads `name` from the environment, and why that matters: exactly,
/// by a prefix written `NAME_*`, or in any case for programs that read it so (npm).
pub(crate) fn reads_variable(name: &str) -> Option<(&'static Program, &'static str)> {
    for program in all() {
        for env in program.env {
            let (pattern, prefix) = match env.name.strip_suffix('*') {
                Some(p) => (p, true),
                None => (env.name, false),
            };
            let matches = |a: &str, b: &str| {
                if env.any_case {
                    a.eq_ignore_ascii_case(b)
                } else {
                    a == b
                }
            };
            let hit = if prefix {
                name.get(..pattern.len())
                    .is_some_and(|head| matches(head, pattern))
            } else {
                matches(name, pattern)
            };
            if hit {
                return Some((program, env.why));
            }
        }
    }
    None
}

/// Every record.
pub(crate) fn all() -> impl Iterator<Item = &'static Program> {
    records::ALL.iter().flat_map(|group| group.iter())
}

/// The record for a program, by the basename it runs as (`/usr/bin/python3.12` → `python`).
pub(crate) fn find(name: &str) -> Option<&'static Program> {
    static INDEX: OnceLock<FxHashMap<&'static str, &'static Program>> = OnceLock::new();
    let index = INDEX.get_or_init(|| {
        let mut index = FxHashMap::default();
        for program in all() {
            for name in program.names {
                index.insert(*name, program);
            }
        }
        index
    });
    let base = super::programs::basename(name);
    index
        .get(base)
        .or_else(|| index.get(unversioned(base)))
        .copied()
}

/// Whether a program named as written is the installed program its basename names: a bare
/// name (found on `PATH`) or a path into the system's program folders. A relative path
/// (`./cat`, `bin/cat`) or any other folder (`/tmp/git`) runs a file of its own.
pub(crate) fn is_installed(name: &str) -> bool {
    const FOLDERS: &[&str] = &[
        "/bin/",
        "/sbin/",
        "/usr/bin/",
        "/usr/sbin/",
        "/usr/local/bin/",
        "/usr/local/sbin/",
        "/opt/homebrew/bin/",
        "/snap/bin/",
    ];
    !name.contains('/')
        || FOLDERS
            .iter()
            .any(|f| name.strip_prefix(f).is_some_and(|rest| !rest.contains('/')))
}

/// A versioned name without its version: `python3.12` → `python3`, `pip3.11` → `pip3`,
/// `node18` → `node`, `gcc-12` → `gcc`, `clang++-17` → `clang++`.
pub(crate) fn unversioned(name: &str) -> &str {
    let trimmed = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let trimmed = trimmed.strip_suffix('-').unwrap_or(trimmed);
    if trimmed.is_empty() || trimmed.len() == name.len() {
        return name;
    }
    // `python3.12` → `python3`: keep a single major digit where the name has one.
    if let Some(rest) = name.get(trimmed.len()..)
        && let Some(major) = rest.chars().next().filter(char::is_ascii_digit)
        && rest.get(1..).is_some_and(|r| r.starts_with('.'))
        && major != '0'
    {
        return name.get(..trimmed.len() + 1).unwrap_or(trimmed);
    }
    trimmed
}
