//! Turning a call into its subjects with its tool profile: the paths, commands and URLs its
//! arguments hold, resolved where the call runs.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::call::Call;
use crate::decision::Access;
use crate::policy::Policy;
use crate::profile::Profile;
use crate::resource::path::{self, PathContext, PathProblem};
use crate::resource::shell::{self, Analysis, SimpleCommand};
use crate::resource::url;
use crate::subject::{CommandSubject, PathRole, PathSubject, Subject, UrlSubject};

/// Where a call runs: its workspace roots (canonical), its working folder and the home folder.
#[derive(Clone, Debug, Default)]
pub(crate) struct Place {
    pub(crate) roots: Vec<PathBuf>,
    pub(crate) cwd: PathBuf,
    pub(crate) home: Option<PathBuf>,
    /// The places outside the workspace the policy lets calls use.
    pub(crate) places: Option<std::sync::Arc<crate::places::Places>>,
}

impl Place {
    /// The place a command runs in after `cd FOLDER` (relative to this one).
    fn at(&self, folder: Option<&str>) -> Place {
        let mut here = self.clone();
        if let Some(folder) = folder
            && let Some(r) = path_subject(
                &Value::String(folder.to_owned()),
                "",
                Access::Read,
                PathRole::Folder,
                self,
            )
            .resolved
        {
            here.cwd = r.resolved;
        }
        here
    }

    /// Where `text` leads from this place, when it resolves.
    fn resolve(&self, text: &str) -> Option<PathBuf> {
        path_subject(
            &Value::String(text.to_owned()),
            "",
            Access::Read,
            PathRole::Argument,
            self,
        )
        .resolved
        .map(|r| r.resolved)
    }

    fn context(&self) -> PathContext<'_> {
        PathContext {
            roots: &self.roots,
            cwd: &self.cwd,
            home: self.home.as_deref(),
        }
    }
}

/// Whether a folder is too broad to be a workspace root (or any place a program may write as
/// the project's own): `/`, or the home folder `home` or one above it.
pub fn too_broad(root: &Path, home: Option<&Path>) -> bool {
    root.parent().is_none() || home.is_some_and(|home| home.starts_with(root))
}

impl Policy {
    /// The workspace roots of a call: the call's `context.workspace`, and the policy's roots —
    /// relative ones against the call's workspace when it has one, else against the folder of the
    /// file that declared them. With neither, the current folder.
    pub(crate) fn place(&self, call: &Call) -> Place {
        let process_cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        let workspace = call
            .context
            .workspace
            .as_deref()
            .filter(|w| !w.trim().is_empty())
            .map(|w| path::normalize(&process_cwd.join(w)));
        let mut declared: Vec<PathBuf> = Vec::new();
        if let Some(w) = &workspace {
            declared.push(w.clone());
        }
        for spec in &self.settings.roots {
            let base = workspace
                .clone()
                .or_else(|| spec.base_dir.clone())
                .unwrap_or_else(|| process_cwd.clone());
            let root = path::normalize(&base.join(&spec.path));
            if !declared.contains(&root) {
                declared.push(root);
            }
        }
        if declared.is_empty() {
            declared.push(process_cwd.clone());
        }
        let roots: Vec<PathBuf> = declared.iter().map(|r| self.canonical_root(r)).collect();
        let first = roots.first().cloned().unwrap_or_else(|| PathBuf::from("/"));
        // `/`, the home folder and the folders above it are no workspace: a root there would
        // make every file of the user's "the project's own" (an MCP client that starts its
        // servers in `/`, an agent started in `~`). Such a root confines nothing; relative paths
        // still resolve from it.
        let home = std::env::var_os("HOME").map(PathBuf::from);
        // Roots are resolved: so is the home they are compared with (`/home/u` may be a link
        // to `/data/u`).
        let resolved_home = home.as_deref().map(|h| self.canonical_root(h));
        let roots: Vec<PathBuf> = roots
            .into_iter()
            .filter(|root| {
                !too_broad(root, home.as_deref()) && !too_broad(root, resolved_home.as_deref())
            })
            .collect();
        let cwd = match call.context.cwd.as_deref().filter(|c| !c.trim().is_empty()) {
            Some(c) => {
                let joined = path::normalize(&first.join(c));
                path::resolve_existing_prefix(&joined).unwrap_or(joined)
            }
            None => first,
        };
        Place {
            roots,
            cwd,
            home,
            places: Some(self.places.clone()),
        }
    }

