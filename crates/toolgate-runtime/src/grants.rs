//! Grants: remembered "always" answers (DESIGN §6).
//!
//! A grant says that a tool, or a tool on one subject (a command prefix, a path, a domain), is
//! allowed or denied within a scope. Both answers are stored, at decision time. A grant is only
//! consulted when the policy asks; it never loosens a guard (an ask from a guard is never
//! answered by an allow grant) and never turns a deny into an allow.
//!
//! toolgate never offers an "always" broader than the prompt shows: the targets of a request are
//! computed here, shown in the request, and are exactly what is stored. For a command whose
//! natural prefix would be interpreter-wide (`bash`, `sh -c`, `python -c`, `node -e`, `env`,
//! `sudo`, a bare `git`) or that has no subcommand (`rm -rf build`), the target is the exact
//! command.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use toolgate_policy::{Decision, GrantKind, Layer, Subject, SubjectOutcome, shell};

/// Whether a grant allows or denies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effect {
    /// The call runs without asking.
    Allow,
    /// The call is refused without asking.
    Deny,
}

/// What a grant covers, besides the tool's name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum GrantTarget {
    /// Every call of the tool.
    Tool,
    /// Commands that start with these words (or are exactly them, when `exact`).
    Command {
        /// The words.
        prefix: Vec<String>,
        /// Whether only the exact command is covered.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        exact: bool,
    },
    /// This path (absolute, resolved).
    Path {
        /// The path.
        path: PathBuf,
    },
    /// This host.
    Domain {
        /// The host, as normalised by the policy.
        host: String,
    },
}

impl GrantTarget {
    /// Whether the target covers one subject of a call.
    pub fn covers(&self, subject: &Subject) -> bool {
        match (self, subject) {
            (GrantTarget::Tool, _) => true,
            (GrantTarget::Command { prefix, exact }, Subject::Command(c)) => {
                let argv = &c.command.argv;
                if argv.len() < prefix.len() || (*exact && argv.len() != prefix.len()) {
                    return false;
                }
                prefix
                    .iter()
                    .zip(argv)
                    .all(|(p, w)| w.value() == Some(p.as_str()))
            }
            (GrantTarget::Path { path }, Subject::Path(p)) => p
                .resolved
                .as_ref()
                .is_some_and(|r| &r.resolved == path && r.alternative.is_none()),
            (GrantTarget::Domain { host }, Subject::Url(u)) => {
                u.checked.as_ref().is_some_and(|c| &c.host == host)
            }
            (
                GrantTarget::Command { .. } | GrantTarget::Path { .. } | GrantTarget::Domain { .. },
                _,
            ) => false,
        }
    }
}

impl GrantTarget {
    /// Whether a refusal with this target covers one subject of a call: as [`covers`] does,
    /// and also the same act spelled otherwise — a command whose program and subcommands, read
    /// with toolgate's records of programs, are the target's (`git -C . push`, `/usr/bin/git
    /// push` and `git --no-pager push` are all the `git push` a reject-always refused); for an
    /// exact target, also the same operands, whatever the options (`git push --force origin`
    /// is the refused `git push origin`, forced). A
    /// target without a subcommand (`rm -rf build`) is matched by its words alone, and
    /// so is every allow: an allow covers only what it was given for, a refusal what it meant.
    ///
    /// [`covers`]: GrantTarget::covers
    pub fn refuses(&self, subject: &Subject) -> bool {
        if self.covers(subject) {
            return true;
        }
        let (GrantTarget::Command { prefix, exact }, Subject::Command(c)) = (self, subject) else {
            return false;
        };
        let Some(given) = &c.command.reading else {
            return false;
        };
        let read = shell::analyze_argv(prefix);
        let Some(meant) = read
            .commands
            .first()
            .filter(|_| read.commands.len() == 1)
            .and_then(|command| command.reading.as_ref())
        else {
            return false;
        };
        if meant.program.is_none() || meant.program != given.program || meant.subcommands.is_empty()
        {
            return false;
        }
        if *exact {
            return meant.subcommands == given.subcommands && meant.operands == given.operands;
        }
        given.subcommands.starts_with(&meant.subcommands)
            || (meant.subcommands.len() == 1
                && meant
                    .subcommands
                    .first()
                    .is_some_and(|act| given.acts.contains(act)))
    }
}

impl fmt::Display for GrantTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GrantTarget::Tool => f.write_str("every call"),
            GrantTarget::Command { prefix, exact } => {
                let words = prefix.join(" ");
                if *exact {
                    write!(f, "exactly the command `{words}`")
                } else {
                    write!(f, "commands starting with `{words}`")
                }
            }
            GrantTarget::Path { path } => write!(f, "the path `{}`", path.display()),
            GrantTarget::Domain { host } => write!(f, "the host `{host}`"),
        }
    }
}

