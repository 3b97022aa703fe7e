//! The agent: a model, tools, middleware, and the loop that runs them.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use futures_util::StreamExt;
use toolgate_policy::PermissionOverride;

use crate::approver::{Approver, SyncApprover, blocking};
use crate::broker::{ApprovalBroker, Response, new_id};
use crate::call::{execute_batch, execute_one};
use crate::context::{RunConfig, RunContext, RunInner};
use crate::events::{EventBus, EventKind, TurnEnd};
use crate::grants::{GrantStore, MemoryGrants};
use crate::message::{Message, ToolCall, ToolResult};
use crate::middleware::{
    ForkContext, HookError, IterationContext, IterationEndContext, LifecycleContext, Middleware,
    ModelNext, ModelThen, ToolExecutionContext, TurnContext, TurnEndContext,
};
use crate::model::{Model, ModelRequest, ModelUpdate, ToolSpec};
use crate::runtime::Runtime;
use crate::session::{BranchFork, MAIN_BRANCH, Session, SessionError};
use crate::tool::Tool;

/// The default hard limit on iterations per turn (a safety net; the
/// [`ContinuationPermissionMiddleware`](crate::ContinuationPermissionMiddleware) asks a person
/// well before it).
pub const DEFAULT_MAX_ITERATIONS: u32 = 100;

/// Who answers requests.
pub(crate) enum Approvals {
    /// Nobody: asks are denied with "Permission required but no handler configured".
    None,
    /// A UI or another program, through [`ApprovalBroker::respond`].
    Events,
    /// This approver (answers through the broker race it).
    Handler(Arc<dyn Approver>),
}

pub(crate) struct AgentCore {
    pub(crate) name: String,
    pub(crate) model: Arc<dyn Model>,
    pub(crate) tools: HashMap<String, Arc<dyn Tool>>,
    pub(crate) specs: Arc<[ToolSpec]>,
    pub(crate) middleware: Vec<Arc<dyn Middleware>>,
    pub(crate) instructions: Option<String>,
    pub(crate) approvals: Approvals,
    pub(crate) grants: Arc<dyn GrantStore>,
    pub(crate) taints: Arc<dyn crate::taints::SessionTaints>,
    pub(crate) events: EventBus,
    pub(crate) broker: ApprovalBroker,
    pub(crate) max_iterations: u32,
    overrides: RwLock<HashMap<String, PermissionOverride>>,
    sessions: Mutex<HashMap<String, Session>>,
}

impl AgentCore {
    pub(crate) fn agent_override(&self, tool: &str) -> Option<PermissionOverride> {
        let overrides = self
            .overrides
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        if overrides.is_empty() {
            return None;
        }
        overrides.get(tool).copied()
    }
}

/// Why a turn (or a lifecycle step) failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunError {
    /// A hook failed or timed out.
    Middleware {
        /// The middleware.
        middleware: String,
        /// The hook.
        hook: &'static str,
        /// What happened, in the failure's standard wording.
        message: String,
    },
    /// The model call failed.
    Model(String),
    /// A session or branch problem.
    Session(String),
    /// The runtime is not running.
    Stopped,
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Middleware { message, .. } => f.write_str(message),
            RunError::Model(m) => write!(f, "the model failed: {m}"),
            RunError::Session(m) => f.write_str(m),
            RunError::Stopped => f.write_str("the runtime has stopped"),
        }
    }
}

impl std::error::Error for RunError {}

impl From<SessionError> for RunError {
    fn from(e: SessionError) -> RunError {
        RunError::Session(e.0)
    }
}

/// Publishes a hook's failure and returns its standard wording.
pub(crate) fn report_hook_failure(
    events: &EventBus,
    scope: crate::events::Scope,
    middleware: &dyn Middleware,
    hook: &'static str,
    error: &HookError,
) -> String {
    let message = error.describe(middleware.name(), hook);
    if events.is_observed() {
        events.publish(
            scope,
            EventKind::MiddlewareFailed {
                middleware: error.member().unwrap_or(middleware.name()).to_owned(),
                hook,
                message: message.clone(),
            },
        );
    }
    message
}

/// Publishes a hook's failure and returns the turn's error.
pub(crate) fn hook_failed(
    events: &EventBus,
    scope: crate::events::Scope,
    middleware: &dyn Middleware,
    hook: &'static str,
    error: &HookError,
) -> RunError {
    RunError::Middleware {
        middleware: error.member().unwrap_or(middleware.name()).to_owned(),
        hook,
        message: report_hook_failure(events, scope, middleware, hook, error),
    }
}

