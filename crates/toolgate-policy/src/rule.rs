//! Rules: conditions on a call (and, with resource conditions, on one of its subjects) that
//! produce a decision.
//!
//! Every condition present in a rule must hold; a list inside one condition is any-of. A rule
//! whose conditions cannot all be judged (an argument of the wrong type, a custom predicate that
//! fails) is an error, and the evaluation fails closed naming the rule — unless another condition
//! is plainly false, in which case the rule simply does not match.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::call::{Call, Tag};
use crate::decision::{Access, AlwaysScope, Choice, Decision, GrantKind, Origin, string_enum};
use crate::diagnostic::Location;
use crate::matcher::{ArgCondition, NamePattern, NameSet, json_eq};
use crate::resource::matchers::Resource;
use crate::subject::Subject;

/// Where a rule comes from: its name, and the file and line it was written at.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct RuleInfo {
    /// The rule's name, or the built-in's name.
    pub name: String,
    /// The policy file, as the user named it (`None` for rules built in code).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<Arc<str>>,
    /// The line of the rule's `[[rule]]` header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// Whether this is one of the five built-in rules.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub builtin: bool,
    /// Whether the commands it allows run outside the kernel sandbox (`sandbox = false`, for a
    /// rule the user trusts); by default an allowed command runs inside it where the sandbox
    /// is used.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unsandboxed: bool,
}