/// How long a grant lasts, and where it applies.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "scope", rename_all = "lowercase")]
pub enum GrantScope {
    /// The next matching call in the session, then gone.
    Once {
        /// The session.
        session: String,
    },
    /// The rest of one turn of one branch.
    Turn {
        /// The session.
        session: String,
        /// The branch.
        branch: String,
        /// The turn.
        turn: u64,
    },
    /// The session, all its branches.
    Session {
        /// The session.
        session: String,
    },
    /// Every session working in this workspace.
    Workspace {
        /// The workspace root.
        root: PathBuf,
    },
    /// Every session of the user.
    User,
}

/// Which scope an "always" answer makes (the session by default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScopeKind {
    /// See [`GrantScope::Once`].
    Once,
    /// See [`GrantScope::Turn`].
    Turn,
    /// See [`GrantScope::Session`].
    #[default]
    Session,
    /// See [`GrantScope::Workspace`].
    Workspace,
    /// See [`GrantScope::User`].
    User,
}

impl ScopeKind {
    /// Where a grant of this scope applies, as a person reads it (`for this session`, `for
    /// every session in the workspace \`/ws\``), given the workspace of the call it answers.
    pub fn says(self, workspace: Option<&str>) -> String {
        match (self, workspace) {
            (ScopeKind::Once, _) => "for the next call only".to_owned(),
            (ScopeKind::Turn, _) => "for the rest of this turn".to_owned(),
            (ScopeKind::Session, _) => "for this session".to_owned(),
            (ScopeKind::Workspace, Some(root)) => {
                format!("for every session in the workspace `{root}`")
            }
            (ScopeKind::Workspace, None) => "for every session in this workspace".to_owned(),
            (ScopeKind::User, _) => "for every session of this user, in every workspace".to_owned(),
        }
    }
}

impl From<toolgate_policy::AlwaysScope> for ScopeKind {
    fn from(scope: toolgate_policy::AlwaysScope) -> ScopeKind {
        match scope {
            toolgate_policy::AlwaysScope::Session => ScopeKind::Session,
            toolgate_policy::AlwaysScope::Workspace => ScopeKind::Workspace,
            toolgate_policy::AlwaysScope::User => ScopeKind::User,
        }
    }
}

/// Where a call is being decided: what a grant's scope is compared with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrantContext {
    /// The session.
    pub session: String,
    /// The branch.
    pub branch: String,
    /// The turn.
    pub turn: u64,
    /// The workspace root, when the call has one.
    pub workspace: Option<PathBuf>,
}

impl GrantContext {
    /// The scope of a new grant made here.
    pub fn scope(&self, kind: ScopeKind) -> GrantScope {
        match kind {
            ScopeKind::Once => GrantScope::Once {
                session: self.session.clone(),
            },
            ScopeKind::Turn => GrantScope::Turn {
                session: self.session.clone(),
                branch: self.branch.clone(),
                turn: self.turn,
            },
            ScopeKind::Session => GrantScope::Session {
                session: self.session.clone(),
            },
            ScopeKind::Workspace => match &self.workspace {
                Some(root) => GrantScope::Workspace { root: root.clone() },
                None => GrantScope::Session {
                    session: self.session.clone(),
                },
            },
            ScopeKind::User => GrantScope::User,
        }
    }

    fn within(&self, scope: &GrantScope) -> bool {
        match scope {
            GrantScope::Once { session } | GrantScope::Session { session } => {
                *session == self.session
            }
            GrantScope::Turn {
                session,
                branch,
                turn,
            } => *session == self.session && *branch == self.branch && *turn == self.turn,
            GrantScope::Workspace { root } => self.workspace.as_ref() == Some(root),
            GrantScope::User => true,
        }
    }
}

/// A remembered answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    /// Its id.
    pub id: String,
    /// Allow or deny.
    pub effect: Effect,
    /// The tool.
    pub tool: String,
    /// What it covers.
    pub target: GrantTarget,
    /// Where and how long it applies.
    #[serde(flatten)]
    pub scope: GrantScope,
    /// When it stops applying.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_time")]
    pub expires_at: Option<SystemTime>,
    /// How many more calls it covers (`None`: unlimited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uses_left: Option<u32>,
    /// Who made it (the request's answerer).
    pub created_by: String,
    /// When.
    #[serde(with = "time")]
    pub created_at: SystemTime,
    /// The request it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The answerer's words, when they gave some: a deny grant repeats them to the model each
    /// time it refuses, as the answer itself did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Grant {
    /// Whether this grant and `other` answer the same calls the same way for good: the same
    /// effect, tool, target and scope, neither with a count of uses nor an expiry. A store
    /// keeps one of such grants (revoking one would otherwise leave the other answering).
    pub fn lasts_like(&self, other: &Grant) -> bool {
        self.effect == other.effect
            && self.tool == other.tool
            && self.target == other.target
            && self.scope == other.scope
            && self.lasts()
            && other.lasts()
    }

    /// Whether it answers for good: no count of uses, no expiry.
    pub fn lasts(&self) -> bool {
        self.uses_left.is_none() && self.expires_at.is_none()
    }

    /// A grant made now, by `created_by`.
    pub fn new(
        effect: Effect,
        tool: impl Into<String>,
        target: GrantTarget,
        scope: GrantScope,
        created_by: impl Into<String>,
    ) -> Grant {
        let uses_left = matches!(scope, GrantScope::Once { .. }).then_some(1);
        Grant {
            id: uuid::Uuid::new_v4().to_string(),
            effect,
            tool: tool.into(),
            target,
            scope,
            expires_at: None,
            uses_left,
            created_by: created_by.into(),
            created_at: SystemTime::now(),
            request_id: None,
            reason: None,
        }
    }

    /// The grant, keeping `reason` (trimmed; nothing when it is blank).
    #[must_use]
    pub fn with_reason(mut self, reason: Option<&str>) -> Grant {
        self.reason = reason
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(str::to_owned);
        self
    }

    /// Whether the grant applies to a call of `tool` in `context` at `now`.
    pub fn is_live(&self, tool: &str, context: &GrantContext, now: SystemTime) -> bool {
        self.tool == tool && context.within(&self.scope) && !self.has_ended(now)
    }

    /// Whether the grant answers nothing any more at `now`: expired, or spent.
    pub fn has_ended(&self, now: SystemTime) -> bool {
        self.expires_at.is_some_and(|at| at <= now) || self.uses_left == Some(0)
    }
}

