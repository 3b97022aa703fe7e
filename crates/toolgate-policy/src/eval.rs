//! Evaluation (DESIGN §4.1): validate, decide each subject by the rules (first match wins within
//! a file, strictest across files) or the default, take the strictest subject, then apply the
//! run's overrides, the deny-all ceiling and full access.

use std::cell::RefCell;
use std::sync::Arc;

use serde_json::Value;

use crate::call::{Call, CallError, CallErrorKind, Tag};
use crate::decision::{Access, Decision, GrantKind, Layer, Mode};
use crate::evaluation::{AskDetails, Evaluation, PermissionOverride, RunOptions, SubjectOutcome};
use crate::policy::{Policy, RuleSet};
use crate::rule::{Facts, Miss, Rule};
use crate::subject::{Subject, subjects_of};

thread_local! {
    /// Reused candidate buffers, so a hot evaluation does not allocate for them.
    static SCRATCH: RefCell<(Vec<u32>, Vec<usize>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// What one file's rules said about one subject.
pub(crate) enum SetVerdict<'p> {
    Matched(&'p Rule),
    Failed(&'p Rule, String),
}

/// How one subject was decided, with the deciding rule itself (for ask details).
pub(crate) struct Decided<'p> {
    pub(crate) outcome: SubjectOutcome,
    pub(crate) rule: Option<&'p Rule>,
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
    pub(crate) fn evaluate_traced(
        &self,
        call: &Call,
        run: &RunOptions,
        trace: Option<&mut Vec<String>>,
    ) -> Evaluation {
        let mode = self.mode_for(call, run).0;
        if let Err(error) = validate(call) {
            return Evaluation::invalid(error, mode);
        }
        let facts = self.facts(call);
        let mut decided: Vec<Decided<'_>> = subjects_of(call)
            .into_iter()
            .map(|subject| self.decide_subject(&facts, subject, mode))
            .collect();
        let strictest = strictest_index(&decided);
        let deciding = decided.get(strictest);
        let mut evaluation = Evaluation {
            decision: deciding.map_or(Decision::Deny, |d| d.outcome.decision),
            reason: deciding.map_or_else(|| "no subject".into(), |d| d.outcome.reason.clone()),
            layer: deciding.map_or(Layer::Validate, |d| d.outcome.layer),
            rule: deciding.and_then(|d| d.outcome.rule.clone()),
            subjects: Vec::new(),
            mode,
            ask: None,
            args: None,
            error: None,
        };
        let rule = deciding.and_then(|d| d.rule);
        self.apply_run(&mut evaluation, call, run, trace);
        if evaluation.decision == Decision::Ask {
            evaluation.ask =
                Some(self.ask_details(rule, decided.get(strictest).map(|d| &d.outcome.subject)));
        }
        evaluation.subjects = decided.drain(..).map(|d| d.outcome).collect();
        evaluation
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
    pub(crate) fn facts<'c>(&self, call: &'c Call) -> Facts<'c> {
        let trusted_source = call.context.server.is_none() || call.context.trusted_server;
        let profile = self.profiles.find(&call.tool);
        let (access, access_trusted) = match profile.and_then(|p| p.access.map(|a| (p, a))) {
            Some((profile, access)) => (Some(access), !profile.info.is_builtin() || trusted_source),
            None if call.has_tag(&Tag::ReadOnly) => (Some(Access::Read), true),
            None if call.context.trusted_server
                && call.annotations.get("readOnlyHint") == Some(&Value::Bool(true)) =>
            {
                (Some(Access::Read), true)
            }
            None => (None, true),
        };
        Facts {
            call,
            access,
            access_trusted,
            read: access == Some(Access::Read) && access_trusted,
            annotations_trusted: call.context.trusted_server,
        }
    }

    /// Decides one subject: every file's first match, the strictest of those, else the default.
    pub(crate) fn decide_subject<'p>(
        &'p self,
        facts: &Facts<'_>,
        subject: Subject,
        mode: Mode,
    ) -> Decided<'p> {
        let mut best: Option<(Decision, SetVerdict<'p>)> = None;
        for set in &self.sets {
            let Some(verdict) = set.first_match(facts, &subject) else {
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
        match best {
            Some((decision, SetVerdict::Matched(rule))) => Decided {
                outcome: SubjectOutcome {
                    subject,
                    decision,
                    layer: Layer::Rule,
                    rule: Some(rule.info.clone()),
                    reason: rule.reason.clone(),
                },
                rule: Some(rule),
            },
            Some((_, SetVerdict::Failed(rule, error))) => Decided {
                outcome: SubjectOutcome {
                    subject,
                    decision: Decision::Deny,
                    layer: Layer::Rule,
                    rule: Some(rule.info.clone()),
                    reason: format!("rule `{}` could not be evaluated: {error}", rule.info.name)
                        .into(),
                },
                rule: Some(rule),
            },
            None => {
                let (decision, reason) = self.default_for(facts, mode);
                Decided {
                    outcome: SubjectOutcome {
                        subject,
                        decision,
                        layer: Layer::Default,
                        rule: None,
                        reason,
                    },
                    rule: None,
                }
            }
        }
    }

    /// The decision for a subject no rule matched.
    pub(crate) fn default_for(&self, facts: &Facts<'_>, mode: Mode) -> (Decision, Arc<str>) {
        if let Some(fallback) = self.settings.fallback {
            return (fallback, self.reasons.fallback(fallback).clone());
        }
        match mode {
            Mode::ApproveAll => (Decision::Allow, self.reasons.approve_all.clone()),
            Mode::ApproveReads if facts.read => {
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

    fn ask_details(&self, rule: Option<&Rule>, subject: Option<&Subject>) -> AskDetails {
        let default_grant = match subject {
            Some(Subject::Call) | None => GrantKind::Tool,
        };
        AskDetails {
            choices: rule
                .and_then(|r| r.choices.clone())
                .unwrap_or_else(|| self.settings.approval_choices.clone()),
            timeout: rule
                .and_then(|r| r.timeout)
                .unwrap_or(self.settings.approval_timeout),
            grant: rule.and_then(|r| r.grant).unwrap_or(default_grant),
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
            self.index.candidates(facts.call, candidates, scratch);
            for &i in candidates.iter() {
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

/// The first subject with the strictest decision.
pub(crate) fn strictest_index(decided: &[Decided<'_>]) -> usize {
    let mut best = 0;
    for (i, d) in decided.iter().enumerate() {
        if decided
            .get(best)
            .is_some_and(|b| d.outcome.decision > b.outcome.decision)
        {
            best = i;
        }
    }
    best
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

/// Whether a rule alone matches a call (examples are checked this way).
pub(crate) fn rule_matches(
    policy: &Policy,
    rule: &Rule,
    call: &Call,
) -> Result<Option<Miss>, String> {
    validate(call).map_err(|e| e.message)?;
    let facts = policy.facts(call);
    let mut miss = None;
    for subject in subjects_of(call) {
        match rule.check(&facts, &subject)? {
            None => return Ok(None),
            Some(m) => miss = miss.or(Some(m)),
        }
    }
    Ok(miss)
}
