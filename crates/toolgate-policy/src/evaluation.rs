//! The result of evaluating a call (DESIGN §4.2), and the options of one run.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::call::CallError;
use crate::decision::{Access, AlwaysScope, Choice, Decision, GrantKind, Layer, Mode};
use crate::rule::RuleInfo;
use crate::subject::Subject;

/// What the policy decided for one call, and why.
///
/// Its JSON form is one output line of `toolgate check`:
///
/// ```json
/// {"decision": "ask", "reason": "…", "rule": "ask-writes", "layer": "rule",
///  "source": {"file": "policy.toml", "line": 20}, "mode": "approve-reads", "access": "write",
///  "subjects": [{"kind": "call", "decision": "ask", "layer": "rule", "rule": "ask-writes"}],
///  "choices": ["allow-once", "allow-always", "reject-once", "reject-always"],
///  "timeout_ms": 300000, "grant": "tool"}
/// ```
///
/// `access` is what the tool's profile (or tags) say the call does as a whole, when they say; a
/// command subject carries its program's `effect` (`reads`, `writes`, `fetches`, `runs`) when
/// the program is known.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// Allow, ask or deny.
    pub decision: Decision,
    /// Why, for people (and for the model, when the call is refused).
    pub reason: Arc<str>,
    /// Which part of the evaluation decided.
    pub layer: Layer,
    /// The rule behind the decision, when one was involved (also when the mode or an override
    /// changed its decision).
    pub rule: Option<Arc<RuleInfo>>,
    /// How each subject of the call was decided, in order.
    pub subjects: Vec<SubjectOutcome>,
    /// The mode the call was evaluated under.
    pub mode: Mode,
    /// What a human is offered, when the decision is ask.
    pub ask: Option<AskDetails>,
    /// Arguments a rule or handler rewrote, when any did.
    pub args: Option<Map<String, Value>>,
    /// Why the call could not be evaluated (the decision is then deny, layer validate).
    pub error: Option<CallError>,
    /// The access the call makes as a whole, as its tool's profile (or its tags) say:
    /// `None` when nothing says (then each subject's own access is what is known).
    pub access: Option<Access>,
}

impl Evaluation {
    /// The deny a malformed call gets before any rule runs.
    pub(crate) fn invalid(error: CallError, mode: Mode) -> Evaluation {
        Evaluation {
            decision: Decision::Deny,
            reason: format!("invalid call: {}", error.message).into(),
            layer: Layer::Validate,
            rule: None,
            subjects: Vec::new(),
            mode,
            ask: None,
            args: None,
            error: Some(error),
            access: None,
        }
    }

    /// Whether the call, allowed, runs inside the kernel sandbox where the sandbox is used:
    /// yes, unless each command it runs was allowed by a rule that says `sandbox = false` (a
    /// compound command runs outside only when every part was; a part the mode or a guard
    /// allowed keeps the whole inside; the paths a command reads or writes do not count — the
    /// sandbox is for what the command does).
    pub fn sandboxed(&self) -> bool {
        let mut commands = self
            .subjects
            .iter()
            .filter(|s| matches!(s.subject, Subject::Command(_)))
            .peekable();
        let unsandboxed = self.decision == Decision::Allow
            && commands.peek().is_some()
            && commands.all(|s| {
                s.decision == Decision::Allow
                    && s.layer == Layer::Rule
                    && s.rule.as_ref().is_some_and(|r| r.unsandboxed)
            });
        !unsandboxed
    }

    /// The deciding rule's name, if a rule was involved.
    pub fn rule_name(&self) -> Option<&str> {
        self.rule.as_deref().map(|r| r.name.as_str())
    }

    /// The subject whose outcome decided the call (its reason is the call's, unless a run
    /// option changed the decision afterwards): the strictest, a guard's first among equals.
    pub fn deciding_subject(&self) -> Option<&SubjectOutcome> {
        self.subjects.get(crate::eval::strictest(
            self.subjects.iter().map(|o| (o.decision, o.layer)),
        ))
    }
}

/// How one subject was decided.
#[derive(Clone, Debug, PartialEq)]
pub struct SubjectOutcome {
    /// The subject.
    pub subject: Subject,
    /// Its decision.
    pub decision: Decision,
    /// The layer that decided it (guard, rule or default).
    pub layer: Layer,
    /// The rule that decided it.
    pub rule: Option<Arc<RuleInfo>>,
    /// Why.
    pub reason: Arc<str>,
}

/// What a human is offered for an ask.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AskDetails {
    /// The answers offered.
    pub choices: Arc<[Choice]>,
    /// How long before the request resolves as reject-once.
    pub timeout: Duration,
    /// What an "always" answer covers.
    pub grant: GrantKind,
    /// Where an "always" answer may apply, the default first.
    pub scopes: Arc<[AlwaysScope]>,
}

/// A per-tool run override (HPD's `RequirePermissionFor` / `DisablePermissionFor`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PermissionOverride {
    /// An allow becomes an ask.
    Require,
    /// An ask becomes an allow (a deny stays a deny; guards are never loosened).
    Disable,
}

