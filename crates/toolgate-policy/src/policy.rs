//! A loaded policy: one or more files merged, compiled and indexed.
//!
//! # Several files
//!
//! Files load in this order: the user file, the project file, then files given on the command
//! line (in the order given). They are merged by these rules:
//!
//! - **Rules** are layered: each file's rules decide on their own, first match wins within the
//!   file, and the strictest decision among the files whose rules matched wins (deny > ask >
//!   allow; on a tie, the earlier file is named). So no file can turn another file's deny or ask
//!   into an allow. A subject no file's rules match gets the default.
//! - **`mode`** and **`fallback`**: the strictest value any file sets.
//! - **`[approval]`**: the shortest `timeout`; the `choices` every file offers.
//! - **`[workspace]`** `roots`, `protected`, `read` and `scratch`, and **`custom_tags`**: the
//!   union.
//! - **`[[tool]]`** profiles: first match in load order, then the built-in profiles.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustc_hash::FxHashMap;

use crate::decision::{AlwaysScope, Choice, Decision, Mode};
use crate::diagnostic::{Diagnostic, LoadError, SourceFile};
use crate::extract::MentionRules;
use crate::guard;
use crate::index::RuleIndex;
use crate::load::{self, ParsedFile};
use crate::matcher::NamePattern;
use crate::profile::{Profile, builtin_profiles};
use crate::resource::matchers::{CommandPattern, PathGlob, PathMatcher, Resource};
use crate::resource::path;
use crate::rule::{Builtin, Rule};

/// The default time a human has to answer an ask.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(300);

/// Which place a policy file comes from; decides its place in the load order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PolicyRole {
    /// toolgate's built-in policy ([`DEFAULT_POLICY`]): what applies with no policy file, and
    /// under a file that says `extends = "default"`.
    BuiltIn,
    /// The user's own file (`~/.config/toolgate/policy.toml`).
    User,
    /// The project's file (`.toolgate/policy.toml` in the project).
    Project,
    /// A file named on the command line or by the embedding program.
    Given,
}

/// The text of one policy file to load.
#[derive(Clone, Debug)]
pub struct PolicySource {
    /// The name errors are reported under (usually the path as the user wrote it).
    pub name: String,
    /// The TOML text.
    pub text: String,
    /// Where the file comes from.
    pub role: PolicyRole,
    /// The folder relative workspace roots resolve against (the file's folder; the project
    /// folder for a project file).
    pub base_dir: Option<PathBuf>,
}

/// toolgate's built-in policy, as `toolgate policy show-default` prints it.
pub const DEFAULT_POLICY: &str = include_str!("default-policy.toml");

/// The name the built-in policy's rules and errors are reported under.
pub const DEFAULT_POLICY_NAME: &str = "toolgate:default";

impl PolicySource {
    /// toolgate's built-in policy ([`DEFAULT_POLICY`]).
    pub fn builtin_default() -> PolicySource {
        PolicySource {
            name: DEFAULT_POLICY_NAME.into(),
            text: DEFAULT_POLICY.into(),
            role: PolicyRole::BuiltIn,
            base_dir: None,
        }
    }

    /// A file given by the embedding program, with no folder.
    pub fn given(name: impl Into<String>, text: impl Into<String>) -> PolicySource {
        PolicySource {
            name: name.into(),
            text: text.into(),
            role: PolicyRole::Given,
            base_dir: None,
        }
    }

    /// Reads several files from disk; every one that cannot be read is reported.
    pub fn read_all(paths: &[(PolicyRole, PathBuf)]) -> Result<Vec<PolicySource>, LoadError> {
        let mut sources = Vec::with_capacity(paths.len());
        let mut diagnostics = Vec::new();
        for (role, path) in paths {
            match PolicySource::read(path, *role) {
                Ok(source) => sources.push(source),
                Err(mut e) => diagnostics.append(&mut e.diagnostics),
            }
        }
        if !diagnostics.is_empty() {
            return Err(LoadError { diagnostics });
        }
        Ok(sources)
    }