/// Where a grant is filed, so that a store can hand an ask only the grants that may answer it
/// (see [`Lookup`]): under its scope's key and its target's key. Two grants that answer the
/// same calls the same way are filed alike.
impl Grant {
    /// The key of its scope: `s:SESSION` for the scopes of one session (once, turn, session),
    /// `w:ROOT` for a workspace, `u` for the user.
    pub fn scope_key(&self) -> String {
        self.scope.key()
    }

    /// The key of its target: the word a command allow starts with, the path, the host; `""`
    /// for a grant of the whole tool and for a command refusal (which covers the act however
    /// it is spelled, so no one word names every call it refuses): those every lookup reads.
    pub fn target_key(&self) -> String {
        match (&self.target, self.effect) {
            (GrantTarget::Tool, _) | (GrantTarget::Command { .. }, Effect::Deny) => String::new(),
            (GrantTarget::Command { prefix, .. }, Effect::Allow) => {
                prefix.first().cloned().unwrap_or_default()
            }
            (GrantTarget::Path { path }, _) => path_key(path),
            (GrantTarget::Domain { host }, _) => host.clone(),
        }
    }
}

impl GrantScope {
    /// Its key (see [`Grant::scope_key`]).
    fn key(&self) -> String {
        match self {
            GrantScope::Once { session }
            | GrantScope::Turn { session, .. }
            | GrantScope::Session { session } => format!("s:{session}"),
            GrantScope::Workspace { root } => format!("w:{}", path_key(root)),
            GrantScope::User => "u".to_owned(),
        }
    }
}

/// A path as a key: its components (so `/a/b/` and `/a//b` are `/a/b`, as paths compare),
/// written out lossily (two paths that differ only in bytes that are not UTF-8 share a key:
/// a lookup then reads both, and the matcher tells them apart).
fn path_key(path: &std::path::Path) -> String {
    path.components()
        .collect::<PathBuf>()
        .to_string_lossy()
        .into_owned()
}

/// What a store is asked for when an ask is resolved: the grants of one tool filed under one of
/// these scope keys and one of these target keys (see [`Grant::scope_key`] and
/// [`Grant::target_key`]) — every grant [`match_grants`] and [`unanswered`] could use for the
/// ask it was made for, whatever else is stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lookup {
    /// The tool.
    pub tool: String,
    /// The scope keys (no duplicates).
    pub scopes: Vec<String>,
    /// The target keys (no duplicates; `""` among them).
    pub targets: Vec<String>,
}

impl Lookup {
    /// The lookup for an ask of `tool` in `context` about `subjects`: the session's, the
    /// workspace's and the user's grants, of the whole tool or of what the asking subjects name
    /// (a command's first word, a path, a host).
    pub fn for_ask(tool: &str, subjects: &[SubjectOutcome], context: &GrantContext) -> Lookup {
        // The keys of the scopes a grant made here could have (a workspace's falls back to
        // the session's without one).
        let mut scopes: Vec<String> = Vec::new();
        for kind in [ScopeKind::Session, ScopeKind::Workspace, ScopeKind::User] {
            let key = context.scope(kind).key();
            if !scopes.contains(&key) {
                scopes.push(key);
            }
        }
        let mut targets = vec![String::new()];
        for subject in asking(subjects) {
            let key = match &subject.subject {
                Subject::Call => None,
                Subject::Command(c) => c
                    .command
                    .argv
                    .first()
                    .and_then(|word| word.value())
                    .map(str::to_owned),
                Subject::Path(p) => p.resolved.as_ref().map(|r| path_key(&r.resolved)),
                Subject::Url(u) => u.checked.as_ref().map(|c| c.host.clone()),
            };
            if let Some(key) = key
                && !targets.contains(&key)
            {
                targets.push(key);
            }
        }
        Lookup {
            tool: tool.to_owned(),
            scopes,
            targets,
        }
    }

