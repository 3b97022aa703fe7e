//! Evaluation (DESIGN §4.1): validate, decide each subject by the rules (first match wins within
//! a file, strictest across files) or the default, take the strictest subject, then apply the
//! run's overrides, the deny-all ceiling and full access.

use std::cell::RefCell;
use std::sync::Arc;

use serde_json::Value;

use crate::RuleInfo;
use crate::call::{Call, CallError, CallErrorKind, Tag};
use crate::decision::{Access, Choice, Decision, GrantKind, Layer, Mode};
use crate::evaluation::{AskDetails, Evaluation, PermissionOverride, RunOptions, SubjectOutcome};
use crate::extract::Place;
use crate::guard::Guard;
use crate::policy::{Policy, RuleSet};
use crate::profile::Profile;
use crate::resource::matchers::Resource;
use crate::resource::{path, shell};
use crate::rule::{Facts, Miss, Rule};
use crate::subject::Subject;

thread_local! {
    /// Reused candidate buffers, so a hot evaluation does not allocate for them.
    static SCRATCH: RefCell<(Vec<u32>, Vec<usize>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// What one file's rules said about one subject.
pub(crate) enum SetVerdict<'p> {
    Matched(&'p Rule),
    Failed(&'p Rule, String),
}

/// What is known about a call before its rules run.
pub(crate) struct Prepared<'c> {
    pub(crate) facts: Facts<'c>,
    pub(crate) subjects: Vec<Subject>,
    pub(crate) call_guard: Option<Guard>,
}

/// How one subject was decided, with the deciding rule itself (for ask details).
pub(crate) struct Decided<'p> {
    pub(crate) decision: Decision,
    pub(crate) layer: Layer,
    pub(crate) rule_info: Option<Arc<RuleInfo>>,
    pub(crate) reason: Arc<str>,
    /// The rule, when one decided (not a guard).
    pub(crate) rule: Option<&'p Rule>,
}

impl Decided<'_> {
    /// The subject's outcome, for the evaluation.
    fn outcome(self, subject: Subject) -> SubjectOutcome {
        SubjectOutcome {
            subject,
            decision: self.decision,
            layer: self.layer,
            rule: self.rule_info,
            reason: self.reason,
        }
    }
}

impl Policy {
    /// Evaluates a call with no run overrides.
    pub fn evaluate(&self, call: &Call) -> Evaluation {
        self.evaluate_with(call, &RunOptions::default())
    }

    /// Evaluates a call under a run's options.
    pub fn evaluate_with(&self, call: &Call, run: &RunOptions) -> Evaluation {
        self.evaluate_traced(call, run, None)
    }

