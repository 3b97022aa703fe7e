//! Subjects: what a call touches. Each subject is decided on its own and the strictest result
//! wins.
//!
//! A call's subjects are its resources — each path, each simple command, each URL — or the call
//! itself when it has none. Rules without resource conditions apply to every subject; a rule
//! with `path`, `command` or URL conditions only to subjects of that kind.
//!
//! Some subjects are only *mentioned*: arguments of a command that may name files, URLs in a
//! command's arguments. They are not confined and no default applies to them, but deny and ask
//! rules see them, so `deny path = ["**/.env"]` also stops `cat .env`.

use std::fmt;

use serde::Serialize;

use crate::decision::Access;
use crate::resource::path::{PathProblem, ResolvedPath};
use crate::resource::shell::{Finding, SimpleCommand};
use crate::resource::url::{CheckedUrl, UrlProblem};

/// Why a path is a subject of the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PathRole {
    /// A path argument of a file tool (its profile's `paths`).
    Argument,
    /// A folder the call runs in (a profile's `cwd`, `cd dir`, `git -C dir`).
    Folder,
    /// A redirection target (`> file`, `< file`).
    Redirect,
    /// A file or folder a command reads: an operand or option value its program's record says
    /// it reads (`cat FILE`, `grep -f FILE`, `curl -d @FILE`).
    Read,
    /// A file a writing program writes (`rm`, `mv`, `cp` target, `tee`, `sed -i`, …).
    Written,
    /// Any other command argument that may name a file (deny and ask rules only).
    Mentioned,
    /// An operand of a program toolgate does not know to only read its operands (`cargo build
    /// --target-dir X`, `ssh-keygen -f X`): deny and ask rules see it, and so do the protected
    /// paths, which ask, since the program may write it.
    Operand,
    /// What a link the command makes leads to (`ln -s TARGET NAME`, `cp -l`, `link`): writing
    /// through the link writes it, so the protected paths treat it as written; it may lie
    /// outside the workspace (`ln -s /usr/bin/python3 venv/bin/python`).
    Linked,
}

impl PathRole {
    /// Whether only deny and ask rules look at it.
    pub const fn is_mention(self) -> bool {
        matches!(self, PathRole::Mentioned | PathRole::Operand)
    }
}

/// A place outside the workspace a path may lie in ([`PathSubject::place`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OutsidePlace {
    /// A place that may be read (a dependency cache, a toolchain, the system's own files).
    ReadOnly,
    /// A place that may be read and written without asking (the system's temporary folders).
    Scratch,
}

/// A path the call touches.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PathSubject {
    /// The path as given.
    pub given: String,
    /// Read or write.
    pub access: Access,
    /// Why it is a subject.
    pub role: PathRole,
    /// Whether the command reads or changes everything inside it, when it is a folder
    /// (`grep -r`, `rg`, `tar -c`, `cp -r`, `rm -r`, …): deny and ask rules then also match
    /// what lies inside it by its place (`~/.ssh/**` stops `grep -r key ~/.ssh`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub recursive: bool,
    /// Where it was found (`/path`, or the command it appears in).
    pub source: String,
    /// The resolution, when the path could be resolved.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<ResolvedPath>,
    /// The place outside the workspace it lies in, if any: one that may be read, or one that
    /// may be read and written (scratch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub place: Option<OutsidePlace>,
    /// Why it could not be, otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<PathProblem>,
}

/// A simple command the call runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CommandSubject {
    /// The command, unwrapped.
    #[serde(flatten)]
    pub command: SimpleCommand,
    /// Findings about the whole command line it is part of.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub line_findings: Vec<Finding>,
}

impl CommandSubject {
    /// Every finding that applies to this command.
    pub fn findings(&self) -> impl Iterator<Item = &Finding> {
        self.line_findings
            .iter()
            .chain(self.command.findings.iter())
    }
}

/// A URL the call fetches (or, when `mentioned`, names in a command).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UrlSubject {
    /// The URL as given.
    pub given: String,
    /// Where it came from: the argument that holds it, or the command and its place in it
    /// (`` `curl -s https://x` (operand 2) ``); empty when not known.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub source: String,
    /// Whether it only appears in a command's arguments.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub mentioned: bool,
    /// The parsed URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checked: Option<CheckedUrl>,
    /// Why it could not be parsed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<UrlProblem>,
}

