//! Guards (DESIGN §4.1 step 2): what no rule, grant, mode or override can loosen.
//!
//! | guard | decision | when |
//! |---|---|---|
//! | `invalid-path` | deny | a path is empty, has NUL, is a Windows or remote path, or cannot be resolved |
//! | `path-outside-workspace` | deny | a path (or a dangling symlink, or a symlink loop) is outside every root |
//! | `protected-path` | deny / ask | a write to toolgate's own files (`.toolgate/`) / to other agents' configuration |
//! | `network-origin` | deny | a network-originated turn writes, or runs a command the policy does not list |
//! | `unanalysable-command` | ask | a command toolgate cannot fully analyse (a finding), or a call whose arguments name none of the resources its profile reads them from |
//! | `elevated-command` | ask | `sudo` or `doas` |
//! | `invalid-url` | deny | a URL that does not parse, has control characters or user info |
//! | `option-injection` | ask | an argument of a tool that passes arguments to git starts with `-` |

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use crate::call::Call;
use crate::decision::{Access, Decision, Origin};
use crate::places::Place;
use crate::policy::Policy;
use crate::profile::Profile;
use crate::resource::matchers::{PathGlob, PathMatcher};
use crate::resource::path::PathProblem;
use crate::resource::shell::FindingKind;
use crate::rule::{Facts, RuleInfo};
use crate::subject::{PathRole, PathSubject, Subject};

/// A guard's verdict on a subject.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Guard {
    pub(crate) decision: Decision,
    pub(crate) name: &'static str,
    pub(crate) reason: String,
}

impl Guard {
    fn deny(name: &'static str, reason: String) -> Guard {
        Guard {
            decision: Decision::Deny,
            name,
            reason,
        }
    }

    fn ask(name: &'static str, reason: String) -> Guard {
        Guard {
            decision: Decision::Ask,
            name,
            reason,
        }
    }

    pub(crate) fn info(&self) -> Arc<RuleInfo> {
        Arc::new(RuleInfo {
            name: self.name.to_owned(),
            file: None,
            line: None,
            builtin: true,
            unsandboxed: false,
        })
    }
}

/// Paths no agent writes without a person: toolgate's own (deny) and other agents' and tools'
/// configuration (ask). Matched at any depth, ignoring case.
///
/// A folder is protected itself as well as what it holds: `mv evil .git` swaps in another
/// repository's hooks, `mv .git old` takes the real ones away. The globs without `**/` place
/// the same folders at each workspace root, so a write that changes a root (or a folder above
/// it) with everything inside reaches them (`tar xzf a.tgz`, `rsync -a x/ .`, `rm -rf .`),
/// while a write to another folder (`tar xzf a.tgz -C build`) does not.
pub(crate) const TOOLGATE_PROTECTED: &[&str] = &["**/.toolgate", "**/.toolgate/**", ".toolgate/**"];
pub(crate) const BUILTIN_PROTECTED: &[&str] = &[
    ".git/**",
    ".mcp.json",
    ".vscode/**",
    ".claude/**",
    ".codex/**",
    ".gemini/**",
    ".cursor/**",
    "**/.git",
    "**/.git/**",
    "**/.mcp.json",
    "**/.vscode",
    "**/.vscode/**",
    "**/.claude",
    "**/.claude/**",
    "**/.codex",
    "**/.codex/**",
    "**/.gemini",
    "**/.gemini/**",
    "**/.cursor",
    "**/.cursor/**",
    // What agents read as their instructions when they start in a folder: a write there
    // speaks to every later session (and to other agents).
    "**/CLAUDE.md",
    "**/CLAUDE.local.md",
    "**/AGENTS.md",
    "**/AGENTS.override.md",
    "**/GEMINI.md",
    "**/.cursorrules",
    "**/.windsurfrules",
    "**/.windsurf/**",
    "**/.clinerules",
    "**/.clinerules/**",
    "**/.roo/**",
    "**/.roomodes",
    "**/.goosehints",
    "**/.github/copilot-instructions.md",
    "**/.github/instructions/**",
    // direnv runs `.envrc` in every shell that enters the folder.
    "**/.envrc",
    // Other agents' and editors' configuration, which names programs they run: MCP servers,
    // tasks, run configurations, local vim scripts, dev containers' commands.
    "**/.kiro/**",
    "**/.amazonq/**",
    "**/.continue/**",
    "**/.opencode/**",
    "**/opencode.json",
    "**/.aider.conf.yml",
    "**/.zed",
    "**/.zed/**",
    "**/.idea",
    "**/.idea/**",
    "**/.fleet/**",
    "**/.nvim.lua",
    "**/.exrc",
    "**/.devcontainer/**",
    // Hooks: the folders projects point git's `core.hooksPath` at by convention (husky's and
    // others'; the repository's own setting is read too), pre-commit's configuration.
    "**/.husky",
    "**/.husky/**",
    "**/.githooks",
    "**/.githooks/**",
    "**/.git-hooks",
    "**/.git-hooks/**",
    "**/.pre-commit-config.yaml",
    // What builds and CI run besides the project's code: cargo's configuration (`rustc-wrapper`,
    // runners, linkers), the toolchain file (`path` to any toolchain), CI workflows (which run
    // with the repository's secrets), and installed packages (a `.pth` file runs at every start
    // of Python).
    "**/.cargo/config",
    "**/.cargo/config.toml",
    "**/rust-toolchain",
    "**/rust-toolchain.toml",
    "**/.github/workflows/**",
    "**/.gitlab-ci.yml",
    "**/site-packages/**",
];

