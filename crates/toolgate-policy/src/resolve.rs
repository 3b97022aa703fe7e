//! Resolving an ask without the runtime: a synchronous handler answers, or nobody does.
//!
//! This is DESIGN §4.1 step 6 for embedders that need no event loop (toolregistry's
//! `PermissionHandler`). Every failure is a deny: no handler, a handler error, an answer that was
//! not offered. Grants and timeouts belong to the runtime, which resolves asks asynchronously.

use std::sync::Arc;

use crate::call::Call;
use crate::decision::{Choice, Decision, Layer};
use crate::evaluation::{Evaluation, RunOptions};
use crate::policy::Policy;

/// The reason an ask gets when nothing can answer it.
pub const NO_HANDLER_REASON: &str = "Permission required but no handler configured";

/// The reason an ask gets when the handler refuses without saying why.
pub const HANDLER_DENIED_REASON: &str = "Permission denied by handler";

/// What a handler is shown.
#[derive(Clone, Copy, Debug)]
pub struct AskRequest<'a> {
    /// The call.
    pub call: &'a Call,
    /// Its evaluation (decision ask), with the reason, the rule and the offered choices.
    pub evaluation: &'a Evaluation,
}

/// Answers asks synchronously. Closures `Fn(&AskRequest) -> Result<Choice, String>` are
/// handlers.
pub trait AskHandler {
    /// One of the offered choices, or an error (which denies).
    fn answer(&self, request: &AskRequest<'_>) -> Result<Choice, String>;
}

impl<F> AskHandler for F
where
    F: Fn(&AskRequest<'_>) -> Result<Choice, String>,
{
    fn answer(&self, request: &AskRequest<'_>) -> Result<Choice, String> {
        self(request)
    }
}

/// The final word on a call: allow or deny, never ask.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolution {
    /// Allow or deny.
    pub decision: Decision,
    /// Why.
    pub reason: Arc<str>,
    /// Which layer had the last word.
    pub layer: Layer,
    /// The handler's answer, when one was given.
    pub choice: Option<Choice>,
    /// The evaluation that preceded the answer.
    pub evaluation: Evaluation,
}

impl Policy {
    /// Evaluates a call and, on ask, asks `handler`. No handler, a handler error or an answer
    /// that was not offered all deny.
    ///
    /// ```rust,standalone_crate
    /// use toolgate_policy::{Call, Choice, Decision, Policy};
    /// let policy = Policy::default(); // approve-reads: a write asks
    /// let call = Call::new("write_file");
    /// let r = policy.decide(&call, &Default::default(), None);
    /// assert_eq!(r.decision, Decision::Deny);
    /// assert_eq!(&*r.reason, "Permission required but no handler configured");
    /// let yes = |_: &toolgate_policy::AskRequest<'_>| Ok(Choice::AllowOnce);
    /// assert_eq!(policy.decide(&call, &Default::default(), Some(&yes)).decision, Decision::Allow);
    /// ```
    pub fn decide(
        &self,
        call: &Call,
        run: &RunOptions,
        handler: Option<&dyn AskHandler>,
    ) -> Resolution {
        let evaluation = self.evaluate_with(call, run);
        let settled = |evaluation: Evaluation| Resolution {
            decision: evaluation.decision,
            reason: evaluation.reason.clone(),
            layer: evaluation.layer,
            choice: None,
            evaluation,
        };
        if evaluation.decision != Decision::Ask {
            return settled(evaluation);
        }
        let deny = |reason: Arc<str>, choice: Option<Choice>, evaluation: Evaluation| Resolution {
            decision: Decision::Deny,
            reason,
            layer: Layer::Handler,
            choice,
            evaluation,
        };
        let Some(handler) = handler else {
            return deny(NO_HANDLER_REASON.into(), None, evaluation);
        };
        let answer = handler.answer(&AskRequest {
            call,
            evaluation: &evaluation,
        });
        let offered = evaluation
            .ask
            .as_ref()
            .map(|a| a.choices.clone())
            .unwrap_or_else(|| Choice::ALL.into());
        match answer {
            Err(e) => deny(
                format!("the permission handler failed: {e}").into(),
                None,
                evaluation,
            ),
            Ok(choice) if !offered.contains(&choice) => deny(
                format!("the handler answered `{choice}`, which was not offered").into(),
                Some(choice),
                evaluation,
            ),
            Ok(choice) if choice.allows() => Resolution {
                decision: Decision::Allow,
                reason: format!("approved by the handler ({choice})").into(),
                layer: Layer::Handler,
                choice: Some(choice),
                evaluation,
            },
            Ok(choice) => deny(HANDLER_DENIED_REASON.into(), Some(choice), evaluation),
        }
    }
}
