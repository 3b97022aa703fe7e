//! Reading an argv with its program's record: options, subcommands, operands, and what each
//! names.

use super::{Effect, Kind, Net, Opt, Program, Role, Sub, Syntax, Takes};
use crate::resource::shell::{Finding, FindingKind};

/// What a command touches, read from its argv with its program's record.
#[derive(Clone, Debug)]
pub(crate) struct Reading<'a> {
    /// The program's record, when toolgate has one.
    pub(crate) program: Option<&'static Program>,
    /// The program's basename as run.
    pub(crate) name: &'a str,
    /// The arguments after the program's name.
    pub(crate) args: Vec<&'a str>,
    /// The subcommands, outermost first (`git remote add` → `remote`, `add`).
    pub(crate) subs: Vec<&'static Sub>,
    /// Their names, as each was meant (`npm i` → `install`, `npm publ` → `publish`).
    pub(crate) sub_words: Vec<&'static str>,
    /// The index in `args` of the innermost subcommand's word.
    pub(crate) sub_at: Option<usize>,
    /// The index in `args` of the outermost subcommand's word.
    pub(crate) first_sub_at: Option<usize>,
    /// The options recognised, in order.
    pub(crate) given: Vec<Given<'a>>,
    /// Options the record does not have.
    pub(crate) unknown_options: Vec<&'a str>,
    /// A subcommand the record does not have.
    pub(crate) unknown_sub: Option<&'a str>,
    /// The operands (subcommand names excluded), with the index of each in `args`.
    pub(crate) operands: Vec<(usize, &'a str)>,
    /// Files, folders and URLs it touches.
    pub(crate) uses: Vec<Use>,
    /// What toolgate cannot see through.
    pub(crate) findings: Vec<Finding>,
    pub(crate) net: bool,
    pub(crate) recursive: bool,
    pub(crate) follows: bool,
    /// The command it runs: its first word's index in `args` (`env`, `xargs`, `npx`).
    pub(crate) runs: Option<usize>,
    /// A command line it runs (`sh -c LINE`, `su -c LINE`).
    pub(crate) script: Option<String>,
    /// The folder it works in, relative to where it runs (`git -C a -C b` → `a/b`).
    pub(crate) folder: Option<String>,
    /// The modes its options select (tar's `x`, `c`, `t`).
    pub(crate) modes: Vec<&'static str>,
    /// What the record's code found the command does, when its options decide it (`git branch
    /// -D` changes branches; `git branch` lists them).
    pub(crate) kind_override: Option<Kind>,
    /// Whether, going into folders, it skips hidden files (ripgrep, fd and ag do unless told).
    pub(crate) skips_hidden: bool,
    /// Whether the program is run from a folder of its own rather than the system's (`./cat`).
    pub(crate) local: bool,
    /// Commands it runs for what it finds (`find -exec CMD {} ;`): their argvs.
    pub(crate) spawned: Vec<Vec<String>>,
    /// What else it does, for rules: the acts of its subcommands (`git send-pack` pushes).
    pub(crate) acts: Vec<&'static str>,
    /// Whether it makes a symbolic link (which changes where later paths on the line lead).
    pub(crate) made_links: bool,
    /// The words it reads as data (a message, a pattern, a name), by index in `args`, and
    /// whether each is an operand (which, starting with `-`, would be an option instead).
    pub(crate) data: Vec<(usize, bool)>,
}

/// An option's name: a long name, or a letter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OptName {
    Long(&'static str),
    Short(char),
}

impl std::fmt::Display for OptName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OptName::Long(name) => write!(f, "--{name}"),
            OptName::Short(letter) => write!(f, "-{letter}"),
        }
    }
}

/// The name an option given as `by` goes by. A record lists an option's synonyms together: its
/// letters and its one long name (`rR`, `recursive`), or its letter and the first of its long
/// names. A list with several letters and several long names gathers options that only share
/// how they are read (`flag("nqs", &["quiet", …])`): each is then its own option.
pub(crate) fn canonical(opt: &'static Opt, by: OptName) -> OptName {
    let mut longs = opt.longs();
    match (longs.next(), longs.next(), opt.short.chars().count(), by) {
        (Some(one), None, _, _) => OptName::Long(one),
        (Some(first), Some(_), 1, OptName::Short(_)) => OptName::Long(first),
        _ => by,
    }
}