impl fmt::Display for RuleInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`", self.name)?;
        match (&self.file, self.line) {
            (Some(file), Some(line)) => write!(f, " ({file}:{line})"),
            (Some(file), None) => write!(f, " ({file})"),
            (None, _) => Ok(()),
        }
    }
}

string_enum! {
    /// The five built-in rules, with toolregistry's names, results and reasons.
    pub enum Builtin ("built-in rule") {
        /// Allows tools tagged `read_only`: "Tool is read-only".
        AllowReadonly = "allow_readonly",
        /// Asks for tools tagged `destructive`: "Tool is marked as destructive".
        AskDestructive = "ask_destructive",
        /// Denies tools tagged `privileged`: "Tool requires elevated permissions".
        DenyPrivileged = "deny_privileged",
        /// Asks for tools tagged `network`: "Tool requires network access".
        AskNetwork = "ask_network",
        /// Asks for tools tagged `file_system`: "Tool accesses the file system".
        AskFileSystem = "ask_file_system",
    }
}

impl Builtin {
    /// The built-in's decision.
    pub const fn decision(self) -> Decision {
        match self {
            Builtin::AllowReadonly => Decision::Allow,
            Builtin::AskDestructive | Builtin::AskNetwork | Builtin::AskFileSystem => Decision::Ask,
            Builtin::DenyPrivileged => Decision::Deny,
        }
    }

    /// The built-in's reason, exactly as toolregistry words it.
    pub const fn reason(self) -> &'static str {
        match self {
            Builtin::AllowReadonly => "Tool is read-only",
            Builtin::AskDestructive => "Tool is marked as destructive",
            Builtin::DenyPrivileged => "Tool requires elevated permissions",
            Builtin::AskNetwork => "Tool requires network access",
            Builtin::AskFileSystem => "Tool accesses the file system",
        }
    }

    /// The built-in tag the rule matches.
    pub const fn tag(self) -> Tag {
        match self {
            Builtin::AllowReadonly => Tag::ReadOnly,
            Builtin::AskDestructive => Tag::Destructive,
            Builtin::DenyPrivileged => Tag::Privileged,
            Builtin::AskNetwork => Tag::Network,
            Builtin::AskFileSystem => Tag::FileSystem,
        }
    }
}

/// A condition written in code: a closure over the call. An `Err` fails closed.
pub type PredicateFn = dyn Fn(&Call) -> Result<bool, String> + Send + Sync;

/// The conditions of a rule. Absent conditions always hold.
#[derive(Clone, Default)]
pub(crate) struct Conditions {
    pub(crate) tool: Option<NameSet>,
    pub(crate) tags: Option<Vec<Tag>>,
    pub(crate) annotations: Option<Vec<(String, Value)>>,
    pub(crate) access: Option<Vec<Access>>,
    pub(crate) args: Vec<ArgCondition>,
    pub(crate) origin: Option<Vec<Origin>>,
    pub(crate) agent: Option<NameSet>,
    pub(crate) server: Option<NameSet>,
    pub(crate) predicate: Option<Arc<PredicateFn>>,
    /// `path`, `command`, or URL conditions: the rule applies to subjects of that kind only.
    pub(crate) resource: Option<Resource>,
}

impl fmt::Debug for Conditions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Conditions")
            .field("tool", &self.tool)
            .field("tags", &self.tags)
            .field("annotations", &self.annotations)
            .field("access", &self.access)
            .field("args", &self.args)
            .field("origin", &self.origin)
            .field("agent", &self.agent)
            .field("server", &self.server)
            .field("predicate", &self.predicate.as_ref().map(|_| "<closure>"))
            .field("resource", &self.resource)
            .finish()
    }
}

impl Conditions {
    /// Whether the rule has no condition that can fail (at most `tool = "*"`).
    pub(crate) fn is_unconditional(&self) -> bool {
        self.tool.as_ref().is_none_or(NameSet::is_any)
            && self.tags.is_none()
            && self.annotations.is_none()
            && self.access.is_none()
            && self.args.is_empty()
            && self.origin.is_none()
            && self.agent.is_none()
            && self.server.is_none()
            && self.predicate.is_none()
            && self.resource.is_none()
    }
}

/// What is known about a call once, before any rule runs.
#[derive(Clone, Debug)]
pub(crate) struct Facts<'c> {
    pub(crate) call: &'c Call,
    /// The access the call makes, from its profile, its tags or trusted annotations.
    pub(crate) access: Option<Access>,
    /// Whether the call counts as a read for approve-reads.
    pub(crate) read: bool,
    /// Whether annotations can loosen a decision.
    pub(crate) annotations_trusted: bool,
    /// The workspace roots of the call, canonical.
    pub(crate) roots: Vec<std::path::PathBuf>,
}

/// Whether a built-in tag rule's tag holds of a call that does not carry it, by what its
/// profile says it does: `ask_network` matches a fetch tool's URL and any call with network
/// access (Claude Code's `WebFetch` carries no tags), `ask_file_system` a path a tool reads or
/// writes, `allow_readonly` a call that reads.
fn by_access(tag: &Tag, facts: &Facts<'_>, subject: &Subject) -> bool {
    match tag {
        Tag::Network => matches!(subject, Subject::Url(_)) || facts.access == Some(Access::Network),
        Tag::FileSystem => matches!(subject, Subject::Path(_)),
        Tag::ReadOnly => facts.read,
        _ => false,
    }
}

/// Why a rule did not match: the first condition found false.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Miss {
    /// The rule is about another kind of subject (or ignores mentions).
    SubjectKind,
    /// The resource condition does not hold.
    Resource,
    Tool,
    Origin,
    Agent,
    Server,
    Tags,
    Access,
    Annotations {
        untrusted: bool,
    },
    /// The argument condition at `condition` failed at its test `test`.
    Arg {
        condition: usize,
        test: usize,
    },
    Predicate,
}

/// An example attached to a rule, checked when the policy loads.
#[derive(Clone, Debug)]
pub(crate) struct Example {
    /// `true` for `match`, `false` for `not_match`.
    pub(crate) should_match: bool,
    pub(crate) input: ExampleInput,
    pub(crate) location: Option<Location>,
}

/// An example: an abbreviated call, or for a resource rule the resource as text (a command
/// line, a path, a URL).
#[derive(Clone, Debug)]
pub(crate) enum ExampleInput {
    Call(Box<Call>),
    Text(String),
}

/// One compiled rule.
#[derive(Clone, Debug)]
pub struct Rule {
    pub(crate) info: Arc<RuleInfo>,
    pub(crate) decision: Decision,
    pub(crate) reason: Arc<str>,
    pub(crate) when: Conditions,
    pub(crate) choices: Option<Arc<[Choice]>>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) grant: Option<GrantKind>,
    pub(crate) scopes: Option<Arc<[AlwaysScope]>>,
    pub(crate) examples: Vec<Example>,
    pub(crate) location: Option<Location>,
}

impl Rule {
    /// Starts a rule built in code.
    ///
    /// ```rust,standalone_crate
    /// use toolgate_policy::{Decision, Rule};
    /// let rule = Rule::builder("no-payments", Decision::Deny)
    ///     .tool("pay*")
    ///     .reason("payments need a person")
    ///     .build()?;
    /// assert_eq!(rule.name(), "no-payments");
    /// # Ok::<(), String>(())
    /// ```
    pub fn builder(name: impl Into<String>, decision: Decision) -> RuleBuilder {
        RuleBuilder {
            name: name.into(),
            decision,
            reason: None,
            tools: Vec::new(),
            when: Conditions::default(),
            choices: None,
            timeout: None,
            grant: None,
            scopes: None,
        }
    }

    /// One of the five built-in rules.
    pub fn builtin(builtin: Builtin) -> Rule {
        Rule {
            info: Arc::new(RuleInfo {
                name: builtin.as_str().to_owned(),
                file: None,
                line: None,
                builtin: true,
                unsandboxed: false,
            }),
            decision: builtin.decision(),
            reason: builtin.reason().into(),
            when: Conditions {
                tags: Some(vec![builtin.tag()]),
                ..Conditions::default()
            },
            choices: None,
            timeout: None,
            grant: None,
            scopes: None,
            examples: Vec::new(),
            location: None,
        }
    }

    /// The rule's name.
    pub fn name(&self) -> &str {
        &self.info.name
    }

    /// Where the rule comes from.
    pub fn info(&self) -> &Arc<RuleInfo> {
        &self.info
    }

    /// The rule's decision.
    pub fn decision(&self) -> Decision {
        self.decision
    }

    /// How many examples the rule carries.
    pub fn examples_len(&self) -> usize {
        self.examples.len()
    }

    /// Whether the rule matches `subject` of the call described by `facts`.
    ///
    /// `Ok(None)`: it matches. `Ok(Some(miss))`: a condition is false. `Err`: no condition is
    /// false but one could not be judged.
    pub(crate) fn check(
        &self,
        facts: &Facts<'_>,
        subject: &Subject,
    ) -> Result<Option<Miss>, String> {
        let when = &self.when;
        let call = facts.call;
        let loosens = self.decision == Decision::Allow;
        match (&when.resource, subject) {
            (None, s) if s.is_mention() => return Ok(Some(Miss::SubjectKind)),
            (None, _) => {}
            (Some(_), s) if s.is_mention() && loosens => return Ok(Some(Miss::SubjectKind)),
            (Some(Resource::Path(set)), Subject::Path(p)) => {
                if !set.matches(p, &facts.roots, loosens) {
                    return Ok(Some(Miss::Resource));
                }
            }
            (Some(Resource::Command(set)), Subject::Command(c)) => {
                if !set.matches(c, loosens) {
                    return Ok(Some(Miss::Resource));
                }
            }
            (Some(Resource::Url(conditions)), Subject::Url(u)) => {
                if !conditions.matches(u, loosens) {
                    return Ok(Some(Miss::Resource));
                }
            }
            (Some(_), _) => return Ok(Some(Miss::SubjectKind)),
        }
        if let Some(tool) = &when.tool
            && !tool.is_match(&call.tool)
        {
            return Ok(Some(Miss::Tool));
        }
        if let Some(origins) = &when.origin
            && !call.context.origin.is_some_and(|o| origins.contains(&o))
        {
            return Ok(Some(Miss::Origin));
        }
        if let Some(agent) = &when.agent
            && !call
                .context
                .agent
                .as_deref()
                .is_some_and(|a| agent.is_match(a))
        {
            return Ok(Some(Miss::Agent));
        }
        if let Some(server) = &when.server
            && !call
                .context
                .server
                .as_deref()
                .is_some_and(|s| server.is_match(s))
        {
            return Ok(Some(Miss::Server));
        }
        if let Some(tags) = &when.tags
            && !tags.iter().any(|t| call.has_tag(t))
            && !(self.info.builtin && tags.iter().any(|t| by_access(t, facts, subject)))
        {
            return Ok(Some(Miss::Tags));
        }
        if let Some(access) = &when.access {
            let subject_access = subject.access().or(facts.access);
            if !subject_access.is_some_and(|a| access.contains(&a)) {
                return Ok(Some(Miss::Access));
            }
        }
        if let Some(expected) = &when.annotations {
            let holds = expected
                .iter()
                .all(|(k, v)| call.annotations.get(k).is_some_and(|a| json_eq(a, v)));
            if !holds {
                return Ok(Some(Miss::Annotations { untrusted: false }));
            }
            if loosens && !facts.annotations_trusted {
                return Ok(Some(Miss::Annotations { untrusted: true }));
            }
        }
        let mut error = None;
        for (condition, arg) in when.args.iter().enumerate() {
            match arg.check(&call.args) {
                Ok(None) => {}
                Ok(Some(test)) => return Ok(Some(Miss::Arg { condition, test })),
                Err(e) => {
                    error.get_or_insert(e);
                }
            }
        }
        if let Some(predicate) = &when.predicate {
            match predicate(call) {
                Ok(true) => {}
                Ok(false) => return Ok(Some(Miss::Predicate)),
                Err(e) => {
                    error.get_or_insert(format!("predicate: {e}"));
                }
            }
        }
        match error {
            Some(e) => Err(e),
            None => Ok(None),
        }
    }

    /// Only the resource condition, for string examples.
    pub(crate) fn check_resource(
        &self,
        subject: &Subject,
        roots: &[std::path::PathBuf],
        loosens: bool,
    ) -> Option<Miss> {
        let holds = match (&self.when.resource, subject) {
            (Some(Resource::Path(set)), Subject::Path(p)) => set.matches(p, roots, loosens),
            (Some(Resource::Command(set)), Subject::Command(c)) => set.matches(c, loosens),
            (Some(Resource::Url(conditions)), Subject::Url(u)) => conditions.matches(u, loosens),
            _ => return Some(Miss::SubjectKind),
        };
        (!holds).then_some(Miss::Resource)
    }

    /// The name set of the `tool` condition, when the rule has one that can fail.
    pub(crate) fn tool_patterns(&self) -> Option<&[NamePattern]> {
        self.when
            .tool
            .as_ref()
            .filter(|t| !t.is_any())
            .map(|t| t.patterns.as_slice())
    }
}

