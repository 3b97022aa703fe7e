//! Claude Code's hooks, as its hooks reference documents them (code.claude.com/docs/en/hooks,
//! Claude Code 2.1): the input on stdin carries `hook_event_name`, `session_id`, `cwd`,
//! `permission_mode`, `tool_name` and `tool_input`; `$CLAUDE_PROJECT_DIR` names the project.
//!
//! - `PreToolUse` answers `hookSpecificOutput.permissionDecision` (`allow` runs the call without
//!   a prompt, `deny` refuses it with the reason, which Claude reads, `ask` shows Claude Code's
//!   own prompt with the reason); no output leaves the call to Claude Code's own rules.
//! - `PermissionRequest` (Claude Code is about to show its permission dialog) answers
//!   `hookSpecificOutput.decision.behavior` `allow` or `deny`; an ask leaves the dialog to
//!   the person.
//! - `PostToolUse` (a tool ran; its result is in the session): with `--daemon`, the daemon is
//!   told, so a result that brings untrusted content taints the session; the empty reply.
//! - The other events about no pending call get the empty reply.
//! - An event toolgate does not know exits 2 with the reason on stderr (a block).
//!
//! An MCP tool is `mcp__SERVER__TOOL`.

use serde_json::{Value, json};

use super::{Answer, Input, Reply, Request, env, mcp_double_underscore, string};

/// Events about no pending tool call: the hook has nothing to decide.
const ACKNOWLEDGED: &[&str] = &[
    "PostToolUse",
    "PostToolUseFailure",
    "Notification",
    "UserPromptSubmit",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "SessionStart",
    "SessionEnd",
];

pub(super) fn read(hook: &Value) -> Result<Input, String> {
    read_as(hook, &CLAUDE, env("CLAUDE_PROJECT_DIR"))
}

/// How an agent that speaks Claude Code's input shape differs from it.
pub(super) struct Dialect {
    pub(super) agent: &'static str,
    /// Whether its `PreToolUse` hook can answer ask.
    pub(super) pre_tool_use_asks: bool,
    /// Events about no pending tool call.
    pub(super) acknowledged: &'static [&'static str],
}

const CLAUDE: Dialect = Dialect {
    agent: "Claude Code",
    pre_tool_use_asks: true,
    acknowledged: ACKNOWLEDGED,
};

/// Reads Claude Code's input shape, which Codex shares; `project` is the folder the agent
/// names as its project, when it does.
pub(super) fn read_as(
    hook: &Value,
    dialect: &Dialect,
    project: Option<String>,
) -> Result<Input, String> {
    // Claude Code always names the event; an input without one is read as the tool-call
    // event it is shaped as.
    let event = string(hook, "hook_event_name").unwrap_or_else(|| "PreToolUse".to_owned());
    let can_ask = match event.as_str() {
        "PreToolUse" => dialect.pre_tool_use_asks,
        "PermissionRequest" => true,
        // A result came in: reported when the call can be read; else nothing to say (the call
        // ran; refusing the event would block nothing).
        "PostToolUse" => {
            return Ok(match request_of(hook, dialect, project) {
                Ok(request) => Input::report(&event, request, string(hook, "tool_use_id")),
                Err(_) => Input::acknowledge(&event),
            });
        }
        e if dialect.acknowledged.contains(&e) => return Ok(Input::acknowledge(e)),
        e => return Ok(Input::unknown(dialect.agent, e)),
    };
    let mut request = request_of(hook, dialect, project)?;
    request.can_ask = can_ask;
    request.mode = string(hook, "permission_mode");
    Ok(Input::decide(&event, request))
}

/// The tool call an input of Claude Code's shape is about.
fn request_of(hook: &Value, dialect: &Dialect, project: Option<String>) -> Result<Request, String> {
    let name = string(hook, "tool_name").ok_or("the hook's input has no `tool_name`")?;
    let args = super::arguments(hook.get("tool_input"), "tool_input")?;
    let cwd = string(hook, "cwd");
    let workspace = project.or_else(|| cwd.clone()).ok_or_else(|| {
        if dialect.agent == "Claude Code" {
            "neither $CLAUDE_PROJECT_DIR nor the hook's `cwd` says where the project is".to_owned()
        } else {
            "the hook's `cwd` does not say where the project is".to_owned()
        }
    })?;
    let (server, tool) = match mcp_double_underscore(&name) {
        Some((server, tool)) => (Some(server), tool),
        None => (None, name),
    };
    Ok(Request::new(
        tool,
        args,
        server,
        workspace,
        cwd,
        string(hook, "session_id"),
    ))
}

pub(super) fn reply(event: &str, answer: &Answer) -> Reply {
    match (event, answer) {
        (_, Answer::Acknowledge | Answer::Defer) => Reply::empty(),
        ("PermissionRequest", answer) => permission_request(answer),
        ("PreToolUse", Answer::AllowRewritten(reason, input)) => Reply::json(&json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "allow",
                "permissionDecisionReason": reason,
                "updatedInput": input,
            }
        })),
        ("PreToolUse", answer) => {
            let (decision, reason) = match answer {
                Answer::Allow(r) => ("allow", r),
                Answer::Deny(r) => ("deny", r),
                Answer::Ask(r) => ("ask", r),
                Answer::Defer | Answer::Acknowledge | Answer::AllowRewritten(..) => {
                    unreachable!("answered above")
                }
            };
            Reply::json(&json!({
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": decision,
                    "permissionDecisionReason": reason,
                }
            }))
        }
        (
            _,
            Answer::Deny(reason)
            | Answer::Ask(reason)
            | Answer::Allow(reason)
            | Answer::AllowRewritten(reason, _),
        ) => Reply::blocked(reason),
    }
}

/// The `PermissionRequest` reply Claude Code and Codex share: allow or deny the dialog's
/// request; an ask leaves the dialog to the person.
pub(super) fn permission_request(answer: &Answer) -> Reply {
    match answer {
        Answer::Allow(_) => Reply::json(&json!({
            "hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "decision": {"behavior": "allow"},
            }
        })),
        Answer::AllowRewritten(_, input) => Reply::json(&json!({
            "hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "decision": {"behavior": "allow", "updatedInput": input},
            }
        })),
        Answer::Deny(reason) => Reply::json(&json!({
            "hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "decision": {"behavior": "deny", "message": reason},
            }
        })),
        Answer::Ask(_) | Answer::Defer | Answer::Acknowledge => Reply::empty(),
    }
}