    /// Reads a file from disk.
    pub fn read(path: &Path, role: PolicyRole) -> Result<PolicySource, LoadError> {
        let name = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| {
            Diagnostic::file_error(name.as_str().into(), format!("cannot read `{name}`: {e}"))
        })?;
        let text = String::from_utf8(bytes).map_err(|e| {
            Diagnostic::file_error(
                name.as_str().into(),
                format!(
                    "`{name}` is not UTF-8 (byte {})",
                    e.utf8_error().valid_up_to()
                ),
            )
        })?;
        let base_dir = match role {
            PolicyRole::Project => path.parent().and_then(Path::parent),
            PolicyRole::User | PolicyRole::Given | PolicyRole::BuiltIn => path.parent(),
        }
        .map(Path::to_path_buf);
        Ok(PolicySource {
            name,
            text,
            role,
            base_dir,
        })
    }
}

/// How to load.
#[derive(Clone, Copy, Debug)]
pub struct LoadOptions {
    /// Check every rule's examples and fail the load when one does not hold (default: true).
    /// `toolgate test` turns this off to report failing examples as test results instead.
    pub check_examples: bool,
    /// Check and compile every path glob while loading, so that a glob that does not parse or
    /// is too large to compile is an error of the load (at its place in the file) and no call
    /// pays for compiling (default: true). A process that decides one call and exits
    /// (`toolgate hook`) turns this off for policy text that loaded before with it on: each
    /// matcher is then compiled when a call first needs it, and one that cannot be compiled
    /// answers the safe way (it matches for deny and ask rules and protected paths, and not for
    /// allow rules and allowed places).
    pub compile_at_load: bool,
}

impl Default for LoadOptions {
    fn default() -> LoadOptions {
        LoadOptions {
            check_examples: true,
            compile_at_load: true,
        }
    }
}

/// A workspace root as written, with the folder it is relative to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RootSpec {
    /// The root as written.
    pub path: String,
    /// The folder of the file that declared it.
    pub base_dir: Option<PathBuf>,
}

/// The merged settings of a policy.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The mode for calls whose context sets none.
    pub mode: Mode,
    /// The decision for subjects no rule matches, overriding the mode's default.
    pub fallback: Option<Decision>,
    /// How long a human has to answer.
    pub approval_timeout: Duration,
    /// The answers offered by default.
    pub approval_choices: Arc<[Choice]>,
    /// Where an "always" answer may apply by default, the default first.
    pub approval_scopes: Arc<[AlwaysScope]>,
    /// Workspace roots, in load order.
    pub roots: Vec<RootSpec>,
    /// Protected path globs added to the built-in list.
    pub protected: Vec<String>,
    /// Places outside the workspace that may be read, added to the built-in ones.
    pub read_places: Vec<String>,
    /// Places outside the workspace that may be read and written without asking (scratch),
    /// added to the built-in ones.
    pub scratch_places: Vec<String>,
    /// Custom tags the policy declares.
    pub custom_tags: Vec<String>,
    /// Command prefixes a network-originated turn may run (`[network_turns] commands`).
    pub(crate) network_commands: Vec<CommandPattern>,
    /// What taints a session and what a taint restricts (`[taint]`).
    pub taint: crate::taint::TaintSettings,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            mode: Mode::ApproveReads,
            fallback: None,
            approval_timeout: DEFAULT_APPROVAL_TIMEOUT,
            approval_choices: Choice::ALL.into(),
            approval_scopes: AlwaysScope::ALL.into(),
            roots: Vec::new(),
            protected: Vec::new(),
            read_places: Vec::new(),
            scratch_places: Vec::new(),
            custom_tags: Vec::new(),
            network_commands: Vec::new(),
            taint: crate::taint::TaintSettings::default(),
        }
    }
}

/// One file's rules, indexed.
#[derive(Debug)]
pub(crate) struct RuleSet {
    pub(crate) name: Arc<str>,
    pub(crate) role: PolicyRole,
    pub(crate) rules: Vec<Rule>,
    pub(crate) index: RuleIndex,
}

impl RuleSet {
    pub(crate) fn new(name: Arc<str>, role: PolicyRole, rules: Vec<Rule>) -> RuleSet {
        let index = RuleIndex::build(&rules);
        RuleSet {
            name,
            role,
            rules,
            index,
        }
    }
}

/// Profiles in first-match order, with an index over exact names.
#[derive(Debug)]
pub(crate) struct Profiles {
    pub(crate) list: Vec<Profile>,
    exact: FxHashMap<Box<str>, u32>,
    /// Profiles with a glob pattern, in order: they must be tried.
    globbed: Vec<u32>,
}