/// One option as given.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Given<'a> {
    pub(crate) opt: &'static Opt,
    /// The name it goes by ([`canonical`]).
    pub(crate) name: OptName,
    pub(crate) value: Option<&'a str>,
    /// Its index in `args`.
    pub(crate) at: usize,
}

/// A file, folder or URL a command touches, and where in the command it was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Use {
    pub(crate) text: String,
    pub(crate) kind: UseKind,
    /// Where it came from, for people (`operand 2`, "`--output`'s value").
    pub(crate) origin: String,
}

/// How a command touches a [`Use`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UseKind {
    Read,
    Write,
    /// A folder it puts files in.
    Into,
    /// A folder it works in.
    Folder,
    Url,
    /// What a link it makes leads to (`ln -s TARGET NAME`).
    Linked,
    /// A pattern it matches against the files under the folder it works in (git's pathspecs).
    Pathspec,
    /// A name that may be a file, not on the disk (a path in a git revision): deny and ask
    /// rules see it.
    Mentioned,
    /// An operand of unknown meaning: it may be read or written.
    Unknown,
}

impl<'a> Reading<'a> {
    fn new(name: &'a str, args: Vec<&'a str>, program: Option<&'static Program>) -> Reading<'a> {
        Reading {
            program,
            name,
            args,
            subs: Vec::new(),
            sub_words: Vec::new(),
            sub_at: None,
            first_sub_at: None,
            given: Vec::new(),
            unknown_options: Vec::new(),
            unknown_sub: None,
            operands: Vec::new(),
            uses: Vec::new(),
            findings: Vec::new(),
            net: false,
            recursive: false,
            follows: false,
            runs: None,
            script: None,
            folder: None,
            modes: Vec::new(),
            kind_override: None,
            skips_hidden: false,
            local: false,
            spawned: Vec::new(),
            acts: Vec::new(),
            made_links: false,
            data: Vec::new(),
        }
    }

    /// What the command does: its innermost subcommand's kind, else its program's.
    pub(crate) fn kind(&self) -> Option<Kind> {
        if self.local {
            return Some(Kind::Runs);
        }
        if let Some(kind) = self.kind_override {
            return Some(kind);
        }
        match self.subs.last() {
            Some(sub) => Some(sub.kind),
            None => self.program.map(|p| p.kind),
        }
    }

    /// The subcommands' names, outermost first.
    #[cfg(test)]
    pub(crate) fn sub_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.sub_words.iter().copied()
    }

    /// Whether the option named `name` (`-r`, `--recursive`, or a long name written whole as the
    /// record writes it) was given. The name must be one of the record's: code that asks about
    /// an option the record does not have disagrees with it (a test catches this).
    pub(crate) fn has(&self, name: &str) -> bool {
        self.given_named(name).next().is_some()
    }

    /// Whether the option named `name` was given, for code shared by records of which only
    /// some have it (`grep -e`, which `ag` lacks).
    pub(crate) fn has_if_known(&self, name: &str) -> bool {
        self.given_by(name).next().is_some()
    }

