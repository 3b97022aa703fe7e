//! toolgate's agent runtime: an agent loop whose middleware gates every tool call, asks people
//! through events, and remembers their answers.
//!
//! - [`Agent`]: a [`Model`], [`Tool`]s and [`Middleware`], run turn by turn on the branches of
//!   a [`Session`]; [`Agent::start`] gives a [`Runtime`] input loop.
//! - [`Middleware`]: every hook of the loop, no-ops by default; composed with [`Chain`],
//!   [`Conditional`], [`Parallel`], [`MiddlewareExt::for_tools`] and
//!   [`MiddlewareExt::with_timeout`].
//! - [`PermissionMiddleware`]: the policy engine decides each call; stored [`Grant`]s and the
//!   [`ApprovalBroker`] resolve asks. [`ContinuationPermissionMiddleware`] asks before a run
//!   goes past its iteration limit.
//! - [`EventBus`]: one typed stream of everything that happens, with its hierarchy.
//! - [`#[tool]`](tool): a tool from a function.
//!
//! ```rust,standalone_crate
//! use toolgate_policy::{Choice, Policy};
//! use toolgate_runtime::{Agent, Answer, PermissionMiddleware, Reply, ScriptedModel, tool};
//!
//! /// Reads a file of the workspace.
//! #[tool(tags = ["read_only", "file_system"])]
//! async fn read_file(path: String) -> Result<String, toolgate_runtime::ToolError> {
//!     Ok(format!("contents of {path}"))
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! let policy = Policy::from_toml("policy.toml", "version = 1\nmode = \"approve-reads\"")?;
//! let model = ScriptedModel::new([
//!     Reply::call("read_file", serde_json::json!({"path": "notes.txt"})),
//!     Reply::text("The notes are read."),
//! ]);
//! let agent = Agent::builder(model)
//!     .tool(ReadFile)
//!     .middleware(PermissionMiddleware::new(policy))
//!     .build()?;
//! let turn = agent.run(&agent.session("s1"), "read my notes").await?;
//! assert_eq!(turn.results[0].content, "contents of notes.txt"); // a read: allowed
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

mod agent;
mod approver;
pub mod ask;
mod broker;
mod call;
mod compose;
mod context;
mod continuation;
mod events;
pub mod grants;
mod message;
pub mod messages;
mod middleware;
mod model;
pub mod nesting;
mod permission;
mod runtime;
mod session;
mod state;
mod subagent;
pub mod taints;
mod tool;

pub use agent::{Agent, AgentBuilder, BuildError, DEFAULT_MAX_ITERATIONS, RunError, TurnResult};
pub use approver::{
    Approver, ApproverError, SyncApprover, TerminalApprover, blocking, terminal_text,
};
pub use broker::{
    AlwaysCovers, Answer, ApprovalBroker, Claim, Conflict, ContinuationAnswer, ContinuationRequest,
    LONGEST_GRANT, MAX_REASON, Pending, PermissionRequest, Request, Resolution, RespondError,
    Response, ScopeOffer, Ticket,
};
pub use compose::{
    Chain, ConditionInput, Conditional, ForTools, MiddlewareExt, Parallel, WithTimeout,
};
pub use context::{RunConfig, RunContext};
pub use continuation::{
    CONTINUATION_TIMEOUT, ContinuationPermissionMiddleware, DEFAULT_CONTINUATION_LIMIT,
    DEFAULT_EXTENSION,
};
pub use events::{EVENT_SCHEMA, Event, EventBus, EventKind, EventStream, Parent, Scope, TurnEnd};
pub use grants::{
    Effect, Grant, GrantContext, GrantScope, GrantStore, GrantTarget, Lookup, MemoryGrants,
    ScopeKind,
};
pub use message::{Message, Outcome, Role, ToolCall, ToolResult};
pub use middleware::{
    AfterFunctionContext, BatchContext, ErrorContext, ForkContext, FunctionContext, FunctionNext,
    FunctionRequest, HookError, HookResult, IterationContext, IterationEndContext,
    LifecycleContext, Middleware, ModelNext, ModelStream, ToolExecutionContext, TurnContext,
    TurnEndContext, Verdict,
};
#[cfg(feature = "openai")]
pub use model::openai::OpenAiModel;
pub use model::{
    Model, ModelError, ModelRequest, ModelUpdate, Reply, ScriptedModel, ToolSpec, Usage,
};
pub use permission::{DecisionRecord, DeniedBehavior, PermissionMiddleware};
pub use runtime::Runtime;
pub use session::{BranchFork, MAIN_BRANCH, Session, SessionError};
pub use state::{MiddlewareState, StateScope};
pub use subagent::AgentTool;
pub use taints::{MemoryTaints, SessionTaints, TaintChange};
pub use tokio_util::sync::CancellationToken;
pub use tool::{FnTool, Tool, ToolContext, ToolError, ToolInfo};
pub use toolgate_macros::tool;

/// The README's Rust examples, compiled and run as doctests.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// The runtime guide's examples (`docs/runtime.md`), compiled and run as doctests.
#[doc = include_str!("../../../docs/runtime.md")]
#[cfg(doctest)]
pub struct RuntimeGuideDoctests;

/// What `#[tool]` expands to refers to these; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use async_trait::async_trait;
    pub use schemars;
    pub use serde;
    pub use serde_json;
}
