//! An OpenAI-compatible chat-completions client: streaming, with tool calls.
//!
//! It speaks the `POST {base}/chat/completions` protocol with `"stream": true` that OpenAI,
//! Azure OpenAI, vLLM, llama.cpp's server, Ollama and most gateways accept. Tool calls arrive
//! in fragments (`delta.tool_calls[i]`, keyed by `index`); they are assembled and handed on
//! whole when the response ends. Plain HTTP is built in; HTTPS needs the `openai-tls` feature.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::time::Duration;

use futures_util::stream;
use serde_json::{Map, Value, json};

use crate::message::{Message, Role, ToolCall};
use crate::middleware::ModelStream;
use crate::model::{Model, ModelError, ModelRequest, ModelUpdate, Usage};

/// How long a connection may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long the stream may stay silent (between two chunks).
const READ_TIMEOUT: Duration = Duration::from_secs(600);

/// The longest line of the event stream accepted.
const MAX_LINE: usize = 16 * 1024 * 1024;

/// The most text and tool-call arguments one response may carry, in all.
const MAX_RESPONSE: usize = 32 * 1024 * 1024;

/// The most tool calls one response may make.
const MAX_CALLS: usize = 512;

/// The most of an error body read.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// A model behind an OpenAI-compatible chat-completions endpoint.
///
/// ```rust,standalone_crate
/// use toolgate_runtime::OpenAiModel;
/// let model = OpenAiModel::new("http://127.0.0.1:8080/v1", "gpt-4.1-mini")
///     .with_api_key("sk-…")
///     .with_option("temperature", 0.into());
/// # let _ = model;
/// ```
#[derive(Clone)]
pub struct OpenAiModel {
    client: reqwest::Client,
    endpoint: String,
    model: String,
    api_key: Option<String>,
    options: Map<String, Value>,
}

impl fmt::Debug for OpenAiModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiModel")
            .field("endpoint", &self.endpoint)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "…"))
            .finish_non_exhaustive()
    }
}

impl OpenAiModel {
    /// A client for `model` at `base_url` (the URL before `/chat/completions`, e.g.
    /// `https://api.openai.com/v1`).
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> OpenAiModel {
        let base: String = base_url.into();
        // When reqwest is built with rustls anywhere in the program (another crate's features
        // unify with this one's: the MCP gateway's remote servers), it takes the process's
        // crypto provider, and has none of its own: toolgate's is ring (as for PostgreSQL).
        // One installed before stays.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT)
            .build()
            .unwrap_or_default();
        OpenAiModel {
            client,
            endpoint: format!("{}/chat/completions", base.trim_end_matches('/')),
            model: model.into(),
            api_key: None,
            options: Map::new(),
        }
    }

    /// Sends `Authorization: Bearer {key}`.
    #[must_use]
    pub fn with_api_key(mut self, key: impl Into<String>) -> OpenAiModel {
        self.api_key = Some(key.into());
        self
    }

    /// Adds a request option (`temperature`, `max_completion_tokens`, …).
    #[must_use]
    pub fn with_option(mut self, key: impl Into<String>, value: Value) -> OpenAiModel {
        self.options.insert(key.into(), value);
        self
    }

    /// The request body for a model call.
    pub fn body(&self, request: &ModelRequest) -> Value {
        let messages: Vec<Value> = request.messages.iter().map(wire_message).collect();
        let mut body = Map::new();
        body.insert("model".into(), Value::String(self.model.clone()));
        body.insert("messages".into(), Value::Array(messages));
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.parameters,
                    }})
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        body.insert("stream".into(), Value::Bool(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
        for (key, value) in &self.options {
            body.insert(key.clone(), value.clone());
        }
        Value::Object(body)
    }
}

fn wire_message(message: &Message) -> Value {
    match message.role {
        Role::System => json!({"role": "system", "content": message.content}),
        Role::User => json!({"role": "user", "content": message.content}),
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": message.tool_call_id.clone().unwrap_or_default(),
            "content": message.content,
        }),
        Role::Assistant => {
            let mut out = Map::new();
            out.insert("role".into(), "assistant".into());
            out.insert(
                "content".into(),
                if message.content.is_empty() && !message.tool_calls.is_empty() {
                    Value::Null
                } else {
                    Value::String(message.content.clone())
                },
            );
            if !message.tool_calls.is_empty() {
                let calls: Vec<Value> = message
                    .tool_calls
                    .iter()
                    .map(|c| {
                        let arguments = match &c.arguments {
                            Value::String(raw) => raw.clone(),
                            other => other.to_string(),
                        };
                        json!({"id": c.id, "type": "function",
                               "function": {"name": c.name, "arguments": arguments}})
                    })
                    .collect();
                out.insert("tool_calls".into(), Value::Array(calls));
            }
            Value::Object(out)
        }
    }
}