    /// A root as it resolves (cached: roots rarely change and resolving costs system calls).
    fn canonical_root(&self, root: &Path) -> PathBuf {
        if let Ok(cache) = self.root_cache.lock()
            && let Some(hit) = cache.get(root)
        {
            return hit.clone();
        }
        let resolved = path::resolve_existing_prefix(root).unwrap_or_else(|_| root.to_path_buf());
        if let Ok(mut cache) = self.root_cache.lock() {
            if cache.len() > 256 {
                cache.clear();
            }
            cache.insert(root.to_path_buf(), resolved.clone());
        }
        resolved
    }

    /// The subjects of a call; `[Subject::Call]` when its profile names no resource it carries.
    pub(crate) fn subjects(
        &self,
        call: &Call,
        profile: Option<&Profile>,
        place: &Place,
    ) -> Vec<Subject> {
        let Some(profile) = profile.filter(|p| p.has_resources()) else {
            return vec![Subject::Call];
        };
        let mut out = Vec::new();
        let args = &call.args;
        // An argument of the wrong shape would reach no resource and pass for an absent one.
        let pointers = profile
            .resource_pointers()
            .chain(&profile.cwd)
            .chain(&profile.command_args);
        for pointer in pointers {
            if pointer.misshapen(args) {
                out.push(unanalysable(
                    &pointer.text,
                    &format!(
                        "the argument `{}` does not have the shape this tool takes",
                        pointer.text
                    ),
                ));
            }
        }
        let file_access = match profile.access {
            Some(Access::Write) => Access::Write,
            Some(Access::Read | Access::Execute | Access::Network) | None => Access::Read,
        };
        let mut place = place.clone();
        // The working folders: every `cwd` argument present is a folder the call may run in
        // (a tool given two runs in one of them, and the other may be anywhere). Relative
        // paths resolve against the first; when they name different folders, toolgate cannot
        // tell which the tool uses.
        let folders: Vec<(&crate::profile::Pointer, &Value)> = profile
            .cwd
            .iter()
            .flat_map(|pointer| pointer.values(args).into_iter().map(move |v| (pointer, v)))
            .collect();
        let mut first_folder: Option<PathBuf> = None;
        for (pointer, value) in folders {
            let subject =
                path_subject(value, &pointer.text, Access::Read, PathRole::Folder, &place);
            let resolved = subject.resolved.as_ref().map(|r| r.resolved.clone());
            match (&first_folder, resolved) {
                (None, Some(r)) => first_folder = Some(r),
                (Some(first), Some(r)) if *first != r => out.push(unanalysable(
                    &pointer.text,
                    &format!(
                        "the call names two folders to run in (`{}` and `{}`): toolgate cannot \
                         tell which the tool uses",
                        first.display(),
                        r.display()
                    ),
                )),
                _ => {}
            }
            if !profile.paths.iter().any(|p| p.text == pointer.text) {
                out.push(Subject::path(subject));
            }
        }
        if let Some(first) = first_folder {
            place.cwd = first;
        }
        // The git server runs git in `repo_path`: a folder written to look like a repository
        // there has a `config` that makes git run programs.
        if profile.info.family == Some(crate::profile::GIT)
            && let Some(why) = foreign_repository(&place.cwd, &place.roots, &[])
        {
            out.push(unanalysable(&place.cwd.display().to_string(), &why));
        }
        let mut first_path: Option<String> = None;
        for pointer in &profile.paths {
            for value in pointer.values(args) {
                if first_path.is_none() {
                    first_path = value.as_str().map(str::to_owned);
                }
                out.push(Subject::path(path_subject(
                    value,
                    &pointer.text,
                    file_access,
                    PathRole::Argument,
                    &place,
                )));
            }
        }
        for pointer in &profile.revisions {
            for value in pointer.values(args) {
                for path in value.as_str().into_iter().flat_map(shell::revision_paths) {
                    out.push(Subject::path(path_subject(
                        &Value::String(path.to_owned()),
                        &pointer.text,
                        Access::Read,
                        PathRole::Argument,
                        &place,
                    )));
                }
            }
        }
        for pointer in &profile.patterns {
            for value in pointer.values(args) {
                let Some(pattern) = value.as_str() else {
                    continue;
                };
                let under = first_path.clone().unwrap_or_else(|| ".".into());
                let joined = if pattern.starts_with('/') {
                    pattern.to_owned()
                } else {
                    format!("{}/{pattern}", under.trim_end_matches('/'))
                };
                let value = Value::String(joined);
                out.push(Subject::path(path_subject(
                    &value,
                    &pointer.text,
                    Access::Read,
                    PathRole::Argument,
                    &place,
                )));
            }
        }
        // A patch: every file it adds, updates, deletes or moves is written.
        for pointer in &profile.patches {
            for value in pointer.values(args) {
                let Some(text) = value.as_str() else {
                    continue;
                };
                match crate::resource::patch::read(text) {
                    Ok(patch) => {
                        for (op, file) in &patch.files {
                            out.push(Subject::path(path_subject(
                                &Value::String(file.clone()),
                                &format!("{} ({} `{file}`)", pointer.text, op.describe()),
                                Access::Write,
                                PathRole::Argument,
                                &place,
                            )));
                        }
                    }
                    Err(why) => out.push(unanalysable(&pointer.text, &why)),
                }
            }
        }
        // Globs whose files the tool reads: the pattern, and every file it matches now.
        for pointer in &profile.searched {
            for value in pointer.values(args) {
                let Some(pattern) = value.as_str() else {
                    continue;
                };
                let under = first_path.clone().unwrap_or_else(|| ".".into());
                let joined = if pattern.starts_with('/') || pattern.starts_with('~') {
                    pattern.to_owned()
                } else {
                    format!("{}/{pattern}", under.trim_end_matches('/'))
                };
                out.push(Subject::path(path_subject(
                    &Value::String(joined.clone()),
                    &pointer.text,
                    Access::Read,
                    PathRole::Argument,
                    &place,
                )));
                let (folder, rest) = crate::resource::glob::literal_prefix(&joined);
                if rest.is_empty() {
                    continue;
                }
                let folder = if folder.is_empty() { "/" } else { folder };
                let Some(base) = place.resolve(folder) else {
                    continue;
                };
                expand_search(
                    rest,
                    false,
                    pattern.contains('/'),
                    &pointer.text,
                    &joined,
                    &base,
                    &place,
                    &mut out,
                );
            }
        }
        if let Some(pointer) = &profile.command
            && let Some(value) = pointer.values(args).first()
        {
            let rest = profile
                .command_args
                .as_ref()
                .and_then(|p| p.values(args).first().copied());
            let env = profile
                .command_env
                .as_ref()
                .and_then(|p| p.values(args).first().copied());
            self.command_subjects(value, rest, env, &place, &mut out);
        }
        for pointer in &profile.urls {
            for value in pointer.values(args) {
                let text = value
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| value.to_string());
                if text
                    .trim_start()
                    .get(..5)
                    .is_some_and(|s| s.eq_ignore_ascii_case("file:"))
                {
                    out.push(Subject::path(path_subject(
                        value,
                        &pointer.text,
                        Access::Read,
                        PathRole::Argument,
                        &place,
                    )));
                } else {
                    out.push(Subject::url(url_subject(&text, &pointer.text, false)));
                }
            }
        }
        for pointer in &profile.url_texts {
            for value in pointer.values(args) {
                if let Some(text) = value.as_str() {
                    let source = format!("{} (a URL in its text)", pointer.text);
                    for url in urls_in_text(text) {
                        out.push(Subject::url(url_subject(url, &source, false)));
                    }
                }
            }
        }
        if out.is_empty() {
            out.push(Subject::Call);
        }
        out
    }

    fn command_subjects(
        &self,
        value: &Value,
        rest: Option<&Value>,
        env: Option<&Value>,
        place: &Place,
        out: &mut Vec<Subject>,
    ) {
        // The variables the command runs with count as `NAME=value` before it.
        let env_findings = match env.map(environment_names).transpose() {
            Ok(names) => shell::environment_findings(names.unwrap_or_default()),
            Err(why) => {
                let text = env.map(Value::to_string).unwrap_or_default();
                return out.push(unanalysable(&text, why));
            }
        };
        let (mut analysis, text) = match (value, rest) {
            // The rest of the argv in another shape than a list: not to be read as absent.
            (_, Some(other)) if !matches!(other, Value::Array(_) | Value::Null) => {
                return out.push(unanalysable(
                    &other.to_string(),
                    "the command's arguments are not an array of strings",
                ));
            }
            (Value::String(program), Some(Value::Array(items))) if !items.is_empty() => {
                let mut argv = vec![program.clone()];
                match items
                    .iter()
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
                {
                    Some(more) => argv.extend(more),
                    None => {
                        return out.push(unanalysable(
                            program,
                            "the command's arguments are not all text",
                        ));
                    }
                }
                (
                    shell::analyze_argv_in(&argv, &place.cwd, place.home.as_deref()),
                    argv.join(" "),
                )
            }
            (Value::String(line), _) => (
                shell::analyze_in(line, &place.cwd, place.home.as_deref()),
                line.clone(),
            ),
            (Value::Array(items), _) => match items
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
            {
                Some(argv) if !argv.is_empty() => (
                    shell::analyze_argv_in(&argv, &place.cwd, place.home.as_deref()),
                    argv.join(" "),
                ),
                _ => {
                    return out.push(unanalysable(
                        &value.to_string(),
                        "the command is not an array of strings",
                    ));
                }
            },
            (other, _) => {
                return out.push(unanalysable(&other.to_string(), "the command is not text"));
            }
        };
        analysis.findings.extend(env_findings);
        self.add_analysis(analysis, &text, place, out);
    }

    fn add_analysis(&self, analysis: Analysis, text: &str, place: &Place, out: &mut Vec<Subject>) {
        let Analysis {
            mut commands,
            paths,
            urls,
            findings,
        } = analysis;
        foreign_repositories(&mut commands, &paths, place);
        // Where each path was found, for people: an excerpt, since every path of a command
        // carries it (32,000 words in one 64 KiB command would otherwise copy it 32,000 times).
        let sources: Vec<String> = commands
            .iter()
            .map(|c| format!("`{}`", source_excerpt(&c.text)))
            .collect();
        let recursive: Vec<bool> = commands.iter().map(|c| c.is_recursive()).collect();
        let follows: Vec<bool> = commands.iter().map(|c| c.follows_links()).collect();
        let on_links: Vec<bool> = commands.iter().map(|c| c.acts_on_links()).collect();
        // `mv x link`, `ln -s t link` with a link to a folder put things inside it.
        let into_folders: Vec<bool> = commands
            .iter()
            .map(|c| {
                matches!(
                    c.program().map(shell::programs::basename),
                    Some("mv" | "ln")
                )
            })
            .collect();
        // One budget, and one record of folders looked through, for the whole call.
        let mut link_walk = LinkWalk::default();
        if commands.is_empty() {
            out.push(Subject::command(CommandSubject {
                command: SimpleCommand::placeholder(text),
                line_findings: findings.clone(),
            }));
        }
        for command in commands {
            out.push(Subject::command(CommandSubject {
                command,
                line_findings: findings.clone(),
            }));
        }
        for p in paths {
            let here = place.at(p.cwd.as_deref());
            let command = sources
                .get(p.command)
                .cloned()
                .unwrap_or_else(|| format!("`{text}`"));
            let source = format!("{command} ({})", p.origin);
            if p.pattern {
                expand_search(
                    &p.text,
                    true,
                    false,
                    &source,
                    text,
                    &here.cwd.clone(),
                    &here,
                    out,
                );
                continue;
            }
            // `rm link`, `mv link x`, `ln -sf t link` act on the link, not where it leads.
            let mut subject = if matches!(p.role, PathRole::Written | PathRole::Read)
                && on_links.get(p.command).copied().unwrap_or(false)
            {
                let into = into_folders.get(p.command).copied().unwrap_or(true)
                    && p.role == PathRole::Written;
                link_itself_subject(&p.text, &source, p.access, p.role, &here, into)
            } else {
                path_subject(&Value::String(p.text), &source, p.access, p.role, &here)
            };
            // Its operands, not its redirections or the folder it runs in.
            subject.recursive = matches!(
                p.role,
                PathRole::Read | PathRole::Mentioned | PathRole::Operand | PathRole::Written
            ) && recursive.get(p.command).copied().unwrap_or(false)
                && !is_kernel_file(subject.resolved.as_ref());
            let followed: Vec<PathBuf> = if subject.recursive
                && matches!(
                    p.role,
                    PathRole::Read | PathRole::Mentioned | PathRole::Operand
                )
                && follows.get(p.command).copied().unwrap_or(false)
            {
                subject
                    .resolved
                    .as_ref()
                    .map(agent_readings)
                    .unwrap_or_default()
            } else {
                Vec::new()
            };
            out.push(Subject::path(subject));
            if !followed.is_empty() {
                link_walk.follow(followed, &source, text, &here, out);
            }
        }
        for u in urls {
            let command = sources
                .get(u.command)
                .cloned()
                .unwrap_or_else(|| format!("`{text}`"));
            let source = format!("{command} ({})", u.origin);
            out.push(Subject::url(url_subject(&u.text, &source, !u.fetched)));
        }
    }
}

