//! `toolgate hook claude`: toolgate as Claude Code's `PreToolUse` hook. Claude Code runs it
//! before each tool call with the call on stdin (`tool_name`, `tool_input`, `cwd`,
//! `session_id`) and reads the decision from stdout (`hookSpecificOutput.permissionDecision`:
//! `allow` runs the call without a prompt, `deny` refuses it with the reason, `ask` shows
//! Claude Code's own prompt with the reason).
//!
//! Whatever goes wrong — unreadable input, a policy that does not load — is a `deny` with what
//! went wrong as its reason: a hook that fails any other way lets the call through.

use std::io::{Read, Write};

use clap::{Args, ValueEnum};
use serde_json::{Map, Value, json};
use toolgate_policy::{Call, Decision, LoadOptions};

use crate::args::PolicyArgs;
use crate::{EXIT_OK, Failure};

/// Decides tool calls as an agent's permission hook: the call on stdin, the decision on stdout.
#[derive(Debug, Args)]
pub(crate) struct HookArgs {
    /// Whose hook protocol to speak.
    #[arg(value_enum)]
    agent: Agent,
    #[command(flatten)]
    policy: PolicyArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Agent {
    /// Claude Code's `PreToolUse` hook.
    Claude,
}

/// The most of stdin read: a tool call's arguments, not a stream.
const MAX_INPUT: u64 = 16 << 20;

pub(crate) fn run(args: &HookArgs) -> Result<u8, Failure> {
    let Agent::Claude = args.agent;
    let mut input = String::new();
    let read = std::io::stdin()
        .take(MAX_INPUT + 1)
        .read_to_string(&mut input);
    let (decision, reason) = match read {
        Err(e) => refused(format!("cannot read the hook's input: {e}")),
        Ok(_) if input.len() as u64 > MAX_INPUT => {
            refused("the hook's input is larger than 16 MiB".to_owned())
        }
        Ok(_) => decide(args, &input).unwrap_or_else(refused),
    };
    let output = json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": reason,
        }
    });
    let mut out = std::io::stdout().lock();
    writeln!(out, "{output}")?;
    Ok(EXIT_OK)
}

fn refused(why: String) -> (&'static str, String) {
    ("deny", format!("toolgate refused the call: {why}"))
}

/// The decision and its reason for one hook input.
fn decide(args: &HookArgs, input: &str) -> Result<(&'static str, String), String> {
    let hook: Value =
        serde_json::from_str(input).map_err(|e| format!("the hook's input is not JSON: {e}"))?;
    let (call, folder) = call_of(&hook)?;
    let files = args.policy.files_from(&folder);
    let policy = PolicyArgs::load_files(&files, LoadOptions::default())
        .map_err(|e| format!("the policy does not load: {}", failure_text(&e)))?;
    let evaluation = policy.evaluate(&call);
    let decision = match evaluation.decision {
        Decision::Allow => "allow",
        Decision::Deny => "deny",
        Decision::Ask => "ask",
    };
    let reason = match evaluation.rule_name() {
        Some(rule) => format!("toolgate ({rule}): {}", evaluation.reason),
        None => format!("toolgate: {}", evaluation.reason),
    };
    Ok((decision, reason))
}

fn failure_text(failure: &Failure) -> String {
    match failure {
        Failure::Message(message) => message.clone(),
        Failure::BrokenPipe => "broken pipe".to_owned(),
    }
}

/// The call a `PreToolUse` input describes, and the folder its project's policy is found from:
/// `$CLAUDE_PROJECT_DIR` (the workspace), else the input's `cwd`. An MCP tool
/// (`mcp__SERVER__TOOL`) is the server's tool, so its profile applies.
fn call_of(hook: &Value) -> Result<(Call, std::path::PathBuf), String> {
    let text = |key: &str| {
        hook.get(key)
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
    };
    let name = text("tool_name").ok_or("the hook's input has no `tool_name`")?;
    let arguments = match hook.get("tool_input") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(object @ Value::Object(_)) => object.clone(),
        Some(_) => return Err("the hook's `tool_input` is not an object".to_owned()),
    };
    let project = std::env::var("CLAUDE_PROJECT_DIR")
        .ok()
        .filter(|d| !d.is_empty());
    let cwd = text("cwd");
    let workspace = project
        .as_deref()
        .or(cwd)
        .ok_or("neither $CLAUDE_PROJECT_DIR nor the hook's `cwd` says where the project is")?;
    let mut context = Map::new();
    context.insert("workspace".into(), workspace.into());
    if let Some(cwd) = cwd {
        context.insert("cwd".into(), cwd.into());
    }
    if let Some(session) = text("session_id") {
        context.insert("session".into(), session.into());
    }
    context.insert("agent".into(), "claude-code".into());
    let tool = match name
        .strip_prefix("mcp__")
        .and_then(|rest| rest.split_once("__"))
    {
        Some((server, tool)) if !server.is_empty() && !tool.is_empty() => {
            context.insert("server".into(), server.into());
            tool
        }
        _ => name,
    };
    let call = Call::from_value(json!({"tool": tool, "args": arguments, "context": context}))
        .map_err(|e| format!("the call is not one toolgate reads: {}", e.message))?;
    Ok((call, std::path::PathBuf::from(workspace)))
}