    /// The lookup for the stored grants like these (of `tool`; see [`Grant::lasts_like`]):
    /// those filed where they would be.
    pub fn like(tool: &str, grants: &[Grant]) -> Lookup {
        let mut lookup = Lookup {
            tool: tool.to_owned(),
            scopes: Vec::new(),
            targets: Vec::new(),
        };
        for grant in grants {
            let (scope, target) = (grant.scope_key(), grant.target_key());
            if !lookup.scopes.contains(&scope) {
                lookup.scopes.push(scope);
            }
            if !lookup.targets.contains(&target) {
                lookup.targets.push(target);
            }
        }
        lookup
    }

    /// Whether a grant is one the lookup asks for.
    pub fn admits(&self, grant: &Grant) -> bool {
        grant.tool == self.tool
            && self.scopes.contains(&grant.scope_key())
            && self.targets.contains(&grant.target_key())
    }
}

mod time {
    use std::time::SystemTime;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_rfc3339_micros(*t).to_string())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SystemTime, D::Error> {
        let text = String::deserialize(d)?;
        humantime::parse_rfc3339(&text).map_err(serde::de::Error::custom)
    }
}

mod opt_time {
    use std::time::SystemTime;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(
        t: &Option<SystemTime>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => super::time::serialize(t, s),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<SystemTime>, D::Error> {
        match Option::<String>::deserialize(d)? {
            Some(text) => humantime::parse_rfc3339(&text)
                .map(Some)
                .map_err(serde::de::Error::custom),
            None => Ok(None),
        }
    }
}

/// Why a grant store failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreError(pub String);

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StoreError {}

/// Where grants are kept. [`MemoryGrants`] keeps them in memory; the daemon keeps them in its
/// database.
#[async_trait]
pub trait GrantStore: Send + Sync + 'static {
    /// Stores a grant.
    async fn insert(&self, grant: Grant) -> Result<(), StoreError>;
    /// The grants for `tool` (live or not; the caller filters).
    async fn for_tool(&self, tool: &str) -> Result<Vec<Grant>, StoreError>;
    /// The grants `lookup` asks for (live or not; the caller filters), oldest first. A store
    /// that files grants by their keys reads only those; this one reads the tool's and keeps
    /// them.
    async fn applying(&self, lookup: &Lookup) -> Result<Vec<Grant>, StoreError> {
        let mut grants = self.for_tool(&lookup.tool).await?;
        grants.retain(|grant| lookup.admits(grant));
        Ok(grants)
    }
    /// Spends one use of a grant with a use count. Returns false when none was left.
    async fn use_once(&self, id: &str) -> Result<bool, StoreError>;
    /// Every grant.
    async fn list(&self) -> Result<Vec<Grant>, StoreError>;
    /// Removes a grant. Returns whether it existed.
    async fn revoke(&self, id: &str) -> Result<bool, StoreError>;
}

/// Grants in memory.
#[derive(Debug, Default)]
pub struct MemoryGrants {
    grants: Mutex<HashMap<String, Vec<Grant>>>,
}

impl MemoryGrants {
    /// An empty store.
    pub fn new() -> MemoryGrants {
        MemoryGrants::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Grant>>> {
        self.grants.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl GrantStore for MemoryGrants {
    async fn insert(&self, grant: Grant) -> Result<(), StoreError> {
        self.lock()
            .entry(grant.tool.clone())
            .or_default()
            .push(grant);
        Ok(())
    }

    async fn for_tool(&self, tool: &str) -> Result<Vec<Grant>, StoreError> {
        Ok(self.lock().get(tool).cloned().unwrap_or_default())
    }

    async fn use_once(&self, id: &str) -> Result<bool, StoreError> {
        let mut grants = self.lock();
        for grant in grants.values_mut().flatten() {
            if grant.id == id {
                return Ok(match &mut grant.uses_left {
                    None => true,
                    Some(0) => false,
                    Some(n) => {
                        *n -= 1;
                        true
                    }
                });
            }
        }
        Ok(false)
    }

    async fn list(&self) -> Result<Vec<Grant>, StoreError> {
        let mut all: Vec<Grant> = self.lock().values().flatten().cloned().collect();
        all.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(all)
    }

    async fn revoke(&self, id: &str) -> Result<bool, StoreError> {
        let mut grants = self.lock();
        let mut found = false;
        for list in grants.values_mut() {
            let before = list.len();
            list.retain(|g| g.id != id);
            found |= list.len() != before;
        }
        Ok(found)
    }
}

/// The subjects an ask is about: those that asked, or, when the ask came from the whole call
/// (a run override, the deny-all ceiling), every subject.
pub fn asking(subjects: &[SubjectOutcome]) -> impl Iterator<Item = &SubjectOutcome> {
    let any_asked = subjects.iter().any(|s| s.decision == Decision::Ask);
    subjects.iter().filter(move |s| {
        s.decision == Decision::Ask || (!any_asked && s.decision == Decision::Allow)
    })
}

/// What stored grants say about an ask, and which grants said it.
#[derive(Debug, PartialEq, Eq)]
pub struct GrantMatch<'g> {
    /// Allow or deny.
    pub effect: Effect,
    /// The grants that decide: the deny grant, or one allow grant per asking subject.
    pub grants: Vec<&'g Grant>,
}

/// What stored grants say about an ask: the first deny grant covering any asking subject, else
/// allow when allow grants cover every asking subject (never for a guard's ask).
pub fn match_grants<'g>(
    grants: &'g [Grant],
    tool: &str,
    subjects: &[SubjectOutcome],
    context: &GrantContext,
    now: SystemTime,
) -> Option<GrantMatch<'g>> {
    let live = live(grants, tool, context, now);
    let asking: Vec<&SubjectOutcome> = asking(subjects).collect();
    if let Some(deny) = live
        .iter()
        .find(|g| g.effect == Effect::Deny && asking.iter().any(|s| g.target.refuses(&s.subject)))
    {
        return Some(GrantMatch {
            effect: Effect::Deny,
            grants: vec![*deny],
        });
    }
    if asking.is_empty() || asking.iter().any(|s| s.layer == Layer::Guard) {
        return None;
    }
    let mut used: Vec<&Grant> = Vec::new();
    for subject in &asking {
        let grant = live
            .iter()
            .find(|g| g.effect == Effect::Allow && g.target.covers(&subject.subject))?;
        if !used.iter().any(|u| u.id == grant.id) {
            used.push(grant);
        }
    }
    Some(GrantMatch {
        effect: Effect::Allow,
        grants: used,
    })
}