/// The first 160 characters of a command, marked when cut.
fn source_excerpt(text: &str) -> std::borrow::Cow<'_, str> {
    const KEEP: usize = 160;
    match text.char_indices().nth(KEEP) {
        None => std::borrow::Cow::Borrowed(text),
        Some((cut, _)) => std::borrow::Cow::Owned(format!("{}…", text.get(..cut).unwrap_or(""))),
    }
}

/// Which mentioned resources any deny or ask rule could match (so others are not resolved).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MentionRules {
    pub(crate) paths: bool,
    pub(crate) urls: bool,
}

/// The names of the environment variables a command runs with: a list of `{"name", "value"}`
/// (ACP's `terminal/create`) or an object of names to values. Any other shape, or a name no
/// environment can hold, is not read as "none".
fn environment_names(env: &Value) -> Result<Vec<&str>, &'static str> {
    const BAD: &str = "the command's environment is not a list of `{\"name\", \"value\"}`";
    let valid = |name: &str| !name.is_empty() && !name.contains(['=', '\0']);
    let names: Vec<&str> = match env {
        Value::Null => Vec::new(),
        Value::Array(items) => items
            .iter()
            .map(|item| item.get("name").and_then(Value::as_str).ok_or(BAD))
            .collect::<Result<_, _>>()?,
        Value::Object(map) => map.keys().map(String::as_str).collect(),
        _ => return Err(BAD),
    };
    if names.iter().all(|name| valid(name)) {
        Ok(names)
    } else {
        Err("the command's environment names a variable no environment can hold")
    }
}

