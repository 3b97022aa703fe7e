//! What the agent and the model say to each other: messages, tool calls and tool results.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions for the model.
    System,
    /// The person (or program) the agent works for.
    User,
    /// The model.
    Assistant,
    /// A tool's result.
    Tool,
}

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its text (empty for an assistant message that only calls tools).
    #[serde(default)]
    pub content: String,
    /// The tools an assistant message calls, in the model's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The call a tool message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Message {
        Message::text(Role::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Message {
        Message::text(Role::User, content)
    }

    /// An assistant message with text and no tool calls.
    pub fn assistant(content: impl Into<String>) -> Message {
        Message::text(Role::Assistant, content)
    }

    /// The tool message that carries `result` back to the model.
    pub fn tool_result(result: &ToolResult) -> Message {
        Message {
            role: Role::Tool,
            content: result.text(),
            tool_calls: Vec::new(),
            tool_call_id: Some(result.call_id.clone()),
        }
    }

    fn text(role: Role, content: impl Into<String>) -> Message {
        Message {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

/// A tool call the model asked for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The model's id for the call, unique within its response.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments. A well-formed call has a JSON object; anything else (including the raw
    /// text of arguments that were not JSON) is refused before any middleware runs.
    pub arguments: Value,
}

impl ToolCall {
    /// A call with object arguments.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }

    /// A call whose arguments arrived as JSON text (as chat-completions APIs send them). Text
    /// that is not JSON is kept as a string, so the call is refused with a clear error.
    pub fn from_json_text(id: impl Into<String>, name: impl Into<String>, text: &str) -> ToolCall {
        let arguments = if text.trim().is_empty() {
            Value::Object(Map::new())
        } else {
            serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
        };
        ToolCall::new(id, name, arguments)
    }
}

/// How a tool call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// The tool ran and returned a result.
    Completed,
    /// The tool ran and failed.
    Failed,
    /// The call was refused before it ran (a policy, a person, a middleware).
    Denied,
    /// A permission request was not answered in time.
    TimedOut,
    /// The turn was cancelled while the call waited.
    Cancelled,
    /// The call was malformed or named no tool; nothing was consulted.
    Invalid,
    /// The iteration's tools were skipped by a middleware.
    Skipped,
}

impl Outcome {
    /// Whether the tool's body ran.
    pub const fn executed(self) -> bool {
        match self {
            Outcome::Completed | Outcome::Failed => true,
            Outcome::Denied
            | Outcome::TimedOut
            | Outcome::Cancelled
            | Outcome::Invalid
            | Outcome::Skipped => false,
        }
    }
}

/// The result of one tool call, as the model will read it.
///
/// Refusals are results too (DESIGN §6): the model reads the reason and carries on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The call it answers.
    pub call_id: String,
    /// The tool's name.
    pub name: String,
    /// How the call ended.
    pub outcome: Outcome,
    /// What the tool returned, or the refusal or error text.
    pub content: Value,
    /// Who refused or failed the call (a middleware's name), when it did not complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<Arc<str>>,
}

impl ToolResult {
    /// A completed call.
    pub fn completed(call: &ToolCall, content: Value) -> ToolResult {
        ToolResult::new(call, Outcome::Completed, content, None)
    }

    /// A call that did not complete, with the text the model reads.
    pub fn refused(
        call: &ToolCall,
        outcome: Outcome,
        text: impl Into<String>,
        by: Option<Arc<str>>,
    ) -> ToolResult {
        ToolResult::new(call, outcome, Value::String(text.into()), by)
    }

    fn new(call: &ToolCall, outcome: Outcome, content: Value, by: Option<Arc<str>>) -> ToolResult {
        ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            outcome,
            content,
            by,
        }
    }

    /// The content as text: a string as is, anything else as JSON.
    pub fn text(&self) -> String {
        match &self.content {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }
}
