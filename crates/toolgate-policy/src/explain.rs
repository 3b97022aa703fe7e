//! `explain`: the whole trace of one evaluation — the mode, the profile, every rule of every file
//! considered for every subject and why it matched or not, then the default, the overrides and
//! the ceiling.
//!
//! The trace is computed by a plain scan of every rule (not the index), so it doubles as a second
//! implementation: tests hold its verdicts to the evaluation's.

use std::fmt;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::call::Call;
use crate::decision::{Access, Decision, Layer, Mode};
use crate::eval::validate;
use crate::evaluation::{Evaluation, RunOptions};
use crate::guard::Guard;
use crate::matcher::describe_list;
use crate::policy::Policy;
use crate::profile::ProfileInfo;
use crate::rule::{Facts, Miss, Rule, RuleInfo};
use crate::subject::Subject;

/// An evaluation with its trace.
#[derive(Clone, Debug, Serialize)]
pub struct Explanation {
    /// The call's tool.
    pub tool: String,
    /// The result, exactly as [`Policy::evaluate_with`] gives it.
    pub evaluation: Evaluation,
    /// The mode and where it came from (`the call's context`, `the run`, `the policy`).
    pub mode: ModeTrace,
    /// What the profile says about the call (absent when the call was invalid).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileTrace>,
    /// Each subject, file by file, rule by rule.
    pub subjects: Vec<SubjectTrace>,
    /// What the run and the mode changed after the rules, in order.
    pub adjustments: Vec<String>,
}

/// The mode a call was evaluated under.
#[derive(Clone, Debug, Serialize)]
pub struct ModeTrace {
    /// The mode.
    pub mode: Mode,
    /// Where it was set.
    pub from: &'static str,
}

/// What the profile says about the call.
#[derive(Clone, Debug, Serialize)]
pub struct ProfileTrace {
    /// The profile that applied, if any.
    pub profile: Option<Arc<ProfileInfo>>,
    /// The call's access.
    pub access: Option<Access>,
    /// Whether the call counts as a read.
    pub read: bool,
    /// Why, in words.
    pub detail: String,
}

/// How one subject was decided.
#[derive(Clone, Debug, Serialize)]
pub struct SubjectTrace {
    /// The subject.
    pub subject: Subject,
    /// What the guards said, if anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guard: Option<String>,
    /// Whether the subject took part in the decision (a mention no rule speaks to does not).
    pub counted: bool,
    /// Each file's rules.
    pub files: Vec<FileTrace>,
    /// The subject's decision.
    pub decision: Decision,
    /// The layer that decided it.
    pub layer: Layer,
    /// Why.
    pub reason: String,
}

/// One file's rules for one subject.
#[derive(Clone, Debug, Serialize)]
pub struct FileTrace {
    /// The file.
    pub file: Arc<str>,
    /// Every rule, in order.
    pub rules: Vec<RuleTrace>,
}

/// One rule's verdict for one subject.
#[derive(Clone, Debug, Serialize)]
pub struct RuleTrace {
    /// The rule.
    pub rule: Arc<RuleInfo>,
    /// The rule's decision.
    pub decision: Decision,
    /// What happened.
    pub verdict: Verdict,
    /// Why, in words.
    pub detail: String,
}

/// What happened to one rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every condition holds: this rule decided the subject for its file.
    Matched,
    /// A condition is false.
    NotMatched,
    /// A condition could not be judged: the subject is denied naming this rule.
    Failed,
    /// An earlier rule of the file already decided.
    NotReached,
}

impl Policy {
    /// Evaluates a call and traces every step.
    pub fn explain(&self, call: &Call, run: &RunOptions) -> Explanation {
        let mut adjustments = Vec::new();
        let evaluation = self.evaluate_traced(call, run, Some(&mut adjustments));
        let (mode, from) = self.mode_for(call, run);
        let mut explanation = Explanation {
            tool: call.tool.clone(),
            evaluation,
            mode: ModeTrace { mode, from },
            profile: None,
            subjects: Vec::new(),
            adjustments,
        };
        if validate(call).is_err() {
            return explanation;
        }
        let prepared = self.prepare(call);
        explanation.profile = Some(self.profile_trace(&prepared.facts));
        for subject in prepared.subjects {
            let guard = self.subject_guard(call, &subject, prepared.call_guard.as_ref());
            explanation
                .subjects
                .push(self.subject_trace(&prepared.facts, subject, mode, guard));
        }
        explanation
    }

