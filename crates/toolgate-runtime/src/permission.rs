//! The permission middleware: the policy decides every call; on ask, stored grants answer
//! first, then a person through the approval broker.
//!
//! It keeps HPD-Agent's flow and messages and fixes what the seeds got wrong:
//!
//! - "always deny" is remembered on the deny path too (HPD stored only approvals);
//! - a parallel batch is decided one call at a time in the model's order, and the decisions are
//!   kept per call id, so a refused call never runs because a sibling of the same name was
//!   approved (HPD kept them per function name);
//! - asking with nobody to answer denies ("Permission required but no handler configured");
//!   a timeout, a cancellation, a failing handler or an answer that was not offered deny;
//! - an "always" covers exactly the subject the prompt shows (see [`crate::grants`]).
//!
//! Denials are ordinary tool results the model reads; [`PermissionMiddleware::interrupt_on_denial`]
//! ends the turn instead.
//!
//! Each completed call's result is noted in its session's taint (the policy's `[taint]`): a
//! page fetched from a host the policy does not trust, a file read outside the workspace, taints
//! the session, and while it is, an allow that would send something out asks (layer `taint`,
//! "once" answers only, no grant answers it; a `session_tainted` event says what tainted it).
//! The taint is kept where the agent keeps it ([`crate::SessionTaints`]: in memory by default,
//! with the daemon's sessions for an agent it hosts).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use toolgate_policy::{
    Call, Context, Decision, Evaluation, Layer, Mode, PermissionOverride, Policy, RunOptions,
    SessionTaint, TaintSource,
};

use crate::approver::{Approver, SyncApprover, blocking};
use crate::ask::{Consulted, Offer, stored_answer};
use crate::broker::{PermissionRequest, Resolution, Response};
use crate::context::RunContext;
use crate::events::EventKind;
use crate::grants::{Effect, ScopeKind};
use crate::message::{Outcome, ToolCall};
use crate::messages;
use crate::middleware::{
    AfterFunctionContext, BatchContext, FunctionContext, HookError, IterationContext, Middleware,
    Verdict,
};
use crate::state::{MiddlewareState, StateScope};
use crate::tool::ToolInfo;

/// One permission decision, as published and audited (DESIGN §7).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DecisionRecord {
    /// What was attempted: the tool's name.
    pub action: String,
    /// What it touched: the deciding subject (a path, a command, a URL), when it had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// Allow or deny (asks are `permission_requested` events, then a decision).
    pub decision: Decision,
    /// The rule involved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The layer that decided.
    pub layer: Layer,
    /// Why.
    pub reason: String,
    /// Who decided: `policy`, `grant:<id>`, the answerer, `timeout`, `cancelled`, `nobody`.
    pub actor: String,
    /// The permission request, when a person was asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

/// What a refused call does to its turn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DeniedBehavior {
    /// The refusal is the call's result and the model carries on (the default).
    #[default]
    ReturnToModel,
    /// The turn ends once the iteration's calls are done.
    InterruptTurn,
}

/// A decided call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
enum Decided {
    /// Run, with rewritten arguments when the policy supplied them.
    Allow(Option<Map<String, Value>>),
    /// Do not run; the model reads the text.
    Refuse(Outcome, String),
}

/// Decisions made for a parallel batch, by middleware instance and call id (transient, reset
/// every iteration).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct BatchDecisions {
    by_call: HashMap<String, BatchDecision>,
}

/// What was decided for one call of a batch, and on what.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct BatchDecision {
    tool: String,
    args: Map<String, Value>,
    decided: Decided,
}

/// Tells instances apart in shared state.
static INSTANCES: AtomicU64 = AtomicU64::new(0);

impl MiddlewareState for BatchDecisions {
    const KEY: &'static str = "toolgate.permission.batch";
    const SCOPE: StateScope = StateScope::Branch;
}

