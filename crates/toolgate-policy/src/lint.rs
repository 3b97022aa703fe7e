//! `lint` and example checking.
//!
//! Lint findings (each a [`Diagnostic`] with a `code`):
//!
//! | code | severity | finding |
//! |---|---|---|
//! | `shadowed` | error when the later rule is stricter, else warning | an earlier rule of the same file matches every call a later one could, so the later one never applies |
//! | `duplicate-name` | error in one file, warning across files | two rules share a name |
//! | `allow-all` | error | an allow with no condition but `tool = "*"` |
//! | `unknown-tag` | warning | a tag that is neither built in nor declared in `custom_tags` |
//! | `no-example` | warning | no example of the policy is decided by this rule |
//!
//! Against a log of past calls ([`Policy::lint_against_log`]):
//!
//! | code | severity | finding |
//! |---|---|---|
//! | `unmatched` | warning | no call of the log matched this rule (for any of its subjects) |
//! | `denies-past-allow` | warning | this rule would deny calls the log shows allowed |

use std::collections::HashMap;
use std::sync::Arc;

use crate::call::Tag;
use crate::diagnostic::{Diagnostic, Severity};
use crate::eval::{rule_matches, rule_matches_text};
use crate::explain::describe_miss;
use crate::matcher::{ArgCondition, NameSet, json_eq};
use crate::policy::Policy;
use crate::rule::{Conditions, ExampleInput, Rule};
use crate::suggest;