/// A tool call being assembled from its fragments.
#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Reads a chat-completions event stream: `data: {chunk}` lines, `data: [DONE]` at the end.
/// Only the first choice (`index` 0) is read. Memory is bounded: a line, the whole response's
/// text and arguments, and the number of calls all have limits.
#[derive(Default)]
pub(crate) struct ChunkReader {
    buffer: Vec<u8>,
    /// How much of `buffer` is known to hold no newline.
    scanned: usize,
    calls: BTreeMap<u64, PartialCall>,
    /// The index of the call fragments without an `index` belong to.
    last_index: Option<u64>,
    size: usize,
    finished: bool,
    done: bool,
}

impl ChunkReader {
    /// Feeds bytes; returns the updates they complete.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Result<Vec<ModelUpdate>, ModelError> {
        self.buffer.extend_from_slice(bytes);
        let mut updates = Vec::new();
        while let Some(offset) = self
            .buffer
            .get(self.scanned..)
            .and_then(|rest| rest.iter().position(|b| *b == b'\n'))
        {
            let end = self.scanned + offset;
            let line: Vec<u8> = self.buffer.drain(..=end).collect();
            self.scanned = 0;
            let line = String::from_utf8_lossy(&line);
            self.line(line.trim_end_matches(['\r', '\n']), &mut updates)?;
        }
        self.scanned = self.buffer.len();
        if self.buffer.len() > MAX_LINE {
            return Err(ModelError(format!(
                "the model's event stream has a line over {MAX_LINE} bytes"
            )));
        }
        Ok(updates)
    }

    fn line(&mut self, line: &str, updates: &mut Vec<ModelUpdate>) -> Result<(), ModelError> {
        let Some(data) = line.strip_prefix("data:") else {
            return Ok(()); // comments (": keep-alive"), `event:` and `id:` lines, blank lines
        };
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if data.is_empty() || self.done {
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|e| ModelError(format!("the model sent a chunk that is not JSON: {e}")))?;
        if let Some(error) = chunk.get("error") {
            return Err(ModelError(format!(
                "the model reported an error: {}",
                error_text(error)
            )));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            updates.push(ModelUpdate::Usage(Usage {
                input_tokens: usage
                    .get("prompt_tokens")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
                output_tokens: usage
                    .get("completion_tokens")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
            }));
        }
        let Some(choice) = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| {
                c.iter()
                    .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
            })
        else {
            return Ok(());
        };
        if choice.get("finish_reason").is_some_and(|r| !r.is_null()) {
            self.finished = true;
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(());
        };
        if let Some(text) = delta.get("content").and_then(Value::as_str)
            && !text.is_empty()
        {
            self.grow(text.len())?;
            updates.push(ModelUpdate::Text(text.to_owned()));
        }
        for fragment in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let id = fragment
                .get("id")
                .and_then(Value::as_str)
                .filter(|id| !id.is_empty());
            let index = match fragment.get("index").and_then(Value::as_u64) {
                Some(index) => index,
                // No index (some servers): a new id opens a new call, else the last one goes on.
                None => match (self.last_index, id) {
                    (Some(last), Some(id))
                        if self
                            .calls
                            .get(&last)
                            .is_some_and(|c| !c.id.is_empty() && c.id != id) =>
                    {
                        last + 1
                    }
                    (Some(last), _) => last,
                    (None, _) => 0,
                },
            };
            if !self.calls.contains_key(&index) && self.calls.len() >= MAX_CALLS {
                return Err(ModelError(format!(
                    "the model asked for more than {MAX_CALLS} tool calls in one response"
                )));
            }
            self.last_index = Some(index);
            let call = self.calls.entry(index).or_default();
            if let Some(id) = id {
                call.id = id.to_owned();
            }
            let mut grown = 0;
            if let Some(function) = fragment.get("function") {
                if let Some(name) = function.get("name").and_then(Value::as_str) {
                    // Most servers send the name once; some repeat it whole in every fragment.
                    if call.name.is_empty() {
                        call.name = name.to_owned();
                    } else if call.name != name {
                        call.name.push_str(name);
                    }
                }
                if let Some(arguments) = function.get("arguments").and_then(Value::as_str) {
                    call.arguments.push_str(arguments);
                    grown = arguments.len();
                }
            }
            self.grow(grown)?;
        }
        Ok(())
    }

    fn grow(&mut self, bytes: usize) -> Result<(), ModelError> {
        self.size += bytes;
        if self.size > MAX_RESPONSE {
            return Err(ModelError(format!(
                "the model's response is over {MAX_RESPONSE} bytes"
            )));
        }
        Ok(())
    }

    /// The stream ended: the assembled tool calls, or an error if it ended early.
    pub(crate) fn finish(&mut self) -> Result<Vec<ModelUpdate>, ModelError> {
        let mut updates = Vec::new();
        if !self.buffer.is_empty() {
            let rest = std::mem::take(&mut self.buffer);
            self.line(String::from_utf8_lossy(&rest).trim(), &mut updates)?;
        }
        if !self.done && !self.finished {
            return Err(ModelError(
                "the model's response ended before it was complete".into(),
            ));
        }
        updates.extend(
            std::mem::take(&mut self.calls).into_values().map(|c| {
                ModelUpdate::ToolCall(ToolCall::from_json_text(c.id, c.name, &c.arguments))
            }),
        );
        Ok(updates)
    }
}