    /// The values given to the option named `name`, for code shared by records of which only
    /// some have it.
    pub(crate) fn values_if_known(&self, name: &str) -> Vec<&'a str> {
        self.given_by(name).filter_map(|g| g.value).collect()
    }

    /// How many times the option named `name` was given (`-uu` gives `-u` twice).
    pub(crate) fn values_given(&self, name: &str) -> usize {
        self.given_named(name).count()
    }

    /// The values given to the option named `name`, in order.
    pub(crate) fn values(&self, name: &str) -> Vec<&'a str> {
        self.given_named(name).filter_map(|g| g.value).collect()
    }

    /// The options given that go by `name`. Only the options given are looked at (a record
    /// has dozens; a command gives a few): one that goes by `name` under the name it was
    /// given by.
    fn given_named<'s, 'n>(
        &'s self,
        name: &'n str,
    ) -> impl Iterator<Item = &'s Given<'a>> + use<'s, 'n, 'a> {
        // In debug builds, a name the record does not have is a mistake in the code asking.
        #[cfg(debug_assertions)]
        let _ = self.option(name);
        self.given_by(name)
    }

    /// The options given that go by `name`, whether or not the record has such an option.
    fn given_by<'s, 'n>(
        &'s self,
        name: &'n str,
    ) -> impl Iterator<Item = &'s Given<'a>> + use<'s, 'n, 'a> {
        self.given.iter().filter(move |g| {
            query_name(g.opt, name).is_some_and(|by| canonical(g.opt, by) == g.name)
        })
    }

    /// The record's option called `name` at the subcommand level read (or the program's).
    pub(crate) fn option(&self, name: &str) -> Option<&'static Opt> {
        let found = self.knows(name);
        debug_assert!(
            found.is_some() || self.program.is_none_or(|p| p.has_option_anywhere(name)),
            "`{}` has no option `{name}` in its record",
            self.name
        );
        found
    }

    /// The record's option called `name` at the level read, if it has one there.
    pub(crate) fn knows(&self, name: &str) -> Option<&'static Opt> {
        self.levels()
            .flat_map(|options| options.iter())
            .find(|o| named(o, name))
    }

    /// The option lists in force, innermost first.
    fn levels(&self) -> impl Iterator<Item = &'static [Opt]> + '_ {
        let program = self.program;
        self.subs
            .iter()
            .rev()
            .flat_map(|s| [s.options, s.shared])
            .chain(program.map(|p| p.options))
    }

    /// Adds a use found by a record's code.
    pub(crate) fn push(
        &mut self,
        text: impl Into<String>,
        kind: UseKind,
        origin: impl Into<String>,
    ) {
        self.uses.push(Use {
            text: text.into(),
            kind,
            origin: origin.into(),
        });
    }

    /// Adds a finding of `kind`.
    pub(crate) fn flag(&mut self, kind: FindingKind, detail: impl Into<String>) {
        self.findings.push(Finding {
            kind,
            detail: detail.into(),
        });
    }

    /// Adds a risky-option finding.
    pub(crate) fn risk(&mut self, detail: impl Into<String>) {
        self.flag(FindingKind::RiskyOption, detail);
    }

    /// The operands' texts.
    pub(crate) fn operand_texts(&self) -> Vec<&'a str> {
        self.operands.iter().map(|(_, t)| *t).collect()
    }

    /// Whether every effect of the command is among its uses: a known program that only reads,
    /// writes the files it names or fetches URLs, read whole (no option or subcommand the record
    /// lacks, no operand of unknown meaning, nothing it runs, nothing unseen).
    pub(crate) fn is_transparent(&self) -> bool {
        matches!(
            self.kind(),
            Some(Kind::Reads | Kind::Writes | Kind::Fetches)
        ) && self.findings.is_empty()
            && self.unknown_sub.is_none()
            && (self.unknown_options.is_empty() || self.program.is_some_and(|p| p.complete))
            && self.runs.is_none()
            && self.script.is_none()
            && !self.uses.iter().any(|u| u.kind == UseKind::Unknown)
    }
}

/// Whether `opt` is called `name` (`-x` by a letter, `--name` or a bare name by a long name;
/// `-w` is also the long name `w` of a program whose options are words, like Go's).
pub(super) fn named(opt: &'static Opt, name: &str) -> bool {
    query_name(opt, name).is_some()
}

/// The name of `opt` that `name` asks for, if it is one of its names.
fn query_name(opt: &'static Opt, name: &str) -> Option<OptName> {
    let long = |n: &str| opt.longs().find(|l| *l == n).map(OptName::Long);
    match name.strip_prefix("--") {
        Some(rest) => long(rest),
        None => match name.strip_prefix('-') {
            Some(rest) if rest.chars().count() == 1 => {
                let letter = rest.chars().next()?;
                if opt.short.contains(letter) {
                    Some(OptName::Short(letter))
                } else {
                    long(rest)
                }
            }
            Some(rest) => long(rest),
            None => long(name),
        },
    }
}