impl Policy {
    /// Every example that does not hold, as errors at the example.
    pub fn example_failures(&self) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        for rule in self.rules() {
            for example in &rule.examples {
                let name = &rule.info.name;
                let (result, shown) = match &example.input {
                    ExampleInput::Call(call) => (rule_matches(self, rule, call), None),
                    ExampleInput::Text(text) => {
                        (rule_matches_text(rule, text), Some(text.as_str()))
                    }
                };
                let problem = match (result, example.should_match) {
                    (Ok(None), true) | (Ok(Some(_)), false) => continue,
                    (Ok(Some(miss)), true) => {
                        let why = match (&example.input, shown) {
                            (ExampleInput::Call(call), _) => {
                                describe_miss(rule, &self.prepare(call).facts, miss)
                            }
                            (ExampleInput::Text(_), Some(text)) => format!(
                                "`{text}` is not matched by {}",
                                rule.when
                                    .resource
                                    .as_ref()
                                    .map(|r| r.describe())
                                    .unwrap_or_default()
                            ),
                            (ExampleInput::Text(_), None) => String::new(),
                        };
                        (
                            format!("example does not match rule `{name}`: {why}"),
                            "a `match` example must satisfy every condition of its rule; fix the example or the rule",
                        )
                    }
                    (Ok(None), false) => (
                        match shown {
                            Some(text) => format!(
                                "example `{text}` matches rule `{name}`, but is listed under `not_match`"
                            ),
                            None => format!(
                                "example matches rule `{name}`, but is listed under `not_match`"
                            ),
                        },
                        "narrow the rule, or move the example to `match`",
                    ),
                    (Err(e), _) => (
                        format!("example cannot be evaluated by rule `{name}`: {e}"),
                        "an example is a call: `{ tool = \"name\", args = { … } }` with arguments of the types the rule tests",
                    ),
                };
                out.push(Diagnostic {
                    severity: Severity::Error,
                    code: Some("example"),
                    message: problem.0,
                    file: rule.info.file.clone().unwrap_or_else(|| "<code>".into()),
                    location: example.location.clone(),
                    hint: Some(problem.1.into()),
                });
            }
        }
        out
    }

    /// Checks the policy for mistakes that load fine (see the module docs for the findings).
    pub fn lint(&self) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        for set in &self.sets {
            for (j, later) in set.rules.iter().enumerate() {
                if let Some(earlier) = set.rules.iter().take(j).find(|e| covers(e, later)) {
                    let stricter = later.decision > earlier.decision;
                    let line = earlier
                        .info
                        .line
                        .map(|l| format!(" (line {l})"))
                        .unwrap_or_default();
                    out.push(finding(
                        later,
                        if stricter { Severity::Error } else { Severity::Warning },
                        "shadowed",
                        format!(
                            "rule `{}` never applies: rule `{}`{line} matches every call it could and decides `{}` first",
                            later.info.name, earlier.info.name, earlier.decision
                        ),
                        Some(if stricter {
                            format!(
                                "move `{}` above `{}`, or narrow `{}`",
                                later.info.name, earlier.info.name, earlier.info.name
                            )
                        } else {
                            format!("remove `{}`, or move it above `{}`", later.info.name, earlier.info.name)
                        }),
                    ));
                }
            }
        }
        self.lint_names(&mut out);
        for rule in self.rules() {
            if rule.decision == crate::Decision::Allow && rule.when.is_unconditional() {
                out.push(finding(
                    rule,
                    Severity::Error,
                    "allow-all",
                    format!("rule `{}` allows every call", rule.info.name),
                    Some("narrow it with `tool`, `tags` or `args`; if you mean it, say `mode = \"approve-all\"`".into()),
                ));
            }
            for tag in rule.when.tags.iter().flatten() {
                if let Tag::Custom(name) = tag
                    && !self.settings.custom_tags.contains(name)
                {
                    let mut known: Vec<&str> = Tag::BUILTIN_NAMES.to_vec();
                    known.extend(self.settings.custom_tags.iter().map(String::as_str));
                    let hint = match suggest::closest(name, &known) {
                        Some(s) => {
                            format!("did you mean `{s}`? custom tags are declared in `custom_tags`")
                        }
                        None => format!("declare it: `custom_tags = [\"{name}\"]`"),
                    };
                    out.push(finding(
                        rule,
                        Severity::Warning,
                        "unknown-tag",
                        format!("rule `{}` uses the unknown tag `{name}`", rule.info.name),
                        Some(hint),
                    ));
                }
            }
        }
        for rule in self.rules() {
            let found = never_matches(rule)
                .map(|why| {
                    (
                        why,
                        "remove the `access` condition, or the resource condition it contradicts",
                    )
                })
                .or_else(|| {
                    self.never_matches_its_tools(rule).map(|why| {
                        (
                            why,
                            "name the tools that touch what the rule is about, or drop the \
                             condition they cannot meet",
                        )
                    })
                });
            if let Some((why, hint)) = found {
                out.push(finding(
                    rule,
                    Severity::Warning,
                    "never-matches",
                    format!("rule `{}` can never match: {why}", rule.info.name),
                    Some(hint.into()),
                ));
            }
        }
        self.lint_coverage(&mut out);
        out.sort_by(|a, b| {
            (a.file.as_ref(), a.line(), a.column()).cmp(&(b.file.as_ref(), b.line(), b.column()))
        });
        out
    }

    fn lint_names(&self, out: &mut Vec<Diagnostic>) {
        let mut seen: HashMap<&str, &Rule> = HashMap::new();
        for rule in self.rules() {
            let Some(first) = seen.get(rule.info.name.as_str()) else {
                seen.insert(&rule.info.name, rule);
                continue;
            };
            let same_file = first.info.file == rule.info.file;
            let place = match (&first.info.file, first.info.line) {
                (Some(file), Some(line)) => format!("{file}:{line}"),
                _ => "code".into(),
            };
            out.push(finding(
                rule,
                if same_file {
                    Severity::Error
                } else {
                    Severity::Warning
                },
                "duplicate-name",
                format!("the name `{}` is already used at {place}", rule.info.name),
                Some("give each rule its own name, so results name one rule".into()),
            ));
        }
    }

    fn lint_coverage(&self, out: &mut Vec<Diagnostic>) {
        let mut decided: Vec<Arc<crate::RuleInfo>> = Vec::new();
        for rule in self.rules() {
            for example in &rule.examples {
                match &example.input {
                    ExampleInput::Call(call) => {
                        let evaluation = self.evaluate(call);
                        decided.extend(evaluation.subjects.iter().filter_map(|s| s.rule.clone()));
                    }
                    // A resource example is judged by its own rule alone.
                    ExampleInput::Text(text) => {
                        if example.should_match && matches!(rule_matches_text(rule, text), Ok(None))
                        {
                            decided.push(rule.info.clone());
                        }
                    }
                }
            }
        }
        for rule in self.rules() {
            if rule.info.builtin || decided.iter().any(|d| **d == *rule.info) {
                continue;
            }
            let (message, hint) = if rule.examples.is_empty() {
                (
                    format!("rule `{}` has no examples", rule.info.name),
                    "add `examples = { match = [ … ], not_match = [ … ] }` so the policy tests itself",
                )
            } else {
                (
                    format!(
                        "no example of the policy is decided by rule `{}`",
                        rule.info.name
                    ),
                    "an earlier rule or file decides each of its examples; check the order",
                )
            };
            out.push(finding(
                rule,
                Severity::Warning,
                "no-example",
                message,
                Some(hint.into()),
            ));
        }
    }
}

