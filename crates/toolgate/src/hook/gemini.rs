//! Gemini CLI's hooks (google-gemini/gemini-cli `docs/hooks/reference.md` and
//! `packages/core/src/hooks/types.ts`, `hookRunner.ts`, `hookEventHandler.ts`; Gemini CLI
//! 0.5x). `BeforeTool` gets `session_id`, `cwd`, `hook_event_name`, `tool_name`, `tool_input`
//! and, for an MCP tool, `mcp_context` (`server_name`, and the server's own `tool_name`);
//! `$GEMINI_PROJECT_DIR` names the project.
//!
//! The reply is one JSON object, exit 0: `decision` `allow` (no objection: Gemini CLI's own
//! policy still decides whether it asks), `deny` (the call is not run; the model and the person
//! read "Tool execution blocked: REASON"), or `ask` (Gemini CLI's confirmation dialog, whatever
//! its own policy says). `AfterTool` (a tool ran: with `--daemon`, the daemon is told its
//! result came into the session, which it may taint) and the other events get `{}`; an event
//! toolgate does not know is a `deny`. Gemini CLI runs the call when a hook crashes or times out (60 s unless
//! the hook's `timeout`, in milliseconds, says otherwise), so toolgate answers every input.

use serde_json::{Value, json};

use super::{Answer, Input, Reply, Request, env, string};

/// Events about no pending tool call.
const ACKNOWLEDGED: &[&str] = &[
    "AfterTool",
    "BeforeAgent",
    "AfterAgent",
    "BeforeModel",
    "AfterModel",
    "BeforeToolSelection",
    "SessionStart",
    "SessionEnd",
    "PreCompress",
    "Notification",
];

pub(super) fn read(hook: &Value) -> Result<Input, String> {
    let event = string(hook, "hook_event_name").unwrap_or_else(|| "BeforeTool".to_owned());
    match event.as_str() {
        "BeforeTool" => {}
        // A result came in: reported when the call can be read (refusing would block nothing).
        "AfterTool" => {
            return Ok(match request_of(hook) {
                Ok(request) => Input::report(&event, request, None),
                Err(_) => Input::acknowledge(&event),
            });
        }
        e if ACKNOWLEDGED.contains(&e) => return Ok(Input::acknowledge(e)),
        e => return Ok(Input::unknown("Gemini CLI", e)),
    }
    Ok(Input::decide(&event, request_of(hook)?))
}

/// The tool call an input is about.
fn request_of(hook: &Value) -> Result<Request, String> {
    let name = string(hook, "tool_name").ok_or("the hook's input has no `tool_name`")?;
    let args = super::arguments(hook.get("tool_input"), "tool_input")?;
    let cwd = string(hook, "cwd");
    let workspace = env("GEMINI_PROJECT_DIR")
        .or_else(|| cwd.clone())
        .ok_or("neither $GEMINI_PROJECT_DIR nor the hook's `cwd` says where the project is")?;
    // An MCP tool is `mcp_SERVER_TOOL`, which cannot be split where a name has `_`:
    // `mcp_context` names the server and its tool.
    let context = hook.get("mcp_context");
    let (server, tool) = match context.map(|c| (string(c, "server_name"), string(c, "tool_name"))) {
        Some((Some(server), Some(tool))) => (Some(server), tool),
        _ => (None, name),
    };
    let session = string(hook, "session_id");
    Ok(Request::new(tool, args, server, workspace, cwd, session))
}

pub(super) fn reply(event: &str, answer: &Answer) -> Reply {
    match (event, answer) {
        (_, Answer::Acknowledge) => Reply::json(&json!({})),
        (_, Answer::Defer) => Reply::empty(),
        (_, Answer::Allow(reason) | Answer::AllowRewritten(reason, _)) => {
            Reply::json(&json!({"decision": "allow", "reason": reason}))
        }
        (_, Answer::Deny(reason)) => Reply::json(&json!({"decision": "deny", "reason": reason})),
        (_, Answer::Ask(reason)) => Reply::json(&json!({
            "decision": "ask",
            "reason": reason,
            "systemMessage": reason,
        })),
    }
}