/// Gates every tool call with a [`Policy`].
///
/// ```rust,standalone_crate
/// use std::sync::Arc;
/// use toolgate_policy::{Choice, Policy};
/// use toolgate_runtime::{Agent, Answer, FnTool, PermissionMiddleware, Reply, ScriptedModel, ToolInfo};
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let policy = Policy::from_toml("policy.toml", r#"
///     version = 1
///     [[rule]]
///     name = "ask-deletes"
///     decision = "ask"
///     tool = "delete_file"
/// "#)?;
/// let model = ScriptedModel::new([
///     Reply::call("delete_file", serde_json::json!({"path": "a.txt"})),
///     Reply::text("Done."),
/// ]);
/// let delete = FnTool::new(ToolInfo::new("delete_file", "Deletes a file."), |_, _| async {
///     Ok("deleted".into())
/// });
/// let agent = Agent::builder(model)
///     .tool(delete)
///     .middleware(PermissionMiddleware::new(policy))
///     .approver(|_request| async { Ok(Answer::from(Choice::RejectOnce)) })
///     .build()?;
/// let turn = agent.run(&agent.session("s1"), "delete a.txt").await?;
/// assert_eq!(turn.results[0].text(), "Permission denied by user.");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub struct PermissionMiddleware {
    instance: u64,
    name: String,
    policy: Arc<Policy>,
    approver: Option<Arc<dyn Approver>>,
    on_denial: DeniedBehavior,
    grant_scope: ScopeKind,
    denied_message: Option<String>,
}

impl fmt::Debug for PermissionMiddleware {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PermissionMiddleware")
            .field("name", &self.name)
            .field("on_denial", &self.on_denial)
            .field("grant_scope", &self.grant_scope)
            .finish_non_exhaustive()
    }
}

impl PermissionMiddleware {
    /// Gates calls with `policy`.
    pub fn new(policy: impl Into<Arc<Policy>>) -> PermissionMiddleware {
        PermissionMiddleware {
            instance: INSTANCES.fetch_add(1, Ordering::Relaxed),
            name: "PermissionMiddleware".to_owned(),
            policy: policy.into(),
            approver: None,
            on_denial: DeniedBehavior::ReturnToModel,
            grant_scope: ScopeKind::Session,
            denied_message: None,
        }
    }

    /// HPD's built-in function-level policy: everything runs, except tools that require
    /// permission (their `requires_permission`, or an agent or run override), which ask.
    pub fn function_level() -> PermissionMiddleware {
        PermissionMiddleware::new(Policy::builder().mode(Mode::ApproveAll).build())
    }

    /// Renames it (its name is the requests' `source`).
    #[must_use]
    pub fn named(mut self, name: impl Into<String>) -> PermissionMiddleware {
        self.name = name.into();
        self
    }

    /// Asks this approver instead of the agent's.
    #[must_use]
    pub fn with_approver(mut self, approver: impl Approver) -> PermissionMiddleware {
        self.approver = Some(Arc::new(approver));
        self
    }

    /// Asks this blocking approver instead of the agent's.
    #[must_use]
    pub fn with_blocking_approver(mut self, approver: impl SyncApprover) -> PermissionMiddleware {
        self.approver = Some(blocking(approver));
        self
    }

    /// Ends the turn when a call is refused (HPD's `InterruptTurn`).
    #[must_use]
    pub fn interrupt_on_denial(mut self) -> PermissionMiddleware {
        self.on_denial = DeniedBehavior::InterruptTurn;
        self
    }

    /// The scope "always" answers are stored with (default: the session).
    #[must_use]
    pub fn grant_scope(mut self, scope: ScopeKind) -> PermissionMiddleware {
        self.grant_scope = scope;
        self
    }