fn error_text(error: &Value) -> String {
    error
        .get("message")
        .and_then(Value::as_str)
        .map_or_else(|| error.to_string(), str::to_owned)
}

struct Streaming {
    model: OpenAiModel,
    body: Option<Value>,
    response: Option<reqwest::Response>,
    reader: ChunkReader,
    queue: VecDeque<Result<ModelUpdate, ModelError>>,
    ended: bool,
}

impl Streaming {
    async fn next(mut self) -> Option<(Result<ModelUpdate, ModelError>, Streaming)> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                if item.is_err() {
                    self.ended = true;
                    self.queue.clear();
                }
                return Some((item, self));
            }
            if self.ended {
                return None;
            }
            if let Some(body) = self.body.take() {
                match self.send(&body).await {
                    Ok(response) => self.response = Some(response),
                    Err(e) => self.queue.push_back(Err(e)),
                }
                continue;
            }
            let Some(response) = self.response.as_mut() else {
                self.ended = true;
                continue;
            };
            match response.chunk().await {
                Ok(Some(bytes)) => match self.reader.feed(&bytes) {
                    Ok(updates) => self.queue.extend(updates.into_iter().map(Ok)),
                    Err(e) => self.queue.push_back(Err(e)),
                },
                Ok(None) => {
                    self.response = None;
                    match self.reader.finish() {
                        Ok(updates) => self.queue.extend(updates.into_iter().map(Ok)),
                        Err(e) => self.queue.push_back(Err(e)),
                    }
                    self.ended = true;
                }
                Err(e) => self.queue.push_back(Err(ModelError(format!(
                    "reading the model's response failed: {e}"
                )))),
            }
        }
    }

    async fn send(&self, body: &Value) -> Result<reqwest::Response, ModelError> {
        let payload = serde_json::to_vec(body)
            .map_err(|e| ModelError(format!("cannot encode the request: {e}")))?;
        let mut request = self
            .model
            .client
            .post(&self.model.endpoint)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(payload);
        if let Some(key) = &self.model.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|e| {
            ModelError(format!(
                "cannot reach the model at {}: {e}",
                self.model.endpoint
            ))
        })?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let mut response = response;
        let mut body = Vec::new();
        while body.len() < MAX_ERROR_BODY {
            match response.chunk().await {
                Ok(Some(bytes)) => body.extend_from_slice(&bytes),
                Ok(None) | Err(_) => break,
            }
        }
        body.truncate(MAX_ERROR_BODY);
        let text = String::from_utf8_lossy(&body).into_owned();
        let message = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v.get("error").map(error_text))
            .unwrap_or(text);
        Err(ModelError(format!(
            "the model API answered {status}: {message}"
        )))
    }
}