fn unanalysable(text: &str, why: &str) -> Subject {
    Subject::command(CommandSubject {
        command: SimpleCommand::placeholder(text),
        line_findings: vec![shell::Finding {
            kind: shell::FindingKind::Unsupported,
            detail: why.to_owned(),
        }],
    })
}

/// The files under `base` the glob `pattern` matches, each a read subject: git's pathspecs
/// (`crossing`: `*` crosses folders) and a searcher's globs (ripgrep's `--glob`, an agent's grep
/// tool). Folders a project does not track are not looked in; a pattern matched against more
/// names than toolgate looks through, or not a pattern, is unanalysable.
#[allow(clippy::too_many_arguments)]
fn expand_search(
    pattern: &str,
    crossing: bool,
    anchored: bool,
    source: &str,
    text: &str,
    base: &Path,
    here: &Place,
    out: &mut Vec<Subject>,
) {
    match crate::resource::glob::search(pattern, base, crossing, anchored) {
        Ok(matched) => {
            let source = format!("{source}, matching `{pattern}`");
            for path in matched {
                let given = Value::String(path.to_string_lossy().into_owned());
                out.push(Subject::path(path_subject(
                    &given,
                    &source,
                    Access::Read,
                    PathRole::Read,
                    here,
                )));
            }
        }
        Err(why) => out.push(unanalysable(text, &format!("{source}: {why}"))),
    }
}