/// One level of options being read: the program, or a subcommand within it.
struct Level {
    options: &'static [Opt],
    shared: &'static [Opt],
    operands: super::Operands,
    subs: &'static [Sub],
}

/// Reads `args` (the words after the program's name; a word whose value is unknown is given as
/// its text) with the record for `name`.
pub(crate) fn read<'a>(name: &'a str, args: &[&'a str]) -> Reading<'a> {
    let program = super::find(name);
    let base = crate::resource::shell::programs::basename(name);
    let mut reading = Reading::new(base, args.to_vec(), program);
    let Some(program) = program else {
        read_unknown(&mut reading, args);
        return reading;
    };
    reading.net = program.net == Net::Always;
    // A program run from a folder of its own (`./cat`, `/tmp/git`) is read as the program its
    // name says, so what it names is judged, but it may be anything: nothing it does is seen
    // through.
    if !super::is_installed(name) {
        reading.local = true;
    }
    let mut level = Level {
        options: program.options,
        shared: &[],
        operands: program.operands,
        subs: program.subs,
    };
    let mut operands: Vec<(usize, &'a str)> = Vec::new();
    let mut options_done = false;
    let mut ends_options: Option<usize> = None;
    let mut offline = false;
    let mut i = 0;
    // `cargo +nightly build`: rustup's toolchain, then the program's own arguments.
    if program.toolchain_first && args.first().is_some_and(|a| a.starts_with('+')) {
        i = 1;
    }
    // tar's first word of letters without a dash.
    if program.syntax == Syntax::Tar
        && let Some(first) = args.first()
        && !first.starts_with('-')
        && !first.is_empty()
        && first.chars().all(|c| c.is_ascii_alphabetic())
    {
        let mut next = 1;
        for letter in first.chars() {
            match find_short(&reading, program, letter) {
                Some(opt) => {
                    let (value, value_at) = match opt.takes {
                        Takes::Value(_) | Takes::Two(_) => {
                            let v = args.get(next).copied();
                            next += 1;
                            (v, Some(next - 1))
                        }
                        Takes::Nothing | Takes::Attached(_) => (None, None),
                    };
                    give(
                        &mut reading,
                        opt,
                        OptName::Short(letter),
                        first,
                        value,
                        0,
                        value_at,
                    );
                }
                None => reading.unknown_options.push(first),
            }
        }
        i = next;
    }
    while let Some(&arg) = args.get(i) {
        if reading.runs.is_some() {
            break;
        }
        let option_like = !options_done
            && arg.len() > 1
            && arg.starts_with('-')
            && (!program.options_first || operands.is_empty());
        if !option_like {
            // A subcommand: the first operand, where the level has subcommands.
            if !options_done
                && operands.is_empty()
                && !level.subs.is_empty()
                && let Some((sub, name)) = find_sub(level.subs, arg, program)
            {
                reading.subs.push(sub);
                reading.sub_words.push(name);
                reading.sub_at = Some(i);
                reading.first_sub_at.get_or_insert(i);
                reading.acts.extend(sub.acts.iter().copied());
                if sub.net == Net::Always {
                    reading.net = true;
                }
                level = Level {
                    options: sub.options,
                    shared: sub.shared,
                    operands: sub.operands,
                    subs: sub.subs,
                };
                i += 1;
                continue;
            }
            if !options_done
                && operands.is_empty()
                && !level.subs.is_empty()
                && reading.unknown_sub.is_none()
            {
                reading.unknown_sub = Some(arg);
            }
            operands.push((i, arg));
            if level.operands.role(operands.len() - 1, usize::MAX) == Role::Command {
                reading.runs = Some(i);
                break;
            }
            i += 1;
            continue;
        }
        if arg == "--" {
            options_done = true;
            ends_options.get_or_insert(i + 1);
            i += 1;
            if program.options_first && level.operands.rest == Role::Command {
                if args.get(i).is_some() {
                    reading.runs = Some(i);
                }
                break;
            }
            continue;
        }
        i += read_option(&mut reading, program, &level, args, i, &mut offline);
    }
    // Operands: roles by position among those read (a command's words stop the count).
    let n = operands.len();
    let runs_code = matches!(reading.kind(), Some(Kind::Runs));
    for (k, (at, text)) in operands.iter().enumerate() {
        let mut role = level.operands.role(k, n);
        // What follows `--` goes to the program it runs (a test harness, a script) when it
        // runs one: its meaning is that program's.
        if runs_code && ends_options.is_some_and(|end| *at >= end) && role != Role::Command {
            // An option of that program's: a path-like value attached to it may be a file.
            if text.starts_with('-') {
                if let Some((_, value)) = text.split_once('=')
                    && (value.contains('/') || value.starts_with('.') || value.starts_with('~'))
                {
                    let origin = format!("operand {}", k + 1);
                    reading.push(value, UseKind::Unknown, origin);
                }
                continue;
            }
            role = Role::Unknown;
        }
        if role == Role::Data {
            reading.data.push((*at, true));
        }
        apply_role(&mut reading, role, text, &format!("operand {}", k + 1), *at);
    }
    reading.operands = operands;
    if offline {
        reading.net = false;
    } else if let Some(kind) = reading.subs.last().map(|s| s.net).or(Some(program.net))
        && kind == Net::WithUrls
        && reading.uses.iter().any(|u| u.kind == UseKind::Url)
    {
        reading.net = true;
    }
    if let Some(language) = program.language {
        language(&mut reading);
    }
    // `cargo --version`, `npm --help`: it prints and runs nothing.
    if reading.subs.is_empty()
        && reading.operands.is_empty()
        && reading.unknown_options.is_empty()
        && !reading.local
        && !reading.given.is_empty()
        && reading
            .given
            .iter()
            .all(|g| matches!(g.name, OptName::Long("version" | "help")))
    {
        reading.kind_override = Some(Kind::Reads);
        reading.net = false;
    }
    // Relative paths a command names are relative to the folder it works in.
    if let Some(folder) = reading.folder.clone() {
        for u in &mut reading.uses {
            if matches!(
                u.kind,
                UseKind::Read
                    | UseKind::Write
                    | UseKind::Into
                    | UseKind::Unknown
                    | UseKind::Pathspec
                    | UseKind::Linked
            ) && !u.text.starts_with('/')
                && !u.text.starts_with('~')
            {
                u.text = format!("{}/{}", folder.trim_end_matches('/'), u.text);
            }
        }
    }
    reading
}

/// A program toolgate has no record of: every operand may be a file it reads or writes, and
/// so may a path-like value attached to an option (`-Iconfig/x`, `--out=build/x`); a word with
/// a URL scheme is a URL it may fetch.
fn read_unknown<'a>(reading: &mut Reading<'a>, args: &[&'a str]) {
    for (i, a) in args.iter().enumerate() {
        let origin = format!("argument {}", i + 1);
        if a.contains("://") {
            match super::code::file_url_path(a) {
                Some(path) => reading.push(path, UseKind::Unknown, origin),
                None => reading.push(*a, UseKind::Url, origin),
            }
            continue;
        }
        if !a.starts_with('-') || *a == "-" {
            reading.operands.push((i, a));
            if *a != "-" {
                reading.push(*a, UseKind::Unknown, origin);
            }
            continue;
        }
        let attached = match a.strip_prefix("--") {
            Some(long) => long.split_once('=').map(|(_, v)| v),
            None => a
                .get(2..)
                .filter(|_| a.chars().nth(1).is_some_and(|c| c.is_ascii_alphabetic())),
        };
        if let Some(value) =
            attached.filter(|v| v.contains('/') || v.starts_with('.') || v.starts_with('~'))
        {
            reading.push(value, UseKind::Unknown, origin);
        }
    }
}

fn short(letter: char) -> OptName {
    OptName::Short(letter)
}

/// Reads the option at `args[i]`; returns how many words it took.
fn read_option<'a>(
    reading: &mut Reading<'a>,
    program: &'static Program,
    level: &Level,
    args: &[&'a str],
    i: usize,
    offline: &mut bool,
) -> usize {
    let Some(&arg) = args.get(i) else {
        return 1;
    };
    let next = args.get(i + 1).copied();
    let long_form = match program.syntax {
        Syntax::Gnu | Syntax::Exact | Syntax::Tar => arg.strip_prefix("--"),
        Syntax::Go => Some(
            arg.strip_prefix("--")
                .unwrap_or_else(|| arg.get(1..).unwrap_or_default()),
        ),
        Syntax::Words => Some(arg.get(1..).unwrap_or_default()),
    };
    if let Some(long) = long_form {
        let (name, attached) = match long.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (long, None),
        };
        let abbreviations = program.syntax == Syntax::Gnu || program.syntax == Syntax::Tar;
        let Some((opt, full)) = find_long(reading, program, level, name, abbreviations) else {
            reading.unknown_options.push(arg);
            return 1;
        };
        let (value, taken, value_at) = match opt.takes {
            Takes::Nothing | Takes::Attached(_) => (attached, 1, None),
            Takes::Value(_) => match attached {
                Some(v) => (Some(v), 1, None),
                None => (next, 2, Some(i + 1)),
            },
            Takes::Two(_) => (args.get(i + 2).copied(), 3, Some(i + 2)),
        };
        let taken = if program.syntax == Syntax::Go && opt.takes == Takes::Nothing {
            1
        } else {
            taken
        };
        give(reading, opt, OptName::Long(full), arg, value, i, value_at);
        note_offline(opt, offline);
        return taken;
    }
    // A cluster of short options.
    let cluster = arg.get(1..).unwrap_or_default();
    for (at, letter) in cluster.char_indices() {
        let Some(opt) = find_short_at(reading, program, level, letter) else {
            reading.unknown_options.push(arg);
            continue;
        };
        let rest = cluster.get(at + letter.len_utf8()..).unwrap_or_default();
        match opt.takes {
            Takes::Nothing => give(reading, opt, short(letter), arg, None, i, None),
            Takes::Attached(_) => {
                let value = (!rest.is_empty()).then_some(rest);
                give(reading, opt, short(letter), arg, value, i, None);
                return 1;
            }
            Takes::Value(_) => {
                if rest.is_empty() {
                    give(reading, opt, short(letter), arg, next, i, Some(i + 1));
                    return 2;
                }
                give(reading, opt, short(letter), arg, Some(rest), i, None);
                return 1;
            }
            Takes::Two(_) => {
                let value = args.get(i + 2).copied();
                give(reading, opt, short(letter), arg, value, i, Some(i + 2));
                return 3;
            }
        }
        note_offline(opt, offline);
    }
    1
}

fn note_offline(opt: &Opt, offline: &mut bool) {
    if opt.effect == Effect::Offline {
        *offline = true;
    }
}

/// Records an option and applies its effect and its value's role.
fn give<'a>(
    reading: &mut Reading<'a>,
    opt: &'static Opt,
    by: OptName,
    written: &'a str,
    value: Option<&'a str>,
    at: usize,
    value_at: Option<usize>,
) {
    reading.given.push(Given {
        opt,
        name: canonical(opt, by),
        value,
        at,
    });
    match opt.effect {
        Effect::None | Effect::Offline => {}
        Effect::Risk(why) => {
            let shown = match value {
                Some(v) if !written.contains(v) => format!("{written} {v}"),
                _ => written.to_owned(),
            };
            let prefix = std::iter::once(reading.name)
                .chain(reading.sub_words.iter().copied())
                .collect::<Vec<_>>()
                .join(" ");
            reading.risk(format!("`{prefix} {shown}` {why}"));
        }
        Effect::Recursive => reading.recursive = true,
        Effect::Follows => {
            reading.recursive = true;
            reading.follows = true;
        }
        Effect::Mode(mode) => reading.modes.push(mode),
    }
    let role = match opt.takes {
        Takes::Value(role) | Takes::Attached(role) | Takes::Two(role) => role,
        Takes::Nothing => return,
    };
    if role == Role::Data && value.is_some() {
        reading.data.push((value_at.unwrap_or(at), false));
    }
    if role == Role::Command {
        // The command starts at the option's value (`python -m pytest -q`).
        match value_at {
            Some(start) => reading.runs = Some(start),
            None => reading.flag(
                FindingKind::Unsupported,
                format!(
                    "`{} {written}` names the program it runs inside an option",
                    reading.name
                ),
            ),
        }
        return;
    }
    if let Some(value) = value {
        apply_role(
            reading,
            role,
            value,
            &format!("`{}`'s value", opt.name()),
            at,
        );
    }
}