    /// Evaluates a call; when `trace` is given, records what the run and the mode changed.
    pub(crate) fn evaluate_traced<'s>(
        &'s self,
        call: &Call,
        run: &RunOptions,
        trace: Option<&mut Vec<String>>,
    ) -> Evaluation {
        let mode = self.mode_for(call, run).0;
        if let Err(error) = validate(call) {
            return Evaluation::invalid(error, mode);
        }
        let prepared = self.prepare(call);
        let facts = &prepared.facts;
        // Each subject's outcome, the subject moved once into it; the strictest tracked on the
        // way (a guard's before a rule's or the default's of the same decision, the first of
        // equals), with the rule that decided it.
        let mut outcomes: Vec<SubjectOutcome> = Vec::with_capacity(prepared.subjects.len().max(1));
        let mut deciding: Option<(usize, (Decision, bool), Option<&Rule>)> = None;
        let mut record = |outcomes: &mut Vec<SubjectOutcome>, subject: Subject, d: Decided<'s>| {
            let rank = (d.decision, d.layer == Layer::Guard);
            if deciding.is_none_or(|(_, best, _)| rank > best) {
                deciding = Some((outcomes.len(), rank, d.rule));
            }
            outcomes.push(d.outcome(subject));
        };
        for subject in prepared.subjects {
            let guard = self.subject_guard(call, &subject, prepared.call_guard.as_ref());
            if let Some(d) = self.decide_subject(facts, &subject, mode, guard) {
                record(&mut outcomes, subject, d);
            }
        }
        if outcomes.is_empty() {
            // Only mentions, none of which a rule spoke to: the call is decided as a whole.
            let guard = self.subject_guard(call, &Subject::Call, prepared.call_guard.as_ref());
            if let Some(d) = self.decide_subject(facts, &Subject::Call, mode, guard) {
                record(&mut outcomes, Subject::Call, d);
            }
        }
        let top = deciding.and_then(|(index, _, _)| outcomes.get(index));
        let mut evaluation = Evaluation {
            decision: top.map_or(Decision::Deny, |o| o.decision),
            reason: top.map_or_else(|| "no subject".into(), |o| o.reason.clone()),
            layer: top.map_or(Layer::Validate, |o| o.layer),
            rule: top.and_then(|o| o.rule.clone()),
            subjects: Vec::new(),
            mode,
            ask: None,
            args: None,
            error: None,
            access: facts.access,
        };
        let rule = deciding.and_then(|(_, _, rule)| rule);
        self.apply_run(&mut evaluation, call, run, trace);
        if evaluation.decision == Decision::Ask {
            let mut details = self.ask_details(rule, top.map(|o| &o.subject));
            // An "always" answer the caller cannot carry out (an ACP agent that offers no such
            // option) is not offered: it would be remembered for an act the caller cannot
            // honour. The "once" answers stay: a caller carries those out some way (an ACP
            // agent's "always" option, or the outcome "cancelled").
            if let Some(can) = &call.context.choices {
                let kept: Vec<Choice> = details
                    .choices
                    .iter()
                    .copied()
                    .filter(|c| !c.is_always() || can.contains(c))
                    .collect();
                details.choices = kept.into();
            }
            evaluation.ask = Some(details);
        }
        evaluation.subjects = outcomes;
        evaluation
    }

    /// Everything known about a call before rules run: its facts, subjects and call guard.
    pub(crate) fn prepare<'c>(&self, call: &'c Call) -> Prepared<'c> {
        let profile = self.profiles.find(&call.tool);
        let needs_place = profile.is_some_and(|p| p.has_resources());
        let place = if needs_place {
            self.place(call)
        } else {
            Place::default()
        };
        let mut facts = self.facts(call, profile);
        let subjects = self.subjects(call, profile, &place);
        facts.roots = place.roots;
        let call_guard = self.call_guard(call, &facts, profile);
        Prepared {
            facts,
            subjects,
            call_guard,
        }
    }

    /// The mode for a call, and where it came from.
    pub(crate) fn mode_for(&self, call: &Call, run: &RunOptions) -> (Mode, &'static str) {
        match (call.context.mode, run.mode) {
            (Some(mode), _) => (mode, "the call's context"),
            (None, Some(mode)) => (mode, "the run"),
            (None, None) => (self.settings.mode, "the policy"),
        }
    }

    /// The facts about a call every rule reads: its profile's access and whether it is a read.
    pub(crate) fn facts<'c>(&self, call: &'c Call, profile: Option<&Profile>) -> Facts<'c> {
        // A profile is the policy's (or toolgate's) word about a tool; tags come from whoever
        // registered the tool; annotations count only from a trusted server.
        // In a turn that arrived over the network (a chat message, a webhook), a tool no profile
        // describes is not a read on its registrant's word: whoever wrote the message may have
        // chosen the tool for what its tags hide.
        let network_turn = call.context.origin == Some(crate::decision::Origin::Network);
        let access = match profile.and_then(|p| p.access) {
            Some(access) => Some(access),
            None if network_turn => None,
            None if call.has_tag(&Tag::ReadOnly) => Some(Access::Read),
            None if call.context.trusted_server
                && call.annotations.get("readOnlyHint") == Some(&Value::Bool(true)) =>
            {
                Some(Access::Read)
            }
            None => None,
        };
        Facts {
            call,
            access,
            read: access == Some(Access::Read),
            annotations_trusted: call.context.trusted_server,
            roots: Vec::new(),
        }
    }

    /// Decides one subject: its guard, every file's first matching rule (the strictest of those),
    /// else the default. A mentioned resource no rule speaks to is `None`.
    pub(crate) fn decide_subject<'p>(
        &'p self,
        facts: &Facts<'_>,
        subject: &Subject,
        mode: Mode,
        guard: Option<Guard>,
    ) -> Option<Decided<'p>> {
        let mut best: Option<(Decision, SetVerdict<'p>)> = None;
        for set in &self.sets {
            let Some(verdict) = set.first_match(facts, subject) else {
                continue;
            };
            let decision = match &verdict {
                SetVerdict::Matched(rule) => rule.decision,
                SetVerdict::Failed(..) => Decision::Deny,
            };
            if best.as_ref().is_none_or(|(d, _)| decision > *d) {
                best = Some((decision, verdict));
            }
        }
        let (decision, layer, rule, reason): (Decision, Layer, Option<&'p Rule>, Arc<str>) =
            match best {
                Some((decision, SetVerdict::Matched(rule))) => (
                    decision,
                    Layer::Rule,
                    Some(rule),
                    reason_for(rule, subject, facts),
                ),
                Some((_, SetVerdict::Failed(rule, error))) => (
                    Decision::Deny,
                    Layer::Rule,
                    Some(rule),
                    format!("rule `{}` could not be evaluated: {error}", rule.info.name).into(),
                ),
                // A mention no rule speaks to counts only when a guard does (an operand a
                // program may write that is a protected path).
                None if subject.is_mention() => {
                    if guard.as_ref().is_none_or(|g| g.decision == Decision::Allow) {
                        return None;
                    }
                    (Decision::Allow, Layer::Default, None, Arc::from(""))
                }
                // A command whose every effect is among the call's paths and URLs adds nothing of
                // its own: those are decided, and decide the call.
                None if matches!(subject, Subject::Command(c) if c.command.is_transparent()) => (
                    Decision::Allow,
                    Layer::Default,
                    None,
                    self.reasons.transparent.clone(),
                ),
                None => {
                    let (decision, reason) = self.default_for(facts, subject, mode);
                    (decision, Layer::Default, None, reason)
                }
            };
        Some(match guard {
            Some(g) if g.decision >= decision && g.decision > Decision::Allow => Decided {
                decision: g.decision,
                layer: Layer::Guard,
                rule_info: Some(g.info()),
                reason: g.reason.into(),
                rule: None,
            },
            _ => Decided {
                decision,
                layer,
                rule_info: rule.map(|r| r.info.clone()),
                reason,
                rule,
            },
        })
    }

    /// The decision for a subject no rule matched.
    pub(crate) fn default_for(
        &self,
        facts: &Facts<'_>,
        subject: &Subject,
        mode: Mode,
    ) -> (Decision, Arc<str>) {
        if let Some(fallback) = self.settings.fallback {
            return (fallback, self.reasons.fallback(fallback).clone());
        }
        // A scratch place (the system's temporary folders) is written without asking.
        if let Subject::Path(p) = subject
            && mode != Mode::DenyAll
            && p.place == Some(crate::places::Place::Scratch)
        {
            return (Decision::Allow, self.reasons.scratch.clone());
        }
        let read = match subject {
            Subject::Call => facts.read,
            Subject::Path(p) => p.access == Access::Read,
            Subject::Command(_) | Subject::Url(_) => false,
        };
        match mode {
            Mode::ApproveAll => (Decision::Allow, self.reasons.approve_all.clone()),
            Mode::ApproveReads if read => {
                (Decision::Allow, self.reasons.approve_reads_read.clone())
            }
            Mode::ApproveReads => (Decision::Ask, self.reasons.approve_reads_other.clone()),
            Mode::DenyAll => (Decision::Ask, self.reasons.deny_all.clone()),
        }
    }

    /// Per-tool overrides, the deny-all ceiling, then full access.
    pub(crate) fn apply_run(
        &self,
        evaluation: &mut Evaluation,
        call: &Call,
        run: &RunOptions,
        mut trace: Option<&mut Vec<String>>,
    ) {
        let mut change = |evaluation: &mut Evaluation, decision, layer, reason: Arc<str>| {
            if let Some(trace) = trace.as_deref_mut() {
                trace.push(format!(
                    "{} became {decision} ({layer}): {reason}",
                    evaluation.decision
                ));
            }
            evaluation.decision = decision;
            evaluation.layer = layer;
            evaluation.reason = reason;
        };
        match run.permission_override(&call.tool) {
            Some(PermissionOverride::Require) if evaluation.decision == Decision::Allow => {
                let reason = format!("a run override requires permission for `{}`", call.tool);
                change(evaluation, Decision::Ask, Layer::Override, reason.into());
            }
            Some(PermissionOverride::Disable)
                if evaluation.decision == Decision::Ask && evaluation.layer != Layer::Guard =>
            {
                let reason = format!("a run override disables permission for `{}`", call.tool);
                change(evaluation, Decision::Allow, Layer::Override, reason.into());
            }
            Some(PermissionOverride::Require | PermissionOverride::Disable) | None => {}
        }
        if evaluation.mode == Mode::DenyAll && evaluation.decision == Decision::Allow {
            change(
                evaluation,
                Decision::Ask,
                Layer::Mode,
                self.reasons.ceiling.clone(),
            );
        }
        if run.full_access
            && evaluation.decision == Decision::Ask
            && evaluation.layer != Layer::Guard
        {
            change(
                evaluation,
                Decision::Allow,
                Layer::Override,
                self.reasons.full_access.clone(),
            );
        }
    }

    pub(crate) fn ask_details(&self, rule: Option<&Rule>, subject: Option<&Subject>) -> AskDetails {
        let default_grant = match subject {
            Some(Subject::Call) | None => GrantKind::Tool,
            Some(Subject::Path(_)) => GrantKind::Path,
            Some(Subject::Command(_)) => GrantKind::Command,
            Some(Subject::Url(_)) => GrantKind::Domain,
        };
        AskDetails {
            choices: rule
                .and_then(|r| r.choices.clone())
                .unwrap_or_else(|| self.settings.approval_choices.clone()),
            timeout: rule
                .and_then(|r| r.timeout)
                .unwrap_or(self.settings.approval_timeout),
            grant: rule.and_then(|r| r.grant).unwrap_or(default_grant),
            scopes: rule
                .and_then(|r| r.scopes.clone())
                .unwrap_or_else(|| self.settings.approval_scopes.clone()),
        }
    }
}