/// Why no subject can ever meet all of a rule's conditions, when that follows from them alone:
/// its `access` excludes what the only subjects its resource condition reaches do (a command is
/// `execute` or `network`, a path `read` or `write`, a URL `network`).
fn never_matches(rule: &Rule) -> Option<String> {
    use crate::decision::Access;
    use crate::resource::matchers::Resource;
    let access = rule.when.access.as_ref()?;
    let (kind, possible): (&str, &[Access]) = match rule.when.resource.as_ref()? {
        Resource::Command(_) => ("a command", &[Access::Execute, Access::Network]),
        Resource::Path(_) => ("a path", &[Access::Read, Access::Write]),
        Resource::Url(_) => ("a URL", &[Access::Network]),
    };
    if access.iter().any(|a| possible.contains(a)) {
        return None;
    }
    let named: Vec<String> = possible.iter().map(|a| format!("`{a}`")).collect();
    Some(format!(
        "{kind} is only ever {}, which its `access` leaves out",
        named.join(" or ")
    ))
}

impl Policy {
    /// Why a rule that names its tools exactly can never match any of them, by what their
    /// profiles say the tools touch: a resource condition of a kind none of them names (a
    /// `command` for `Read`, a `path` for `WebSearch`), or an `access` none of them has (for
    /// tools that touch nothing but the call itself). A shell tool, a tool without a profile or
    /// a tool pattern may touch anything: no conclusion.
    fn never_matches_its_tools(&self, rule: &Rule) -> Option<String> {
        use crate::matcher::NamePattern;
        use crate::resource::matchers::Resource;
        let patterns = rule.tool_patterns()?;
        let mut names = Vec::with_capacity(patterns.len());
        let mut profiles = Vec::with_capacity(patterns.len());
        for pattern in patterns {
            let NamePattern::Exact(name) = pattern else {
                return None;
            };
            let profile = self.profiles.find(name)?;
            if profile.command.is_some() {
                return None;
            }
            names.push(name.to_string());
            profiles.push(profile);
        }
        let tools = crate::matcher::describe_list(names.iter().map(String::as_str));
        if let Some(resource) = &rule.when.resource {
            let reaches = |p: &&crate::profile::Profile| match resource {
                Resource::Path(_) => p.names_paths(),
                Resource::Url(_) => !p.urls.is_empty(),
                Resource::Command(_) => false,
            };
            if !profiles.iter().any(reaches) {
                return Some(format!(
                    "its `{}` condition is about what {tools} never touch{}",
                    resource.kind(),
                    if profiles.len() == 1 { "es" } else { "" }
                ));
            }
        }
        if let Some(access) = &rule.when.access {
            // (None of them runs a command: that was ruled out above.)
            if profiles.iter().all(|p| !p.has_resources())
                && profiles
                    .iter()
                    .all(|p| p.access.is_some_and(|a| !access.contains(&a)))
            {
                return Some(format!(
                    "{tools} touch{} nothing but the call, with an access its `access` leaves out",
                    if profiles.len() == 1 { "es" } else { "" }
                ));
            }
        }
        None
    }
}

/// One call of a log, for [`Policy::lint_against_log`]: the call, and what happened to it
/// (the policy's decision, a grant's or a person's answer).
#[derive(Clone, Copy, Debug)]
pub struct LoggedCall<'a> {
    /// The call.
    pub call: &'a crate::Call,
    /// How it ended.
    pub outcome: crate::Decision,
}

