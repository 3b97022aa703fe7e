//! The one enforcement point: every tool call of an agent — from the model loop, a parallel
//! batch, or [`Agent::call_tool`](crate::Agent::call_tool) — passes through here.
//!
//! 1. Validation: a duplicate call id, an unknown tool, arguments that are not a JSON object →
//!    an `invalid` result; no middleware, policy or person is consulted.
//! 2. `before_function` of every middleware that applies, in order, verdicts processed at
//!    once. In a batch this phase runs one call at a time, in the model's order.
//! 3. The approved calls run (concurrently in a batch) through the `wrap_function_call`
//!    wrappers; a failure runs `on_error`.
//! 4. `after_function`, in reverse order, for every call that passed validation.

use std::collections::HashSet;
use std::sync::Arc;

use futures_util::future::join_all;
use serde_json::{Map, Value};
use toolgate_policy::DEFAULT_APPROVAL_TIMEOUT;

use crate::agent::report_hook_failure;
use crate::broker::{PermissionRequest, Resolution, Response, new_id};
use crate::context::RunContext;
use crate::events::EventKind;
use crate::message::{Outcome, ToolCall, ToolResult};
use crate::messages;
use crate::middleware::{
    AfterFunctionContext, BatchContext, ErrorContext, FunctionContext, FunctionNext,
    FunctionRequest, FunctionThen, Middleware, Verdict, changed_after_seal,
};
use crate::tool::{Tool, ToolContext};

/// A call after its `before_function` phase.
enum Gate {
    /// It runs, with these arguments (and, when a middleware sealed them, only with these).
    Run {
        tool: Arc<dyn Tool>,
        args: Map<String, Value>,
        sealed: Option<Map<String, Value>>,
    },
    /// It does not; this is its result. `checked` is false for calls refused before any
    /// middleware saw them (they skip `after_function`).
    Done { result: ToolResult, checked: bool },
}

/// Runs one model response's calls. Returns the results in the model's order and, when a
/// middleware asked for it, the reason to interrupt the turn.
///
/// Nothing here fails the turn: a batch hook that fails refuses every call of the batch, so
/// the history always has a result for each call the model made.
pub(crate) async fn execute_batch(
    run: &RunContext,
    calls: &[ToolCall],
) -> (Vec<ToolResult>, Option<String>) {
    let core = &run.inner.core;
    let mut refused_batch: Option<(Arc<str>, String)> = None;
    if calls.len() > 1 {
        let batch_id = new_id();
        let mut cx = BatchContext {
            run,
            batch_id: &batch_id,
            calls,
        };
        for middleware in &core.middleware {
            if let Err(e) = middleware.before_parallel_batch(&mut cx).await {
                let message = report_hook_failure(
                    &core.events,
                    run.scope(),
                    &**middleware,
                    "before_parallel_batch",
                    &e,
                );
                refused_batch = Some((middleware.name().into(), message));
                break;
            }
        }
    }
    let in_batch = calls.len() > 1;
    let mut seen = HashSet::new();
    let mut gates = Vec::with_capacity(calls.len());
    let mut interrupt: Option<String> = None;
    for call in calls {
        let duplicate = !seen.insert(call.id.as_str());
        if let Some((by, message)) = &refused_batch {
            run.emit_for_call(&call.id, EventKind::ToolCallStarted { call: call.clone() });
            let result =
                ToolResult::refused(call, Outcome::Denied, message.clone(), Some(Arc::clone(by)));
            gates.push(Gate::Done {
                result,
                checked: false,
            });
            continue;
        }
        let (gate, stop) = gate(run, call, in_batch, duplicate, interrupt.is_some()).await;
        interrupt = interrupt.or(stop);
        gates.push(gate);
    }
    let results = join_all(
        gates
            .into_iter()
            .zip(calls)
            .map(|(gate, call)| complete(run, call, gate)),
    )
    .await;
    (results, interrupt)
}

/// Runs one call on its own (no batch hooks).
pub(crate) async fn execute_one(run: &RunContext, call: &ToolCall) -> (ToolResult, Option<String>) {
    let (gate, interrupt) = gate(run, call, false, false, false).await;
    (complete(run, call, gate).await, interrupt)
}

/// Runs a call that passed its gate, then `after_function`.
async fn complete(run: &RunContext, call: &ToolCall, gate: Gate) -> ToolResult {
    match gate {
        Gate::Run { tool, args, sealed } => {
            let result = run_call(run, call, &tool, args, sealed).await;
            finish(run, call, result, true).await
        }
        Gate::Done { result, checked } => finish(run, call, result, checked).await,
    }
}

fn invalid(call: &ToolCall, text: String) -> Gate {
    Gate::Done {
        result: ToolResult::refused(call, Outcome::Invalid, text, None),
        checked: false,
    }
}

