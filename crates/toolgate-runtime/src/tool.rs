//! Tools: what an agent can do. A tool has a name, a description, a JSON schema for its
//! arguments, tags the policy reads, and a handler.
//!
//! Write one with [`#[tool]`](crate::tool) on a function, or with [`FnTool`] around a closure,
//! or implement [`Tool`] by hand.

use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;
use toolgate_policy::Tag;

use crate::context::RunConfig;

/// What the model and the policy know about a tool.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolInfo {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// The JSON schema of its arguments (an object schema).
    pub parameters: Value,
    /// Tags the policy matches (`read_only`, `destructive`, `network`, `file_system`, `slow`,
    /// `privileged`, or custom ones).
    pub tags: Vec<Tag>,
    /// Whether a human must approve it even where the policy would allow it (HPD's
    /// `[RequiresPermission]`; overridden by the agent's and the run's overrides).
    pub requires_permission: bool,
}

impl ToolInfo {
    /// A tool with no arguments, no tags and no permission requirement.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> ToolInfo {
        ToolInfo {
            name: name.into(),
            description: description.into(),
            parameters: serde_json::json!({"type": "object", "properties": {}}),
            tags: Vec::new(),
            requires_permission: false,
        }
    }

    /// Sets the argument schema.
    #[must_use]
    pub fn with_parameters(mut self, parameters: Value) -> ToolInfo {
        self.parameters = parameters;
        self
    }

    /// Adds a tag.
    #[must_use]
    pub fn with_tag(mut self, tag: &str) -> ToolInfo {
        self.tags.push(Tag::parse(tag));
        self
    }

    /// Marks the tool as requiring a human's approval.
    #[must_use]
    pub fn requiring_permission(mut self) -> ToolInfo {
        self.requires_permission = true;
        self
    }
}

/// What a tool's handler gets besides its arguments.
#[derive(Clone, Debug)]
pub struct ToolContext {
    /// The call's id.
    pub call_id: String,
    /// The session the call belongs to.
    pub session: Arc<str>,
    /// The branch the call belongs to.
    pub branch: Arc<str>,
    /// The run the call belongs to (a child run names it as its parent).
    pub run: Arc<str>,
    /// Cancelled when the turn is cancelled: long-running tools should stop.
    pub cancellation: CancellationToken,
    /// The run's workspace root, when it has one (open files under it with
    /// [`toolgate_policy::ConfinedDir`]).
    pub workspace: Option<PathBuf>,
    /// The folder relative paths resolve against (the workspace when not set).
    pub cwd: Option<PathBuf>,
    /// The options of the run the call belongs to (origin, mode, overrides, full access): a
    /// tool that starts another run passes them on.
    pub run_config: Arc<RunConfig>,
}

/// Why a tool failed. The message is what the model reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolError {
    message: String,
}

impl ToolError {
    /// A failure with this message.
    pub fn new(message: impl Into<String>) -> ToolError {
        ToolError {
            message: message.into(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ToolError {}

impl From<String> for ToolError {
    fn from(message: String) -> ToolError {
        ToolError { message }
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> ToolError {
        ToolError::new(message)
    }
}

impl From<std::io::Error> for ToolError {
    fn from(error: std::io::Error) -> ToolError {
        ToolError::new(error.to_string())
    }
}

/// A tool: its description and its handler.
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// Its name, description, schema and tags.
    fn info(&self) -> &ToolInfo;

    /// Runs the tool. The arguments have passed every middleware (and may have been rewritten
    /// by them).
    async fn call(&self, args: Map<String, Value>, cx: ToolContext) -> Result<Value, ToolError>;
}

type Handler = dyn Fn(
        Map<String, Value>,
        ToolContext,
    ) -> Pin<Box<dyn Future<Output = Result<Value, ToolError>> + Send>>
    + Send
    + Sync;

/// A tool made of a [`ToolInfo`] and an async closure.
///
/// ```rust,standalone_crate
/// use toolgate_runtime::{FnTool, ToolInfo};
/// let echo = FnTool::new(ToolInfo::new("echo", "Returns its arguments."), |args, _cx| async move {
///     Ok(serde_json::Value::Object(args))
/// });
/// # let _ = echo;
/// ```
pub struct FnTool {
    info: ToolInfo,
    handler: Box<Handler>,
}

impl FnTool {
    /// A tool that runs `handler`.
    pub fn new<F, Fut>(info: ToolInfo, handler: F) -> FnTool
    where
        F: Fn(Map<String, Value>, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
    {
        FnTool {
            info,
            handler: Box::new(move |args, cx| Box::pin(handler(args, cx))),
        }
    }
}

impl fmt::Debug for FnTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnTool").field("info", &self.info).finish()
    }
}

#[async_trait]
impl Tool for FnTool {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    async fn call(&self, args: Map<String, Value>, cx: ToolContext) -> Result<Value, ToolError> {
        (self.handler)(args, cx).await
    }
}
