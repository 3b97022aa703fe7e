//! The proxy's events: every judged request is recorded as toolgate's event (DESIGN §7:
//! `schema`, `type`, `session`, `turn`, `request_id`, `tool_call_id`, `timestamp`, `action`,
//! `resource`, `decision` — absent while pending —, `rule`, `layer`, `reason`, `actor`) with
//! AGH's permission-event fields beside them (`session_id`, `turn_id`, `title`, and `raw` with
//! the request id, the decision, the tool's input, the options offered and the tool call). A
//! request a person decides is two events: pending, then resolved.

use std::sync::Arc;
use std::time::SystemTime;

use agent_client_protocol::v1::schema::{PermissionOption, RequestPermissionRequest};
use serde_json::{Value, json};
use toolgate_policy::{Choice, Evaluation};

/// Where the proxy's events go (`toolgate acp --events FILE` appends them as JSON lines).
pub type EventSink = Arc<dyn Fn(Value) + Send + Sync>;

/// How a judged request came out.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Outcome {
    /// A person is asked.
    Pending,
    /// Decided: the decision applied (for a permission request, the chosen option's kind).
    Applied(Choice),
    /// No option fitted the decision, or the question was cancelled: no decision applied.
    Cancelled,
}

/// Who decided, and why.
pub(crate) struct Why<'a> {
    /// `policy`, `grant`, `editor`, `daemon`, `timeout`, `agent` (its cancel) or `toolgate`.
    pub(crate) actor: &'a str,
    pub(crate) reason: &'a str,
    pub(crate) rule: Option<&'a str>,
    pub(crate) layer: Option<&'a str>,
}

impl<'a> Why<'a> {
    /// The policy's evaluation, as its actor.
    pub(crate) fn of(evaluation: &'a Evaluation, actor: &'a str) -> Why<'a> {
        Why {
            actor,
            reason: &evaluation.reason,
            rule: evaluation.rule_name(),
            layer: Some(evaluation.layer.as_str()),
        }
    }

    /// A reason of toolgate's own (no rule).
    pub(crate) fn said(actor: &'a str, reason: &'a str) -> Why<'a> {
        Why {
            actor,
            reason,
            rule: None,
            layer: None,
        }
    }
}

/// One judged request's identity in the event log: the event without its outcome.
#[derive(Clone, Debug)]
pub(crate) struct Trail(Value);

impl Trail {
    /// A permission request of the agent's, as request `request_id` of the proxy.
    pub(crate) fn permission(request_id: &str, request: &RequestPermissionRequest) -> Trail {
        let call = &request.tool_call;
        let fields = &call.fields;
        let locations: Vec<Value> = fields
            .locations
            .iter()
            .flatten()
            .map(|l| json!({"path": l.path, "line": l.line}))
            .collect();
        let title = fields.title.clone().unwrap_or_default();
        let resource = fields
            .locations
            .iter()
            .flatten()
            .next()
            .map(|l| l.path.to_string_lossy().into_owned())
            .unwrap_or_else(|| title.clone());
        let kind = fields
            .kind
            .as_ref()
            .and_then(|k| serde_json::to_value(k).ok())
            .unwrap_or(Value::Null);
        let status = fields
            .status
            .as_ref()
            .and_then(|s| serde_json::to_value(s).ok())
            .unwrap_or(Value::Null);
        Trail::new(
            &request.session_id.0,
            request_id,
            &call.tool_call_id.0,
            "session/request_permission",
            &title,
            &resource,
            redacted(&fields.raw_input.clone().unwrap_or(Value::Null)),
            options(&request.options),
            json!({"id": call.tool_call_id.0, "kind": kind, "title": title, "status": status,
                   "locations": locations}),
        )
    }