impl RuleSet {
    /// The first rule of this file that matches the subject (or cannot be evaluated).
    pub(crate) fn first_match<'p>(
        &'p self,
        facts: &Facts<'_>,
        subject: &Subject,
    ) -> Option<SetVerdict<'p>> {
        SCRATCH.with(|cell| {
            let mut guard = cell.try_borrow_mut();
            let mut fresh = (Vec::new(), Vec::new());
            let (candidates, scratch) = match guard.as_deref_mut() {
                Ok(buffers) => buffers,
                // Re-entered from a predicate: use fresh buffers.
                Err(_) => &mut fresh,
            };
            // The first rule filed under the call's own tool name, when it comes before every
            // other candidate, is checked before the others are gathered: a file that names its
            // tools early decides most calls there.
            let first = self.index.first_by_name(facts.call);
            if let Some(rule) = first.and_then(|i| self.rules.get(i as usize)) {
                match rule.check(facts, subject) {
                    Ok(None) => return Some(SetVerdict::Matched(rule)),
                    Ok(Some(_)) => {}
                    Err(e) => return Some(SetVerdict::Failed(rule, e)),
                }
            }
            self.index.candidates(facts.call, candidates, scratch);
            for &i in candidates.iter().filter(|i| Some(**i) != first) {
                let Some(rule) = self.rules.get(i as usize) else {
                    continue;
                };
                match rule.check(facts, subject) {
                    Ok(None) => return Some(SetVerdict::Matched(rule)),
                    Ok(Some(_)) => {}
                    Err(e) => return Some(SetVerdict::Failed(rule, e)),
                }
            }
            None
        })
    }
}