/// Options of one run: overrides that apply on top of the policy.
///
/// Order of application: rules and defaults, then per-tool overrides, then the deny-all ceiling,
/// then full access. Nothing here loosens a guard or a deny.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Replaces the policy's mode (a call's own `context.mode` still wins).
    pub mode: Option<Mode>,
    /// Skip asking: every ask becomes an allow, except a guard's.
    pub full_access: bool,
    overrides: HashMap<String, PermissionOverride>,
}

impl RunOptions {
    /// Sets the run's mode.
    #[must_use]
    pub fn with_mode(mut self, mode: Mode) -> RunOptions {
        self.mode = Some(mode);
        self
    }

    /// Skips asking for the whole run.
    #[must_use]
    pub fn with_full_access(mut self, full_access: bool) -> RunOptions {
        self.full_access = full_access;
        self
    }

    /// Requires a human for `tool`: its allows become asks.
    pub fn require_permission_for(&mut self, tool: impl Into<String>) -> &mut RunOptions {
        self.overrides
            .insert(tool.into(), PermissionOverride::Require);
        self
    }

    /// Disables asking for `tool`: its asks become allows.
    pub fn disable_permission_for(&mut self, tool: impl Into<String>) -> &mut RunOptions {
        self.overrides
            .insert(tool.into(), PermissionOverride::Disable);
        self
    }

    /// Removes an override for `tool`.
    pub fn clear_permission_override(&mut self, tool: &str) -> &mut RunOptions {
        self.overrides.remove(tool);
        self
    }

    /// The override for `tool`, if any.
    pub fn permission_override(&self, tool: &str) -> Option<PermissionOverride> {
        if self.overrides.is_empty() {
            return None;
        }
        self.overrides.get(tool).copied()
    }
}

impl Serialize for Evaluation {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("decision", &self.decision)?;
        map.serialize_entry("reason", &*self.reason)?;
        map.serialize_entry("rule", &self.rule_name())?;
        map.serialize_entry("layer", &self.layer)?;
        if let Some(rule) = &self.rule
            && rule.file.is_some()
        {
            map.serialize_entry("source", &Source(rule))?;
        }
        map.serialize_entry("mode", &self.mode)?;
        if let Some(access) = self.access {
            map.serialize_entry("access", &access)?;
        }
        map.serialize_entry("subjects", &self.subjects)?;
        if let Some(ask) = &self.ask {
            map.serialize_entry("choices", &*ask.choices)?;
            let millis = u64::try_from(ask.timeout.as_millis()).unwrap_or(u64::MAX);
            map.serialize_entry("timeout_ms", &millis)?;
            map.serialize_entry("grant", &ask.grant)?;
        }
        if let Some(args) = &self.args {
            map.serialize_entry("args", args)?;
        }
        if let Some(error) = &self.error {
            map.serialize_entry("error", error)?;
        }
        if !self.sandboxed() {
            // Said only when it is so (`sandbox = false` on the rules that allowed it).
            map.serialize_entry("sandbox", &false)?;
        }
        map.end()
    }
}

struct Source<'a>(&'a RuleInfo);

impl Serialize for Source<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("file", &self.0.file)?;
        map.serialize_entry("line", &self.0.line)?;
        map.end()
    }
}

impl Serialize for SubjectOutcome {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("kind", self.subject.kind())?;
        match &self.subject {
            Subject::Call => {}
            Subject::Path(p) => {
                map.serialize_entry("path", &p.given)?;
                map.serialize_entry("access", &p.access)?;
                map.serialize_entry("role", &p.role)?;
                if let Some(r) = &p.resolved {
                    map.serialize_entry("resolved", &r.resolved)?;
                    map.serialize_entry("root", &r.root)?;
                }
            }
            Subject::Command(c) => {
                let argv: Vec<&str> = c
                    .command
                    .argv
                    .iter()
                    .map(|w| w.value().unwrap_or(&w.text))
                    .collect();
                map.serialize_entry("command", &argv.join(" "))?;
                if !c.command.wrappers.is_empty() || c.command.text != argv.join(" ") {
                    map.serialize_entry("text", &c.command.text)?;
                }
                if let Some(kind) = c.command.reading.as_ref().and_then(|r| r.kind) {
                    map.serialize_entry("effect", kind)?;
                }
                let findings: Vec<&str> = c.findings().map(|f| f.detail.as_str()).collect();
                if !findings.is_empty() {
                    map.serialize_entry("findings", &findings)?;
                }
            }
            Subject::Url(u) => {
                map.serialize_entry("url", &u.given)?;
                if let Some(c) = &u.checked {
                    map.serialize_entry("host", &c.host)?;
                }
            }
        }
        map.serialize_entry("decision", &self.decision)?;
        map.serialize_entry("layer", &self.layer)?;
        map.serialize_entry("rule", &self.rule.as_deref().map(|r| r.name.as_str()))?;
        map.serialize_entry("reason", &*self.reason)?;
        map.end()
    }
}