    /// A file or terminal request of the agent's (`method`, its `params`).
    pub(crate) fn work(request_id: &str, session: &str, method: &str, params: &Value) -> Trail {
        let field = |key: &str| params.get(key).and_then(Value::as_str).unwrap_or_default();
        let (kind, resource) = match method {
            "fs/read_text_file" => ("read", field("path").to_owned()),
            "fs/write_text_file" => ("edit", field("path").to_owned()),
            _ => {
                let mut line = field("command").to_owned();
                for arg in params
                    .get("args")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    line.push(' ');
                    line.push_str(arg.as_str().unwrap_or_default());
                }
                ("execute", line)
            }
        };
        let tool_input = redacted(params);
        let title = format!("{method} {resource}");
        let locations = if kind == "execute" {
            json!([])
        } else {
            json!([{"path": resource}])
        };
        Trail::new(
            session,
            request_id,
            request_id,
            method,
            &title,
            &resource,
            tool_input,
            json!([]),
            json!({"id": request_id, "kind": kind, "title": title, "status": "pending",
                   "locations": locations}),
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn new(
        session: &str,
        request_id: &str,
        tool_call_id: &str,
        action: &str,
        title: &str,
        resource: &str,
        tool_input: Value,
        options: Value,
        tool_call: Value,
    ) -> Trail {
        Trail(json!({
            "schema": toolgate_runtime::EVENT_SCHEMA,
            "type": "permission",
            "session": session,
            "session_id": session,
            "turn": Value::Null,
            "turn_id": Value::Null,
            "request_id": request_id,
            "tool_call_id": tool_call_id,
            "action": action,
            "resource": resource,
            "title": title,
            "raw": {
                "request_id": request_id,
                "tool_input": tool_input,
                "options": options,
                "tool_call": tool_call,
            },
        }))
    }

    /// The event of this outcome, now.
    pub(crate) fn event(&self, outcome: Outcome, why: &Why<'_>) -> Value {
        let mut event = self.0.clone();
        let timestamp = humantime::format_rfc3339_micros(SystemTime::now()).to_string();
        if let Some(map) = event.as_object_mut() {
            map.insert("timestamp".into(), json!(timestamp));
            map.insert("actor".into(), json!(why.actor));
            map.insert("reason".into(), json!(why.reason));
            map.insert("rule".into(), json!(why.rule));
            map.insert("layer".into(), json!(why.layer));
            match outcome {
                Outcome::Pending => {}
                Outcome::Applied(choice) => {
                    map.insert("decision".into(), json!(choice.as_str()));
                }
                Outcome::Cancelled => {
                    map.insert("outcome".into(), json!("cancelled"));
                }
            }
        }
        if let (Outcome::Applied(choice), Some(raw)) = (outcome, event.get_mut("raw")) {
            raw["decision"] = json!(choice.as_str());
        }
        event
    }
}

/// Arguments without what files hold: a file's text (`content`, and an edit's `old_string`,
/// `new_string`, `contents`, `new_source`) becomes its size in bytes (`content_bytes`, …). What
/// the daemon is sent: it judges what a call touches (the built-in profiles read paths, not
/// text), and keeps a record of every call.
pub(crate) fn without_contents(args: &Value) -> Value {
    redact(args, false)
}

/// Arguments as the event log keeps them: without what files hold, and an environment (`env`)
/// with its names only (its values may be secrets).
pub(crate) fn redacted(args: &Value) -> Value {
    redact(args, true)
}

fn redact(args: &Value, env_too: bool) -> Value {
    let Value::Object(map) = args else {
        return args.clone();
    };
    let mut out = serde_json::Map::new();
    for (key, value) in map {
        match (key.as_str(), value) {
            (
                "content" | "old_string" | "new_string" | "contents" | "new_source",
                Value::String(text),
            ) => {
                out.insert(format!("{key}_bytes"), json!(text.len()));
            }
            ("env", Value::Array(vars)) if env_too => {
                let names: Vec<Value> =
                    vars.iter().filter_map(|v| v.get("name").cloned()).collect();
                out.insert("env_names".into(), Value::Array(names));
            }
            ("env", Value::Object(vars)) if env_too => {
                let names: Vec<Value> = vars.keys().map(|k| json!(k)).collect();
                out.insert("env_names".into(), Value::Array(names));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Object(out)
}

/// The options offered, as AGH lists them: `{decision, option_id, kind, label}`.
fn options(options: &[PermissionOption]) -> Value {
    Value::Array(
        options
            .iter()
            .map(|o| {
                let kind = serde_json::to_value(o.kind).unwrap_or(Value::Null);
                let decision = crate::permission::choice_of(&o.kind).map(Choice::as_str);
                json!({"decision": decision, "option_id": o.option_id.0, "kind": kind,
                       "label": o.name})
            })
            .collect(),
    )
}