/// One thing a call touches, decided on its own. The resources are boxed: a subject is moved
/// into its outcome and the evaluation, and a call as a whole (the commonest) carries none.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Subject {
    /// The call as a whole (a call with no resources).
    Call,
    /// A path.
    Path(Box<PathSubject>),
    /// A simple command.
    Command(Box<CommandSubject>),
    /// A URL.
    Url(Box<UrlSubject>),
}

impl Subject {
    /// A path subject.
    pub fn path(subject: PathSubject) -> Subject {
        Subject::Path(Box::new(subject))
    }

    /// A command subject.
    pub fn command(subject: CommandSubject) -> Subject {
        Subject::Command(Box::new(subject))
    }

    /// A URL subject.
    pub fn url(subject: UrlSubject) -> Subject {
        Subject::Url(Box::new(subject))
    }

    /// What the subject touches, as one line for a log: a path (resolved, when it could be),
    /// a simple command, a URL; none for the call as a whole.
    pub fn resource(&self) -> Option<String> {
        match self {
            Subject::Call => None,
            Subject::Path(p) => Some(
                p.resolved
                    .as_ref()
                    .map_or_else(|| p.given.clone(), |r| r.resolved.display().to_string()),
            ),
            Subject::Command(c) => Some(c.command.text.clone()),
            Subject::Url(u) => Some(u.given.clone()),
        }
    }

    /// The subject's kind, as written in results (`call`, `path`, `command`, `url`).
    pub const fn kind(&self) -> &'static str {
        match self {
            Subject::Call => "call",
            Subject::Path(_) => "path",
            Subject::Command(_) => "command",
            Subject::Url(_) => "url",
        }
    }

    /// Whether only deny and ask rules look at this subject.
    pub fn is_mention(&self) -> bool {
        match self {
            Subject::Path(p) => p.role.is_mention(),
            Subject::Url(u) => u.mentioned,
            Subject::Call | Subject::Command(_) => false,
        }
    }

    /// The kind of access the subject makes, when it has its own.
    pub fn access(&self) -> Option<Access> {
        match self {
            Subject::Call => None,
            Subject::Path(p) => Some(p.access),
            Subject::Command(c) => Some(c.command.access()),
            Subject::Url(_) => Some(Access::Network),
        }
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Subject::Call => f.write_str("the call"),
            Subject::Path(p) => {
                let role = match p.role {
                    PathRole::Argument => "path",
                    PathRole::Folder => "folder",
                    PathRole::Redirect => "redirection target",
                    PathRole::Read => "file read",
                    PathRole::Written => "written file",
                    PathRole::Mentioned => "mentioned path",
                    PathRole::Linked => "link target",
                    PathRole::Operand => "operand it may write",
                };
                let whole = if p.recursive {
                    " with everything inside it"
                } else {
                    ""
                };
                write!(
                    f,
                    "{role} `{}` ({}{whole}, {})",
                    p.given, p.access, p.source
                )?;
                match (&p.resolved, &p.problem) {
                    (Some(r), _) => {
                        write!(f, " → `{}`", r.resolved.display())?;
                        if let Some(alt) = &r.alternative {
                            write!(
                                f,
                                " (or `{}` for tools that normalise first)",
                                alt.display()
                            )?;
                        }
                        match &r.root {
                            Some(root) => write!(f, ", inside root `{}`", root.display()),
                            None => f.write_str(", outside every root"),
                        }
                    }
                    (None, Some(problem)) => write!(f, ": {problem}"),
                    (None, None) => Ok(()),
                }
            }
            Subject::Command(c) => {
                let argv: Vec<String> = c
                    .command
                    .argv
                    .iter()
                    .map(|w| w.value.clone().unwrap_or_else(|| w.text.clone()))
                    .collect();
                write!(f, "command `{}`", argv.join(" "))?;
                if !c.command.wrappers.is_empty() {
                    write!(f, " (in `{}`)", c.command.text)?;
                }
                Ok(())
            }
            Subject::Url(u) => {
                let what = if u.mentioned { "mentioned URL" } else { "URL" };
                match (&u.checked, &u.problem) {
                    (Some(c), _) if !u.source.is_empty() => {
                        write!(f, "{what} `{}` (host `{}`; {})", u.given, c.host, u.source)
                    }
                    (Some(c), _) => write!(f, "{what} `{}` (host `{}`)", u.given, c.host),
                    (None, Some(problem)) => write!(f, "{what} `{}`: {problem}", u.given),
                    (None, None) => write!(f, "{what} `{}`", u.given),
                }
            }
        }
    }
}