impl Profiles {
    fn new(list: Vec<Profile>) -> Profiles {
        let mut exact: FxHashMap<Box<str>, u32> = FxHashMap::default();
        let mut globbed = Vec::new();
        for (i, profile) in list.iter().enumerate() {
            let Ok(i) = u32::try_from(i) else {
                break;
            };
            let mut has_glob = false;
            for pattern in &profile.matcher.patterns {
                match pattern {
                    NamePattern::Exact(name) => {
                        exact.entry(name.clone()).or_insert(i);
                    }
                    NamePattern::Any | NamePattern::Glob { .. } => has_glob = true,
                }
            }
            if has_glob {
                globbed.push(i);
            }
        }
        Profiles {
            list,
            exact,
            globbed,
        }
    }

    /// The first profile covering `tool`.
    pub(crate) fn find(&self, tool: &str) -> Option<&Profile> {
        let exact = self.exact.get(tool).copied();
        let globbed = self
            .globbed
            .iter()
            .copied()
            .take_while(|i| exact.is_none_or(|e| *i < e))
            .find(|i| self.list.get(*i as usize).is_some_and(|p| p.is_match(tool)));
        self.list.get(globbed.or(exact)? as usize)
    }
}

/// Reasons computed once per policy, so evaluation does not allocate them.
#[derive(Debug)]
pub(crate) struct Reasons {
    pub(crate) fallback: [Arc<str>; 3],
    pub(crate) approve_all: Arc<str>,
    pub(crate) approve_reads_read: Arc<str>,
    pub(crate) approve_reads_other: Arc<str>,
    pub(crate) deny_all: Arc<str>,
    pub(crate) ceiling: Arc<str>,
    pub(crate) full_access: Arc<str>,
    pub(crate) transparent: Arc<str>,
    pub(crate) scratch: Arc<str>,
}

impl Reasons {
    fn new() -> Reasons {
        let fallback = |d: Decision| -> Arc<str> {
            format!("no rule matched; the policy's fallback is `{d}`").into()
        };
        Reasons {
            fallback: [
                fallback(Decision::Allow),
                fallback(Decision::Ask),
                fallback(Decision::Deny),
            ],
            approve_all: "no rule matched; approve-all allows it".into(),
            approve_reads_read: "no rule matched; approve-reads allows reads".into(),
            approve_reads_other:
                "no rule matched; approve-reads asks for anything that is not a read".into(),
            deny_all: "no rule matched; deny-all asks for everything".into(),
            ceiling: "deny-all: nothing is allowed without a human".into(),
            full_access: "full access: this run skips asking".into(),
            transparent: "no rule matched; the command only reads, writes or fetches what it \
                          names, and each of those is decided on its own"
                .into(),
            scratch: "no rule matched; a scratch place (the system's temporary folders) is read \
                      and written without asking"
                .into(),
        }
    }

    pub(crate) fn fallback(&self, decision: Decision) -> &Arc<str> {
        let [allow, ask, deny] = &self.fallback;
        match decision {
            Decision::Allow => allow,
            Decision::Ask => ask,
            Decision::Deny => deny,
        }
    }
}

/// A compiled policy: evaluate calls with [`Policy::evaluate`], trace them with
/// [`Policy::explain`], check the policy with [`Policy::lint`].
///
/// ```rust,standalone_crate
/// use toolgate_policy::{Call, Decision, Policy};
/// let policy = Policy::from_toml("policy.toml", r#"
///     version = 1
///     mode = "approve-reads"
///
///     [[rule]]
///     name = "no-payments"
///     decision = "deny"
///     tool = "pay*"
///     reason = "payments need a person"
/// "#)?;
/// let evaluation = policy.evaluate(&Call::new("pay_invoice"));
/// assert_eq!(evaluation.decision, Decision::Deny);
/// assert_eq!(evaluation.rule_name(), Some("no-payments"));
/// # Ok::<(), toolgate_policy::LoadError>(())
/// ```
#[derive(Debug)]
pub struct Policy {
    pub(crate) sets: Vec<RuleSet>,
    pub(crate) settings: Settings,
    pub(crate) profiles: Profiles,
    pub(crate) reasons: Reasons,
    /// Protected paths that deny (toolgate's own) and that ask (built-in list and the policy's).
    pub(crate) protected_own: PathMatcher,
    pub(crate) protected: PathMatcher,
    /// Places outside the workspace that may be read, and that may be read and written.
    pub(crate) places: Arc<crate::places::Places>,
    /// Which mentioned resources some deny or ask rule (or guard) could match.
    pub(crate) has_mention_rules: MentionRules,
    /// toolgate's own data folders (the daemon's API token and store, toolgate's cache), as they resolve: no
    /// agent reads or writes them.
    pub(crate) own_data: Vec<PathBuf>,
    /// Workspace roots as they resolve.
    pub(crate) root_cache: Mutex<HashMap<PathBuf, PathBuf>>,
    /// `[taint]`, compiled.
    pub(crate) taint: crate::taint::Taint,
}