    fn profile_trace(&self, facts: &Facts<'_>) -> ProfileTrace {
        let call = facts.call;
        let profile = self.profiles.find(&call.tool).map(|p| p.info.clone());
        let roots: Vec<String> = facts
            .roots
            .iter()
            .map(|r| format!("`{}`", r.display()))
            .collect();
        let detail = match (&profile, facts.access) {
            (Some(p), Some(access)) if roots.is_empty() => format!("{p} says `{access}`"),
            (Some(p), Some(access)) => {
                format!("{p} says `{access}`; workspace roots {}", roots.join(", "))
            }
            (None, Some(_)) if call.has_tag(&crate::Tag::ReadOnly) => {
                "no profile; the `read_only` tag makes it a read".into()
            }
            (None, Some(_)) => "no profile; the trusted server marks it `readOnlyHint`".into(),
            (_, None) => {
                let hint = if call.annotations.get("readOnlyHint") == Some(&Value::Bool(true)) {
                    " (its `readOnlyHint` comes from an untrusted server and is ignored)"
                } else {
                    ""
                };
                format!("no profile; access unknown, so not a read{hint}")
            }
        };
        ProfileTrace {
            profile,
            access: facts.access,
            read: facts.read,
            detail,
        }
    }

    fn subject_trace(
        &self,
        facts: &Facts<'_>,
        subject: Subject,
        mode: Mode,
        guard: Option<Guard>,
    ) -> SubjectTrace {
        let guard_text = guard
            .as_ref()
            .map(|g| format!("{} by guard `{}`: {}", g.decision, g.name, g.reason));
        let mut files = Vec::with_capacity(self.sets.len());
        for set in &self.sets {
            let mut decided = false;
            let mut rules = Vec::with_capacity(set.rules.len());
            for rule in &set.rules {
                let (verdict, detail) = if decided {
                    (
                        Verdict::NotReached,
                        "an earlier rule of this file decided".to_owned(),
                    )
                } else {
                    match rule.check(facts, &subject) {
                        Ok(None) => {
                            decided = true;
                            let detail = match matched_by(rule, facts, &subject) {
                                Some(by) => format!("every condition holds ({by})"),
                                None => "every condition holds".to_owned(),
                            };
                            (Verdict::Matched, detail)
                        }
                        Ok(Some(miss)) => (Verdict::NotMatched, describe_miss(rule, facts, miss)),
                        Err(e) => {
                            decided = true;
                            (
                                Verdict::Failed,
                                format!("cannot be evaluated: {e}; this denies"),
                            )
                        }
                    }
                };
                rules.push(RuleTrace {
                    rule: rule.info.clone(),
                    decision: rule.decision,
                    verdict,
                    detail,
                });
            }
            files.push(FileTrace {
                file: set.name.clone(),
                rules,
            });
        }
        match self.decide_subject(facts, &subject, mode, guard) {
            Some(decided) => SubjectTrace {
                subject,
                guard: guard_text,
                files,
                decision: decided.decision,
                layer: decided.layer,
                reason: decided.reason.to_string(),
                counted: true,
            },
            None => SubjectTrace {
                subject,
                guard: guard_text,
                files,
                decision: Decision::Allow,
                layer: Layer::Rule,
                reason: "mentioned only; no deny or ask rule speaks to it".into(),
                counted: false,
            },
        }
    }
}