/// Whether a file directly in a data folder is one of the daemon's: its token, the address it
/// listens on, and the store's files (`toolgate.db` and those beside it).
fn is_daemon_file(name: &str) -> bool {
    matches!(name, "token" | "address") || name.starts_with("toolgate.db")
}

/// Compiles protected globs (built-in ones are known to compile).
pub(crate) fn compile_protected(globs: &[&str]) -> PathMatcher {
    let globs: Vec<PathGlob> = globs
        .iter()
        .filter_map(|g| PathGlob::new(g, None).ok())
        .collect();
    PathMatcher::new(globs)
}

fn stricter(current: Option<Guard>, candidate: Guard) -> Option<Guard> {
    match current {
        Some(c) if c.decision >= candidate.decision => Some(c),
        _ => Some(candidate),
    }
}

impl Policy {
    /// Guards that hold for the whole call, whatever the subject.
    pub(crate) fn call_guard(
        &self,
        call: &Call,
        facts: &Facts<'_>,
        profile: Option<&Profile>,
    ) -> Option<Guard> {
        let mut guard = None;
        if call.context.origin == Some(Origin::Network) && facts.access == Some(Access::Write) {
            guard = stricter(
                guard,
                Guard::deny(
                    "network-origin",
                    format!("a network-originated turn cannot write (`{}`)", call.tool),
                ),
            );
        }
        // Arguments that reach none of the resources the profile names, but carry something
        // (`read_file {"absolute_path": "/root/.ssh/id_rsa"}` for a profile that reads `/path`):
        // the resource is where toolgate does not look, and a call read as touching nothing
        // would pass for a read.
        if let Some(profile) = profile.filter(|p| !p.optional)
            && let Some(names) = unreached(profile, &call.args)
        {
            guard = stricter(
                guard,
                Guard::ask(
                    "unanalysable-command",
                    format!(
                        "toolgate cannot let this through without a human: the call has none of \
                         the arguments {} names its resources with ({names}), so \
                         toolgate cannot see what it touches",
                        profile.info
                    ),
                ),
            );
        }
        // A tool no profile describes may still name toolgate's data in any argument.
        if !profile.is_some_and(Profile::has_resources)
            && let Some(named) = self.names_own_data(&call.args)
        {
            guard = stricter(
                guard,
                Guard::deny(
                    "protected-path",
                    format!(
                        "`{named}` is toolgate's own data (its API token, store and cache); agents \
                         never read or write it"
                    ),
                ),
            );
        }
        if profile.is_some_and(|p| p.options_guard)
            && let Some(option) = first_option(&call.args)
        {
            guard = stricter(
                guard,
                Guard::ask(
                    "option-injection",
                    format!(
                        "the argument `{option}` starts with `-`, so the tool would read it as an option"
                    ),
                ),
            );
        }
        guard
    }