    /// What the model reads when a person refuses without a reason (default
    /// "Permission denied by user.").
    #[must_use]
    pub fn denied_message(mut self, message: impl Into<String>) -> PermissionMiddleware {
        self.denied_message = Some(message.into());
        self
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The call as the policy reads it.
    fn policy_call(
        run: &RunContext,
        call: &ToolCall,
        args: &Map<String, Value>,
        tool: &ToolInfo,
    ) -> Call {
        let config = run.config();
        Call {
            tool: call.name.clone(),
            args: Value::Object(args.clone()),
            tags: tool.tags.clone(),
            annotations: Map::new(),
            context: Context {
                session: Some(run.session_id().to_owned()),
                branch: Some(run.branch().to_owned()),
                agent: Some(run.agent_name().to_owned()),
                origin: config.origin,
                workspace: config.workspace.as_ref().map(|p| p.display().to_string()),
                cwd: config.cwd.as_ref().map(|p| p.display().to_string()),
                mode: None,
                server: None,
                trusted_server: false,
                choices: None,
            },
        }
    }

    /// The session's taint, where the agent keeps it; one that cannot be read is taken as
    /// tainted (what the session holds is not known).
    async fn taint_of(&self, run: &RunContext) -> SessionTaint {
        run.taints()
            .get(run.session_id())
            .await
            .unwrap_or_else(|why| SessionTaint {
                sources: vec![TaintSource {
                    kind: toolgate_policy::TaintKind::File,
                    tool: self.name.clone(),
                    what: format!("a taint that could not be read ({why})"),
                    at: String::new(),
                    call_id: None,
                }],
                ..SessionTaint::default()
            })
    }

    /// Notes a completed call's result in its session's taint; the source, when the result
    /// newly tainted it.
    async fn note_result(&self, run: &RunContext, call: &ToolCall) -> Option<TaintSource> {
        let (Some(tool), Value::Object(args)) = (run.tool(&call.name), &call.arguments) else {
            return None;
        };
        let effect = self
            .policy
            .result_effect(&Self::policy_call(run, call, args, tool));
        if effect == toolgate_policy::ResultEffect::default() {
            return None;
        }
        let at = humantime::format_rfc3339_micros(std::time::SystemTime::now()).to_string();
        let change =
            |taint: &mut SessionTaint| effect.apply(taint, &call.name, &at, Some(&call.id));
        let taint = match run.taints().change(run.session_id(), &change).await {
            Ok(taint) => taint,
            Err(why) => {
                report(
                    run,
                    call,
                    &self.name,
                    format!("the taint store failed: {why}"),
                );
                return None;
            }
        };
        // The source this result added (one of another call's, the same, was there before).
        let (kind, what) = effect.taint.as_ref()?;
        taint
            .sources
            .into_iter()
            .find(|s| s.kind == *kind && s.what == *what && s.call_id.as_deref() == Some(&call.id))
    }

    /// Evaluates a call under the run's options.
    fn evaluate(
        &self,
        run: &RunContext,
        call: &ToolCall,
        args: &Map<String, Value>,
        tool: &ToolInfo,
    ) -> Evaluation {
        let policy_call = Self::policy_call(run, call, args, tool);
        let config = run.config();
        let mut options = RunOptions::default().with_full_access(config.full_access);
        if let Some(mode) = config.mode {
            options = options.with_mode(mode);
        }
        match run.permission_override(&call.name) {
            Some(PermissionOverride::Require) => {
                options.require_permission_for(call.name.clone());
            }
            Some(PermissionOverride::Disable) => {
                options.disable_permission_for(call.name.clone());
            }
            None => {}
        }
        self.policy.evaluate_with(&policy_call, &options)
    }

    async fn decide(
        &self,
        run: &RunContext,
        call: &ToolCall,
        args: &Map<String, Value>,
        tool: &ToolInfo,
    ) -> Decided {
        let mut evaluation = self.evaluate(run, call, args, tool);
        // Only an allow can change under the session's taint: read it only then.
        if evaluation.decision == Decision::Allow && self.policy.taint_settings().enabled {
            evaluation = self
                .policy
                .under_taint(evaluation, &self.taint_of(run).await);
        }
        let judge = Judge {
            run,
            call,
            evaluation: &evaluation,
            request_id: None,
        };
        match evaluation.decision {
            Decision::Allow => judge.allow(evaluation.layer, &evaluation.reason, "policy"),
            Decision::Deny => judge.refuse(
                Outcome::Denied,
                evaluation.layer,
                evaluation.reason.to_string(),
                "policy",
            ),
            Decision::Ask => self.resolve_ask(judge, args, tool).await,
        }
    }

    async fn resolve_ask(
        &self,
        judge: Judge<'_>,
        args: &Map<String, Value>,
        tool: &ToolInfo,
    ) -> Decided {
        let Judge {
            run,
            call,
            evaluation,
            ..
        } = judge;
        let grant_cx = run.grant_context();
        // "Always" covers what no grant answers yet (the store failing: all that asked).
        let open = match stored_answer(&**run.grants(), &call.name, evaluation, &grant_cx).await {
            Ok(Consulted::Answered(stored)) => {
                let actor = stored.actor();
                return match stored.effect {
                    Effect::Deny => judge.refuse(
                        Outcome::Denied,
                        Layer::Grant,
                        stored.refusal(&call.name),
                        &actor,
                    ),
                    Effect::Allow => {
                        let reason = format!("allowed by a stored grant ({})", stored.describe());
                        judge.allow(Layer::Grant, &reason, &actor)
                    }
                };
            }
            Ok(Consulted::Open(open)) => open,
            Err(e) => {
                report(
                    run,
                    call,
                    &self.name,
                    format!("the grant store failed: {e}"),
                );
                evaluation.subjects.clone()
            }
        };

        let approver = match &self.approver {
            Some(approver) => Some(Some(Arc::clone(approver))),
            None => run.approver(),
        };
        let Some(approver) = approver else {
            let text = messages::NO_HANDLER_REASON.to_owned();
            return judge.refuse(Outcome::Denied, Layer::Handler, text, "nobody");
        };

        let offer = Offer::for_subjects(evaluation, self.grant_scope, &open);
        let request = PermissionRequest {
            reason: evaluation.reason.to_string(),
            rule: evaluation.rule_name().map(str::to_owned),
            layer: evaluation.layer,
            choices: offer.choices.clone(),
            always: offer.always.clone(),
            workspace: run.workspace_name(),
            ..PermissionRequest::for_call(&self.name, call, tool, args, offer.timeout)
        };
        let request_id = request.id.clone();
        let resolution = run
            .broker()
            .request_permission(
                run.call_scope(&call.id),
                request,
                approver,
                offer.timeout,
                run.cancellation(),
            )
            .await;
        let judge = Judge {
            request_id: Some(&request_id),
            ..judge
        };
        match resolution {
            Resolution::Answered {
                response: Response::Permission(answer),
                by,
            } => {
                let grants =
                    offer.grants_for(answer.decision, &call.name, &grant_cx, &by, &request_id);
                for grant in grants {
                    let grant = grant.with_reason(answer.reason.as_deref());
                    if let Err(e) = run.grants().insert(grant).await {
                        report(
                            run,
                            call,
                            &self.name,
                            format!("the grant store failed: {e}"),
                        );
                    }
                }
                if answer.decision.allows() {
                    let reason = format!("approved by {by} ({})", answer.decision);
                    judge.allow(Layer::Handler, &reason, &by)
                } else {
                    let text = answer
                        .reason
                        .filter(|r| !r.is_empty())
                        .or_else(|| self.denied_message.clone())
                        .unwrap_or_else(|| messages::USER_DENIED.to_owned());
                    judge.refuse(Outcome::Denied, Layer::Handler, text, &by)
                }
            }
            Resolution::Answered { by, .. } => {
                let text = "the answer was not a permission answer".to_owned();
                judge.refuse(Outcome::Denied, Layer::Handler, text, &by)
            }
            Resolution::TimedOut => judge.refuse(
                Outcome::TimedOut,
                Layer::Timeout,
                messages::TIMED_OUT.to_owned(),
                "timeout",
            ),
            Resolution::Cancelled => judge.refuse(
                Outcome::Cancelled,
                Layer::Handler,
                messages::CANCELLED.to_owned(),
                "cancelled",
            ),
            Resolution::Failed { message } => {
                judge.refuse(Outcome::Denied, Layer::Handler, message, "handler")
            }
        }
    }

    /// This instance's key for a call in the shared batch state.
    fn key(&self, call_id: &str) -> String {
        format!("{}/{call_id}", self.instance)
    }

    fn apply(&self, cx: &mut FunctionContext<'_>, decided: Decided) -> Verdict {
        match decided {
            Decided::Allow(args) => {
                // What was approved is what runs: a later change to the arguments refuses the
                // call.
                cx.seal();
                Verdict::Allow { args }
            }
            Decided::Refuse(outcome, text) => {
                if self.on_denial == DeniedBehavior::InterruptTurn {
                    cx.interrupt_turn(text.clone());
                }
                cx.block_with(outcome, text);
                Verdict::Continue
            }
        }
    }
}

/// Gives a call its final word and publishes it as a decision event.
#[derive(Clone, Copy)]
struct Judge<'a> {
    run: &'a RunContext,
    call: &'a ToolCall,
    evaluation: &'a Evaluation,
    request_id: Option<&'a str>,
}

