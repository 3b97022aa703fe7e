//! The middleware trait: every hook of the agent loop, each a no-op by default.
//!
//! # Order
//!
//! `before_*` hooks run in registration order; `after_*` hooks and `on_error` in reverse
//! registration order. Wrappers nest with the first registered outermost:
//! `first(second(core))`, like `tower`'s layers and axum's `middleware::from_fn`: a wrapper
//! gets a [`FunctionNext`] or [`ModelNext`] and decides whether, when and how often to call it.
//!
//! | hook | when | can |
//! |---|---|---|
//! | `before_start`, `after_started` | the runtime's input loop starts | allocate, check |
//! | `before_stop`, `after_stopped` | it stops | flush, report |
//! | `before_message_turn` | a user message arrives | rewrite it, add context |
//! | `after_message_turn` | the turn ended | read the response |
//! | `before_iteration` | before each model call | change the messages, skip the model call, terminate |
//! | `wrap_model_turn_streaming` | around the model call | transform, count, retry the stream |
//! | `before_tool_execution` | the model asked for tools | skip every tool of the iteration |
//! | `before_parallel_batch` | several tools in one response | judge the batch |
//! | `before_function` | before each tool call | allow (with new arguments), ask, deny, block |
//! | `wrap_function_call` | around the tool's body | time, retry, time out |
//! | `after_function` | the call ended | rewrite the result |
//! | `on_error` | the tool failed | observe |
//! | `after_iteration` | the iteration's tools ended | read the results |
//! | `before_branch_fork_commit` | a fork is about to join its session | adjust its state |
//!
//! # Calls
//!
//! For each tool call, `before_function` runs in every middleware that
//! [applies](Middleware::applies_to) to the tool, in order, and its [`Verdict`] is processed at
//! once: `Allow` with arguments replaces them (an empty map too) and later middleware see the
//! new ones; `Deny` refuses the call; `Ask` asks the agent's approver before the next middleware
//! runs; an `Allow` never stops later middleware from refusing. For a batch of several calls,
//! the `before_function` phase runs one call at a time in the model's order (so prompts never
//! overlap), then the approved calls run concurrently.
//!
//! # The streaming wrapper has no probe
//!
//! HPD calls its streaming wrapper once during chain construction to see whether it returns
//! null, and again for real, so side effects written before the returned stream run twice.
//! Here [`Middleware::wrap_model_turn_streaming`] is called exactly once per model call, at the
//! moment the call starts, and its default simply returns `next.run(request)`: there is nothing
//! to probe, and code before the returned stream runs once, for the real call.
//!
//! # Failures
//!
//! A hook that returns an error (or times out, see
//! [`MiddlewareExt::with_timeout`](crate::MiddlewareExt::with_timeout)) fails closed: in a
//! per-call hook the call is refused with a result naming the middleware and the hook; in any
//! other hook the turn ends as failed. Either way a `middleware_failed` event is published.

use std::fmt;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_core::Stream;
use serde_json::{Map, Value};

use crate::context::RunContext;
use crate::events::{EventBus, TurnEnd};
use crate::message::{Message, ToolCall, ToolResult};
use crate::model::{Model, ModelError, ModelRequest, ModelUpdate};
use crate::session::BranchFork;
use crate::state::MiddlewareState;
use crate::tool::{Tool, ToolContext, ToolError, ToolInfo};

/// Why a hook failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HookError {
    /// The hook returned an error.
    Failed(String),
    /// The hook did not finish within its timeout.
    TimedOut(Duration),
    /// A member of a composite failed (the failure is named after the member).
    Member {
        /// The member's name.
        middleware: String,
        /// Its failure.
        error: Box<HookError>,
    },
}

impl HookError {
    /// The failure as the model and the events name it:
    /// `Middleware 'X' failed in before_function: …` or
    /// `Middleware 'X' timed out in before_function after 0.05s`.
    pub fn describe(&self, middleware: &str, hook: &str) -> String {
        match self {
            HookError::Failed(message) => {
                format!("Middleware '{middleware}' failed in {hook}: {message}")
            }
            HookError::TimedOut(after) => format!(
                "Middleware '{middleware}' timed out in {hook} after {}s",
                after.as_secs_f64()
            ),
            HookError::Member { middleware, error } => error.describe(middleware, hook),
        }
    }