impl Model for OpenAiModel {
    fn stream(&self, request: ModelRequest) -> ModelStream<'static> {
        let state = Streaming {
            body: Some(self.body(&request)),
            model: self.clone(),
            response: None,
            reader: ChunkReader::default(),
            queue: VecDeque::new(),
            ended: false,
        };
        Box::pin(stream::unfold(state, Streaming::next))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(text: &str, piece: usize) -> Result<Vec<ModelUpdate>, ModelError> {
        let mut reader = ChunkReader::default();
        let mut updates = Vec::new();
        for bytes in text.as_bytes().chunks(piece) {
            updates.extend(reader.feed(bytes)?);
        }
        updates.extend(reader.finish()?);
        Ok(updates)
    }

    #[test]
    fn fragments_assemble_whatever_the_network_splits() {
        let text = concat!(
            ": keep-alive\r\n\r\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hi \"}}]}\r\n\r\n",
            "data:{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"ls\",\"arguments\":\"{\\\"pa\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"th\\\":\\\"é\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3}}\n\n",
            "data: [DONE]\n\n",
        );
        for piece in [1, 3, 7, 4096] {
            let updates = read_all(text, piece).unwrap();
            assert_eq!(
                updates,
                vec![
                    ModelUpdate::Text("Hi ".into()),
                    ModelUpdate::Usage(Usage {
                        input_tokens: 7,
                        output_tokens: 3
                    }),
                    ModelUpdate::ToolCall(ToolCall::new("c1", "ls", json!({"path": "é"}))),
                ],
                "split every {piece} bytes"
            );
        }
    }

    #[test]
    fn a_truncated_stream_and_an_error_chunk_are_errors() {
        let truncated = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n";
        assert!(read_all(truncated, 4096).is_err());
        let error = "data: {\"error\":{\"message\":\"overloaded\"}}\n\n";
        assert_eq!(
            read_all(error, 4096),
            Err(ModelError("the model reported an error: overloaded".into()))
        );
        assert!(read_all("data: {not json\n\n", 4096).is_err());
    }

    #[test]
    fn fragments_without_an_index_or_with_a_repeated_name_still_assemble() {
        let text = concat!(
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"a\",\"function\":{\"name\":\"ls\",\"arguments\":\"{\\\"p\\\":\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"\",\"function\":{\"name\":\"ls\",\"arguments\":\"1}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"b\",\"function\":{\"name\":\"cat\",\"arguments\":\"{}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"other choice\"}}]}\n\n",
            "data: [DONE]\n\n",
        );
        assert_eq!(
            read_all(text, 5).unwrap(),
            vec![
                ModelUpdate::ToolCall(ToolCall::new("a", "ls", json!({"p": 1}))),
                ModelUpdate::ToolCall(ToolCall::new("b", "cat", json!({}))),
            ]
        );
    }

    #[test]
    fn a_response_over_its_limits_is_an_error() {
        let mut reader = ChunkReader::default();
        let long = format!(
            "data: {{\"choices\":[{{\"delta\":{{\"content\":\"{}\"}}}}]}}\n",
            "x".repeat(1024 * 1024)
        );
        let mut failed = None;
        for _ in 0..40 {
            if let Err(e) = reader.feed(long.as_bytes()) {
                failed = Some(e);
                break;
            }
        }
        assert_eq!(
            failed,
            Some(ModelError(format!(
                "the model's response is over {MAX_RESPONSE} bytes"
            )))
        );
        let mut reader = ChunkReader::default();
        let endless = vec![b'x'; MAX_LINE + 1];
        assert!(reader.feed(&endless).is_err(), "one line without an end");
    }

    #[test]
    fn history_goes_out_in_the_wire_format() {
        let model = OpenAiModel::new("http://127.0.0.1:1/v1/", "m");
        let assistant = Message {
            role: Role::Assistant,
            content: String::new(),
            tool_calls: vec![ToolCall::new("c1", "ls", json!({"path": "."}))],
            tool_call_id: None,
        };
        let tool = Message {
            role: Role::Tool,
            content: "a b".into(),
            tool_calls: Vec::new(),
            tool_call_id: Some("c1".into()),
        };
        let body = model.body(&ModelRequest {
            messages: vec![Message::system("s"), Message::user("u"), assistant, tool],
            tools: Vec::new().into(),
        });
        assert_eq!(model.endpoint, "http://127.0.0.1:1/v1/chat/completions");
        assert_eq!(
            body["messages"],
            json!([
                {"role": "system", "content": "s"},
                {"role": "user", "content": "u"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{\"path\":\".\"}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "a b"},
            ])
        );
        assert_eq!(body["stream"], true);
        assert!(body.get("tools").is_none());
    }
}
