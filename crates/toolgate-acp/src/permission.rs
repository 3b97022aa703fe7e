//! `session/request_permission`: what the agent's tool call is to the policy, and which of the
//! options the agent offered carries a decision (AGH's selection, SEED-NOTES §3.4).

use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionRequest, ToolKind,
};
use serde_json::{Map, Value, json};
use toolgate_policy::Choice;

/// The ACP option kind of an answer.
pub(crate) fn kind_of(choice: Choice) -> PermissionOptionKind {
    match choice {
        Choice::AllowOnce => PermissionOptionKind::AllowOnce,
        Choice::AllowAlways => PermissionOptionKind::AllowAlways,
        Choice::RejectOnce => PermissionOptionKind::RejectOnce,
        Choice::RejectAlways => PermissionOptionKind::RejectAlways,
    }
}

/// The answer an ACP option kind is (`None` for kinds a later protocol adds).
pub(crate) fn choice_of(kind: &PermissionOptionKind) -> Option<Choice> {
    match kind {
        PermissionOptionKind::AllowOnce => Some(Choice::AllowOnce),
        PermissionOptionKind::AllowAlways => Some(Choice::AllowAlways),
        PermissionOptionKind::RejectOnce => Some(Choice::RejectOnce),
        PermissionOptionKind::RejectAlways => Some(Choice::RejectAlways),
        _ => None,
    }
}

/// The option that carries `decision` among those offered: the first of the decision's own
/// kind, else the first of its sibling's (allow-always falls back to allow-once and back,
/// reject-always to reject-once and back). `None`: no option fits, and the outcome is
/// "cancelled".
pub(crate) fn select(options: &[PermissionOption], decision: Choice) -> Option<&PermissionOption> {
    let sibling = match decision {
        Choice::AllowOnce => Choice::AllowAlways,
        Choice::AllowAlways => Choice::AllowOnce,
        Choice::RejectOnce => Choice::RejectAlways,
        Choice::RejectAlways => Choice::RejectOnce,
    };
    [decision, sibling]
        .into_iter()
        .find_map(|wanted| options.iter().find(|o| choice_of(&o.kind) == Some(wanted)))
}

/// The result a permission request is answered with: the option chosen for `decision`, or
/// "cancelled" when none fits. With the applied decision: the chosen option's kind.
pub(crate) fn outcome(options: &[PermissionOption], decision: Choice) -> (Value, Option<Choice>) {
    match select(options, decision) {
        Some(option) => (
            json!({"outcome": {"outcome": "selected", "optionId": option.option_id.0}}),
            choice_of(&option.kind),
        ),
        None => (json!({"outcome": {"outcome": "cancelled"}}), None),
    }
}

/// The ACP tool kinds' names, as a tool name for the policy: `acp/read`, `acp/edit`, …
pub(crate) fn kind_name(kind: Option<&ToolKind>) -> &'static str {
    match kind {
        Some(ToolKind::Read) => "read",
        Some(ToolKind::Edit) => "edit",
        Some(ToolKind::Delete) => "delete",
        Some(ToolKind::Move) => "move",
        Some(ToolKind::Search) => "search",
        Some(ToolKind::Execute) => "execute",
        Some(ToolKind::Think) => "think",
        Some(ToolKind::Fetch) => "fetch",
        Some(ToolKind::SwitchMode) => "switch_mode",
        _ => "other",
    }
}

/// The calls a permission request is about: the agent's own tool when the request names it
/// (Claude Code's adapter says `_meta.claudeCode.toolName`, and its `rawInput` is that tool's
/// input, which the built-in profiles of Claude Code's tools read), and always `acp/KIND` with
/// the arguments the ACP tool kind's profile reads: the locations' paths, and from the raw
/// input the command (`execute`) or the URL (`fetch`). The caller judges each; the stricter
/// decides.
pub(crate) fn calls_of(request: &RequestPermissionRequest) -> Vec<(String, Value)> {
    let fields = &request.tool_call.fields;
    let raw = fields.raw_input.as_ref().unwrap_or(&Value::Null);
    let named = request
        .tool_call
        .meta
        .as_ref()
        .and_then(|meta| meta.get("claudeCode"))
        .and_then(|c| c.get("toolName"))
        .and_then(Value::as_str);
    let paths: Vec<Value> = fields
        .locations
        .iter()
        .flatten()
        .map(|l| Value::String(l.path.to_string_lossy().into_owned()))
        .collect();
    calls_in(kind_name(fields.kind.as_ref()), raw, paths, named)
}