/// How many entries toolgate looks through, for one path, for links a program would follow.
const LINK_WALK_ENTRIES: usize = 100_000;

/// What makes a folder a repository to git besides a `.git` in it: git takes a folder holding
/// `HEAD`, `objects` and `refs` for a bare repository and runs what its `config` says
/// (`core.fsmonitor`, a diff driver's `textconv`, …).
const REPOSITORY_ENTRIES: &[&str] = &[
    "HEAD",
    "config",
    "objects",
    "refs",
    "commondir",
    "gitdir",
    "packed-refs",
    "worktrees",
    "info",
    "hooks",
];

/// Whether `dir` may be what git takes for a repository: any `HEAD` in it (a file, or a link
/// even to nothing), since `objects`, `refs` and `config` may be elsewhere (`commondir`).
fn looks_like_a_repository(dir: &Path) -> bool {
    dir.join("HEAD").symlink_metadata().is_ok()
}

/// The repository git would use from `dir`, when it is not a `.git` (which the protected paths
/// keep the agent from writing) but a folder in the workspace the agent may have written as
/// one, or one this line writes: the first such folder from `dir` up to its root.
fn foreign_repository(dir: &Path, roots: &[PathBuf], written: &[PathBuf]) -> Option<String> {
    let root = roots.iter().find(|r| dir.starts_with(r))?;
    let mut at = Some(dir);
    while let Some(d) = at.filter(|d| d.starts_with(root)) {
        if d != root.as_path() && written.iter().any(|w| w == d) {
            return Some(format!(
                "this line writes `{}`, where git looks for its repository",
                d.display()
            ));
        }
        if d.join(".git").symlink_metadata().is_ok() {
            return None;
        }
        let makes = written.iter().find(|w| {
            REPOSITORY_ENTRIES
                .iter()
                .any(|name| w.as_path() == d.join(name) || w.starts_with(d.join(name)))
        });
        if let Some(w) = makes {
            return Some(format!(
                "this line writes `{}`, which can make `{}` a repository git would use",
                w.display(),
                d.display()
            ));
        }
        if looks_like_a_repository(d) {
            return Some(format!(
                "git may use `{}` as its repository (it holds a `HEAD`), whose `config` can \
                 make git run programs",
                d.display()
            ));
        }
        at = d.parent();
    }
    None
}