impl Policy {
    /// Checks the policy's rules against a log of past calls: the rules of its files that no
    /// call matched, and those that would deny calls the log shows allowed (see the module
    /// docs). Each call is traced through every rule ([`Policy::explain`]), so a rule counts as
    /// matched even where an earlier rule decided first.
    pub fn lint_against_log(&self, log: &[LoggedCall<'_>]) -> Vec<Diagnostic> {
        let run = crate::RunOptions::default();
        let mut matched: Vec<*const crate::RuleInfo> = Vec::new();
        // Per rule: how many past allows it would deny, and the first of them.
        let mut denied: Vec<(*const crate::RuleInfo, usize, String)> = Vec::new();
        for logged in log {
            let explanation = self.explain(logged.call, &run);
            for trace in explanation
                .subjects
                .iter()
                .flat_map(|s| &s.files)
                .flat_map(|f| &f.rules)
                .filter(|r| r.verdict == crate::Verdict::Matched)
            {
                matched.push(Arc::as_ptr(&trace.rule));
            }
            let evaluation = &explanation.evaluation;
            if logged.outcome == crate::Decision::Allow
                && evaluation.decision == crate::Decision::Deny
                && evaluation.layer == crate::Layer::Rule
                && let Some(rule) = &evaluation.rule
            {
                let key = Arc::as_ptr(rule);
                match denied.iter_mut().find(|(k, _, _)| *k == key) {
                    Some((_, count, _)) => *count += 1,
                    None => denied.push((key, 1, describe_call(logged.call))),
                }
            }
        }
        matched.sort_unstable();
        matched.dedup();
        let calls = log.len();
        let mut out = Vec::new();
        for rule in self
            .rules()
            .filter(|r| r.info.file.is_some() && !r.info.builtin)
        {
            let key = Arc::as_ptr(&rule.info);
            if matched.binary_search(&key).is_err() {
                out.push(finding(
                    rule,
                    Severity::Warning,
                    "unmatched",
                    format!(
                        "no call of the log ({calls} {}) matched rule `{}`",
                        if calls == 1 { "call" } else { "calls" },
                        rule.info.name
                    ),
                    Some(
                        "remove it if it is stale; a rule for a rare act (a release, a migration) \
                         may rightly wait"
                            .into(),
                    ),
                ));
            }
            if let Some((_, count, first)) = denied.iter().find(|(k, _, _)| *k == key) {
                out.push(finding(
                    rule,
                    Severity::Warning,
                    "denies-past-allow",
                    format!(
                        "rule `{}` would deny {count} {} the log shows allowed, e.g. {first}",
                        rule.info.name,
                        if *count == 1 { "call" } else { "calls" },
                    ),
                    Some(
                        "narrow the rule, or make sure those calls were wrong to allow \
                         (`toolgate replay` lists them)"
                            .into(),
                    ),
                ));
            }
        }
        out
    }
}

/// A call in a few words: its tool and its most telling argument.
fn describe_call(call: &crate::Call) -> String {
    let detail = call
        .telling_argument()
        .and_then(|v| v.as_str())
        .map(|text| {
            let mut short: String = text.chars().take(120).collect();
            if short.len() < text.len() {
                short.push('…');
            }
            short
        });
    match detail {
        Some(detail) => format!("`{}` `{}`", call.tool, detail.replace('`', "'")),
        None => format!("`{}`", call.tool),
    }
}

fn finding(
    rule: &Rule,
    severity: Severity,
    code: &'static str,
    message: String,
    hint: Option<String>,
) -> Diagnostic {
    Diagnostic {
        severity,
        code: Some(code),
        message,
        file: rule.info.file.clone().unwrap_or_else(|| "<code>".into()),
        location: rule.location.clone(),
        hint,
    }
}

/// Whether `a` matches every call `b` can match, deciding it whatever `b` would (sound: a
/// `true` is certain; some real shadowing is not detected).
pub(crate) fn covers(a: &Rule, b: &Rule) -> bool {
    let (x, y) = (&a.when, &b.when);
    if x.predicate.is_some() {
        return false;
    }
    // An allow's annotation conditions ignore untrusted servers, so it cannot cover a rule that
    // reads them when that rule is not an allow.
    let trust_differs =
        a.decision == crate::Decision::Allow && b.decision != crate::Decision::Allow;
    if trust_differs && x.annotations.is_some() {
        return false;
    }
    // Deny and ask rules also reach mentions and wrapped commands, but an earlier rule that takes
    // every direct use of the resource still shadows them where it matters: report it.
    let resources = match (&x.resource, &y.resource) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(ra), Some(rb)) => ra.covers(rb),
    };
    resources
        && names_cover(x.tool.as_ref(), y.tool.as_ref())
        && names_cover(x.agent.as_ref(), y.agent.as_ref())
        && names_cover(x.server.as_ref(), y.server.as_ref())
        && subset(x.tags.as_deref(), y.tags.as_deref())
        && subset(x.access.as_deref(), y.access.as_deref())
        && subset(x.origin.as_deref(), y.origin.as_deref())
        && annotations_cover(x, y)
        && x.args.iter().all(|c| args_cover(c, &y.args))
}

fn names_cover(a: Option<&NameSet>, b: Option<&NameSet>) -> bool {
    match (a, b) {
        (None, _) => true,
        (Some(a), _) if a.is_any() => true,
        (Some(_), None) => false,
        (Some(a), Some(b)) => a.covers(b),
    }
}

/// `a` (any-of) holds whenever `b` (any-of) holds.
fn subset<T: PartialEq>(a: Option<&[T]>, b: Option<&[T]>) -> bool {
    match (a, b) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(a), Some(b)) => b.iter().all(|t| a.contains(t)),
    }
}

fn annotations_cover(a: &Conditions, b: &Conditions) -> bool {
    match (&a.annotations, &b.annotations) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(a), Some(b)) => a
            .iter()
            .all(|(k, v)| b.iter().any(|(k2, v2)| k == k2 && json_eq(v, v2))),
    }
}

fn args_cover(a: &ArgCondition, b: &[ArgCondition]) -> bool {
    a.tests.iter().all(|test| {
        b.iter()
            .filter(|c| c.pointer == a.pointer)
            .any(|c| c.tests.iter().any(|t| t.same_as(test)))
    })
}