    /// This error, as a member of a composite named `middleware` failed with it.
    pub fn of_member(self, middleware: &str) -> HookError {
        match self {
            HookError::Member { .. } => self,
            error => HookError::Member {
                middleware: middleware.to_owned(),
                error: Box::new(error),
            },
        }
    }

    /// The name of the middleware that really failed, when a composite's member did.
    pub fn member(&self) -> Option<&str> {
        match self {
            HookError::Member { middleware, .. } => Some(middleware),
            HookError::Failed(_) | HookError::TimedOut(_) => None,
        }
    }
}

impl fmt::Display for HookError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HookError::Failed(message) => f.write_str(message),
            HookError::TimedOut(after) => write!(f, "timed out after {}s", after.as_secs_f64()),
            HookError::Member { middleware, error } => write!(f, "{middleware}: {error}"),
        }
    }
}

impl std::error::Error for HookError {}

impl From<String> for HookError {
    fn from(message: String) -> HookError {
        HookError::Failed(message)
    }
}

impl From<&str> for HookError {
    fn from(message: &str) -> HookError {
        HookError::Failed(message.to_owned())
    }
}

/// What a hook returns.
pub type HookResult = Result<(), HookError>;

/// What `before_function` decides about a call (pydantic-ai-middleware's
/// `ToolPermissionResult`, plus "no opinion").
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// No opinion: the call goes on to the next middleware with its arguments unchanged.
    Continue,
    /// The call may run. `args`, when given, replace the arguments (an empty map is a real
    /// replacement). Later middleware still run and may refuse.
    Allow {
        /// Replacement arguments.
        args: Option<Map<String, Value>>,
    },
    /// A person (the agent's approver) must decide. Approved, the call goes on with `args` if
    /// given, else its arguments as they were; refused, it is blocked with
    /// `Tool '{name}' blocked: {reason}`.
    Ask {
        /// Why, shown to the approver.
        reason: String,
        /// Arguments to use if approved.
        args: Option<Map<String, Value>>,
    },
    /// The call is refused: the model reads `Tool '{name}' blocked: {reason}` (or
    /// `… blocked: Permission denied` without a reason).
    Deny {
        /// Why.
        reason: String,
    },
}

impl Verdict {
    /// An allow that keeps the arguments.
    pub const fn allow() -> Verdict {
        Verdict::Allow { args: None }
    }

    /// A deny.
    pub fn deny(reason: impl Into<String>) -> Verdict {
        Verdict::Deny {
            reason: reason.into(),
        }
    }

    /// An ask.
    pub fn ask(reason: impl Into<String>) -> Verdict {
        Verdict::Ask {
            reason: reason.into(),
            args: None,
        }
    }

    /// How strict it is: deny > ask > allow > continue.
    pub(crate) const fn rank(&self) -> u8 {
        match self {
            Verdict::Continue => 0,
            Verdict::Allow { .. } => 1,
            Verdict::Ask { .. } => 2,
            Verdict::Deny { .. } => 3,
        }
    }
}