/// Records what a word with `role` names.
fn apply_role(reading: &mut Reading<'_>, role: Role, text: &str, origin: &str, at: usize) {
    match role {
        Role::Data => {}
        Role::Read if text == "-" => {}
        Role::Read => reading.push(text, UseKind::Read, origin),
        // `-` is the program's output.
        Role::Write if text == "-" => {}
        Role::Write => reading.push(text, UseKind::Write, origin),
        Role::Into => reading.push(text, UseKind::Into, origin),
        Role::Unknown => reading.push(text, UseKind::Unknown, origin),
        Role::Folder => {
            reading.push(text, UseKind::Folder, origin);
            reading.folder = Some(crate::resource::shell::placed_in(
                reading.folder.as_deref(),
                text,
            ));
        }
        Role::Url => reading.push(as_url(text), UseKind::Url, origin),
        Role::Source => match source(text) {
            Source::Url(url) => reading.push(url, UseKind::Url, origin),
            Source::Path => reading.push(text, UseKind::Read, origin),
            Source::Name => {}
        },
        Role::Code => reading.flag(
            FindingKind::ProgramText,
            format!("`{}` is given program text to run", reading.name),
        ),
        Role::Script => reading.script = Some(text.to_owned()),
        Role::Command => reading.runs = Some(at),
        Role::Config => {
            reading.push(text, UseKind::Read, origin);
            reading.risk(format!(
                "`{}` reads `{text}`, whose content can make it run programs",
                reading.name
            ));
        }
        Role::AtFile => {
            let file = text
                .strip_prefix('@')
                .or_else(|| text.split_once("=@").map(|(_, f)| f))
                .or_else(|| text.split_once("=<").map(|(_, f)| f))
                .or_else(|| {
                    text.split_once('@')
                        .filter(|(n, _)| !n.contains(['=', '/']))
                        .map(|(_, f)| f)
                });
            if let Some(file) = file.map(|f| f.split(';').next().unwrap_or(f)) {
                if file == "-" || file.is_empty() {
                    return;
                }
                reading.push(file, UseKind::Read, format!("{origin} (`@FILE`)"));
            }
        }
    }
}

