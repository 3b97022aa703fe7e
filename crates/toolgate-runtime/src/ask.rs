//! Resolving an ask, the parts every enforcement point shares — the permission middleware in
//! process, and the daemon for external requesters: what stored grants say, what a person is
//! offered, and which grants an "always" answer stores.

use std::time::{Duration, SystemTime};

use toolgate_policy::{
    Choice, DEFAULT_APPROVAL_TIMEOUT, Evaluation, GrantKind, Layer, SubjectOutcome,
};

use crate::broker::{AlwaysCovers, ScopeOffer};
use crate::grants::{
    Effect, Grant, GrantContext, GrantStore, GrantTarget, Lookup, ScopeKind, StoreError, asking,
    match_grants, targets_for, unanswered,
};

/// What stored grants answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredAnswer {
    /// Allow or deny.
    pub effect: Effect,
    /// The grants that answered (their uses already spent).
    pub grants: Vec<Grant>,
}

impl StoredAnswer {
    /// Who answered, for the audit log: `grant:<id>,<id>`.
    pub fn actor(&self) -> String {
        let ids: Vec<&str> = self.grants.iter().map(|g| g.id.as_str()).collect();
        format!("grant:{}", ids.join(","))
    }

    /// What the grants cover, for people.
    pub fn describe(&self) -> String {
        let targets: Vec<String> = self.grants.iter().map(|g| g.target.to_string()).collect();
        targets.join("; ")
    }

    /// What the model reads when deny grants refuse a call of `tool`: HPD's sentence, then
    /// the words the person gave when they made the grants, if they gave any.
    pub fn refusal(&self, tool: &str) -> String {
        let mut said: Vec<&str> = Vec::new();
        for reason in self.grants.iter().filter_map(|g| g.reason.as_deref()) {
            if !said.contains(&reason) {
                said.push(reason);
            }
        }
        let denial = crate::messages::stored_denial(tool);
        if said.is_empty() {
            denial
        } else {
            format!("{denial} Their reason: {}", said.join("; "))
        }
    }
}

/// What stored grants say about an ask.
#[derive(Clone, Debug, PartialEq)]
pub enum Consulted {
    /// They answered it.
    Answered(StoredAnswer),
    /// They did not: a person is asked, and an "always" answer is for these subjects (see
    /// [`unanswered`]).
    Open(Vec<SubjectOutcome>),
}

/// What the stored grants say about an ask of `tool` (one read of the store): a deny grant
/// covering any asking subject, or allow grants covering them all (never for a guard's ask).
/// Spends one use of each counted grant that answers; if any was spent meanwhile, nothing
/// answers.
pub async fn stored_answer(
    store: &dyn GrantStore,
    tool: &str,
    evaluation: &Evaluation,
    context: &GrantContext,
) -> Result<Consulted, StoreError> {
    stored_answer_at(store, tool, evaluation, context, SystemTime::now()).await
}

/// [`stored_answer`], at `now` (what the grants' expiry is compared with).
pub async fn stored_answer_at(
    store: &dyn GrantStore,
    tool: &str,
    evaluation: &Evaluation,
    context: &GrantContext,
    now: SystemTime,
) -> Result<Consulted, StoreError> {
    // A taint's ask is a person's (see `Offer::for_subjects`): no stored grant answers it.
    if evaluation.layer == Layer::Taint {
        return Ok(Consulted::Open(evaluation.subjects.clone()));
    }
    let grants = store
        .applying(&Lookup::for_ask(tool, &evaluation.subjects, context))
        .await?;
    let open = || {
        Consulted::Open(unanswered(
            &grants,
            tool,
            &evaluation.subjects,
            context,
            now,
        ))
    };
    let Some(found) = match_grants(&grants, tool, &evaluation.subjects, context, now) else {
        return Ok(open());
    };
    for grant in found.grants.iter().filter(|g| g.uses_left.is_some()) {
        if !store.use_once(&grant.id).await? {
            return Ok(open());
        }
    }
    Ok(Consulted::Answered(StoredAnswer {
        effect: found.effect,
        grants: found.grants.into_iter().cloned().collect(),
    }))
}

/// What a person is offered for an ask.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Offer {
    /// The answers offered.
    pub choices: Vec<Choice>,
    /// For each "always" offered, exactly what it stores.
    pub always: Vec<AlwaysCovers>,
    /// What an "always" answer stores (`None`: nothing narrower than the prompt could be named,
    /// so no "always" is offered).
    pub targets: Option<Vec<GrantTarget>>,
    /// The scope those grants get.
    pub scope: ScopeKind,
    /// How long the request waits.
    pub timeout: Duration,
}