/// Builds a [`Rule`] in code.
#[must_use]
pub struct RuleBuilder {
    name: String,
    decision: Decision,
    reason: Option<String>,
    tools: Vec<String>,
    when: Conditions,
    choices: Option<Vec<Choice>>,
    timeout: Option<Duration>,
    grant: Option<GrantKind>,
    scopes: Option<Vec<AlwaysScope>>,
}

impl RuleBuilder {
    /// The reason shown with the decision.
    pub fn reason(mut self, reason: impl Into<String>) -> RuleBuilder {
        self.reason = Some(reason.into());
        self
    }

    /// Adds a tool-name pattern (exact, or a glob; any-of).
    pub fn tool(mut self, pattern: impl Into<String>) -> RuleBuilder {
        self.tools.push(pattern.into());
        self
    }

    /// Adds a tag (any-of).
    pub fn tag(mut self, tag: Tag) -> RuleBuilder {
        self.when.tags.get_or_insert_with(Vec::new).push(tag);
        self
    }

    /// Adds an access kind (any-of).
    pub fn access(mut self, access: Access) -> RuleBuilder {
        self.when.access.get_or_insert_with(Vec::new).push(access);
        self
    }

    /// Adds an origin (any-of).
    pub fn origin(mut self, origin: Origin) -> RuleBuilder {
        self.when.origin.get_or_insert_with(Vec::new).push(origin);
        self
    }