/// How a turn ended.
#[derive(Clone, Debug, PartialEq)]
pub struct TurnResult {
    /// How.
    pub end: TurnEnd,
    /// Why, when it did not complete.
    pub reason: Option<String>,
    /// The last assistant message.
    pub response: Message,
    /// Every tool result of the turn, in order.
    pub results: Vec<ToolResult>,
    /// How many iterations ran.
    pub iterations: u32,
    /// The run's id.
    pub run_id: String,
}

impl TurnResult {
    /// The final text.
    pub fn text(&self) -> &str {
        &self.response.content
    }
}

/// Builds an [`Agent`].
pub struct AgentBuilder {
    name: String,
    model: Arc<dyn Model>,
    tools: Vec<Arc<dyn Tool>>,
    middleware: Vec<Arc<dyn Middleware>>,
    instructions: Option<String>,
    approvals: Approvals,
    grants: Arc<dyn GrantStore>,
    taints: Arc<dyn crate::taints::SessionTaints>,
    events: EventBus,
    broker: Option<ApprovalBroker>,
    max_iterations: u32,
    overrides: HashMap<String, PermissionOverride>,
}

impl fmt::Debug for AgentBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentBuilder")
            .field("name", &self.name)
            .field("tools", &self.tools.len())
            .field("middleware", &self.middleware.len())
            .finish_non_exhaustive()
    }
}

/// Why an agent could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildError(pub String);

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BuildError {}

impl AgentBuilder {
    /// Names the agent (policies see it as `context.agent`).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> AgentBuilder {
        self.name = name.into();
        self
    }

    /// The system message every model call starts with.
    #[must_use]
    pub fn instructions(mut self, instructions: impl Into<String>) -> AgentBuilder {
        self.instructions = Some(instructions.into());
        self
    }

    /// Adds a tool.
    #[must_use]
    pub fn tool(mut self, tool: impl Tool) -> AgentBuilder {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Adds a shared tool.
    #[must_use]
    pub fn tool_arc(mut self, tool: Arc<dyn Tool>) -> AgentBuilder {
        self.tools.push(tool);
        self
    }

    /// Adds a middleware after the ones already added.
    #[must_use]
    pub fn middleware(mut self, middleware: impl Middleware) -> AgentBuilder {
        self.middleware.push(Arc::new(middleware));
        self
    }

    /// Adds a shared middleware.
    #[must_use]
    pub fn middleware_arc(mut self, middleware: Arc<dyn Middleware>) -> AgentBuilder {
        self.middleware.push(middleware);
        self
    }

    /// Asks `approver` whenever a person must decide (answers given through the broker race it).
    #[must_use]
    pub fn approver(mut self, approver: impl Approver) -> AgentBuilder {
        self.approvals = Approvals::Handler(Arc::new(approver));
        self
    }

    /// Asks a blocking approver (run on tokio's blocking pool).
    #[must_use]
    pub fn blocking_approver(mut self, approver: impl SyncApprover) -> AgentBuilder {
        self.approvals = Approvals::Handler(blocking(approver));
        self
    }

    /// Requests wait for answers given through the [`ApprovalBroker`] (a UI reading the event
    /// stream). Without this or an approver, asks are denied.
    #[must_use]
    pub fn approve_through_events(mut self) -> AgentBuilder {
        self.approvals = Approvals::Events;
        self
    }

    /// Where grants are kept (default: in memory).
    #[must_use]
    pub fn grants(mut self, grants: Arc<dyn GrantStore>) -> AgentBuilder {
        self.grants = grants;
        self
    }

    /// Where sessions' taint is kept (default: in memory).
    #[must_use]
    pub fn taints(mut self, taints: Arc<dyn crate::taints::SessionTaints>) -> AgentBuilder {
        self.taints = taints;
        self
    }

    /// Publishes events on this bus (to share it with other agents).
    #[must_use]
    pub fn events(mut self, events: EventBus) -> AgentBuilder {
        self.events = events;
        self.broker = None;
        self
    }

    /// Shares another agent's broker, and so its pending requests and its events (a sub-agent
    /// whose prompts a parent's UI answers).
    #[must_use]
    pub fn broker(mut self, broker: ApprovalBroker) -> AgentBuilder {
        self.events = broker.events().clone();
        self.broker = Some(broker);
        self
    }

    /// The hard limit on iterations per turn.
    #[must_use]
    pub fn max_iterations(mut self, max: u32) -> AgentBuilder {
        self.max_iterations = max;
        self
    }

    /// Requires a human for `tool` (HPD's `RequirePermissionFor`).
    #[must_use]
    pub fn require_permission_for(mut self, tool: impl Into<String>) -> AgentBuilder {
        self.overrides
            .insert(tool.into(), PermissionOverride::Require);
        self
    }

    /// Does not ask for `tool` (HPD's `DisablePermissionFor`; a deny stays a deny).
    #[must_use]
    pub fn disable_permission_for(mut self, tool: impl Into<String>) -> AgentBuilder {
        self.overrides
            .insert(tool.into(), PermissionOverride::Disable);
        self
    }

    /// Builds the agent. Two tools with one name are an error.
    pub fn build(self) -> Result<Agent, BuildError> {
        let mut tools = HashMap::new();
        let mut specs = Vec::new();
        for tool in self.tools {
            let info = tool.info();
            specs.push(ToolSpec {
                name: info.name.clone(),
                description: info.description.clone(),
                parameters: info.parameters.clone(),
            });
            if tools.insert(info.name.clone(), Arc::clone(&tool)).is_some() {
                return Err(BuildError(format!(
                    "two tools are named `{}`; tool names must be unique",
                    info.name
                )));
            }
        }
        let broker = self
            .broker
            .unwrap_or_else(|| ApprovalBroker::new(self.events.clone()));
        Ok(Agent {
            core: Arc::new(AgentCore {
                name: self.name,
                model: self.model,
                tools,
                specs: specs.into(),
                middleware: self.middleware,
                instructions: self.instructions,
                approvals: self.approvals,
                grants: self.grants,
                taints: self.taints,
                events: self.events,
                broker,
                max_iterations: self.max_iterations,
                overrides: RwLock::new(self.overrides),
                sessions: Mutex::new(HashMap::new()),
            }),
        })
    }
}