impl Default for Policy {
    /// The empty policy: approve-reads, no rules, the built-in profiles.
    fn default() -> Policy {
        Policy::assemble(Vec::new(), Settings::default(), Vec::new())
    }
}

impl Policy {
    fn assemble(sets: Vec<RuleSet>, settings: Settings, mut profiles: Vec<Profile>) -> Policy {
        profiles.extend(builtin_profiles());
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let mut protected: Vec<PathGlob> = guard::BUILTIN_PROTECTED
            .iter()
            .chain(
                settings
                    .protected
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .iter(),
            )
            .filter_map(|g| PathGlob::new(g, home.as_deref()).ok())
            .collect();
        protected.dedup_by(|a, b| a.text == b.text);
        let protected = PathMatcher::new(protected);
        let own_data = own_data_folders(home.as_deref());
        let places = Arc::new(crate::places::Places::new(
            &settings.read_places,
            &settings.scratch_places,
            home.as_deref(),
        ));
        let mut mentions = MentionRules {
            // The guard on toolgate's own data sees every path a command names.
            paths: !own_data.is_empty(),
            urls: false,
        };
        for rule in sets.iter().flat_map(|s| s.rules.iter()) {
            if rule.decision != Decision::Allow {
                match &rule.when.resource {
                    Some(Resource::Path(_)) => mentions.paths = true,
                    Some(Resource::Url(_)) => mentions.urls = true,
                    Some(Resource::Command(_)) | None => {}
                }
            }
        }
        let taint = crate::taint::Taint::new(&settings.taint, home.as_deref());
        Policy {
            taint,
            sets,
            settings,
            profiles: Profiles::new(profiles),
            reasons: Reasons::new(),
            protected_own: guard::compile_protected(guard::TOOLGATE_PROTECTED),
            places,
            protected,
            has_mention_rules: mentions,
            own_data,
            root_cache: Mutex::new(HashMap::new()),
        }
    }

    /// Also refuses every read and write of `folder`, a data folder of toolgate's (the daemon
    /// gives its `--data-dir`: its API token, with which anyone can answer requests, and its
    /// store). The default ones — `$TOOLGATE_DATA_DIR`, `$XDG_DATA_HOME/toolgate`,
    /// `~/.local/share/toolgate` — are refused from the start.
    pub fn guard_data_folder(&mut self, folder: &Path) {
        let folder = std::path::absolute(folder).unwrap_or_else(|_| folder.to_path_buf());
        let folder = path::resolve_existing_prefix(&folder).unwrap_or(folder);
        if !self.own_data.contains(&folder) {
            self.own_data.push(folder);
        }
        self.has_mention_rules.paths = true;
    }

    /// toolgate's built-in policy ([`DEFAULT_POLICY`]): what applies when no policy file does.
    /// It always loads (a test checks it); the error is there for the examples it checks.
    ///
    /// ```rust,standalone_crate
    /// use toolgate_policy::{Call, Decision, Policy};
    /// let policy = Policy::builtin_default()?;
    /// let test = Call::new("bash").with_args(serde_json::json!({"command": "cargo test -q"}));
    /// assert_eq!(policy.evaluate(&test).decision, Decision::Allow);
    /// let push = Call::new("bash").with_args(serde_json::json!({"command": "git push"}));
    /// assert_eq!(policy.evaluate(&push).decision, Decision::Ask);
    /// # Ok::<(), toolgate_policy::LoadError>(())
    /// ```
    pub fn builtin_default() -> Result<Policy, LoadError> {
        Policy::load(
            vec![PolicySource::builtin_default()],
            LoadOptions::default(),
        )
    }