/// A middleware: hooks into the agent loop. Every hook is a no-op by default.
#[async_trait]
pub trait Middleware: Send + Sync + 'static {
    /// Its name, in events and failure messages. Defaults to the type's name.
    fn name(&self) -> &str {
        let full = std::any::type_name::<Self>();
        let base = full.split('<').next().unwrap_or(full);
        base.rsplit("::").next().unwrap_or(base)
    }

    /// Whether its per-call hooks (`before_function`, `wrap_function_call`, `after_function`,
    /// `on_error`) run for calls of `tool`.
    fn applies_to(&self, tool: &str) -> bool {
        let _ = tool;
        true
    }

    /// The runtime's input loop is about to start.
    async fn before_start(&self, cx: &mut LifecycleContext<'_>) -> HookResult {
        let _ = cx;
        Ok(())
    }

    /// The runtime's input loop has started.
    async fn after_started(&self, cx: &mut LifecycleContext<'_>) -> HookResult {
        let _ = cx;
        Ok(())
    }

    /// The runtime is about to stop.
    async fn before_stop(&self, cx: &mut LifecycleContext<'_>) -> HookResult {
        let _ = cx;
        Ok(())
    }

    /// The runtime has stopped.
    async fn after_stopped(&self, cx: &mut LifecycleContext<'_>) -> HookResult {
        let _ = cx;
        Ok(())
    }

    /// A user turn begins.
    async fn before_message_turn(&self, cx: &mut TurnContext<'_>) -> HookResult {
        let _ = cx;
        Ok(())
    }

    /// A user turn ended.
    async fn after_message_turn(&self, cx: &mut TurnEndContext<'_>) -> HookResult {
        let _ = cx;
        Ok(())
    }

    /// An iteration begins.
    async fn before_iteration(&self, cx: &mut IterationContext<'_>) -> HookResult {
        let _ = cx;
        Ok(())
    }

    /// An iteration ended.
    async fn after_iteration(&self, cx: &mut IterationEndContext<'_>) -> HookResult {
        let _ = cx;
        Ok(())
    }

    /// Wraps the model call. Called exactly once per model call, when it starts (no probe).
    fn wrap_model_turn_streaming<'a>(
        &'a self,
        run: &'a RunContext,
        request: ModelRequest,
        next: ModelNext<'a>,
    ) -> ModelStream<'a> {
        let _ = run;
        next.run(request)
    }

    /// The model asked for tools; nothing has run yet.
    async fn before_tool_execution(&self, cx: &mut ToolExecutionContext<'_>) -> HookResult {
        let _ = cx;
        Ok(())
    }

    /// The model asked for several tools at once.
    async fn before_parallel_batch(&self, cx: &mut BatchContext<'_>) -> HookResult {
        let _ = cx;
        Ok(())
    }

    /// A tool call is about to run.
    async fn before_function(&self, cx: &mut FunctionContext<'_>) -> Result<Verdict, HookError> {
        let _ = cx;
        Ok(Verdict::Continue)
    }

    /// Wraps a tool's body.
    async fn wrap_function_call(
        &self,
        request: FunctionRequest,
        next: FunctionNext<'_>,
    ) -> Result<Value, ToolError> {
        next.run(request).await
    }

    /// A tool call ended (ran, failed, or was refused).
    async fn after_function(&self, cx: &mut AfterFunctionContext<'_>) -> HookResult {
        let _ = cx;
        Ok(())
    }

    /// A tool failed.
    async fn on_error(&self, cx: &mut ErrorContext<'_>) -> HookResult {
        let _ = cx;
        Ok(())
    }

    /// A forked branch is about to join its session.
    async fn before_branch_fork_commit(&self, cx: &mut ForkContext<'_>) -> HookResult {
        let _ = cx;
        Ok(())
    }
}

/// A model's output stream.
pub type ModelStream<'a> = Pin<Box<dyn Stream<Item = Result<ModelUpdate, ModelError>> + Send + 'a>>;

/// The rest of the model wrappers, then the model.
#[derive(Clone)]
pub struct ModelNext<'a> {
    pub(crate) rest: &'a [Arc<dyn Middleware>],
    pub(crate) then: ModelThen<'a>,
    pub(crate) run: &'a RunContext,
}

#[derive(Clone)]
pub(crate) enum ModelThen<'a> {
    Model(&'a dyn Model),
    Next(Arc<ModelNext<'a>>),
}

impl fmt::Debug for ModelNext<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelNext")
            .field("remaining", &self.rest.len())
            .finish()
    }
}

impl<'a> ModelNext<'a> {
    /// Calls the next wrapper (or the model).
    pub fn run(self, request: ModelRequest) -> ModelStream<'a> {
        match self.rest.split_first() {
            Some((first, rest)) => first.wrap_model_turn_streaming(
                self.run,
                request,
                ModelNext {
                    rest,
                    then: self.then,
                    run: self.run,
                },
            ),
            None => match self.then {
                ModelThen::Model(model) => model.stream(request),
                ModelThen::Next(next) => ModelNext::clone(&next).run(request),
            },
        }
    }

    /// The wrappers in `rest`, then this continuation (for composites).
    pub(crate) fn nest(self, rest: &'a [Arc<dyn Middleware>]) -> ModelNext<'a> {
        let run = self.run;
        ModelNext {
            rest,
            then: ModelThen::Next(Arc::new(self)),
            run,
        }
    }
}

/// A tool call on its way to the tool's body.
#[derive(Clone, Debug)]
pub struct FunctionRequest {
    /// The call's id.
    pub call_id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments every `before_function` agreed on.
    pub args: Map<String, Value>,
    /// What the tool's handler gets.
    pub context: ToolContext,
    /// The run.
    pub run: RunContext,
    /// The arguments a middleware sealed; the tool runs only with exactly these.
    pub(crate) sealed: Option<Arc<Map<String, Value>>>,
}