/// Marks each git command that would use a repository other than a `.git` folder.
fn foreign_repositories(
    commands: &mut [SimpleCommand],
    paths: &[shell::CommandPath],
    place: &Place,
) {
    let is_git = |c: &SimpleCommand| c.program().map(shell::programs::basename) == Some("git");
    if !commands.iter().any(is_git) {
        return;
    }
    let written: Vec<PathBuf> = paths
        .iter()
        .filter(|p| p.access == Access::Write)
        .filter_map(|p| place.at(p.cwd.as_deref()).resolve(&p.text))
        .collect();
    for (index, command) in commands.iter_mut().enumerate() {
        if !is_git(command) {
            continue;
        }
        // Where it runs, moved by each `-C`.
        let mut here = place.at(command.cwd.as_deref());
        for folder in paths
            .iter()
            .filter(|p| p.command == index && p.role == PathRole::Folder)
        {
            if let Some(dir) = here.resolve(&folder.text) {
                here.cwd = dir;
            }
        }
        if let Some(why) = foreign_repository(&here.cwd, &place.roots, &written) {
            command.findings.push(shell::Finding {
                kind: shell::FindingKind::Unsupported,
                detail: why,
            });
        }
    }
}

/// Where a resolved path is for the agent's command: the path, and where it leads through
/// `/proc/PID/root` or `/cwd` (a path under `/proc` alone is this process's, never walked).
fn agent_readings(r: &path::ResolvedPath) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::iter::once(&r.resolved)
        .chain(r.alternative.as_ref())
        .filter(|p| !p.starts_with("/proc"))
        .cloned()
        .collect();
    out.dedup();
    out
}

/// Looking through folders for the links a program follows, for one call: what was looked
/// through, and how many more entries may be.
struct LinkWalk {
    walked: Vec<PathBuf>,
    budget: usize,
    exhausted: bool,
}

impl Default for LinkWalk {
    fn default() -> LinkWalk {
        LinkWalk {
            walked: Vec::new(),
            budget: LINK_WALK_ENTRIES,
            exhausted: false,
        }
    }
}

impl LinkWalk {
    /// Subjects for what the links inside folders read whole lead to, when the program
    /// follows them (`grep -R`, `rg -L`): each link that leads outside the folders looked
    /// through is read as if named, and a folder it leads to is looked through in turn (links
    /// to links). More than [`LINK_WALK_ENTRIES`] entries in all: a finding that asks.
    fn follow(
        &mut self,
        folders: Vec<PathBuf>,
        source: &str,
        text: &str,
        here: &Place,
        out: &mut Vec<Subject>,
    ) {
        let mut queue: Vec<PathBuf> = folders.into_iter().filter(|f| f.is_dir()).collect();
        while let Some(folder) = queue.pop() {
            if self.exhausted {
                return;
            }
            if self.walked.iter().any(|w| folder.starts_with(w)) {
                continue;
            }
            let links = match links_inside(&folder, self.budget) {
                Ok((links, seen)) => {
                    self.budget = self.budget.saturating_sub(seen);
                    links
                }
                Err(()) => {
                    self.exhausted = true;
                    let mut command = SimpleCommand::placeholder(text);
                    command.findings.push(shell::Finding {
                        kind: shell::FindingKind::Unsupported,
                        detail: format!(
                            "{source} follows the links inside `{}`, and what it goes through \
                             holds more than {LINK_WALK_ENTRIES} entries: toolgate did not look \
                             at them all",
                            folder.display()
                        ),
                    });
                    out.push(Subject::command(CommandSubject {
                        command,
                        line_findings: Vec::new(),
                    }));
                    return;
                }
            };
            self.walked.push(folder);
            for link in links {
                let given = Value::String(link.to_string_lossy().into_owned());
                let through = format!("{source} (through the link `{}`)", link.display());
                let mut subject =
                    path_subject(&given, &through, Access::Read, PathRole::Mentioned, here);
                // A link that dangles leads nowhere the program can read.
                let Some(targets) = subject.resolved.as_ref().map(agent_readings) else {
                    continue;
                };
                if targets
                    .iter()
                    .all(|t| self.walked.iter().any(|w| t.starts_with(w)))
                {
                    continue;
                }
                subject.recursive = targets.iter().any(|t| t.is_dir());
                queue.extend(targets.into_iter().filter(|t| t.is_dir()));
                out.push(Subject::path(subject));
            }
        }
    }
}

