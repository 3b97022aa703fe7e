//! GitHub Copilot CLI's hooks (github/docs `content/copilot/reference/hooks-reference.md`;
//! github/copilot-cli `changelog.md` to 1.0.78). A `preToolUse` hook gets `sessionId`,
//! `timestamp`, `cwd`, `toolName` and `toolArgs` (an object, or JSON text holding one, as
//! versions differ); a hook configured as `PreToolUse` gets Claude Code's snake_case shape
//! (`tool_name`, `tool_input`) and is read the same way. Shell calls are `bash` (Unix) and
//! `powershell` (Windows), files `view`, `create`, `edit`, the web `web_fetch`. An MCP tool is
//! `SERVER-TOOL`: the server is found among those the user's `mcp-config.json`
//! (`$COPILOT_HOME`, else `~/.copilot`) and the workspace's `.mcp.json` name.
//!
//! The reply is `{"permissionDecision": "allow" | "deny" | "ask", "permissionDecisionReason"}`,
//! exit 0 (`allow` skips Copilot's prompt since 1.0.18, `ask` shows it since 1.0.4); no output
//! leaves the call to Copilot's own rules. `postToolUse` (with `--daemon`: the daemon is told
//! the call's result came into the session, which it may taint) gets the empty reply. Copilot denies the call when the hook fails and lets
//! it through when it times out (30 s unless `timeoutSec` says otherwise).

use std::path::Path;

use serde_json::{Value, json};

use super::{Answer, Input, Reply, Request, env, string};

pub(super) fn read(hook: &Value) -> Result<Input, String> {
    let event = string(hook, "hook_event_name")
        .or_else(|| string(hook, "hookEventName"))
        .unwrap_or_else(|| {
            if hook.get("toolResult").is_some() || hook.get("tool_response").is_some() {
                "postToolUse".to_owned()
            } else {
                "preToolUse".to_owned()
            }
        });
    match event.as_str() {
        "preToolUse" | "PreToolUse" => {}
        // A result came in: with `--daemon` it is reported (refusing would block nothing).
        e @ ("postToolUse" | "PostToolUse") => {
            return Ok(match request_of(hook) {
                Ok(request) => Input::report(e, request, None),
                Err(_) => Input::acknowledge(e),
            });
        }
        e @ ("sessionStart"
        | "sessionEnd"
        | "userPromptSubmitted"
        | "errorOccurred"
        | "agentStop"
        | "subagentStop") => {
            return Ok(Input::acknowledge(e));
        }
        e => return Ok(Input::unknown("Copilot", e)),
    }
    Ok(Input::decide("preToolUse", request_of(hook)?))
}

/// The tool call an input is about.
fn request_of(hook: &Value) -> Result<Request, String> {
    let name = string(hook, "toolName")
        .or_else(|| string(hook, "tool_name"))
        .ok_or("the hook's input has no `toolName`")?;
    let args = match hook.get("toolArgs") {
        Some(args) => super::arguments(Some(args), "toolArgs")?,
        None => super::arguments(hook.get("tool_input"), "tool_input")?,
    };
    let cwd = string(hook, "cwd");
    let workspace = cwd
        .clone()
        .ok_or("the hook's `cwd` does not say where the project is")?;
    let (server, tool) = match mcp_tool(&name, Path::new(&workspace)) {
        Some((server, tool)) => (Some(server), tool),
        None => (None, name),
    };
    let session = string(hook, "sessionId").or_else(|| string(hook, "session_id"));
    Ok(Request::new(tool, args, server, workspace, cwd, session))
}

/// `SERVER-TOOL` as the server and its tool, for a server the MCP configuration names (the
/// longest that fits: a server's own name may hold `-`).
fn mcp_tool(name: &str, workspace: &Path) -> Option<(String, String)> {
    if let Some(split) = super::mcp_double_underscore(name) {
        return Some(split);
    }
    // Copilot's own tools (`bash`, `view`, …) have no `-`: no configuration to read for them.
    if !name.contains('-') {
        return None;
    }
    let home = env("COPILOT_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| env("HOME").map(|h| Path::new(&h).join(".copilot")))?;
    let mut servers = Vec::new();
    for file in [home.join("mcp-config.json"), workspace.join(".mcp.json")] {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        if let Ok(Value::Object(config)) = serde_json::from_str::<Value>(&text)
            && let Some(Value::Object(named)) = config.get("mcpServers")
        {
            servers.extend(named.keys().cloned());
        }
    }
    servers.sort_by_key(|s| std::cmp::Reverse(s.len()));
    servers.iter().find_map(|server| {
        let tool = name.strip_prefix(server.as_str())?.strip_prefix('-')?;
        (!tool.is_empty()).then(|| (server.clone(), tool.to_owned()))
    })
}

pub(super) fn reply(_event: &str, answer: &Answer) -> Reply {
    let (decision, reason) = match answer {
        Answer::Acknowledge | Answer::Defer => return Reply::empty(),
        Answer::Allow(r) | Answer::AllowRewritten(r, _) => ("allow", r),
        Answer::Deny(r) => ("deny", r),
        Answer::Ask(r) => ("ask", r),
    };
    Reply::json(&json!({
        "permissionDecision": decision,
        "permissionDecisionReason": reason,
    }))
}
