//! A deterministic model: it replays scripted replies, one per model call.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Mutex, PoisonError};

use futures_util::stream;
use serde_json::Value;

use crate::message::ToolCall;
use crate::middleware::ModelStream;
use crate::model::{Model, ModelError, ModelRequest, ModelUpdate};

/// One scripted model response.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    text: String,
    calls: Vec<(Option<String>, String, Value)>,
    error: Option<String>,
}

impl Reply {
    /// A text answer (streamed word by word).
    pub fn text(text: impl Into<String>) -> Reply {
        Reply {
            text: text.into(),
            calls: Vec::new(),
            error: None,
        }
    }

    /// A response that calls one tool (ids are `call_1`, `call_2`, … in script order).
    pub fn call(name: impl Into<String>, arguments: Value) -> Reply {
        Reply::text("").and_call(name, arguments)
    }

    /// Adds a tool call (several make a parallel batch).
    #[must_use]
    pub fn and_call(mut self, name: impl Into<String>, arguments: Value) -> Reply {
        self.calls.push((None, name.into(), arguments));
        self
    }

    /// Adds a tool call with a given id.
    #[must_use]
    pub fn and_call_id(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: Value,
    ) -> Reply {
        self.calls.push((Some(id.into()), name.into(), arguments));
        self
    }

    /// A model call that fails.
    pub fn error(message: impl Into<String>) -> Reply {
        Reply {
            text: String::new(),
            calls: Vec::new(),
            error: Some(message.into()),
        }
    }
}

type Responder = dyn Fn(&ModelRequest) -> Reply + Send + Sync;

/// A model that answers from a script: a list of replies, one per call, or a function of the
/// request. It records every request, so tests can check what the model was shown.
///
/// ```rust,standalone_crate
/// use toolgate_runtime::{Reply, ScriptedModel};
/// let model = ScriptedModel::new([
///     Reply::call("read_file", serde_json::json!({"path": "README.md"})),
///     Reply::text("The README says hello."),
/// ]);
/// # let _ = model;
/// ```
pub struct ScriptedModel {
    replies: Mutex<VecDeque<Reply>>,
    responder: Option<Box<Responder>>,
    requests: Mutex<Vec<ModelRequest>>,
    next_id: Mutex<u64>,
    scripted: usize,
}

impl fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptedModel")
            .field("scripted", &self.scripted)
            .finish_non_exhaustive()
    }
}

impl ScriptedModel {
    /// A model that gives these replies, in order, then fails.
    pub fn new(replies: impl IntoIterator<Item = Reply>) -> ScriptedModel {
        let replies: VecDeque<Reply> = replies.into_iter().collect();
        ScriptedModel {
            scripted: replies.len(),
            replies: Mutex::new(replies),
            responder: None,
            requests: Mutex::new(Vec::new()),
            next_id: Mutex::new(0),
        }
    }

    /// A model that answers every request with `respond(request)`.
    pub fn from_fn(
        respond: impl Fn(&ModelRequest) -> Reply + Send + Sync + 'static,
    ) -> ScriptedModel {
        ScriptedModel {
            responder: Some(Box::new(respond)),
            ..ScriptedModel::new([])
        }
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn next_reply(&self, request: &ModelRequest) -> Option<Reply> {
        match &self.responder {
            Some(respond) => Some(respond(request)),
            None => self
                .replies
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop_front(),
        }
    }
}

impl Model for ScriptedModel {
    fn stream(&self, request: ModelRequest) -> ModelStream<'static> {
        let reply = self.next_reply(&request);
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request);
        let Some(reply) = reply else {
            let error = ModelError(format!(
                "the scripted model has no reply left ({} were scripted)",
                self.scripted
            ));
            return Box::pin(stream::iter([Err(error)]));
        };
        if let Some(message) = reply.error {
            return Box::pin(stream::iter([Err(ModelError(message))]));
        }
        let mut updates: Vec<Result<ModelUpdate, ModelError>> = Vec::new();
        let mut rest = reply.text.as_str();
        while !rest.is_empty() {
            let cut = rest
                .char_indices()
                .skip(1)
                .find(|(_, c)| c.is_whitespace())
                .map_or(rest.len(), |(i, _)| i);
            let (piece, tail) = rest.split_at(cut);
            updates.push(Ok(ModelUpdate::Text(piece.to_owned())));
            rest = tail;
        }
        let mut next_id = self.next_id.lock().unwrap_or_else(PoisonError::into_inner);
        for (id, name, arguments) in reply.calls {
            let id = id.unwrap_or_else(|| {
                *next_id += 1;
                format!("call_{}", *next_id)
            });
            updates.push(Ok(ModelUpdate::ToolCall(ToolCall::new(
                id, name, arguments,
            ))));
        }
        Box::pin(stream::iter(updates))
    }
}