/// The symbolic links inside a folder (not following any) and how many entries were looked
/// at, or `Err` when it holds more than `limit` entries. Unreadable folders are skipped: the
/// program cannot read them either.
fn links_inside(folder: &Path, limit: usize) -> Result<(Vec<PathBuf>, usize), ()> {
    let mut links = Vec::new();
    let mut folders = vec![folder.to_path_buf()];
    let mut seen = 0usize;
    while let Some(dir) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > limit {
                return Err(());
            }
            match entry.file_type() {
                Ok(t) if t.is_symlink() => links.push(entry.path()),
                Ok(t) if t.is_dir() => folders.push(entry.path()),
                _ => {}
            }
        }
    }
    links.sort();
    Ok((links, seen))
}

/// Whether a path is a file the kernel serves under `/proc` or `/sys` (`/proc/cpuinfo`): a
/// recursive read of it reads it alone. Elsewhere a file may be a folder by the time the
/// command runs (`rm f && mkdir f && …; grep -r x f`), so only these are told apart.
fn is_kernel_file(resolved: Option<&crate::resource::path::ResolvedPath>) -> bool {
    resolved.is_some_and(|r| {
        (r.resolved.starts_with("/proc") || r.resolved.starts_with("/sys"))
            && r.alternative.is_none()
            && std::fs::metadata(&r.resolved).is_ok_and(|m| !m.is_dir())
    })
}

fn path_subject(
    value: &Value,
    source: &str,
    access: Access,
    role: PathRole,
    place: &Place,
) -> PathSubject {
    let Some(given) = value.as_str() else {
        return PathSubject {
            given: value.to_string(),
            access,
            role,
            recursive: false,
            source: source.to_owned(),
            resolved: None,
            place: None,
            problem: Some(PathProblem::Unresolvable("the path is not text".into())),
        };
    };
    let resolution = if role.is_mention() {
        path::resolve_mention(given, &place.context())
    } else {
        path::resolve(given, &place.context())
    };
    let mut subject = resolved_subject(given, source, access, role, resolution);
    subject.place = outside_place(&subject, place);
    subject
}

/// The place outside the workspace a resolved path lies in, if any.
fn outside_place(subject: &PathSubject, place: &Place) -> Option<crate::subject::OutsidePlace> {
    let resolved = subject.resolved.as_ref().filter(|r| r.root.is_none())?;
    place.places.as_ref()?.of(resolved, &place.roots)
}

/// A path subject from how its path resolved.
fn resolved_subject(
    given: &str,
    source: &str,
    access: Access,
    role: PathRole,
    resolution: Result<path::ResolvedPath, PathProblem>,
) -> PathSubject {
    let (resolved, problem) = match resolution {
        Ok(r) => (Some(r), None),
        Err(p) => (None, Some(p)),
    };
    PathSubject {
        given: given.to_owned(),
        access,
        role,
        recursive: false,
        source: source.to_owned(),
        resolved,
        place: None,
        problem,
    }
}

/// A written path that names a link the command acts on itself (removes, renames, replaces):
/// its folder resolved, its last name not followed — unless, with `into_folders`, it leads to a
/// folder, which the command then writes inside (`mv x link-to-folder`).
fn link_itself_subject(
    given: &str,
    source: &str,
    access: Access,
    role: PathRole,
    place: &Place,
    into_folders: bool,
) -> PathSubject {
    let followed = into_folders
        .then(|| path::resolve(given, &place.context()).ok())
        .flatten()
        .filter(|r| r.resolved.is_dir());
    let resolution = match followed {
        Some(r) => Ok(r),
        None => path::resolve_link_itself(given, &place.context()),
    };
    let mut subject = resolved_subject(given, source, access, role, resolution);
    subject.place = outside_place(&subject, place);
    subject
}

