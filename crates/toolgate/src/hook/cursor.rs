//! Cursor's agent hooks (cursor.com/docs/hooks, Cursor 1.7 to 3.x; `.cursor/hooks.json`,
//! `~/.cursor/hooks.json`). Every input carries `hook_event_name`, `conversation_id` and
//! `workspace_roots`; `$CURSOR_PROJECT_DIR` names the project.
//!
//! - `beforeShellExecution` (`command`, `cwd`) and `beforeMCPExecution` (`tool_name`,
//!   `tool_input`, the server's `url` or `command`) answer `permission` `allow`, `deny` or
//!   `ask` (Cursor's own prompt).
//! - `preToolUse` (`tool_name`: `Shell`, `Read`, `Write`, `Delete`, `Grep`, `Task`,
//!   `MCP:TOOL`, …; `tool_input`) and `beforeReadFile` (`file_path`) answer `allow` or `deny`:
//!   Cursor does not ask there, so toolgate's ask is refused with the reason (or, with
//!   `--defer-ask`, allowed to reach Cursor's own rules) — except for shell and MCP calls,
//!   which `beforeShellExecution` and `beforeMCPExecution` then ask about.
//! - `user_message` is what the person sees, `agent_message` what the model reads; a deny
//!   also exits 2, Cursor's block.
//!
//! - `postToolUse`, `afterShellExecution` and `afterMCPExecution` (a tool ran: with `--daemon`,
//!   the daemon is told its result came into the conversation, which it may taint) get `{}`.
//!
//! Cursor runs the call when a hook fails unless the entry says `"failClosed": true`, so
//! toolgate answers every input and `toolgate install cursor` sets it.

use serde_json::{Map, Value, json};

use super::{Answer, Input, Reply, Request, env, string};

/// Events about no pending tool call.
const ACKNOWLEDGED: &[&str] = &[
    "postToolUse",
    "postToolUseFailure",
    "afterShellExecution",
    "afterMCPExecution",
    "afterFileEdit",
    "afterAgentResponse",
    "afterAgentThought",
    "afterTabFileEdit",
    "beforeSubmitPrompt",
    "sessionStart",
    "sessionEnd",
    "subagentStart",
    "subagentStop",
    "preCompact",
    "stop",
];

pub(super) fn read(hook: &Value) -> Result<Input, String> {
    let event =
        string(hook, "hook_event_name").ok_or("the hook's input has no `hook_event_name`")?;
    let cwd = string(hook, "cwd");
    let workspace = hook
        .get("workspace_roots")
        .and_then(Value::as_array)
        .and_then(|roots| roots.iter().find_map(Value::as_str))
        .filter(|root| !root.is_empty())
        .map(str::to_owned)
        .or_else(|| env("CURSOR_PROJECT_DIR"))
        .or_else(|| cwd.clone())
        .ok_or("neither the hook's `workspace_roots` nor $CURSOR_PROJECT_DIR names the project")?;
    let request = |tool: String, args: Value, server: Option<String>, can_ask: bool| {
        let session = string(hook, "conversation_id");
        let mut request = Request::new(tool, args, server, workspace.clone(), cwd.clone(), session);
        request.can_ask = can_ask;
        request
    };
    // A tool ran: its result came into the conversation (reported to the daemon with
    // `--daemon`; an input toolgate cannot read as a call is acknowledged: it blocks nothing).
    let reports = matches!(
        event.as_str(),
        "postToolUse" | "afterShellExecution" | "afterMCPExecution"
    );
    let built = (|| -> Result<Option<Request>, String> {
        Ok(Some(match event.as_str() {
            "beforeShellExecution" | "afterShellExecution" => {
                let command = string(hook, "command").ok_or("the hook's input has no `command`")?;
                let mut args = Map::new();
                args.insert("command".into(), command.into());
                if let Some(cwd) = &cwd {
                    args.insert("cwd".into(), cwd.clone().into());
                }
                request(
                    "run_terminal_cmd".to_owned(),
                    Value::Object(args),
                    None,
                    true,
                )
            }
            "beforeMCPExecution" | "afterMCPExecution" => {
                let tool =
                    string(hook, "tool_name").ok_or("the hook's input has no `tool_name`")?;
                let args = super::arguments(hook.get("tool_input"), "tool_input")?;
                let server = string(hook, "mcp_server_name").or_else(|| string(hook, "server"));
                request(tool, args, server, true)
            }
            "beforeReadFile" | "beforeTabFileRead" => {
                let path =
                    string(hook, "file_path").ok_or("the hook's input has no `file_path`")?;
                request("Read".to_owned(), json!({"file_path": path}), None, false)
            }
            "preToolUse" | "postToolUse" => {
                let name =
                    string(hook, "tool_name").ok_or("the hook's input has no `tool_name`")?;
                let raw = hook.get("tool_input");
                let (tool, args, can_ask) = tool_of(&name, raw)?;
                request(tool, args, None, can_ask)
            }
            _ => return Ok(None),
        }))
    })();
    if reports {
        return Ok(match built {
            Ok(Some(request)) => Input::report(&event, request, string(hook, "tool_use_id")),
            _ => Input::acknowledge(&event),
        });
    }
    match built? {
        Some(decided) => Ok(Input::decide(&event, decided)),
        None if ACKNOWLEDGED.contains(&event.as_str()) => Ok(Input::acknowledge(&event)),
        None => Ok(Input::unknown("Cursor", &event)),
    }
}

/// A `preToolUse` tool (the built-in profiles know Cursor's hook names), its arguments, and
/// whether Cursor asks about it (shell and MCP calls: in their own events).
fn tool_of(name: &str, raw: Option<&Value>) -> Result<(String, Value, bool), String> {
    if let Some(tool) = name.strip_prefix("MCP:") {
        let args = super::arguments(raw, "tool_input")?;
        return Ok((tool.to_owned(), args, true));
    }
    // A patch may come as its text rather than an object.
    let args = match raw {
        Some(Value::String(text))
            if name == "ApplyPatch" && serde_json::from_str::<Value>(text).is_err() =>
        {
            json!({"input": text})
        }
        _ => super::arguments(raw, "tool_input")?,
    };
    Ok((name.to_owned(), args, name == "Shell"))
}

pub(super) fn reply(event: &str, answer: &Answer) -> Reply {
    let (permission, message) = match answer {
        Answer::Acknowledge if event == "beforeSubmitPrompt" => {
            return Reply::json(&json!({"continue": true}));
        }
        Answer::Acknowledge => return Reply::json(&json!({})),
        // `--defer-ask`: no objection, so Cursor's own rules decide.
        Answer::Defer => ("allow", None),
        Answer::Allow(r) | Answer::AllowRewritten(r, _) => ("allow", Some(r)),
        Answer::Deny(r) => ("deny", Some(r)),
        Answer::Ask(r) => ("ask", Some(r)),
    };
    let mut out = Map::new();
    out.insert("permission".into(), permission.into());
    if let Some(message) = message {
        out.insert("user_message".into(), message.clone().into());
        out.insert("agent_message".into(), message.clone().into());
    }
    let mut reply = Reply::json(&Value::Object(out));
    if permission == "deny" {
        reply.exit = 2;
    }
    reply
}