/// An agent: a model, tools and middleware, and the loop that runs them. Cheap to clone.
///
/// ```rust,standalone_crate
/// use toolgate_runtime::{Agent, FnTool, Reply, ScriptedModel, ToolInfo};
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let model = ScriptedModel::new([
///     Reply::call("add", serde_json::json!({"a": 2, "b": 3})),
///     Reply::text("2 + 3 = 5"),
/// ]);
/// let add = FnTool::new(ToolInfo::new("add", "Adds two numbers."), |args, _| async move {
///     Ok((args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0)).into())
/// });
/// let agent = Agent::builder(model).tool(add).build()?;
/// let session = agent.session("s1");
/// let turn = agent.run(&session, "What is 2 + 3?").await?;
/// assert_eq!(turn.text(), "2 + 3 = 5");
/// assert_eq!(turn.results[0].content, 5);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct Agent {
    pub(crate) core: Arc<AgentCore>,
}

impl fmt::Debug for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("name", &self.core.name)
            .field("tools", &self.core.tools.len())
            .field("middleware", &self.core.middleware.len())
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// Starts building an agent around `model`.
    pub fn builder(model: impl Model) -> AgentBuilder {
        AgentBuilder::new(Arc::new(model))
    }

    /// Starts building an agent around a shared model.
    pub fn builder_arc(model: Arc<dyn Model>) -> AgentBuilder {
        AgentBuilder::new(model)
    }

    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.core.name
    }

    /// The agent's events.
    pub fn events(&self) -> &EventBus {
        &self.core.events
    }

    /// The agent's approval broker (answer requests with [`ApprovalBroker::respond`]).
    pub fn broker(&self) -> &ApprovalBroker {
        &self.core.broker
    }

    /// The agent's grants.
    pub fn grants(&self) -> &Arc<dyn GrantStore> {
        &self.core.grants
    }

    /// Answers a waiting request.
    pub fn respond(
        &self,
        request_id: &str,
        response: impl Into<Response>,
        by: &str,
    ) -> Result<(), crate::broker::Conflict> {
        self.core.broker.respond(request_id, response.into(), by)
    }

    /// Requires a human for `tool` from now on.
    pub fn require_permission_for(&self, tool: impl Into<String>) {
        self.set_override(tool.into(), Some(PermissionOverride::Require));
    }

    /// Stops asking for `tool` from now on (a deny stays a deny).
    pub fn disable_permission_for(&self, tool: impl Into<String>) {
        self.set_override(tool.into(), Some(PermissionOverride::Disable));
    }

    /// Removes the agent's override for `tool`.
    pub fn clear_permission_override(&self, tool: &str) {
        self.set_override(tool.to_owned(), None);
    }

    fn set_override(&self, tool: String, value: Option<PermissionOverride>) {
        let mut overrides = self
            .core
            .overrides
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        match value {
            Some(value) => overrides.insert(tool, value),
            None => overrides.remove(&tool),
        };
    }

    /// The session with this id, created empty on first use.
    pub fn session(&self, id: &str) -> Session {
        let mut sessions = self
            .core
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        sessions
            .entry(id.to_owned())
            .or_insert_with(|| Session::new(id))
            .clone()
    }

    /// Adds a session (one restored from a snapshot), replacing any with its id.
    pub fn insert_session(&self, session: Session) {
        self.core
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(session.id().to_owned(), session);
    }

    /// Runs a user turn on the session's main branch.
    pub async fn run(&self, session: &Session, input: &str) -> Result<TurnResult, RunError> {
        self.run_on(session, MAIN_BRANCH, input, RunConfig::default())
            .await
    }

    /// Forks `from` into a new branch `name`, keeping the first `keep` messages (all by
    /// default). The fork joins the session when committed.
    pub fn fork(
        &self,
        session: &Session,
        from: &str,
        name: &str,
        keep: Option<usize>,
    ) -> Result<BranchFork, RunError> {
        Ok(BranchFork::new(session, from, name, keep)?)
    }

    /// Runs the `before_branch_fork_commit` hooks, then adds the fork to its session.
    pub async fn commit_fork(&self, mut fork: BranchFork) -> Result<(), RunError> {
        let scope = crate::events::Scope {
            session: Some(fork.session.id_arc()),
            branch: Some(fork.name.as_str().into()),
            ..Default::default()
        };
        for middleware in &self.core.middleware {
            let mut cx = ForkContext { fork: &mut fork };
            if let Err(e) = middleware.before_branch_fork_commit(&mut cx).await {
                return Err(hook_failed(
                    &self.core.events,
                    scope,
                    &**middleware,
                    "before_branch_fork_commit",
                    &e,
                ));
            }
        }
        {
            let mut data = fork.session.data();
            if data.branches.contains_key(&fork.name) {
                return Err(RunError::Session(format!(
                    "session `{}` already has a branch `{}`",
                    fork.session.id(),
                    fork.name
                )));
            }
            let branch = data.branch(&fork.name);
            branch.history = std::mem::take(&mut fork.history);
            branch.state = std::mem::take(&mut fork.state);
            branch.forked_from = Some(fork.from.clone());
        }
        self.core.events.publish(
            scope,
            EventKind::BranchCommitted {
                branch: fork.name.clone(),
                from: fork.from.clone(),
            },
        );
        Ok(())
    }

    /// Starts the runtime's input loop (runs `before_start` and `after_started`).
    pub async fn start(&self) -> Result<Runtime, RunError> {
        Runtime::start(self.clone()).await
    }

    pub(crate) async fn lifecycle(
        &self,
        hook: &'static str,
        reverse: bool,
    ) -> Result<(), RunError> {
        let core = &self.core;
        let order: Vec<&Arc<dyn Middleware>> = if reverse {
            core.middleware.iter().rev().collect()
        } else {
            core.middleware.iter().collect()
        };
        for middleware in order {
            let mut cx = LifecycleContext {
                agent: &core.name,
                events: &core.events,
            };
            let result = match hook {
                "before_start" => middleware.before_start(&mut cx).await,
                "after_started" => middleware.after_started(&mut cx).await,
                "before_stop" => middleware.before_stop(&mut cx).await,
                _ => middleware.after_stopped(&mut cx).await,
            };
            if let Err(e) = result {
                return Err(hook_failed(
                    &core.events,
                    Default::default(),
                    &**middleware,
                    hook,
                    &e,
                ));
            }
        }
        Ok(())
    }

    fn context(&self, session: &Session, branch: &str, config: RunConfig) -> RunContext {
        let turn = {
            let mut data = session.data();
            let b = data.branch(branch);
            b.turns += 1;
            b.turns
        };
        let cancel = config.cancellation.clone().unwrap_or_default();
        RunContext {
            inner: Arc::new(RunInner {
                core: Arc::clone(&self.core),
                session: session.clone(),
                branch: branch.into(),
                turn,
                run: new_id().into(),
                config: Arc::new(config),
                cancel,
                iteration: AtomicU32::new(0),
            }),
        }
    }

    /// Runs a tool call outside the model loop, through the same middleware, policy and
    /// approvals as the loop's calls (there is no other way to run an agent's tool).
    pub async fn call_tool(
        &self,
        session: &Session,
        branch: &str,
        call: ToolCall,
        config: RunConfig,
    ) -> ToolResult {
        let lock = session.turn_lock(branch);
        let _turn = lock.lock().await;
        let run = self.context(session, branch, config);
        execute_one(&run, &call).await.0
    }

    /// Runs a user turn on `branch` with `config`. Turns on one branch run one at a time.
    pub async fn run_on(
        &self,
        session: &Session,
        branch: &str,
        input: &str,
        config: RunConfig,
    ) -> Result<TurnResult, RunError> {
        let lock = session.turn_lock(branch);
        let _turn = lock.lock().await;
        let run = self.context(session, branch, config);
        let mut history = session.history(branch);
        let outcome = self.turn(&run, &mut history, input).await;
        session.data().branch(branch).history = history;
        let (end, reason) = match &outcome {
            Ok(result) => (result.end, result.reason.clone()),
            Err(e) => (TurnEnd::Failed, Some(e.to_string())),
        };
        run.emit(EventKind::TurnFinished { end, reason });
        outcome
    }

    async fn turn(
        &self,
        run: &RunContext,
        history: &mut Vec<Message>,
        input: &str,
    ) -> Result<TurnResult, RunError> {
        let core = &self.core;
        run.emit(EventKind::TurnStarted {
            input: input.to_owned(),
        });
        let mut message = Message::user(input);
        for middleware in &core.middleware {
            let mut cx = TurnContext {
                run,
                input: &mut message,
                history,
            };
            if let Err(e) = middleware.before_message_turn(&mut cx).await {
                return Err(hook_failed(
                    &core.events,
                    run.scope(),
                    &**middleware,
                    "before_message_turn",
                    &e,
                ));
            }
        }
        history.push(message);

        let mut results: Vec<ToolResult> = Vec::new();
        let mut iteration: u32 = 0;
        let (end, reason, response) = loop {
            if run.cancellation().is_cancelled() {
                break (
                    TurnEnd::Cancelled,
                    Some("the turn was cancelled".to_owned()),
                    Message::assistant(""),
                );
            }
            if iteration >= core.max_iterations {
                let reason = format!(
                    "the agent reached its limit of {} iterations",
                    core.max_iterations
                );
                let response = Message::assistant(format!("Execution terminated: {reason}."));
                history.push(response.clone());
                break (TurnEnd::Terminated, Some(reason), response);
            }
            run.set_iteration(iteration + 1);
            run.emit(EventKind::IterationStarted);

            let mut messages = Vec::with_capacity(history.len() + 1);
            if let Some(instructions) = &core.instructions {
                messages.push(Message::system(instructions.clone()));
            }
            messages.extend(history.iter().cloned());
            let mut cx = IterationContext {
                run,
                iteration,
                messages: &mut messages,
                skip_model_call: false,
                override_response: None,
                terminate: None,
            };
            for middleware in &core.middleware {
                if let Err(e) = middleware.before_iteration(&mut cx).await {
                    return Err(hook_failed(
                        &core.events,
                        run.scope(),
                        &**middleware,
                        "before_iteration",
                        &e,
                    ));
                }
            }
            let IterationContext {
                skip_model_call,
                override_response,
                terminate,
                ..
            } = cx;

            let response = if skip_model_call {
                override_response.unwrap_or_else(|| Message::assistant(""))
            } else {
                match self.call_model(run, messages).await? {
                    Some(response) => response,
                    None => {
                        break (
                            TurnEnd::Cancelled,
                            Some("the turn was cancelled".to_owned()),
                            Message::assistant(""),
                        );
                    }
                }
            };
            run.emit(EventKind::ModelResponse {
                message: response.clone(),
            });
            if let Some(reason) = terminate {
                let response = Message {
                    tool_calls: Vec::new(),
                    ..response
                };
                history.push(response.clone());
                self.after_iteration(run, iteration, &response, &[]).await?;
                break (TurnEnd::Terminated, Some(reason), response);
            }
            if response.tool_calls.is_empty() {
                history.push(response.clone());
                self.after_iteration(run, iteration, &response, &[]).await?;
                break (TurnEnd::Completed, None, response);
            }

            let calls = response.tool_calls.clone();
            let mut cx = ToolExecutionContext {
                run,
                response: &response,
                tool_calls: &calls,
                skip_tool_execution: false,
                override_response: None,
            };
            for middleware in &core.middleware {
                if let Err(e) = middleware.before_tool_execution(&mut cx).await {
                    return Err(hook_failed(
                        &core.events,
                        run.scope(),
                        &**middleware,
                        "before_tool_execution",
                        &e,
                    ));
                }
            }
            if cx.skip_tool_execution {
                let kept = cx
                    .override_response
                    .take()
                    .unwrap_or_else(|| response.clone());
                // No call of the skipped response may stand in the history without a result.
                let kept = Message {
                    tool_calls: Vec::new(),
                    ..kept
                };
                history.push(kept.clone());
                self.after_iteration(run, iteration, &kept, &[]).await?;
                break (
                    TurnEnd::Completed,
                    Some("a middleware skipped the iteration's tools".to_owned()),
                    kept,
                );
            }

            history.push(response.clone());
            let (batch, interrupt) = execute_batch(run, &calls).await;
            for result in &batch {
                history.push(Message::tool_result(result));
            }
            self.after_iteration(run, iteration, &response, &batch)
                .await?;
            results.extend(batch);
            if let Some(reason) = interrupt {
                break (TurnEnd::Interrupted, Some(reason), response);
            }
            iteration += 1;
        };

        let mut cx = TurnEndContext {
            run,
            end,
            response: &response,
            history,
        };
        for middleware in core.middleware.iter().rev() {
            if let Err(e) = middleware.after_message_turn(&mut cx).await {
                return Err(hook_failed(
                    &core.events,
                    run.scope(),
                    &**middleware,
                    "after_message_turn",
                    &e,
                ));
            }
        }
        Ok(TurnResult {
            end,
            reason,
            response,
            results,
            iterations: run.iteration(),
            run_id: run.run_id().to_owned(),
        })
    }

    async fn after_iteration(
        &self,
        run: &RunContext,
        iteration: u32,
        response: &Message,
        results: &[ToolResult],
    ) -> Result<(), RunError> {
        let mut cx = IterationEndContext {
            run,
            iteration,
            response,
            results,
        };
        for middleware in self.core.middleware.iter().rev() {
            if let Err(e) = middleware.after_iteration(&mut cx).await {
                return Err(hook_failed(
                    &self.core.events,
                    run.scope(),
                    &**middleware,
                    "after_iteration",
                    &e,
                ));
            }
        }
        Ok(())
    }

    /// Calls the model through the streaming wrappers. `None` when the turn was cancelled.
    async fn call_model(
        &self,
        run: &RunContext,
        messages: Vec<Message>,
    ) -> Result<Option<Message>, RunError> {
        let core = &self.core;
        let request = ModelRequest {
            messages,
            tools: Arc::clone(&core.specs),
        };
        let next = ModelNext {
            rest: &core.middleware,
            then: ModelThen::Model(&*core.model),
            run,
        };
        let mut stream = next.run(request);
        let mut response = Message::assistant("");
        loop {
            let update = tokio::select! {
                update = stream.next() => update,
                () = run.cancellation().cancelled() => return Ok(None),
            };
            match update {
                None => break,
                Some(Ok(ModelUpdate::Text(text))) => {
                    response.content.push_str(&text);
                    run.emit(EventKind::TextDelta { text });
                }
                Some(Ok(ModelUpdate::ToolCall(call))) => response.tool_calls.push(call),
                Some(Ok(ModelUpdate::Usage(_))) => {}
                Some(Err(e)) => return Err(RunError::Model(e.0)),
            }
        }
        Ok(Some(response))
    }
}

impl AgentBuilder {
    fn new(model: Arc<dyn Model>) -> AgentBuilder {
        AgentBuilder {
            name: "agent".to_owned(),
            model,
            tools: Vec::new(),
            middleware: Vec::new(),
            instructions: None,
            approvals: Approvals::None,
            grants: Arc::new(MemoryGrants::new()),
            taints: Arc::new(crate::taints::MemoryTaints::new()),
            events: EventBus::new(),
            broker: None,
            max_iterations: DEFAULT_MAX_ITERATIONS,
            overrides: HashMap::new(),
        }
    }
}