/// Why a rule did not match, in words.
pub(crate) fn describe_miss(rule: &Rule, facts: &Facts<'_>, miss: Miss) -> String {
    let call = facts.call;
    let when = &rule.when;
    match miss {
        Miss::SubjectKind => match &when.resource {
            Some(r) => format!("the rule is about {} subjects", r.kind()),
            None => {
                "the subject is only mentioned, and only resource rules that deny or ask see those"
                    .into()
            }
        },
        Miss::Resource => format!(
            "the {} does not match {}",
            when.resource.as_ref().map_or("resource", |r| r.kind()),
            when.resource
                .as_ref()
                .map(|r| r.describe())
                .unwrap_or_default()
        ),
        Miss::Tool => format!(
            "tool `{}` does not match {}",
            call.tool,
            when.tool.as_ref().map(|t| t.describe()).unwrap_or_default()
        ),
        Miss::Origin => {
            let wanted = when
                .origin
                .as_ref()
                .map(|o| describe_list(o.iter().map(|x| x.as_str())))
                .unwrap_or_default();
            match call.context.origin {
                Some(origin) => format!("origin `{origin}` is not {wanted}"),
                None => format!("the call has no origin; the rule needs {wanted}"),
            }
        }
        Miss::Agent => match &call.context.agent {
            Some(agent) => format!(
                "agent `{agent}` does not match {}",
                when.agent
                    .as_ref()
                    .map(|a| a.describe())
                    .unwrap_or_default()
            ),
            None => "the call names no agent".into(),
        },
        Miss::Server => match &call.context.server {
            Some(server) => format!(
                "server `{server}` does not match {}",
                when.server
                    .as_ref()
                    .map(|s| s.describe())
                    .unwrap_or_default()
            ),
            None => "the call names no server".into(),
        },
        Miss::Tags => {
            let wanted = when
                .tags
                .as_ref()
                .map(|t| describe_list(t.iter().map(|x| x.as_str())))
                .unwrap_or_default();
            if call.tags.is_empty() {
                format!("the call has no tags; the rule needs {wanted}")
            } else {
                format!(
                    "the call's tags ({}) include none of {wanted}",
                    describe_list(call.tags.iter().map(|t| t.as_str())).replace(" or ", ", ")
                )
            }
        }
        Miss::Access => {
            let wanted = when
                .access
                .as_ref()
                .map(|a| describe_list(a.iter().map(|x| x.as_str())))
                .unwrap_or_default();
            match facts.access {
                Some(access) => format!("access `{access}` is not {wanted}"),
                None => format!("the call's access is unknown; the rule needs {wanted}"),
            }
        }
        Miss::Annotations { untrusted: true } => {
            "annotations from an untrusted server cannot allow".into()
        }
        Miss::Annotations { untrusted: false } => {
            let expected = when.annotations.as_deref().unwrap_or_default();
            for (key, value) in expected {
                match call.annotations.get(key) {
                    None => {
                        return format!("annotation `{key}` is missing (the rule needs {value})");
                    }
                    Some(actual) if !crate::matcher::json_eq(actual, value) => {
                        return format!("annotation `{key}` is {actual}, not {value}");
                    }
                    Some(_) => {}
                }
            }
            "an annotation differs".into()
        }
        Miss::Arg { condition, test } => {
            let Some(arg) = when.args.get(condition) else {
                return "an argument condition is false".into();
            };
            let test = arg
                .tests
                .get(test)
                .map(ToString::to_string)
                .unwrap_or_default();
            match call.args.pointer(&arg.pointer) {
                Some(value) => format!("argument `{}` = {value} fails `{test}`", arg.pointer),
                None => format!("argument `{}` is missing (`{test}`)", arg.pointer),
            }
        }
        Miss::Predicate => "the rule's predicate returned false".into(),
    }
}

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = &self.evaluation;
        writeln!(f, "call: {}", self.tool)?;
        writeln!(f, "mode: {} (from {})", self.mode.mode, self.mode.from)?;
        if let Some(error) = &e.error {
            writeln!(f, "invalid call: {}", error.message)?;
            writeln!(f, "no rule, handler or human was consulted")?;
        }
        if let Some(profile) = &self.profile {
            writeln!(f, "profile: {}", profile.detail)?;
        }
        let hidden = self.subjects.iter().filter(|s| !s.counted).count();
        for subject in self.subjects.iter().filter(|s| s.counted) {
            writeln!(f, "subject: {}", subject.subject)?;
            if let Subject::Command(c) = &subject.subject {
                for finding in c.findings() {
                    writeln!(f, "  finding: {}", finding.detail)?;
                }
            }
            if let Some(guard) = &subject.guard {
                writeln!(f, "  guard: {guard}")?;
            }
            for file in &subject.files {
                writeln!(f, "  {}", file.file)?;
                if file.rules.is_empty() {
                    writeln!(f, "    (no rules)")?;
                }
                for rule in &file.rules {
                    let mark = match rule.verdict {
                        Verdict::Matched => "match",
                        Verdict::NotMatched => "no   ",
                        Verdict::Failed => "FAIL ",
                        Verdict::NotReached => "-    ",
                    };
                    let line = rule
                        .rule
                        .line
                        .map(|l| format!(" (line {l})"))
                        .unwrap_or_default();
                    writeln!(
                        f,
                        "    {mark} {} `{}`{line}: {}",
                        rule.decision, rule.rule.name, rule.detail
                    )?;
                }
            }
            writeln!(
                f,
                "  => {} ({}): {}",
                subject.decision, subject.layer, subject.reason
            )?;
        }
        if hidden > 0 {
            writeln!(
                f,
                "({hidden} mentioned paths or URLs no deny or ask rule speaks to are not shown)"
            )?;
        }
        for adjustment in &self.adjustments {
            writeln!(f, "then: {adjustment}")?;
        }
        write!(f, "result: {} ({})", e.decision, e.layer)?;
        match (&e.rule, e.layer) {
            (Some(guard), Layer::Guard) => write!(f, " by guard `{}`", guard.name)?,
            (Some(rule), _) => write!(f, " by rule {rule}")?,
            (None, _) => {}
        }
        writeln!(f)?;
        writeln!(f, "reason: {}", e.reason)?;
        if e.decision == Decision::Allow {
            if e.sandboxed() {
                writeln!(
                    f,
                    "sandbox: a command runs inside it (where the sandbox is used)"
                )?;
            } else {
                writeln!(
                    f,
                    "sandbox: a command runs outside it (the rules that allowed it say \
                     `sandbox = false`)"
                )?;
            }
        }
        if let Some(ask) = &e.ask {
            let choices: Vec<&str> = ask.choices.iter().map(|c| c.as_str()).collect();
            writeln!(
                f,
                "a human is offered: {} (timeout {}s; \"always\" covers the {})",
                choices.join(", "),
                ask.timeout.as_secs(),
                ask.grant
            )?;
        }
        Ok(())
    }
}