impl Judge<'_> {
    fn allow(&self, layer: Layer, reason: &str, actor: &str) -> Decided {
        self.record(Decision::Allow, layer, reason, actor);
        Decided::Allow(self.evaluation.args.clone())
    }

    fn refuse(&self, outcome: Outcome, layer: Layer, text: String, actor: &str) -> Decided {
        self.record(Decision::Deny, layer, &text, actor);
        Decided::Refuse(outcome, text)
    }

    fn record(&self, decision: Decision, layer: Layer, reason: &str, actor: &str) {
        let (run, evaluation) = (self.run, self.evaluation);
        if !run.events().is_observed() {
            return;
        }
        let resource = evaluation
            .deciding_subject()
            .and_then(|s| s.subject.resource());
        run.emit_for_call(
            &self.call.id,
            EventKind::Decision(DecisionRecord {
                action: self.call.name.clone(),
                resource,
                decision,
                rule: evaluation.rule_name().map(str::to_owned),
                layer,
                reason: reason.to_owned(),
                actor: actor.to_owned(),
                request_id: self.request_id.map(str::to_owned),
            }),
        );
    }
}

fn report(run: &RunContext, call: &ToolCall, middleware: &str, message: String) {
    run.emit_for_call(
        &call.id,
        EventKind::MiddlewareFailed {
            middleware: middleware.to_owned(),
            hook: "before_function",
            message,
        },
    );
}