/// A rule's reason for a subject; for a folder read or changed whole that the rule reaches
/// only inside, also where (`grep -r key ~` is stopped by `~/.ssh/**`).
fn reason_for(rule: &Rule, subject: &Subject, facts: &Facts<'_>) -> Arc<str> {
    if let (Some(crate::resource::matchers::Resource::Path(set)), Subject::Path(p)) =
        (&rule.when.resource, subject)
        && rule.decision != Decision::Allow
        && let Some(glob) = set.reaching_inside(p, &facts.roots)
    {
        let how = if p.access == Access::Write {
            "changed"
        } else {
            "read"
        };
        return format!(
            "{} (`{}` is {how} with everything inside it, which `{glob}` reaches)",
            rule.reason, p.given
        )
        .into();
    }
    rule.reason.clone()
}

/// The place of the subject that decides a call: the strictest decision, a guard's before a
/// rule's or the default's of the same decision, the first of equals.
pub(crate) fn strictest(outcomes: impl Iterator<Item = (Decision, Layer)>) -> usize {
    let rank = |(decision, layer): (Decision, Layer)| (decision, layer == Layer::Guard);
    let mut best: Option<(usize, (Decision, bool))> = None;
    for (i, outcome) in outcomes.enumerate() {
        let ranked = rank(outcome);
        if best.is_none_or(|(_, b)| ranked > b) {
            best = Some((i, ranked));
        }
    }
    best.map_or(0, |(i, _)| i)
}

/// Rejects what no rule should ever see.
pub(crate) fn validate(call: &Call) -> Result<(), CallError> {
    if call.tool.is_empty() {
        return Err(CallError {
            kind: CallErrorKind::InvalidCall,
            message: "the tool name is empty".into(),
        });
    }
    call.args_object().map(|_| ())
}

/// Whether a rule alone matches an example call: an allow rule must match every subject the
/// call has, a deny or ask rule any one of them (as when the policy decides).
pub(crate) fn rule_matches(
    policy: &Policy,
    rule: &Rule,
    call: &Call,
) -> Result<Option<Miss>, String> {
    validate(call).map_err(|e| e.message)?;
    let prepared = policy.prepare(call);
    judge(
        rule,
        prepared.subjects.iter().filter(|s| !s.is_mention()),
        |s| rule.check(&prepared.facts, s),
    )
}