fn url_subject(given: &str, source: &str, mentioned: bool) -> UrlSubject {
    let (checked, problem) = match url::check(given) {
        Ok(c) => (Some(c), None),
        Err(p) => (None, Some(p)),
    };
    UrlSubject {
        given: given.to_owned(),
        source: source.to_owned(),
        mentioned,
        checked,
        problem,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::{links_inside, source_excerpt, too_broad};
    use std::path::Path;

    #[test]
    fn the_file_systems_root_and_the_home_folder_are_no_workspace() {
        let home = Some(Path::new("/home/me"));
        for broad in ["/", "/home", "/home/me"] {
            assert!(too_broad(Path::new(broad), home), "{broad}");
        }
        for project in ["/home/me/code/app", "/srv/app", "/home/mel", "/tmp"] {
            assert!(!too_broad(Path::new(project), home), "{project}");
        }
        assert!(too_broad(Path::new("/"), None));
        assert!(!too_broad(Path::new("/home/me"), None));
    }

    #[test]
    fn links_are_found_inside_a_folder_up_to_a_bound() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/f"), "").unwrap();
        std::os::unix::fs::symlink("/etc", root.join("a/b/l1")).unwrap();
        std::os::unix::fs::symlink("../a", root.join("a/l2")).unwrap();
        assert_eq!(
            links_inside(root, 100).unwrap(),
            (vec![root.join("a/b/l1"), root.join("a/l2")], 5)
        );
        // Five entries: a, a/b, a/f, a/l2, a/b/l1.
        assert!(links_inside(root, 5).is_ok());
        assert!(links_inside(root, 4).is_err());
    }

    /// Every path of a command carries this excerpt, not the whole command: a 64 KiB command of
    /// 32,000 words cost about 2 GB per call before (found by probing the daemon; 36 MB after,
    /// measured with `/usr/bin/time -v toolgate check`).
    #[test]
    fn a_paths_source_is_a_bounded_excerpt_of_its_command() {
        assert_eq!(source_excerpt("git status"), "git status");
        let long = format!("ls {}", "é ".repeat(32_000));
        let excerpt = source_excerpt(&long);
        assert_eq!(excerpt.chars().count(), 161);
        assert!(excerpt.starts_with("ls é é") && excerpt.ends_with('…'));
        let exact = "x".repeat(160);
        assert_eq!(source_excerpt(&exact), exact.as_str());
    }
}

/// The `http://` and `https://` URLs in free text (any case), each up to the first space,
/// quote, bracket or angle bracket, without the punctuation that ends a sentence after it
/// (`see https://docs.rs/x.` names `https://docs.rs/x`).
pub(crate) fn urls_in_text(text: &str) -> Vec<&str> {
    let lower = text.to_ascii_lowercase();
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(found) = ["http://", "https://"]
        .iter()
        .filter_map(|scheme| lower.get(at..)?.find(scheme))
        .min()
    {
        let start = at + found;
        let rest = text.get(start..).unwrap_or_default();
        let len = rest
            .find(|c: char| {
                c.is_whitespace()
                    || matches!(
                        c,
                        '"' | '\'' | '`' | '<' | '>' | '(' | ')' | '[' | ']' | '{' | '}'
                    )
            })
            .unwrap_or(rest.len());
        let url = rest
            .get(..len)
            .unwrap_or_default()
            .trim_end_matches(['.', ',', ';', ':', '!', '?']);
        if url.len() > "https://".len() || (url.len() > "http://".len() && !url.ends_with('/')) {
            out.push(url);
        }
        at = start + len.max(1);
    }
    out
}

#[cfg(test)]
mod url_text_tests {
    use super::urls_in_text;

    #[test]
    fn urls_are_found_in_free_text() {
        assert_eq!(
            urls_in_text(
                "Summarise https://docs.rs/serde. Then (HTTP://x.example/a?b=1), 'https://y.example/z'!"
            ),
            [
                "https://docs.rs/serde",
                "HTTP://x.example/a?b=1",
                "https://y.example/z"
            ]
        );
        assert_eq!(
            urls_in_text("no links, just http:// and https://"),
            Vec::<&str>::new()
        );
        assert_eq!(
            urls_in_text("[docs](https://docs.python.org/3/) and <http://169.254.169.254/latest>"),
            [
                "https://docs.python.org/3/",
                "http://169.254.169.254/latest"
            ]
        );
        assert_eq!(
            urls_in_text("é https://ü.example/ü"),
            ["https://ü.example/ü"]
        );
    }
}