    /// Loads one policy from TOML text; its examples must hold.
    pub fn from_toml(name: &str, text: &str) -> Result<Policy, LoadError> {
        Policy::load(
            vec![PolicySource::given(name, text)],
            LoadOptions::default(),
        )
    }

    /// Loads and merges several policy files (see the module docs for the merge rules). The
    /// sources are put in load order by their role; files of one role keep their given order.
    ///
    /// A file with `extends = "default"` puts the built-in policy ([`DEFAULT_POLICY`]) under the
    /// files as a layer of its own, first in the load order.
    pub fn load(mut sources: Vec<PolicySource>, options: LoadOptions) -> Result<Policy, LoadError> {
        sources.sort_by_key(|s| s.role);
        let mut parsed = Vec::with_capacity(sources.len() + 1);
        let mut diagnostics = Vec::new();
        for source in sources {
            let file = SourceFile::new(source.name.as_str(), source.text.as_str());
            match load::parse(file, options.compile_at_load) {
                Ok(p) => parsed.push((p, source.role, source.base_dir)),
                Err(mut d) => diagnostics.append(&mut d),
            }
        }
        if !diagnostics.is_empty() {
            return Err(LoadError { diagnostics });
        }
        let extends = parsed.iter().any(|(p, _, _)| p.extends_default);
        let has_default = parsed
            .iter()
            .any(|(_, role, _)| *role == PolicyRole::BuiltIn);
        if extends && !has_default {
            let source = PolicySource::builtin_default();
            let file = SourceFile::new(source.name.as_str(), source.text.as_str());
            let default = load::parse(file, options.compile_at_load)
                .map_err(|diagnostics| LoadError { diagnostics })?;
            parsed.insert(0, (default, PolicyRole::BuiltIn, None));
        }
        let policy = Policy::merge(parsed)?;
        if options.check_examples {
            let failures = policy.example_failures();
            if !failures.is_empty() {
                return Err(LoadError {
                    diagnostics: failures,
                });
            }
        }
        Ok(policy)
    }

    /// Reads and loads policy files from disk.
    pub fn load_paths(
        paths: &[(PolicyRole, PathBuf)],
        options: LoadOptions,
    ) -> Result<Policy, LoadError> {
        Policy::load(PolicySource::read_all(paths)?, options)
    }

    fn merge(files: Vec<(ParsedFile, PolicyRole, Option<PathBuf>)>) -> Result<Policy, LoadError> {
        let mut settings = Settings::default();
        let mut mode: Option<Mode> = None;
        let mut choices: Option<Vec<Choice>> = None;
        let mut scopes: Option<Vec<AlwaysScope>> = None;
        let mut timeout: Option<Duration> = None;
        let mut sets = Vec::with_capacity(files.len());
        let mut profiles = Vec::new();
        let mut last_name: Arc<str> = "".into();
        let mut taints = Vec::new();
        for (file, role, base_dir) in files {
            if let Some(m) = file.mode {
                mode = Some(mode.map_or(m, |old| {
                    if m.strictness() > old.strictness() {
                        m
                    } else {
                        old
                    }
                }));
            }
            if let Some(f) = file.fallback {
                settings.fallback = Some(settings.fallback.map_or(f, |old| old.max(f)));
            }
            if let Some(t) = file.approval_timeout {
                timeout = Some(timeout.map_or(t, |old| old.min(t)));
            }
            if let Some(c) = file.approval_choices {
                choices = Some(match choices {
                    None => c,
                    Some(old) => old.into_iter().filter(|x| c.contains(x)).collect(),
                });
            }
            if let Some(offered) = file.approval_scopes {
                // Each file may narrow what the files before it offer, never widen it; the
                // first file's order says which is the default.
                scopes = Some(match scopes {
                    None => offered,
                    Some(old) => old.into_iter().filter(|x| offered.contains(x)).collect(),
                });
            }
            for root in file.roots {
                let spec = RootSpec {
                    path: root,
                    base_dir: base_dir.clone(),
                };
                if !settings.roots.contains(&spec) {
                    settings.roots.push(spec);
                }
            }
            for glob in file.protected {
                if !settings.protected.contains(&glob) {
                    settings.protected.push(glob);
                }
            }
            for place in file.read_places {
                if !settings.read_places.contains(&place) {
                    settings.read_places.push(place);
                }
            }
            for place in file.scratch_places {
                if !settings.scratch_places.contains(&place) {
                    settings.scratch_places.push(place);
                }
            }
            for tag in file.custom_tags {
                if !settings.custom_tags.contains(&tag) {
                    settings.custom_tags.push(tag);
                }
            }
            settings.network_commands.extend(file.network_commands);
            taints.push(file.taint);
            profiles.extend(file.profiles);
            last_name = file.source.name.clone();
            sets.push(RuleSet::new(file.source.name, role, file.rules));
        }
        settings.mode = mode.unwrap_or(Mode::ApproveReads);
        settings.taint = crate::taint::TaintSettings::merge(&taints);
        settings.approval_timeout = timeout.unwrap_or(DEFAULT_APPROVAL_TIMEOUT);
        if let Some(choices) = choices {
            if !choices.iter().any(|c| c.allows()) || choices.iter().all(|c| c.allows()) {
                return Err(Diagnostic::file_error(
                    last_name,
                    "the policy files' `[approval] choices` have no allow and refuse answer in common"
                        .into(),
                )
                .with_hint(Some("make every file offer `allow-once` and `reject-once`".into()))
                .into());
            }
            settings.approval_choices = Choice::ALL
                .iter()
                .copied()
                .filter(|c| choices.contains(c))
                .collect();
        }
        if let Some(scopes) = scopes {
            if scopes.is_empty() {
                return Err(Diagnostic::file_error(
                    last_name,
                    "the policy files' `[approval] scopes` have no scope in common".into(),
                )
                .with_hint(Some("make every file offer `session`".into()))
                .into());
            }
            settings.approval_scopes = scopes.into();
        }
        Ok(Policy::assemble(sets, settings, profiles))
    }