/// A URL as the program reads it: with no scheme, `http://` (curl's and wget's guess).
/// A word whose value is not known is given as written: its quotes are not part of the URL
/// (`"http://localhost:3000/?page=$p"`).
fn as_url(text: &str) -> String {
    let text = text.replace(['"', '\''], "");
    if text.contains("://") {
        text
    } else {
        format!("http://{text}")
    }
}

enum Source {
    Url(String),
    Path,
    Name,
}

/// What a package or repository source is (`git clone SRC`, `pip install SPEC`).
fn source(text: &str) -> Source {
    if let Some((scheme, rest)) = text.split_once("://") {
        // `git+https://…` fetches over `https://`.
        let scheme = scheme.rsplit('+').next().unwrap_or(scheme);
        return Source::Url(format!("{scheme}://{rest}"));
    }
    // `git@host:owner/repo.git` is ssh.
    if let Some((user_host, path)) = text.split_once(':')
        && let Some((_, host)) = user_host.split_once('@')
        && !host.is_empty()
        && !path.starts_with("//")
        && !user_host.contains('/')
    {
        return Source::Url(format!("ssh://{user_host}/{path}"));
    }
    let looks_like_a_path = text.starts_with(['.', '/', '~'])
        || text.contains('/')
        || [".whl", ".tar.gz", ".tgz", ".zip", ".tar"]
            .iter()
            .any(|s| text.ends_with(s));
    if looks_like_a_path {
        Source::Path
    } else {
        Source::Name
    }
}