/// The text a call gets when its sealed arguments were changed.
pub(crate) fn changed_after_seal(by: &str) -> String {
    format!("the arguments were changed after they were approved (by '{by}'); the call was refused")
}

/// The rest of the function wrappers, then the tool.
#[derive(Clone, Copy)]
pub struct FunctionNext<'a> {
    pub(crate) rest: &'a [Arc<dyn Middleware>],
    pub(crate) then: FunctionThen<'a>,
}

#[derive(Clone, Copy)]
pub(crate) enum FunctionThen<'a> {
    Tool(&'a dyn Tool),
    Next(&'a FunctionNext<'a>),
}

impl fmt::Debug for FunctionNext<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FunctionNext")
            .field("remaining", &self.rest.len())
            .finish()
    }
}

impl<'a> FunctionNext<'a> {
    /// Calls the next wrapper (or the tool). May be called more than once (a retry).
    pub fn run(
        self,
        request: FunctionRequest,
    ) -> Pin<Box<dyn Future<Output = Result<Value, ToolError>> + Send + 'a>> {
        let mut rest = self.rest;
        while let Some((first, after)) = rest.split_first() {
            if first.applies_to(&request.name) {
                let next = FunctionNext {
                    rest: after,
                    then: self.then,
                };
                return first.wrap_function_call(request, next);
            }
            rest = after;
        }
        match self.then {
            FunctionThen::Tool(tool) => Box::pin(async move {
                if let Some(sealed) = &request.sealed
                    && **sealed != request.args
                {
                    return Err(ToolError::new(changed_after_seal("a wrapper")));
                }
                tool.call(request.args, request.context).await
            }),
            FunctionThen::Next(next) => next.run(request),
        }
    }

    /// The wrappers in `rest`, then this continuation (for composites).
    pub(crate) fn nest(&'a self, rest: &'a [Arc<dyn Middleware>]) -> FunctionNext<'a> {
        FunctionNext {
            rest,
            then: FunctionThen::Next(self),
        }
    }
}

macro_rules! deref_run {
    ($($ty:ident),*) => {$(
        impl Deref for $ty<'_> {
            type Target = RunContext;
            fn deref(&self) -> &RunContext {
                self.run
            }
        }
    )*};
}

deref_run!(
    TurnContext,
    TurnEndContext,
    IterationContext,
    IterationEndContext,
    ToolExecutionContext,
    BatchContext,
    FunctionContext,
    AfterFunctionContext,
    ErrorContext
);

/// The runtime starting or stopping.
#[derive(Debug)]
pub struct LifecycleContext<'a> {
    /// The agent's name.
    pub agent: &'a str,
    /// The agent's events.
    pub events: &'a EventBus,
}

/// A user turn beginning.
#[derive(Debug)]
pub struct TurnContext<'a> {
    /// The run.
    pub run: &'a RunContext,
    /// The user's message (may be rewritten).
    pub input: &'a mut Message,
    /// The branch's history so far (context may be added).
    pub history: &'a mut Vec<Message>,
}

/// A user turn that ended.
#[derive(Debug)]
pub struct TurnEndContext<'a> {
    /// The run.
    pub run: &'a RunContext,
    /// How it ended.
    pub end: TurnEnd,
    /// The final assistant message.
    pub response: &'a Message,
    /// The branch's history, this turn included.
    pub history: &'a [Message],
}

/// An iteration beginning.
#[derive(Debug)]
pub struct IterationContext<'a> {
    /// The run.
    pub run: &'a RunContext,
    /// The iteration, from 0.
    pub iteration: u32,
    /// The messages the model will see (instructions and history).
    pub messages: &'a mut Vec<Message>,
    /// Skip the model call (the response is `override_response`, or an empty message).
    pub skip_model_call: bool,
    /// The response to use instead of calling the model.
    pub override_response: Option<Message>,
    /// End the run after this iteration, with this reason.
    pub terminate: Option<String>,
}

/// An iteration that ended.
#[derive(Debug)]
pub struct IterationEndContext<'a> {
    /// The run.
    pub run: &'a RunContext,
    /// The iteration, from 0.
    pub iteration: u32,
    /// The model's response.
    pub response: &'a Message,
    /// The tool results, in the model's order.
    pub results: &'a [ToolResult],
}