    /// A condition in code. It runs after every declared condition holds; an `Err` makes the
    /// evaluation deny naming the rule.
    pub fn when(
        mut self,
        predicate: impl Fn(&Call) -> Result<bool, String> + Send + Sync + 'static,
    ) -> RuleBuilder {
        self.when.predicate = Some(Arc::new(predicate));
        self
    }

    /// The answers a human is offered when this rule asks.
    pub fn choices(mut self, choices: impl IntoIterator<Item = Choice>) -> RuleBuilder {
        self.choices = Some(choices.into_iter().collect());
        self
    }

    /// How long a human has to answer when this rule asks.
    pub fn timeout(mut self, timeout: Duration) -> RuleBuilder {
        self.timeout = Some(timeout);
        self
    }

    /// What an "always" answer covers.
    pub fn grant(mut self, grant: GrantKind) -> RuleBuilder {
        self.grant = Some(grant);
        self
    }

    /// Where an "always" answer to this rule's ask may apply, the default first.
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = AlwaysScope>) -> RuleBuilder {
        self.scopes = Some(scopes.into_iter().collect());
        self
    }

    /// Compiles the rule; an invalid tool pattern is an error.
    pub fn build(self) -> Result<Rule, String> {
        let mut when = self.when;
        if !self.tools.is_empty() {
            let patterns = self
                .tools
                .iter()
                .map(|t| NamePattern::new(t).map_err(|e| format!("tool pattern `{t}`: {e}")))
                .collect::<Result<Vec<_>, _>>()?;
            when.tool = Some(NameSet { patterns });
        }
        let reason = self
            .reason
            .unwrap_or_else(|| format!("matched rule `{}`", self.name));
        Ok(Rule {
            info: Arc::new(RuleInfo {
                name: self.name,
                file: None,
                line: None,
                builtin: false,
                unsandboxed: false,
            }),
            decision: self.decision,
            reason: reason.into(),
            when,
            choices: self.choices.map(Into::into),
            timeout: self.timeout,
            grant: self.grant,
            scopes: self.scopes.map(Into::into),
            examples: Vec::new(),
            location: None,
        })
    }
}