fn not_run(call: &ToolCall, outcome: Outcome, text: &str) -> Gate {
    Gate::Done {
        result: ToolResult::refused(call, outcome, text, None),
        checked: false,
    }
}

fn describe_arguments(value: &Value) -> String {
    match value {
        Value::String(raw) => {
            let mut shown: String = raw.chars().take(80).collect();
            if shown.len() < raw.len() {
                shown.push('…');
            }
            format!("they are not valid JSON: `{shown}`")
        }
        Value::Null => "expected a JSON object, got null".into(),
        Value::Bool(_) => "expected a JSON object, got a boolean".into(),
        Value::Number(_) => "expected a JSON object, got a number".into(),
        Value::Array(_) => "expected a JSON object, got an array".into(),
        Value::Object(_) => "they are an object".into(),
    }
}

/// The text of a call not run because an earlier call of its batch interrupted the turn.
pub(crate) const SKIPPED_AFTER_INTERRUPT: &str =
    "not run: an earlier call of this batch was refused and the turn was interrupted";

/// The text of a call not run because the turn was cancelled.
pub(crate) const CANCELLED_BEFORE_RUN: &str = "not run: the turn was cancelled";

async fn gate(
    run: &RunContext,
    call: &ToolCall,
    in_batch: bool,
    duplicate: bool,
    interrupted: bool,
) -> (Gate, Option<String>) {
    run.emit_for_call(&call.id, EventKind::ToolCallStarted { call: call.clone() });
    if duplicate || call.id.is_empty() {
        let text = format!(
            "invalid call of '{}': its id `{}` is empty or repeats an earlier call's",
            call.name, call.id
        );
        return (invalid(call, text), None);
    }
    let core = &run.inner.core;
    let Some(tool) = core.tools.get(&call.name) else {
        return (invalid(call, messages::not_registered(&call.name)), None);
    };
    let mut args = match &call.arguments {
        Value::Object(map) => map.clone(),
        other => {
            let text = format!(
                "invalid arguments for tool '{}': {}",
                call.name,
                describe_arguments(other)
            );
            return (invalid(call, text), None);
        }
    };
    if interrupted {
        return (
            not_run(call, Outcome::Skipped, SKIPPED_AFTER_INTERRUPT),
            None,
        );
    }
    if run.cancellation().is_cancelled() {
        return (
            not_run(call, Outcome::Cancelled, CANCELLED_BEFORE_RUN),
            None,
        );
    }
    let mut interrupt = None;
    let mut sealed: Option<Map<String, Value>> = None;
    for middleware in &core.middleware {
        if !middleware.applies_to(&call.name) {
            continue;
        }
        let mut cx = FunctionContext {
            run,
            call,
            args: &args,
            tool: tool.info(),
            in_batch,
            blocked: None,
            interrupt: None,
            seal: false,
        };
        let verdict = middleware.before_function(&mut cx).await;
        let (blocked, stop, seal) = (cx.blocked.take(), cx.interrupt.take(), cx.seal);
        interrupt = interrupt.or(stop);
        let by: Arc<str> = middleware.name().into();
        let refuse = |outcome: Outcome, text: String| Gate::Done {
            result: ToolResult::refused(call, outcome, text, Some(Arc::clone(&by))),
            checked: true,
        };
        if let Some(block) = blocked {
            return (refuse(block.outcome, block.text), interrupt);
        }
        let replacement = match verdict {
            Err(e) => {
                let message = report_hook_failure(
                    &core.events,
                    run.call_scope(&call.id),
                    &**middleware,
                    "before_function",
                    &e,
                );
                return (refuse(Outcome::Denied, message), interrupt);
            }
            Ok(Verdict::Continue | Verdict::Allow { args: None }) => None,
            Ok(Verdict::Allow { args: replacement }) => replacement,
            Ok(Verdict::Deny { reason }) => {
                let reason = if reason.is_empty() {
                    messages::DENIED
                } else {
                    &reason
                };
                return (
                    refuse(Outcome::Denied, messages::blocked(&call.name, reason)),
                    interrupt,
                );
            }
            Ok(Verdict::Ask {
                reason,
                args: replacement,
            }) => {
                // The person approves what will run: the replacement when there is one.
                let shown = replacement.as_ref().unwrap_or(&args);
                if let Err((outcome, text)) =
                    ask(run, &**middleware, call, tool.info(), shown, &reason).await
                {
                    return (refuse(outcome, text), interrupt);
                }
                replacement
            }
        };
        if let Some(replacement) = replacement {
            if sealed.as_ref().is_some_and(|s| *s != replacement) {
                let text = changed_after_seal(middleware.name());
                return (refuse(Outcome::Denied, text), interrupt);
            }
            args = replacement;
        }
        if seal && sealed.is_none() {
            sealed = Some(args.clone());
        }
    }
    (
        Gate::Run {
            tool: Arc::clone(tool),
            args,
            sealed,
        },
        interrupt,
    )
}

