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

use crate::agent::{RunError, hook_failed, report_hook_failure};
use crate::broker::{PermissionRequest, Resolution, Response, new_id};
use crate::context::RunContext;
use crate::events::EventKind;
use crate::message::{Outcome, ToolCall, ToolResult};
use crate::messages;
use crate::middleware::{
    AfterFunctionContext, BatchContext, ErrorContext, FunctionContext, FunctionNext,
    FunctionRequest, FunctionThen, Middleware, Verdict,
};
use crate::tool::{Tool, ToolContext};

/// A call after its `before_function` phase.
enum Gate {
    /// It runs, with these arguments.
    Run {
        tool: Arc<dyn Tool>,
        args: Map<String, Value>,
    },
    /// It does not; this is its result. `checked` is false for calls refused by validation
    /// (they skip `after_function`).
    Done { result: ToolResult, checked: bool },
}

/// Runs one model response's calls. Returns the results in the model's order and, when a
/// middleware asked for it, the reason to interrupt the turn.
pub(crate) async fn execute_batch(
    run: &RunContext,
    calls: &[ToolCall],
) -> Result<(Vec<ToolResult>, Option<String>), RunError> {
    let core = &run.inner.core;
    if calls.len() > 1 {
        let batch_id = new_id();
        let mut cx = BatchContext {
            run,
            batch_id: &batch_id,
            calls,
        };
        for middleware in &core.middleware {
            if let Err(e) = middleware.before_parallel_batch(&mut cx).await {
                return Err(hook_failed(
                    &core.events,
                    run.scope(),
                    &**middleware,
                    "before_parallel_batch",
                    &e,
                ));
            }
        }
    }
    let in_batch = calls.len() > 1;
    let mut seen = HashSet::new();
    let mut gates = Vec::with_capacity(calls.len());
    let mut interrupt = None;
    for call in calls {
        let duplicate = !seen.insert(call.id.as_str());
        let (gate, stop) = gate(run, call, in_batch, duplicate).await;
        interrupt = interrupt.or(stop);
        gates.push(gate);
    }
    let results = join_all(gates.into_iter().zip(calls).map(|(gate, call)| async move {
        match gate {
            Gate::Run { tool, args } => {
                let result = run_call(run, call, &tool, args).await;
                finish(run, call, result, true).await
            }
            Gate::Done { result, checked } => finish(run, call, result, checked).await,
        }
    }))
    .await;
    Ok((results, interrupt))
}

/// Runs one call on its own (no batch hooks).
pub(crate) async fn execute_one(run: &RunContext, call: &ToolCall) -> (ToolResult, Option<String>) {
    let (gate, interrupt) = gate(run, call, false, false).await;
    let result = match gate {
        Gate::Run { tool, args } => {
            let result = run_call(run, call, &tool, args).await;
            finish(run, call, result, true).await
        }
        Gate::Done { result, checked } => finish(run, call, result, checked).await,
    };
    (result, interrupt)
}

fn invalid(call: &ToolCall, text: String) -> Gate {
    Gate::Done {
        result: ToolResult::refused(call, Outcome::Invalid, text, None),
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

async fn gate(
    run: &RunContext,
    call: &ToolCall,
    in_batch: bool,
    duplicate: bool,
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
    let mut interrupt = None;
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
        };
        let verdict = middleware.before_function(&mut cx).await;
        let (blocked, stop) = (cx.blocked.take(), cx.interrupt.take());
        interrupt = interrupt.or(stop);
        let by: Arc<str> = middleware.name().into();
        let refuse = |outcome: Outcome, text: String| Gate::Done {
            result: ToolResult::refused(call, outcome, text, Some(Arc::clone(&by))),
            checked: true,
        };
        if let Some(block) = blocked {
            return (refuse(block.outcome, block.text), interrupt);
        }
        match verdict {
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
            Ok(Verdict::Continue | Verdict::Allow { args: None }) => {}
            Ok(Verdict::Allow {
                args: Some(replacement),
            }) => args = replacement,
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
                match ask(run, &**middleware, call, tool.info(), shown, &reason).await {
                    Ok(()) => {
                        if let Some(replacement) = replacement {
                            args = replacement;
                        }
                    }
                    Err((outcome, text)) => return (refuse(outcome, text), interrupt),
                }
            }
        }
    }
    (
        Gate::Run {
            tool: Arc::clone(tool),
            args,
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
) -> ToolResult {
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
        },
        run: run.clone(),
    };
    let outcome = tokio::select! {
        outcome = next.run(request) => outcome,
        () = run.cancellation().cancelled() => {
            return ToolResult::refused(call, Outcome::Cancelled, "the turn was cancelled while the tool ran", None);
        }
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