    /// The strictest guard on one subject (the call's guard included).
    pub(crate) fn subject_guard(
        &self,
        call: &Call,
        subject: &Subject,
        call_guard: Option<&Guard>,
    ) -> Option<Guard> {
        let mut guard = call_guard.cloned();
        let network = call.context.origin == Some(Origin::Network);
        if let Subject::Path(p) = subject
            && let Some(g) = self.own_data_guard(p)
        {
            guard = stricter(guard, g);
        }
        match subject {
            Subject::Call => {}
            Subject::Path(p) if p.role == PathRole::Operand => {
                if let Some(g) = self.operand_guard(p) {
                    guard = stricter(guard, g);
                }
            }
            Subject::Path(p) if p.role.is_mention() => {}
            Subject::Path(p) => {
                if let Some(g) = self.path_guard(p) {
                    guard = stricter(guard, g);
                }
                if network && p.access == Access::Write {
                    guard = stricter(
                        guard,
                        Guard::deny(
                            "network-origin",
                            format!("a network-originated turn cannot write `{}`", p.given),
                        ),
                    );
                }
            }
            Subject::Command(c) => {
                for f in c.findings() {
                    let g = match f.kind {
                        FindingKind::Elevated => Guard::ask("elevated-command", f.detail.clone()),
                        _ => Guard::ask(
                            "unanalysable-command",
                            format!(
                                "toolgate cannot let this through without a human: {}",
                                f.detail
                            ),
                        ),
                    };
                    guard = stricter(guard, g);
                }
                if network
                    && !self
                        .settings
                        .network_commands
                        .iter()
                        .any(|p| p.is_allowed_prefix(&c.command.argv))
                {
                    guard = stricter(
                        guard,
                        Guard::deny(
                            "network-origin",
                            "a network-originated turn may only run the commands listed in `[network_turns]`".into(),
                        ),
                    );
                }
            }
            Subject::Url(u) if u.mentioned => {}
            Subject::Url(u) => {
                if let Some(problem) = &u.problem {
                    guard = stricter(
                        guard,
                        Guard::deny("invalid-url", format!("`{}`: {problem}", u.given)),
                    );
                }
            }
        }
        guard
    }

    /// The first text in `args` that is an absolute or `~` path into toolgate's own data (at
    /// most 1,000 paths are resolved; past them, one is assumed to be).
    fn names_own_data(&self, args: &Value) -> Option<String> {
        // Most calls carry no text that could be a path: nothing to look at, nothing to
        // allocate.
        let may_name = |v: &Value| match v {
            Value::String(t) => matches!(t.trim_start().as_bytes().first(), Some(b'/' | b'~')),
            Value::Array(items) => !items.is_empty(),
            Value::Object(map) => !map.is_empty(),
            _ => false,
        };
        if self.own_data.is_empty() || !may_name(args) {
            return None;
        }
        // The home folder is read only for a `~` path.
        let mut home: Option<Option<PathBuf>> = None;
        let mut stack = vec![args];
        let mut looked = 0usize;
        while let Some(value) = stack.pop() {
            match value {
                Value::String(text) => {
                    let trimmed = text.trim();
                    let path = match trimmed.strip_prefix('~') {
                        Some(rest) if rest.is_empty() || rest.starts_with('/') => home
                            .get_or_insert_with(|| std::env::var_os("HOME").map(PathBuf::from))
                            .as_ref()
                            .map(|h| h.join(rest.trim_start_matches('/'))),
                        Some(_) => None,
                        None if trimmed.starts_with('/') => Some(PathBuf::from(trimmed)),
                        None => None,
                    };
                    let Some(path) = path else { continue };
                    looked += 1;
                    if looked > 1_000 {
                        return Some("one of more than 1,000 paths".to_owned());
                    }
                    let lexical = crate::resource::path::normalize(&path);
                    let resolved = crate::resource::path::resolve_existing_prefix(&lexical).ok();
                    let inside =
                        |p: &std::path::Path| self.own_data.iter().any(|f| p.starts_with(f));
                    if inside(&lexical) || resolved.as_deref().is_some_and(inside) {
                        return Some(text.clone());
                    }
                }
                Value::Array(items) => stack.extend(items),
                Value::Object(map) => stack.extend(map.values()),
                Value::Null | Value::Bool(_) | Value::Number(_) => {}
            }
        }
        None
    }

    /// A path in toolgate's own data (its API token answers any request): refused, read or
    /// written, named or mentioned; a folder read or changed whole that holds it asks. A data
    /// folder that holds the workspace itself (a workspace inside it, or the data folder as
    /// the workspace) protects the daemon's own files in it — the token, the address file, the
    /// store's files — not everything inside the workspace.
    fn own_data_guard(&self, p: &PathSubject) -> Option<Guard> {
        let resolved = p.resolved.as_ref()?;
        for folder in &self.own_data {
            let holds_workspace = resolved
                .root
                .as_ref()
                .is_some_and(|root| root.starts_with(folder));
            let own = |r: &std::path::Path| {
                if !holds_workspace {
                    return r.starts_with(folder);
                }
                r.parent() == Some(folder.as_path())
                    && r.file_name()
                        .and_then(|name| name.to_str())
                        .is_some_and(is_daemon_file)
            };
            if resolved.readings().any(own) {
                return Some(Guard::deny(
                    "protected-path",
                    format!(
                        "`{}` is toolgate's own data (`{}`: its API token, store and cache); agents \
                         never read or write it",
                        p.given,
                        folder.display()
                    ),
                ));
            }
            if p.recursive && resolved.readings().any(|r| folder.starts_with(r)) {
                return Some(Guard::ask(
                    "protected-path",
                    format!(
                        "`{}` holds toolgate's own data (`{}`: its API token, store and cache): a \
                         person decides",
                        p.given,
                        folder.display()
                    ),
                ));
            }
        }
        None
    }