/// The grants that apply to a call of `tool` in `context` at `now`.
fn live<'g>(
    grants: &'g [Grant],
    tool: &str,
    context: &GrantContext,
    now: SystemTime,
) -> Vec<&'g Grant> {
    grants
        .iter()
        .filter(|g| g.is_live(tool, context, now))
        .collect()
}

/// The subjects of an ask that an "always" answer is for, when [`match_grants`] answered
/// nothing: those that asked and no live allow grant answers yet, so that "always deny" on
/// `npm install x && curl … | sh` does not also deny the `npm install` a grant already allows.
/// All of `subjects` when grants answer every one that asked (a guard's ask, which grants never
/// allow) or none.
pub fn unanswered(
    grants: &[Grant],
    tool: &str,
    subjects: &[SubjectOutcome],
    context: &GrantContext,
    now: SystemTime,
) -> Vec<SubjectOutcome> {
    let allowing: Vec<&Grant> = live(grants, tool, context, now)
        .into_iter()
        .filter(|g| g.effect == Effect::Allow)
        .collect();
    let asked: Vec<&SubjectOutcome> = asking(subjects).collect();
    let open: Vec<SubjectOutcome> = asked
        .iter()
        .filter(|s| !allowing.iter().any(|g| g.target.covers(&s.subject)))
        .map(|s| (*s).clone())
        .collect();
    if open.is_empty() || open.len() == asked.len() {
        subjects.to_vec()
    } else {
        open
    }
}

fn looks_like_subcommand(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
        && !word.contains("..")
}

/// The target an "always" answer covers for one subject, under the rule's grant kind. `None`
/// when nothing narrower than the prompt can be named (an unknown word in a command, a path that
/// could not be resolved): then no "always" is offered.
///
/// A command's target is its program and subcommand (`git push`, `cargo test`); the exact
/// command when the program runs whatever it is given (shells, interpreters, `env`, `sudo`,
/// `xargs`, … — see [`toolgate_policy::shell::runs_anything`]), when there is no subcommand
/// (`rm -rf build`, `ls`), or for a bare `git` followed by an option.
pub fn target_for(kind: GrantKind, subject: &Subject) -> Option<GrantTarget> {
    if kind == GrantKind::Tool {
        return Some(GrantTarget::Tool);
    }
    match subject {
        Subject::Call => Some(GrantTarget::Tool),
        Subject::Command(c) => {
            let words: Option<Vec<String>> = c
                .command
                .argv
                .iter()
                .map(|w| w.value().map(str::to_owned))
                .collect();
            let words = words?;
            let program = words.first()?;
            match words.get(1) {
                Some(second)
                    if looks_like_subcommand(second)
                        && !shell::runs_anything(program)
                        && !shell::subcommand_runs_anything(program, second) =>
                {
                    Some(GrantTarget::Command {
                        prefix: vec![program.clone(), second.clone()],
                        exact: false,
                    })
                }
                _ => Some(GrantTarget::Command {
                    prefix: words,
                    exact: true,
                }),
            }
        }
        Subject::Path(p) => {
            let resolved = p.resolved.as_ref()?;
            (resolved.alternative.is_none()).then(|| GrantTarget::Path {
                path: resolved.resolved.clone(),
            })
        }
        Subject::Url(u) => u.checked.as_ref().map(|c| GrantTarget::Domain {
            host: c.host.clone(),
        }),
    }
}

