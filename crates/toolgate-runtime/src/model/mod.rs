//! Models: what the agent talks to. A model streams text and asks for tool calls.
//!
//! Two come with toolgate: [`ScriptedModel`] (deterministic, for tests and demos) and, with
//! the `openai` feature, [`OpenAiModel`](crate::OpenAiModel) for any OpenAI-compatible
//! chat-completions endpoint.

mod scripted;

#[cfg(feature = "openai")]
pub(crate) mod openai;

use std::fmt;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::message::{Message, ToolCall};
use crate::middleware::ModelStream;

pub use scripted::{Reply, ScriptedModel};

/// A tool as the model sees it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolSpec {
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The JSON schema of its arguments.
    pub parameters: Value,
}

/// One model call: the conversation so far and the tools on offer.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelRequest {
    /// Instructions and history, oldest first.
    pub messages: Vec<Message>,
    /// The tools the model may call.
    pub tools: Arc<[ToolSpec]>,
}

/// Token counts reported by a model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// Tokens read.
    pub input_tokens: u64,
    /// Tokens written.
    pub output_tokens: u64,
}

/// A piece of a model's response, as it streams.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelUpdate {
    /// Some text.
    Text(String),
    /// A complete tool call (models stream calls in fragments; the client assembles them).
    ToolCall(ToolCall),
    /// Token counts.
    Usage(Usage),
}

/// Why a model call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelError(pub String);

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ModelError {}

/// A language model that streams its response.
pub trait Model: Send + Sync + 'static {
    /// Starts a model call. The stream ends when the response is complete.
    fn stream(&self, request: ModelRequest) -> ModelStream<'static>;
}