#[async_trait]
impl Middleware for PermissionMiddleware {
    fn name(&self) -> &str {
        &self.name
    }

    async fn before_iteration(&self, cx: &mut IterationContext<'_>) -> Result<(), HookError> {
        let prefix = self.key("");
        cx.update_state::<BatchDecisions, _>(|b| b.by_call.retain(|k, _| !k.starts_with(&prefix)));
        Ok(())
    }

    async fn before_parallel_batch(&self, cx: &mut BatchContext<'_>) -> Result<(), HookError> {
        let mut seen = HashSet::new();
        for call in cx.calls {
            if !seen.insert(call.id.as_str()) {
                continue; // a repeated id: the call is refused before any middleware
            }
            let (Some(tool), Value::Object(args)) = (cx.run.tool(&call.name), &call.arguments)
            else {
                continue; // refused by validation before any middleware
            };
            let decided = self.decide(cx.run, call, args, tool).await;
            let refused = matches!(decided, Decided::Refuse(..));
            let key = self.key(&call.id);
            let decision = BatchDecision {
                tool: call.name.clone(),
                args: args.clone(),
                decided,
            };
            cx.update_state::<BatchDecisions, _>(|b| b.by_call.insert(key, decision));
            if refused && self.on_denial == DeniedBehavior::InterruptTurn {
                break; // the turn ends at this call; nobody is asked about the rest
            }
        }
        Ok(())
    }

    async fn before_function(&self, cx: &mut FunctionContext<'_>) -> Result<Verdict, HookError> {
        let key = self.key(&cx.call.id);
        let recorded = if cx.in_batch {
            let (tool, args) = (&cx.call.name, cx.args);
            cx.update_state::<BatchDecisions, _>(|b| match b.by_call.remove(&key) {
                // A decision applies only to the call and arguments it was made on: a middleware
                // before this one may have rewritten them.
                Some(d) if d.tool == *tool && d.args == *args => Some(d.decided),
                _ => None,
            })
        } else {
            None
        };
        let decided = match recorded {
            Some(decided) => decided,
            None => self.decide(cx.run, cx.call, cx.args, cx.tool).await,
        };
        Ok(self.apply(cx, decided))
    }

    async fn after_function(&self, cx: &mut AfterFunctionContext<'_>) -> Result<(), HookError> {
        if cx.result.outcome == Outcome::Completed
            && let Some(source) = self.note_result(cx.run, cx.call).await
        {
            cx.run.emit_for_call(
                &cx.call.id,
                EventKind::Custom {
                    name: "session_tainted".into(),
                    data: serde_json::json!({"source": source, "reason": source.to_string()}),
                },
            );
        }
        Ok(())
    }
}