/// The model asked for tools.
#[derive(Debug)]
pub struct ToolExecutionContext<'a> {
    /// The run.
    pub run: &'a RunContext,
    /// The model's response.
    pub response: &'a Message,
    /// The calls, in the model's order.
    pub tool_calls: &'a [ToolCall],
    /// Skip every call: the response becomes `override_response` (or the model's text without
    /// its calls) and the turn ends.
    pub skip_tool_execution: bool,
    /// The response to keep instead.
    pub override_response: Option<Message>,
}

/// Several calls requested at once.
#[derive(Debug)]
pub struct BatchContext<'a> {
    /// The run.
    pub run: &'a RunContext,
    /// The batch's id.
    pub batch_id: &'a str,
    /// The calls, in the model's order.
    pub calls: &'a [ToolCall],
}

/// A tool call about to run.
#[derive(Debug)]
pub struct FunctionContext<'a> {
    /// The run.
    pub run: &'a RunContext,
    /// The call as the model made it.
    pub call: &'a ToolCall,
    /// The arguments as earlier middleware left them.
    pub args: &'a Map<String, Value>,
    /// The tool.
    pub tool: &'a ToolInfo,
    /// Whether this call is part of a parallel batch.
    pub in_batch: bool,
    pub(crate) blocked: Option<Block>,
    pub(crate) interrupt: Option<String>,
    pub(crate) seal: bool,
}

/// A refusal set with [`FunctionContext::block`].
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Block {
    pub(crate) outcome: crate::message::Outcome,
    pub(crate) text: String,
}

impl FunctionContext<'_> {
    /// Blocks the call: the model reads `result` as the tool's result (HPD's `BlockExecution`
    /// with `OverrideResult`).
    pub fn block(&mut self, result: impl Into<String>) {
        self.block_with(crate::message::Outcome::Denied, result);
    }

    /// Blocks the call with a particular outcome (timed out, cancelled, …).
    pub fn block_with(&mut self, outcome: crate::message::Outcome, result: impl Into<String>) {
        self.blocked = Some(Block {
            outcome,
            text: result.into(),
        });
    }

    /// Whether a middleware blocked the call.
    pub fn is_blocked(&self) -> bool {
        self.blocked.is_some()
    }

    /// Ends the turn once this iteration's calls are done (a denial that should stop the agent).
    pub fn interrupt_turn(&mut self, reason: impl Into<String>) {
        self.interrupt = Some(reason.into());
    }

    /// Seals the arguments as this middleware's verdict leaves them: if a later middleware or a
    /// wrapper changes them, the call is refused instead of running with arguments nobody
    /// approved. The permission middleware seals every call it allows.
    pub fn seal(&mut self) {
        self.seal = true;
    }
}

/// A tool call that ended.
#[derive(Debug)]
pub struct AfterFunctionContext<'a> {
    /// The run.
    pub run: &'a RunContext,
    /// The call.
    pub call: &'a ToolCall,
    /// Its result (may be rewritten).
    pub result: &'a mut ToolResult,
}

/// A tool that failed.
#[derive(Debug)]
pub struct ErrorContext<'a> {
    /// The run.
    pub run: &'a RunContext,
    /// The call.
    pub call: &'a ToolCall,
    /// The error.
    pub error: &'a ToolError,
}

/// A fork about to join its session.
#[derive(Debug)]
pub struct ForkContext<'a> {
    /// The fork (its name, origin and history).
    pub fork: &'a mut BranchFork,
}

impl ForkContext<'_> {
    /// A copy of a branch-scoped state value of the fork (session-scoped values are the
    /// session's).
    pub fn state<T: MiddlewareState>(&self) -> T {
        match T::SCOPE {
            crate::state::StateScope::Session => self.fork.session.state::<T>(&self.fork.from),
            crate::state::StateScope::Branch => self.fork.state.get::<T>(),
        }
    }

    /// Updates a state value of the fork.
    pub fn update_state<T: MiddlewareState, R>(&mut self, f: impl FnOnce(&mut T) -> R) -> R {
        match T::SCOPE {
            crate::state::StateScope::Session => {
                self.fork.session.update_state::<T, R>(&self.fork.from, f)
            }
            crate::state::StateScope::Branch => self.fork.state.update(f),
        }
    }

    /// The fork's history (may be trimmed).
    pub fn history(&mut self) -> &mut Vec<Message> {
        &mut self.fork.history
    }
}