/// The calls a tool call the agent reports (`session/update`'s `tool_call`, with what its
/// `tool_call_update`s added) is about, read as [`calls_of`] reads a permission request's.
pub(crate) fn calls_of_update(update: &Value) -> Vec<(String, Value)> {
    let raw = update.get("rawInput").unwrap_or(&Value::Null);
    let named = update
        .get("_meta")
        .and_then(|meta| meta.get("claudeCode"))
        .and_then(|c| c.get("toolName"))
        .and_then(Value::as_str);
    let paths: Vec<Value> = update
        .get("locations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|l| l.get("path").filter(|p| p.is_string()).cloned())
        .collect();
    let kind = update
        .get("kind")
        .cloned()
        .and_then(|k| serde_json::from_value::<ToolKind>(k).ok());
    calls_in(kind_name(kind.as_ref()), raw, paths, named)
}

/// The calls of a tool call of kind `kind`, with raw input `raw`, at `paths`, named `named` by
/// the agent (see [`calls_of`]).
fn calls_in(
    kind: &str,
    raw: &Value,
    paths: Vec<Value>,
    named: Option<&str>,
) -> Vec<(String, Value)> {
    let named = named.filter(|name| !name.is_empty() && !name.starts_with("acp/"));
    let mut calls = Vec::new();
    if let (Some(name), Value::Object(_)) = (named, raw) {
        calls.push((name.to_owned(), raw.clone()));
    }
    let mut args = Map::new();
    if !paths.is_empty() {
        args.insert("paths".into(), Value::Array(paths));
    }
    match kind {
        "execute" => {
            // A command line, or an argv (Codex's adapter).
            if let Some(command) = raw.get("command").filter(|c| c.is_string() || c.is_array()) {
                args.insert("command".into(), command.clone());
            }
            if let Some(cwd) = raw.get("cwd").filter(|c| c.is_string()) {
                args.insert("cwd".into(), cwd.clone());
            }
        }
        "fetch" => {
            if let Some(url) = raw.get("url").filter(|u| u.is_string()) {
                args.insert("url".into(), url.clone());
            }
        }
        _ => {}
    }
    calls.push((format!("acp/{kind}"), Value::Object(args)));
    calls
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn options(kinds: &[&str]) -> Vec<PermissionOption> {
        kinds
            .iter()
            .enumerate()
            .map(|(i, kind)| {
                serde_json::from_value(
                    json!({"optionId": format!("o{i}"), "name": kind, "kind": kind}),
                )
                .unwrap()
            })
            .collect()
    }

    #[test]
    fn a_decision_takes_its_own_kind_then_its_siblings_then_none() {
        let all = options(&["allow_once", "allow_always", "reject_once", "reject_always"]);
        let id = |o: Option<&PermissionOption>| o.map(|o| o.option_id.0.to_string());
        assert_eq!(id(select(&all, Choice::AllowAlways)), Some("o1".into()));
        assert_eq!(id(select(&all, Choice::RejectOnce)), Some("o2".into()));
        let once = options(&["allow_once", "reject_once"]);
        assert_eq!(id(select(&once, Choice::AllowAlways)), Some("o0".into()));
        assert_eq!(id(select(&once, Choice::RejectAlways)), Some("o1".into()));
        let allow_only = options(&["allow_always"]);
        assert_eq!(id(select(&allow_only, Choice::RejectOnce)), None);
        let (result, applied) = outcome(&allow_only, Choice::RejectOnce);
        assert_eq!(result, json!({"outcome": {"outcome": "cancelled"}}));
        assert_eq!(applied, None);
        // The applied decision is the chosen option's kind.
        assert_eq!(
            outcome(&once, Choice::AllowAlways).1,
            Some(Choice::AllowOnce)
        );
        assert_eq!(outcome(&[], Choice::AllowOnce).1, None);
    }

    fn request(tool_call: Value) -> RequestPermissionRequest {
        serde_json::from_value(json!({"sessionId": "s", "toolCall": tool_call, "options": []}))
            .unwrap()
    }

    #[test]
    fn a_tool_call_is_the_agents_tool_when_named_else_its_kind() {
        let named = request(json!({
            "toolCallId": "t", "kind": "execute", "rawInput": {"command": "ls"},
            "_meta": {"claudeCode": {"toolName": "Bash"}}
        }));
        assert_eq!(
            calls_of(&named),
            vec![
                ("Bash".into(), json!({"command": "ls"})),
                ("acp/execute".into(), json!({"command": "ls"}))
            ]
        );
        let edit = request(json!({
            "toolCallId": "t", "kind": "edit", "locations": [{"path": "/w/a.rs"}, {"path": "/w/b.rs"}],
            "rawInput": {"anything": 1}
        }));
        assert_eq!(
            calls_of(&edit),
            vec![("acp/edit".into(), json!({"paths": ["/w/a.rs", "/w/b.rs"]}))]
        );
        let argv = request(json!({
            "toolCallId": "t", "kind": "execute", "rawInput": {"command": ["git", "push"], "cwd": "/w"}
        }));
        assert_eq!(
            calls_of(&argv),
            vec![(
                "acp/execute".into(),
                json!({"command": ["git", "push"], "cwd": "/w"})
            )]
        );
        let unknown = request(json!({"toolCallId": "t", "title": "Do it"}));
        assert_eq!(calls_of(&unknown), vec![("acp/other".into(), json!({}))]);
    }
}