/// The option a long name (`name` without dashes) means at this level: exact, else (with
/// abbreviations) the one option it is an unambiguous start of.
fn find_long(
    reading: &Reading<'_>,
    program: &'static Program,
    level: &Level,
    name: &str,
    abbreviations: bool,
) -> Option<(&'static Opt, &'static str)> {
    let lists = option_lists(reading, program, level);
    for opt in lists.iter().flat_map(|l| l.iter()) {
        if let Some(full) = opt.longs().find(|l| *l == name) {
            return Some((opt, full));
        }
    }
    if !abbreviations || name.is_empty() {
        return None;
    }
    // An abbreviation names one option: every long name it starts goes by the same name.
    let mut found: Option<(&'static Opt, &'static str, OptName)> = None;
    for opt in lists.iter().flat_map(|l| l.iter()) {
        for full in opt.longs().filter(|l| l.starts_with(name)) {
            let identity = canonical(opt, OptName::Long(full));
            match found {
                Some((_, _, seen)) if seen != identity => return None,
                Some(_) => {}
                None => found = Some((opt, full, identity)),
            }
        }
    }
    found.map(|(opt, full, _)| (opt, full))
}

fn find_short_at(
    reading: &Reading<'_>,
    program: &'static Program,
    level: &Level,
    letter: char,
) -> Option<&'static Opt> {
    option_lists(reading, program, level)
        .iter()
        .flat_map(|l| l.iter())
        .find(|o| o.short.contains(letter))
}