/// Resolves a middleware's `Ask`: the agent's approver, or answers through the broker.
async fn ask(
    run: &RunContext,
    middleware: &dyn Middleware,
    call: &ToolCall,
    tool: &crate::tool::ToolInfo,
    args: &Map<String, Value>,
    reason: &str,
) -> Result<(), (Outcome, String)> {
    let or_default = |default: &'static str| -> String {
        if reason.is_empty() {
            default.to_owned()
        } else {
            reason.to_owned()
        }
    };
    let Some(approver) = run.approver() else {
        return Err((
            Outcome::Denied,
            messages::blocked(&call.name, &or_default(messages::NO_HANDLER_REASON)),
        ));
    };
    let timeout = DEFAULT_APPROVAL_TIMEOUT;
    let request = PermissionRequest {
        reason: reason.to_owned(),
        rule: Some(middleware.name().to_owned()),
        workspace: run.workspace_name(),
        ..PermissionRequest::for_call(middleware.name(), call, tool, args, timeout)
    };
    let resolution = run
        .broker()
        .request_permission(
            run.call_scope(&call.id),
            request,
            approver,
            timeout,
            run.cancellation(),
        )
        .await;
    match resolution {
        Resolution::Answered {
            response: Response::Permission(answer),
            ..
        } if answer.decision.allows() => Ok(()),
        Resolution::Answered { .. } => Err((
            Outcome::Denied,
            messages::blocked(&call.name, &or_default(messages::HANDLER_DENIED_REASON)),
        )),
        Resolution::TimedOut => Err((Outcome::TimedOut, messages::TIMED_OUT.to_owned())),
        Resolution::Cancelled => Err((Outcome::Cancelled, messages::CANCELLED.to_owned())),
        Resolution::Failed { message } => {
            Err((Outcome::Denied, messages::blocked(&call.name, &message)))
        }
    }
}

async fn run_call(
    run: &RunContext,
    call: &ToolCall,
    tool: &Arc<dyn Tool>,
    args: Map<String, Value>,
    sealed: Option<Map<String, Value>>,
) -> ToolResult {
    if run.cancellation().is_cancelled() {
        return ToolResult::refused(call, Outcome::Cancelled, CANCELLED_BEFORE_RUN, None);
    }
    let core = &run.inner.core;
    let next = FunctionNext {
        rest: &core.middleware,
        then: FunctionThen::Tool(&**tool),
    };
    let request = FunctionRequest {
        call_id: call.id.clone(),
        name: call.name.clone(),
        args,
        context: ToolContext {
            call_id: call.id.clone(),
            session: run.session().id_arc(),
            branch: run.branch().into(),
            run: run.run_id().into(),
            cancellation: run.cancellation().child_token(),
            workspace: run.config().workspace.clone(),
            cwd: run.config().cwd.clone(),
            run_config: run.config_arc(),
        },
        run: run.clone(),
        sealed: sealed.map(Arc::new),
    };
    let outcome = tokio::select! {
        biased;
        () = run.cancellation().cancelled() => {
            return ToolResult::refused(call, Outcome::Cancelled, "the turn was cancelled while the tool ran", None);
        }
        outcome = next.run(request) => outcome,
    };
    match outcome {
        Ok(value) => ToolResult::completed(call, value),
        Err(error) => {
            for middleware in core.middleware.iter().rev() {
                if !middleware.applies_to(&call.name) {
                    continue;
                }
                let mut cx = ErrorContext {
                    run,
                    call,
                    error: &error,
                };
                if let Err(e) = middleware.on_error(&mut cx).await {
                    report_hook_failure(
                        &core.events,
                        run.call_scope(&call.id),
                        &**middleware,
                        "on_error",
                        &e,
                    );
                }
            }
            ToolResult::refused(call, Outcome::Failed, error.message(), None)
        }
    }
}

async fn finish(
    run: &RunContext,
    call: &ToolCall,
    mut result: ToolResult,
    checked: bool,
) -> ToolResult {
    if checked {
        let core = &run.inner.core;
        for middleware in core.middleware.iter().rev() {
            if !middleware.applies_to(&call.name) {
                continue;
            }
            let mut cx = AfterFunctionContext {
                run,
                call,
                result: &mut result,
            };
            if let Err(e) = middleware.after_function(&mut cx).await {
                let message = report_hook_failure(
                    &core.events,
                    run.call_scope(&call.id),
                    &**middleware,
                    "after_function",
                    &e,
                );
                // A result of a call that ran is replaced (it may be half-formatted); a
                // refusal stays what it was.
                if result.outcome.executed() {
                    result = ToolResult::refused(
                        call,
                        Outcome::Failed,
                        message,
                        Some(middleware.name().into()),
                    );
                }
            }
        }
    }
    run.emit_for_call(
        &call.id,
        EventKind::ToolCallFinished {
            result: result.clone(),
        },
    );
    result
}