impl Offer {
    /// The offer for an evaluation that asked: the policy's choices, less "allow-always" for a
    /// guard's ask, and less both "always" answers when their subject cannot be named exactly.
    pub fn new(evaluation: &Evaluation, scope: ScopeKind) -> Offer {
        Offer::for_subjects(evaluation, scope, &evaluation.subjects)
    }

    /// The offer for an evaluation that asked, its "always" answers covering `subjects` (those
    /// of the evaluation no stored grant answers yet: [`Consulted::Open`]).
    pub fn for_subjects(
        evaluation: &Evaluation,
        scope: ScopeKind,
        subjects: &[SubjectOutcome],
    ) -> Offer {
        let (timeout, kind, offered) = match &evaluation.ask {
            Some(ask) => (ask.timeout, ask.grant, ask.choices.to_vec()),
            None => (
                DEFAULT_APPROVAL_TIMEOUT,
                GrantKind::Tool,
                Choice::ALL.to_vec(),
            ),
        };
        let targets = targets_for(kind, subjects);
        let guard_asked = asking(&evaluation.subjects).any(|s| s.layer == Layer::Guard);
        let mut choices = offered.clone();
        if guard_asked || targets.is_none() {
            choices.retain(|c| *c != Choice::AllowAlways);
        }
        if targets.is_none() {
            choices.retain(|c| *c != Choice::RejectAlways);
        }
        if offered.contains(&Choice::AllowAlways) && !choices.iter().any(|c| c.allows()) {
            choices.insert(0, Choice::AllowOnce);
        }
        if !choices.iter().any(|c| !c.allows()) {
            choices.push(Choice::RejectOnce);
        }
        let always = [Choice::AllowAlways, Choice::RejectAlways]
            .into_iter()
            .filter(|c| choices.contains(c))
            .map(|choice| AlwaysCovers {
                choice,
                targets: targets.clone().unwrap_or_default(),
                scope,
                scopes: Vec::new(),
            })
            .collect();
        let offer = Offer {
            choices,
            always,
            targets,
            scope,
            timeout,
        };
        // A taint's ask is a person's to answer each time: no grant outlasts the look they take.
        if evaluation.layer == Layer::Taint {
            offer.once_only()
        } else {
            offer
        }
    }

    /// The same offer with the scopes the policy offers for its "always" answers (the first is
    /// the default), each saying what the grants of `tool` would cover there; a workspace
    /// scope only when the call names its `workspace`.
    #[must_use]
    pub fn scoped(mut self, evaluation: &Evaluation, tool: &str, workspace: Option<&str>) -> Offer {
        let offered: Vec<ScopeKind> = match &evaluation.ask {
            Some(ask) => ask.scopes.iter().copied().map(ScopeKind::from).collect(),
            None => vec![ScopeKind::Session],
        };
        let offered: Vec<ScopeKind> = offered
            .into_iter()
            .filter(|scope| *scope != ScopeKind::Workspace || workspace.is_some())
            .collect();
        let Some(first) = offered.first().copied() else {
            // Only a workspace was offered, and the call names none: the session's.
            return self;
        };
        self.scope = first;
        let what = self.targets.as_ref().map(|targets| {
            targets
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        });
        for always in &mut self.always {
            always.scope = first;
            always.scopes = offered
                .iter()
                .map(|scope| ScopeOffer {
                    scope: *scope,
                    covers: format!(
                        "`{tool}`: {}, {}",
                        what.as_deref().unwrap_or("every call"),
                        scope.says(workspace)
                    ),
                })
                .collect();
        }
        self
    }

    /// The same offer without its "always" answers, for a request nothing can scope a grant
    /// to (an external call that names no session): an "always allow" becomes "allow once",
    /// and a "reject once" is always there.
    pub fn once_only(self) -> Offer {
        let mut choices = self.choices;
        let allowed_always = choices.contains(&Choice::AllowAlways);
        choices.retain(|c| !matches!(c, Choice::AllowAlways | Choice::RejectAlways));
        if allowed_always && !choices.iter().any(|c| c.allows()) {
            choices.insert(0, Choice::AllowOnce);
        }
        if !choices.iter().any(|c| !c.allows()) {
            choices.push(Choice::RejectOnce);
        }
        Offer {
            choices,
            always: Vec::new(),
            targets: None,
            ..self
        }
    }