    /// An operand of a program that may write it: a protected path asks.
    fn operand_guard(&self, p: &PathSubject) -> Option<Guard> {
        let resolved = p.resolved.as_ref()?;
        let roots: Vec<PathBuf> = resolved.root.iter().cloned().collect();
        let hits = |matcher: &PathMatcher| {
            resolved
                .readings()
                .any(|path| matcher.matches_folded(path, &roots))
                || p.recursive
                    && resolved
                        .readings()
                        .any(|path| matcher.holds_inside(path, &roots, true))
        };
        let whose = if hits(&self.protected_own) {
            "toolgate's own configuration"
        } else if hits(&self.protected) {
            "configuration that other tools run"
        } else {
            return None;
        };
        Some(Guard::ask(
            "protected-path",
            format!("`{}` is {whose}, and {} may write it", p.given, p.source),
        ))
    }

    fn path_guard(&self, p: &PathSubject) -> Option<Guard> {
        let resolved = match (&p.resolved, &p.problem) {
            (Some(r), _) => r,
            (None, Some(problem @ (PathProblem::Dangling(_) | PathProblem::Loop(_)))) => {
                return Some(Guard::deny(
                    "path-outside-workspace",
                    format!("`{}`: {problem}", p.given),
                ));
            }
            (None, Some(problem)) => {
                return Some(Guard::deny(
                    "invalid-path",
                    format!("`{}`: {problem}", p.given),
                ));
            }
            (None, None) => {
                return Some(Guard::deny(
                    "invalid-path",
                    format!("`{}` cannot be checked", p.given),
                ));
            }
        };
        let linked = p.role == PathRole::Linked;
        let place = p.place.filter(|_| resolved.root.is_none());
        match place {
            Some(Place::Scratch) => {}
            Some(Place::ReadOnly) if p.access != Access::Write || linked => return None,
            Some(Place::ReadOnly) => {
                return Some(Guard::deny(
                    "path-outside-workspace",
                    format!(
                        "`{}` resolves to `{}`, in a place outside the workspace that may be read, \
                         not written",
                        p.given,
                        resolved.resolved.display()
                    ),
                ));
            }
            None => {}
        }
        if resolved.root.is_none() && place.is_none() && !linked {
            let alternative = resolved
                .alternative
                .as_ref()
                .map(|a| {
                    format!(
                        " (or `{}` for tools that normalise `..` first)",
                        a.display()
                    )
                })
                .unwrap_or_default();
            return Some(Guard::deny(
                "path-outside-workspace",
                format!(
                    "`{}` resolves to `{}`{alternative}, outside the workspace",
                    p.given,
                    resolved.resolved.display()
                ),
            ));
        }
        if p.access != Access::Write && !linked {
            return None;
        }
        // A file with other names (hard links) changes under all of them.
        if !linked && has_other_names(&resolved.resolved) {
            return Some(Guard::ask(
                "protected-path",
                format!(
                    "`{}` has other names (hard links) toolgate cannot see: writing it changes \
                     them too",
                    p.given
                ),
            ));
        }
        let roots: Vec<PathBuf> = match &resolved.root {
            Some(root) => vec![root.clone()],
            None => Vec::new(),
        };
        // How a protected path is written: as named, or inside a folder changed whole
        // (`rm -r .` removes `.github/workflows` too).
        // `(what, whole)`: whether the path is protected, or holds a protected path.
        let hit = |matcher: &PathMatcher| {
            let readings = || resolved.readings();
            if readings().any(|path| matcher.matches_folded(path, &roots)) {
                Some((format!("`{}` is", p.given), false))
            } else if p.recursive && readings().any(|path| matcher.holds_inside(path, &roots, true))
            {
                Some((format!("`{}` holds", p.given), true))
            } else {
                None
            }
        };
        if let Some((what, whole)) = hit(&self.protected_own) {
            // A folder changed whole (`tar xzf a.tgz` unpacks into `.`) may not touch it: a
            // person looks.
            return Some(if whole {
                Guard::ask(
                    "protected-path",
                    format!(
                        "`{}` is changed with everything inside it, which may include toolgate's \
                         own configuration (`.toolgate/`): a person decides",
                        p.given
                    ),
                )
            } else {
                Guard::deny(
                    "protected-path",
                    format!("{what} toolgate's own configuration; agents never write it"),
                )
            });
        }
        if let Some((what, _)) = hit(&self.protected) {
            return Some(Guard::ask(
                "protected-path",
                format!(
                    "{what} configuration that other tools run (git hooks, editor and agent settings)"
                ),
            ));
        }
        // The folder the repository's git runs hooks from (`core.hooksPath`), wherever the
        // project put it.
        if let Some(root) = &resolved.root
            && let Some(hooks) = hooks_folder(root)
        {
            let lower = |p: &std::path::Path| p.to_string_lossy().to_lowercase();
            let inside = |path: &std::path::Path| {
                path.starts_with(&hooks)
                    || std::path::Path::new(&lower(path)).starts_with(lower(&hooks))
            };
            let holds = |path: &std::path::Path| p.recursive && hooks.starts_with(path);
            if resolved.readings().any(|path| inside(path) || holds(path)) {
                return Some(Guard::ask(
                    "protected-path",
                    format!(
                        "`{}` is in `{}`, the folder git runs hooks from (`core.hooksPath`)",
                        p.given,
                        hooks.display()
                    ),
                ));
            }
        }
        None
    }
}