    /// Starts a policy built in code.
    ///
    /// ```rust,standalone_crate
    /// use toolgate_policy::{Builtin, Call, Decision, Mode, Policy, Rule, Tag};
    /// let policy = Policy::builder()
    ///     .mode(Mode::ApproveAll)
    ///     .builtin(Builtin::DenyPrivileged)
    ///     .rule(Rule::builder("ask-payments", Decision::Ask).tool("pay").build()?)
    ///     .build();
    /// let call = Call::new("reboot").with_tag(Tag::Privileged);
    /// assert_eq!(policy.evaluate(&call).reason.as_ref(), "Tool requires elevated permissions");
    /// # Ok::<(), String>(())
    /// ```
    pub fn builder() -> PolicyBuilder {
        PolicyBuilder {
            settings: Settings::default(),
            rules: Vec::new(),
        }
    }

    /// The merged settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Every rule, file by file in load order.
    pub fn rules(&self) -> impl Iterator<Item = &Rule> {
        self.sets.iter().flat_map(|s| s.rules.iter())
    }

    /// The files (or code sources) the policy was built from, in load order.
    pub fn files(&self) -> impl Iterator<Item = (&str, PolicyRole)> {
        self.sets.iter().map(|s| (&*s.name, s.role))
    }

    /// The protected path globs, as written: toolgate's own, the built-in list, and the
    /// policy's `[workspace] protected` (what a kernel sandbox keeps read-only).
    pub fn protected_globs(&self) -> Vec<String> {
        guard::TOOLGATE_PROTECTED
            .iter()
            .chain(guard::BUILTIN_PROTECTED)
            .map(|g| (*g).to_owned())
            .chain(self.settings.protected.iter().cloned())
            .collect()
    }

    /// The path globs of the `deny` rules that name paths and nothing else a sandbox cannot
    /// see (no tool, server, agent, argument or access condition): the places no call may
    /// touch, whatever it is (what a kernel sandbox hides).
    pub fn denied_path_globs(&self) -> Vec<String> {
        self.rules()
            .filter(|rule| rule.decision == Decision::Deny)
            .filter(|rule| {
                let w = &rule.when;
                w.tool.is_none()
                    && w.tags.is_none()
                    && w.annotations.is_none()
                    && w.access.is_none()
                    && w.args.is_empty()
                    && w.origin.is_none()
                    && w.agent.is_none()
                    && w.server.is_none()
                    && w.predicate.is_none()
            })
            .filter_map(|rule| match &rule.when.resource {
                Some(crate::resource::matchers::Resource::Path(set)) => Some(
                    set.matcher
                        .globs
                        .iter()
                        .map(|g| g.text.clone())
                        .collect::<Vec<_>>(),
                ),
                _ => None,
            })
            .flatten()
            .collect()
    }
}