    /// The grants an answer stores: one per target for an "always", none otherwise.
    pub fn grants_for(
        &self,
        answer: Choice,
        tool: &str,
        context: &GrantContext,
        by: &str,
        request_id: &str,
    ) -> Vec<Grant> {
        let effect = match answer {
            Choice::AllowAlways => Effect::Allow,
            Choice::RejectAlways => Effect::Deny,
            Choice::AllowOnce | Choice::RejectOnce => return Vec::new(),
        };
        let Some(targets) = &self.targets else {
            return Vec::new();
        };
        targets
            .iter()
            .map(|target| {
                let mut grant =
                    Grant::new(effect, tool, target.clone(), context.scope(self.scope), by);
                grant.request_id = Some(request_id.to_owned());
                grant
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer(choices: &[Choice]) -> Offer {
        Offer {
            choices: choices.to_vec(),
            always: Vec::new(),
            targets: Some(vec![GrantTarget::Tool]),
            scope: ScopeKind::Session,
            timeout: Duration::from_secs(1),
        }
    }

    #[test]
    fn an_offer_without_always_keeps_an_allow_only_where_one_was_offered() {
        use Choice::{AllowAlways, AllowOnce, RejectAlways, RejectOnce};
        for (offered, left) in [
            (
                &[AllowOnce, AllowAlways, RejectOnce, RejectAlways][..],
                &[AllowOnce, RejectOnce][..],
            ),
            (&[AllowAlways, RejectAlways], &[AllowOnce, RejectOnce]),
            (&[AllowAlways], &[AllowOnce, RejectOnce]),
            (&[RejectAlways], &[RejectOnce]),
            (&[AllowOnce, RejectOnce], &[AllowOnce, RejectOnce]),
        ] {
            let once = offer(offered).once_only();
            assert_eq!(once.choices, left, "{offered:?}");
            assert!(once.always.is_empty());
            assert_eq!(once.targets, None);
            let context = GrantContext {
                session: "s".into(),
                branch: "main".into(),
                turn: 0,
                workspace: None,
            };
            assert!(
                once.grants_for(AllowAlways, "t", &context, "me", "r")
                    .is_empty()
            );
        }
    }

    /// "Always" is offered for the sub-commands no allow grant answers yet; for all of them
    /// when grants answer none, or every one (a guard asked).
    #[tokio::test]
    async fn always_is_for_what_no_grant_answers_yet() {
        let policy =
            toolgate_policy::Policy::from_toml("p.toml", "version = 1\nmode = \"approve-reads\"\n")
                .unwrap();
        let evaluate = |line: &str| {
            policy.evaluate(
                &toolgate_policy::Call::from_value(serde_json::json!({
                    "tool": "bash", "args": {"command": line}, "context": {"workspace": "/tmp"}
                }))
                .unwrap(),
            )
        };
        let context = GrantContext {
            session: "s".into(),
            branch: "main".into(),
            turn: 0,
            workspace: None,
        };
        let store = crate::grants::MemoryGrants::new();
        let open = async |evaluation: &Evaluation| match stored_answer(
            &store, "bash", evaluation, &context,
        )
        .await
        .unwrap()
        {
            Consulted::Open(open) => open,
            answered => panic!("{answered:?}"),
        };
        let offered = async |line: &str| -> Vec<GrantTarget> {
            let evaluation = evaluate(line);
            Offer::for_subjects(&evaluation, ScopeKind::Session, &open(&evaluation).await)
                .targets
                .unwrap()
        };
        let npm = GrantTarget::Command {
            prefix: vec!["npm".into(), "install".into()],
            exact: false,
        };
        assert!(offered("npm install x && make").await.contains(&npm));
        store
            .insert(Grant::new(
                Effect::Allow,
                "bash",
                npm.clone(),
                context.scope(ScopeKind::Session),
                "me",
            ))
            .await
            .unwrap();
        let targets = offered("npm install x && make").await;
        assert!(!targets.contains(&npm), "{targets:?}");
        assert_eq!(targets.len(), 1, "{targets:?}");
        // A guard's ask that grants answer every subject of: all of them, as before.
        let evaluation = evaluate("npm install $X");
        assert_eq!(open(&evaluation).await, evaluation.subjects);
    }

    #[test]
    fn a_stored_refusal_says_each_reason_its_grants_keep_once() {
        let context = GrantContext {
            session: "s".into(),
            branch: "main".into(),
            turn: 0,
            workspace: None,
        };
        let grant = |reason: Option<&str>| {
            Grant::new(
                Effect::Deny,
                "bash",
                GrantTarget::Tool,
                context.scope(ScopeKind::Session),
                "me",
            )
            .with_reason(reason)
        };
        let stored = |reasons: &[Option<&str>]| StoredAnswer {
            effect: Effect::Deny,
            grants: reasons.iter().map(|r| grant(*r)).collect(),
        };
        let plain = "Execution of 'bash' was denied by a stored user preference.";
        assert_eq!(stored(&[None]).refusal("bash"), plain);
        assert_eq!(stored(&[Some("   ")]).refusal("bash"), plain, "blank words");
        assert_eq!(
            stored(&[Some(" use pnpm "), None, Some("use pnpm"), Some("not here")]).refusal("bash"),
            format!("{plain} Their reason: use pnpm; not here")
        );
    }
}