/// The folder git runs hooks from for the repository at `root`, when its configuration (the
/// repository's, else the user's) sets `core.hooksPath`: relative to `root`, `~` expanded.
fn hooks_folder(root: &std::path::Path) -> Option<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".config")));
    let configs = [
        Some(root.join(".git/config")),
        xdg.map(|x| x.join("git/config")),
        home.as_ref().map(|h| h.join(".gitconfig")),
    ];
    let value = configs
        .into_iter()
        .flatten()
        .find_map(|file| hooks_path_setting(&std::fs::read_to_string(file).ok()?))?;
    let path = match value.strip_prefix("~/") {
        Some(rest) => home?.join(rest),
        None => root.join(&value),
    };
    Some(crate::resource::path::normalize(&path))
}

/// `core.hooksPath` in a git configuration file's text (section and key in any case, the value
/// trimmed and unquoted); the last one set wins, as git reads it.
fn hooks_path_setting(text: &str) -> Option<String> {
    let mut in_core = false;
    let mut found = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(header) = line.strip_prefix('[') {
            let name = header.split([']', ' ', '"']).next().unwrap_or_default();
            in_core = name.eq_ignore_ascii_case("core");
            continue;
        }
        if !in_core {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if key.trim().eq_ignore_ascii_case("hooksPath") {
            let value = value.split([';', '#']).next().unwrap_or_default().trim();
            let value = value.trim_matches('"').trim();
            found = (!value.is_empty()).then(|| value.to_owned());
        }
    }
    found
}

/// Whether an existing regular file has more than one name.
fn has_other_names(path: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.nlink() > 1)
}

/// The resource arguments `profile` names, when `args` reach none of them but carry some text
/// or number (which may name a resource elsewhere).
fn unreached(profile: &Profile, args: &Value) -> Option<String> {
    let pointers: Vec<&crate::profile::Pointer> = profile.resource_pointers().collect();
    if pointers.is_empty()
        || pointers.iter().any(|p| !p.values(args).is_empty())
        || !carries_something(args)
    {
        return None;
    }
    let names: Vec<String> = pointers.iter().map(|p| format!("`{}`", p.text)).collect();
    Some(names.join(", "))
}

/// Whether `value` holds any text or number.
fn carries_something(value: &Value) -> bool {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::String(_) | Value::Number(_) => return true,
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.values()),
            Value::Null | Value::Bool(_) => {}
        }
    }
    false
}

/// The first string argument (at any depth) that starts with `-`.
fn first_option(args: &Value) -> Option<String> {
    match args {
        Value::String(s) if s.trim_start().starts_with('-') => Some(s.clone()),
        Value::Array(items) => items.iter().find_map(first_option),
        Value::Object(map) => map.values().find_map(first_option),
        Value::String(_) | Value::Null | Value::Bool(_) | Value::Number(_) => None,
    }
}