fn find_short(
    reading: &Reading<'_>,
    program: &'static Program,
    letter: char,
) -> Option<&'static Opt> {
    let level = Level {
        options: program.options,
        shared: &[],
        operands: program.operands,
        subs: program.subs,
    };
    find_short_at(reading, program, &level, letter)
}

/// The option lists an option is looked up in at this level: the level's own, then, for
/// programs whose options apply everywhere, the program's and its outer subcommands'.
fn option_lists(
    reading: &Reading<'_>,
    program: &'static Program,
    level: &Level,
) -> Vec<&'static [Opt]> {
    let mut lists = vec![level.options, level.shared];
    if program.options_everywhere && !reading.subs.is_empty() {
        lists.extend(
            reading
                .subs
                .iter()
                .rev()
                .skip(1)
                .flat_map(|s| [s.options, s.shared]),
        );
        lists.push(program.options);
    }
    lists
}

/// The subcommand `word` names, and its name: by a name (an alias, `i=install`, by the name it
/// stands for), or, for programs that allow it, by an unambiguous start of one (`npm publ`).
fn find_sub(
    subs: &'static [Sub],
    word: &str,
    program: &Program,
) -> Option<(&'static Sub, &'static str)> {
    let names = || {
        subs.iter().flat_map(|sub| {
            sub.names.iter().map(move |entry| {
                let (written, name) = entry.split_once('=').unwrap_or((entry, entry));
                (sub, written, name)
            })
        })
    };
    if let Some((sub, _, name)) = names().find(|(_, written, _)| *written == word) {
        return Some((sub, name));
    }
    if !program.abbreviated_subs || word.is_empty() {
        return None;
    }
    let mut found: Option<(&'static Sub, &'static str)> = None;
    for (sub, written, name) in names() {
        if written.starts_with(word) {
            match found {
                Some((_, n)) if n != name => return None,
                _ => found = Some((sub, name)),
            }
        }
    }
    found
}