/// Whether a resource rule matches an example given as text: a command line, a path (resolved
/// as text under a workspace at `/workspace`), or a URL.
pub(crate) fn rule_matches_text(rule: &Rule, text: &str) -> Result<Option<Miss>, String> {
    let loosens = rule.decision == Decision::Allow;
    let root = std::path::PathBuf::from("/workspace");
    let subjects: Vec<Subject> = match &rule.when.resource {
        Some(Resource::Command(_)) => {
            let analysis = shell::analyze(text);
            analysis
                .commands
                .iter()
                .map(|c| {
                    Subject::command(crate::subject::CommandSubject {
                        command: c.clone(),
                        line_findings: analysis.findings.clone(),
                    })
                })
                .collect()
        }
        Some(Resource::Path(_)) => {
            let absolute = path::absolute(text, &root, None).map_err(|e| e.to_string())?;
            let inside = absolute.starts_with(&root);
            vec![Subject::path(crate::subject::PathSubject {
                given: text.to_owned(),
                access: Access::Read,
                role: crate::subject::PathRole::Argument,
                recursive: false,
                source: "example".into(),
                place: None,
                resolved: Some(path::ResolvedPath {
                    given: text.to_owned(),
                    absolute: absolute.clone(),
                    resolved: absolute,
                    alternative: None,
                    root: inside.then(|| root.clone()),
                }),
                problem: None,
            })]
        }
        Some(Resource::Url(_)) => vec![Subject::url(crate::subject::UrlSubject {
            given: text.to_owned(),
            source: String::new(),
            mentioned: false,
            checked: Some(crate::url::check(text).map_err(|e| e.to_string())?),
            problem: None,
        })],
        None => return Err("a string example needs a resource condition".into()),
    };
    let roots = [root];
    judge(rule, subjects.iter(), |s| {
        Ok(rule.check_resource(s, &roots, loosens))
    })
}

fn judge<'s>(
    rule: &Rule,
    subjects: impl Iterator<Item = &'s Subject>,
    mut check: impl FnMut(&Subject) -> Result<Option<Miss>, String>,
) -> Result<Option<Miss>, String> {
    let every = rule.decision == Decision::Allow;
    let mut miss = None;
    let mut matched = false;
    for subject in subjects {
        match check(subject)? {
            None => matched = true,
            Some(m) => {
                miss.get_or_insert(m);
                if every {
                    return Ok(miss);
                }
            }
        }
    }
    if matched {
        Ok(None)
    } else {
        Ok(Some(miss.unwrap_or(Miss::SubjectKind)))
    }
}

impl Policy {
    /// The rule that refuses every call of `tool` in `context`, whatever its arguments: in one
    /// file, the first rule that can match the tool's calls is a deny whose only conditions are
    /// the tool's name, the server, the agent and the call's origin (which the context fixes).
    /// An earlier rule that may match some of those calls (a condition on arguments, paths,
    /// tags a built-in reads from the profile, …) decides them in its file, which then proves
    /// nothing. Files decide on their own and the strictest wins, so one file that refuses the
    /// tool outright refuses it. A gateway leaves such tools out of the list it offers, so the
    /// model never sees them.
    pub fn denies_tool(&self, tool: &str, context: &crate::Context) -> Option<Arc<RuleInfo>> {
        let named = |set: &Option<crate::matcher::NameSet>, value: Option<&str>| {
            set.as_ref()
                .is_none_or(|s| value.is_some_and(|v| s.is_match(v)))
        };
        for set in &self.sets {
            for rule in &set.rules {
                let when = &rule.when;
                let reachable = when.tool.as_ref().is_none_or(|t| t.is_match(tool))
                    && named(&when.server, context.server.as_deref())
                    && named(&when.agent, context.agent.as_deref())
                    && when
                        .origin
                        .as_ref()
                        .is_none_or(|o| context.origin.is_some_and(|x| o.contains(&x)))
                    // A call the gateway makes carries no tags: only a built-in reads tags from
                    // what a profile says a tool does.
                    && when.tags.as_ref().is_none_or(|_| rule.info.builtin);
                if !reachable {
                    continue;
                }
                let unconditional = when.tags.is_none()
                    && when.annotations.is_none()
                    && when.access.is_none()
                    && when.args.is_empty()
                    && when.predicate.is_none()
                    && when.resource.is_none();
                if unconditional && rule.decision == Decision::Deny {
                    return Some(rule.info.clone());
                }
                break;
            }
        }
        None
    }
}
