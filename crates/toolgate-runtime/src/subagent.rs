//! An agent as another agent's tool: a child run, nested under the call that started it.

use std::fmt;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use crate::agent::Agent;
use crate::events::Parent;
use crate::session::MAIN_BRANCH;
use crate::tool::{Tool, ToolContext, ToolError, ToolInfo};

/// Runs an agent as a tool: each call is a fresh child run on its own session
/// (`{session}/{call id}`), given the call's `task`. Its events name the parent run and tool
/// call, so a UI nests them under the call. Like HPD's generated sub-agent tools it requires
/// permission by default ([`AgentTool::without_permission`] lifts that).
///
/// The child runs under the parent run's options (origin, mode, overrides, full access), so a
/// network-originated turn stays one. Build the child with the parent's broker
/// (`.broker(parent.broker().clone())`) so its requests and events join the parent's, and a UI
/// answering the parent answers the child too.
pub struct AgentTool {
    info: ToolInfo,
    agent: Agent,
}

impl fmt::Debug for AgentTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentTool")
            .field("name", &self.info.name)
            .field("agent", &self.agent.name())
            .finish()
    }
}

impl AgentTool {
    /// Does not require permission (the policy still decides).
    #[must_use]
    pub fn without_permission(mut self) -> AgentTool {
        self.info.requires_permission = false;
        self
    }
}

impl Agent {
    /// This agent as a tool of another agent.
    pub fn as_tool(&self, name: impl Into<String>, description: impl Into<String>) -> AgentTool {
        let parameters = json!({
            "type": "object",
            "properties": {"task": {"type": "string", "description": "What the agent should do."}},
            "required": ["task"],
        });
        AgentTool {
            info: ToolInfo::new(name, description)
                .with_parameters(parameters)
                .requiring_permission(),
            agent: self.clone(),
        }
    }
}

#[async_trait]
impl Tool for AgentTool {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    async fn call(&self, args: Map<String, Value>, cx: ToolContext) -> Result<Value, ToolError> {
        let task = args
            .get("task")
            .and_then(Value::as_str)
            .ok_or("`task` must be a string")?;
        // A fresh conversation per call: ids from the model may repeat across runs.
        let session = self
            .agent
            .session(&format!("{}/{}/{}", cx.session, cx.run, cx.call_id));
        // The child runs under the parent run's origin, mode, overrides and full access.
        let mut config = (*cx.run_config).clone();
        config.agent = None;
        config.workspace = cx.workspace.clone();
        config.cwd = cx.cwd.clone();
        config.cancellation = Some(cx.cancellation.clone());
        config.parent = Some(Parent {
            run: cx.run.clone(),
            tool_call_id: cx.call_id.clone(),
        });
        let turn = self
            .agent
            .run_on(&session, MAIN_BRANCH, task, config)
            .await
            .map_err(|e| {
                ToolError::new(format!("the agent `{}` failed: {e}", self.agent.name()))
            })?;
        Ok(Value::String(turn.response.content))
    }
}