/// The targets an "always" answer to this ask would store, one per asking subject (deduplicated),
/// or `None` when some subject has no safe target.
pub fn targets_for(kind: GrantKind, subjects: &[SubjectOutcome]) -> Option<Vec<GrantTarget>> {
    let mut targets: Vec<GrantTarget> = Vec::new();
    for s in asking(subjects) {
        let target = target_for(kind, &s.subject)?;
        if !targets.contains(&target) {
            targets.push(target);
        }
    }
    (!targets.is_empty()).then_some(targets)
}

/// What an "always" answer to this ask would cover, as a person reads it (`exactly the command
/// \`git push\`, the host \`x\``): the targets joined, or `""` when nothing can be remembered.
pub fn covered(kind: GrantKind, subjects: &[SubjectOutcome]) -> String {
    targets_for(kind, subjects)
        .map(|targets| {
            targets
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

/// The answers offered for an ask: the policy's, less the "always" ones when nothing narrower
/// than the question can be remembered.
pub fn offered(
    details: &toolgate_policy::AskDetails,
    subjects: &[SubjectOutcome],
) -> Vec<toolgate_policy::Choice> {
    let remembered = targets_for(details.grant, subjects).is_some();
    details
        .choices
        .iter()
        .copied()
        .filter(|c| remembered || !c.is_always())
        .collect()
}

/// Shared handle to a store.
pub type Grants = Arc<dyn GrantStore>;

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use toolgate_policy::{CommandSubject, shell};

    use super::*;

    fn command(line: &str) -> Subject {
        let analysis = shell::analyze(line);
        let command = analysis.commands.into_iter().next().unwrap();
        Subject::command(CommandSubject {
            command,
            line_findings: Vec::new(),
        })
    }

    fn target(line: &str) -> Option<GrantTarget> {
        target_for(GrantKind::Command, &command(line))
    }

    fn prefix(words: &[&str], exact: bool) -> Option<GrantTarget> {
        Some(GrantTarget::Command {
            prefix: words.iter().map(|w| (*w).to_owned()).collect(),
            exact,
        })
    }

    /// A refusal covers the same act however it is spelled; an allow only the words it was
    /// given for.
    #[test]
    fn a_refusal_covers_the_same_act_however_it_is_spelled() {
        let push = GrantTarget::Command {
            prefix: vec!["git".into(), "push".into()],
            exact: false,
        };
        for spelled in [
            "git push",
            "git -C . push origin main",
            "git --no-pager push",
            "git -c core.pager=cat push --force",
            "/usr/bin/git push",
        ] {
            assert!(push.refuses(&command(spelled)), "{spelled}");
        }
        for other in ["git pull", "git -C . status", "gitk push", "echo git push"] {
            assert!(!push.refuses(&command(other)), "{other}");
        }
        // An allow covers only its words: `git -C . push` asks again.
        assert!(!push.covers(&command("git -C . push")));
        assert!(push.covers(&command("git push origin")));

        // Exact: the same operands, whatever the options (a refused push is refused forced too).
        let push_origin = GrantTarget::Command {
            prefix: vec![
                "git".into(),
                "-C".into(),
                ".".into(),
                "push".into(),
                "origin".into(),
            ],
            exact: true,
        };
        assert!(push_origin.refuses(&command("git push origin")));
        assert!(!push_origin.refuses(&command("git push upstream")));
        assert!(push_origin.refuses(&command("git push --force origin")));
        // Without a subcommand, words alone: a refusal of `rm -rf build` is not every `rm`.
        let words = GrantTarget::Command {
            prefix: vec!["rm".into(), "-rf".into(), "build".into()],
            exact: true,
        };
        assert!(words.refuses(&command("rm -rf build")));
        assert!(!words.refuses(&command("rm -rf dist")));
        assert!(!words.refuses(&command("rm notes.txt")));
    }

    #[test]
    fn a_command_always_covers_its_subcommand_or_else_exactly_the_command() {
        for (line, expected) in [
            ("git push origin main", prefix(&["git", "push"], false)),
            ("cargo test --workspace", prefix(&["cargo", "test"], false)),
            ("rm -rf build", prefix(&["rm", "-rf", "build"], true)),
            ("ls", prefix(&["ls"], true)),
            (
                "git --no-pager log",
                prefix(&["git", "--no-pager", "log"], true),
            ),
            (
                "/usr/bin/git --version",
                prefix(&["/usr/bin/git", "--version"], true),
            ),
            (
                "python3 manage.py migrate",
                prefix(&["python3", "manage.py", "migrate"], true),
            ),
            ("awk program", prefix(&["awk", "program"], true)),
            // npx runs the command it names: the grant is for that command.
            ("npx prettier .", prefix(&["prettier", "."], true)),
            ("npm exec vitest", prefix(&["vitest"], true)),
            ("npm install zod", prefix(&["npm", "install"], false)),
            ("cat $FILE", None),
        ] {
            assert_eq!(target(line), expected, "{line}");
        }
    }

    #[test]
    fn prefixes_and_exact_commands_cover_what_they_say() {
        let push = prefix(&["git", "push"], false).unwrap();
        assert!(push.covers(&command("git push origin main")));
        assert!(push.covers(&command("git push")));
        assert!(!push.covers(&command("git pull")));
        assert!(
            !push.covers(&command("/tmp/git push")),
            "a program path is not the program"
        );
        let exact = prefix(&["rm", "-rf", "build"], true).unwrap();
        assert!(exact.covers(&command("rm -rf build")));
        assert!(!exact.covers(&command("rm -rf build /")));
        assert!(!GrantTarget::Domain { host: "x".into() }.covers(&command("ls")));
        assert!(GrantTarget::Tool.covers(&command("ls")));
    }

    fn context(session: &str, branch: &str, turn: u64, workspace: Option<&str>) -> GrantContext {
        GrantContext {
            session: session.into(),
            branch: branch.into(),
            turn,
            workspace: workspace.map(PathBuf::from),
        }
    }

    #[test]
    fn a_grant_lives_in_its_scope_until_it_expires_or_is_spent() {
        let here = context("s", "main", 3, Some("/ws"));
        let now = SystemTime::now();
        let grant = |kind: ScopeKind| {
            Grant::new(
                Effect::Allow,
                "t",
                GrantTarget::Tool,
                here.scope(kind),
                "me",
            )
        };
        for (kind, elsewhere, expected) in [
            (ScopeKind::Turn, context("s", "main", 3, None), true),
            (ScopeKind::Turn, context("s", "main", 4, Some("/ws")), false),
            (ScopeKind::Turn, context("s", "alt", 3, Some("/ws")), false),
            (ScopeKind::Session, context("s", "alt", 9, None), true),
            (
                ScopeKind::Session,
                context("s2", "main", 3, Some("/ws")),
                false,
            ),
            (
                ScopeKind::Workspace,
                context("s2", "x", 1, Some("/ws")),
                true,
            ),
            (
                ScopeKind::Workspace,
                context("s", "main", 3, Some("/other")),
                false,
            ),
            (ScopeKind::User, context("s9", "x", 1, None), true),
            (ScopeKind::Once, context("s", "alt", 1, None), true),
        ] {
            assert_eq!(
                grant(kind).is_live("t", &elsewhere, now),
                expected,
                "{kind:?} {elsewhere:?}"
            );
        }
        assert!(!grant(ScopeKind::User).is_live("other-tool", &here, now));
        let mut expiring = grant(ScopeKind::User);
        expiring.expires_at = Some(now + Duration::from_secs(60));
        assert!(expiring.is_live("t", &here, now));
        assert!(!expiring.is_live("t", &here, now + Duration::from_secs(61)));
        let once = grant(ScopeKind::Once);
        assert_eq!(once.uses_left, Some(1));
        let spent = Grant {
            uses_left: Some(0),
            ..once
        };
        assert!(!spent.is_live("t", &here, now));
        // Without a workspace, a workspace grant falls back to the session.
        let no_workspace = context("s", "main", 1, None);
        assert_eq!(
            no_workspace.scope(ScopeKind::Workspace),
            GrantScope::Session {
                session: "s".into()
            }
        );
    }

    /// The oracle of [`Lookup`]: for every call and place, what the grants a lookup reads say
    /// is what every grant of the tool says — the allow, the refusal, the grants that decide,
    /// and what an "always" answer would be for.
    #[test]
    fn a_lookup_reads_every_grant_that_could_answer() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("src")).unwrap();
        std::fs::write(ws.join("src/lib.rs"), "").unwrap();
        let ws = ws.canonicalize().unwrap();
        let ws_text = ws.display().to_string();
        let policy = toolgate_policy::Policy::from_toml(
            "policy.toml",
            r#"
version = 1
mode = "deny-all"
[[rule]]
name = "everything-asks"
decision = "ask"
tool = "*"
"#,
        )
        .unwrap();
        let lines = [
            "git push origin main",
            "git -C . push",
            "/usr/bin/git push",
            "git status && cargo test",
            "rm -rf build",
            "npm install zod",
            "ls",
            "cat src/lib.rs",
        ];
        let mut calls: Vec<(String, serde_json::Value)> = lines
            .iter()
            .map(|line| ("Bash".to_owned(), serde_json::json!({"command": line})))
            .collect();
        for path in ["src/lib.rs", "src//lib.rs", "src/new.rs", "/etc/hosts"] {
            calls.push(("Read".into(), serde_json::json!({"file_path": path})));
            calls.push((
                "Write".into(),
                serde_json::json!({"file_path": path, "content": ""}),
            ));
        }
        for url in [
            "https://docs.rs/x",
            "https://www.docs.rs/",
            "http://example.com",
        ] {
            calls.push((
                "WebFetch".into(),
                serde_json::json!({"url": url, "prompt": "p"}),
            ));
        }
        let evaluate = |tool: &str, args: &serde_json::Value| {
            let call = toolgate_policy::Call::from_value(serde_json::json!({
                "tool": tool, "args": args, "context": {"workspace": ws_text, "cwd": ws_text}
            }))
            .unwrap();
            policy.evaluate(&call).subjects
        };
        let places = [
            context("s1", "main", 1, Some(&ws_text)),
            context("s2", "main", 1, Some(&ws_text)),
            context("s1", "main", 1, Some("/elsewhere")),
            context("s3", "main", 1, None),
        ];
        // Grants: what an "always" answer to each call stores, both ways, in each scope made
        // at each place; and a few made by hand.
        let mut grants: Vec<Grant> = Vec::new();
        for (tool, args) in &calls {
            let subjects = evaluate(tool, args);
            for kind in [GrantKind::Tool, GrantKind::Command, GrantKind::Path] {
                let Some(targets) = targets_for(kind, &subjects) else {
                    continue;
                };
                for target in targets {
                    for (at, scope) in places.iter().zip([
                        ScopeKind::Session,
                        ScopeKind::Workspace,
                        ScopeKind::User,
                        ScopeKind::Once,
                    ]) {
                        for effect in [Effect::Allow, Effect::Deny] {
                            grants.push(Grant::new(
                                effect,
                                tool.clone(),
                                target.clone(),
                                at.scope(scope),
                                "me",
                            ));
                        }
                    }
                }
            }
        }
        for (effect, prefix) in [
            (Effect::Deny, &["git", "push"][..]),
            (Effect::Allow, &["/usr/bin/git", "push"][..]),
            (Effect::Allow, &[][..]),
        ] {
            grants.push(Grant::new(
                effect,
                "Bash",
                GrantTarget::Command {
                    prefix: prefix.iter().map(|w| (*w).to_owned()).collect(),
                    exact: false,
                },
                GrantScope::Workspace {
                    root: PathBuf::from(format!("{ws_text}/")),
                },
                "me",
            ));
        }
        let now = SystemTime::now();
        let ids = |found: Option<GrantMatch<'_>>| {
            found.map(|m| {
                (
                    m.effect,
                    m.grants.iter().map(|g| g.id.clone()).collect::<Vec<_>>(),
                )
            })
        };
        // Stores of a few grants each, drawn from them all (so that no one grant of the whole
        // tool answers everything), many times.
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut draw = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let (mut answered, mut refused) = (0, 0);
        for _ in 0..300 {
            let stored: Vec<Grant> = grants
                .iter()
                .filter(|_| draw() % 40 == 0)
                .cloned()
                .collect();
            for (tool, args) in &calls {
                let subjects = evaluate(tool, args);
                for place in &places {
                    let lookup = Lookup::for_ask(tool, &subjects, place);
                    let read: Vec<Grant> = stored
                        .iter()
                        .filter(|g| g.tool == *tool && lookup.admits(g))
                        .cloned()
                        .collect();
                    let all = match_grants(&stored, tool, &subjects, place, now);
                    answered +=
                        usize::from(all.as_ref().is_some_and(|m| m.effect == Effect::Allow));
                    refused += usize::from(all.as_ref().is_some_and(|m| m.effect == Effect::Deny));
                    assert_eq!(
                        ids(match_grants(&read, tool, &subjects, place, now)),
                        ids(all),
                        "{tool} {args} at {place:?}"
                    );
                    assert_eq!(
                        unanswered(&read, tool, &subjects, place, now),
                        unanswered(&stored, tool, &subjects, place, now),
                        "{tool} {args} at {place:?}"
                    );
                }
            }
        }
        // A test that can fail: grants answered both ways, and often.
        assert!(answered > 1000 && refused > 1000, "{answered} {refused}");
        // Grants alike are filed alike.
        for grant in &grants {
            let like = Lookup::like(&grant.tool, std::slice::from_ref(grant));
            assert!(
                grants
                    .iter()
                    .filter(|g| g.lasts_like(grant))
                    .all(|g| like.admits(g))
            );
        }
    }

    #[tokio::test]
    async fn the_memory_store_spends_lists_and_revokes() {
        let store = MemoryGrants::new();
        let here = context("s", "main", 1, None);
        let once = Grant::new(
            Effect::Deny,
            "t",
            GrantTarget::Tool,
            here.scope(ScopeKind::Once),
            "me",
        );
        let id = once.id.clone();
        store.insert(once).await.unwrap();
        assert!(store.use_once(&id).await.unwrap());
        assert!(!store.use_once(&id).await.unwrap(), "spent");
        assert!(!store.use_once("unknown").await.unwrap());
        assert_eq!(store.for_tool("t").await.unwrap().len(), 1);
        assert!(store.revoke(&id).await.unwrap());
        assert!(store.list().await.unwrap().is_empty());
    }

    #[test]
    fn a_grant_round_trips_through_json() {
        let grant = Grant::new(
            Effect::Allow,
            "bash",
            GrantTarget::Command {
                prefix: vec!["git".into(), "push".into()],
                exact: false,
            },
            GrantScope::Workspace { root: "/ws".into() },
            "alice",
        );
        let json = serde_json::to_value(&grant).unwrap();
        assert_eq!(json["scope"], "workspace");
        assert_eq!(json["target"]["kind"], "command");
        let back: Grant = serde_json::from_value(json).unwrap();
        assert_eq!(back.id, grant.id);
        assert_eq!(back.target, grant.target);
        assert_eq!(back.scope, grant.scope);
    }
}