/// toolgate's own folders where it keeps them by default, as they resolve in this
/// environment: the daemon's data (its API token and store) and toolgate's cache. No tool call
/// reads or writes them; a kernel sandbox hides them.
pub fn own_folders() -> Vec<PathBuf> {
    own_data_folders(std::env::var_os("HOME").map(PathBuf::from).as_deref())
}

/// toolgate's data folders where it keeps them by default, as they resolve.
fn own_data_folders(home: Option<&Path>) -> Vec<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let mut folders: Vec<PathBuf> = var("TOOLGATE_DATA_DIR")
        .into_iter()
        .chain(var("XDG_DATA_HOME").map(|d| d.join("toolgate")))
        .chain(home.map(|h| h.join(".local/share/toolgate")))
        // Its cache: what it remembers of policies it checked (and the sandbox's plans).
        .chain(var("XDG_CACHE_HOME").map(|d| d.join("toolgate")))
        .chain(home.map(|h| h.join(".cache/toolgate")))
        .filter_map(|f| std::path::absolute(&f).ok())
        .map(|f| path::resolve_existing_prefix(&f).unwrap_or(f))
        .collect();
    folders.dedup();
    folders
}

/// Builds a [`Policy`] in code.
#[must_use]
pub struct PolicyBuilder {
    settings: Settings,
    rules: Vec<Rule>,
}

impl PolicyBuilder {
    /// The mode.
    pub fn mode(mut self, mode: Mode) -> PolicyBuilder {
        self.settings.mode = mode;
        self
    }

    /// The decision for subjects no rule matches.
    pub fn fallback(mut self, fallback: Decision) -> PolicyBuilder {
        self.settings.fallback = Some(fallback);
        self
    }

    /// How long a human has to answer.
    pub fn approval_timeout(mut self, timeout: Duration) -> PolicyBuilder {
        self.settings.approval_timeout = timeout;
        self
    }

    /// Appends a rule (first match wins).
    pub fn rule(mut self, rule: Rule) -> PolicyBuilder {
        self.rules.push(rule);
        self
    }

    /// Appends one of the built-in rules.
    pub fn builtin(self, builtin: Builtin) -> PolicyBuilder {
        self.rule(Rule::builtin(builtin))
    }

    /// The policy.
    pub fn build(self) -> Policy {
        let set = RuleSet::new("<code>".into(), PolicyRole::Given, self.rules);
        Policy::assemble(vec![set], self.settings, Vec::new())
    }
}

/// The user's policy file: `$TOOLGATE_CONFIG_DIR/policy.toml`, else
/// `$XDG_CONFIG_HOME/toolgate/policy.toml`, else `~/.config/toolgate/policy.toml`.
pub fn user_policy_path() -> Option<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let dir = var("TOOLGATE_CONFIG_DIR")
        .or_else(|| var("XDG_CONFIG_HOME").map(|d| d.join("toolgate")))
        .or_else(|| var("HOME").map(|d| d.join(".config").join("toolgate")))?;
    Some(dir.join("policy.toml"))
}

/// The project's policy file: `.toolgate/policy.toml` in `start` or the nearest ancestor that
/// has one, not looking above the first folder holding `.git`.
pub fn project_policy_path(start: &Path) -> Option<PathBuf> {
    for dir in start.ancestors() {
        let candidate = dir.join(".toolgate").join("policy.toml");
        if candidate.is_file() {
            return Some(candidate);
        }
        if dir.join(".git").exists() {
            return None;
        }
    }
    None
}

/// The user and project files that exist, in load order.
pub fn discover_policy_files(cwd: &Path) -> Vec<(PolicyRole, PathBuf)> {
    let mut out = Vec::new();
    if let Some(user) = user_policy_path().filter(|p| p.is_file()) {
        out.push((PolicyRole::User, user));
    }
    if let Some(project) = project_policy_path(cwd) {
        out.push((PolicyRole::Project, project));
    }
    out
}