/// Which of a matching rule's resource patterns the subject met: the command pattern, the path
/// glob, the domain (each tried alone, as the rule would read it).
fn matched_by(rule: &Rule, facts: &Facts<'_>, subject: &Subject) -> Option<String> {
    use crate::resource::matchers::{CommandSet, PathMatcher, PathSet, Resource, UrlConditions};
    let loosens = rule.decision == Decision::Allow;
    match (rule.when.resource.as_ref()?, subject) {
        (Resource::Command(set), Subject::Command(c)) => set
            .patterns
            .iter()
            .find(|p| {
                CommandSet {
                    patterns: vec![(*p).clone()],
                }
                .matches(c, loosens)
            })
            .map(|p| format!("command `{}`", p.text)),
        (Resource::Path(set), Subject::Path(p)) => set
            .matcher
            .globs
            .iter()
            .find(|g| {
                PathSet {
                    matcher: PathMatcher::new(vec![(*g).clone()]),
                }
                .matches(p, &facts.roots, loosens)
            })
            .map(|g| format!("path `{}`", g.text)),
        (Resource::Url(conditions), Subject::Url(u)) => {
            let domains = conditions.domains.as_ref()?;
            domains
                .iter()
                .find(|d| {
                    UrlConditions {
                        domains: Some(vec![(*d).clone()]),
                        ..conditions.clone()
                    }
                    .matches(u, loosens)
                })
                .map(|d| format!("domain `{}`", d.text()))
        }
        _ => None,
    }
}
