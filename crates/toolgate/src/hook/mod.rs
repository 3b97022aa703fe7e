//! `toolgate hook claude`: toolgate as Claude Code's `PreToolUse` hook. Claude Code runs it
//! before each tool call with the call on stdin (`tool_name`, `tool_input`, `cwd`,
//! `session_id`) and reads the decision from stdout (`hookSpecificOutput.permissionDecision`:
//! `allow` runs the call without a prompt, `deny` refuses it with the reason, `ask` shows
//! Claude Code's own prompt with the reason).
//!
//! Whatever goes wrong — unreadable input, a policy that does not load — is a `deny` with what
//! went wrong as its reason: a hook that fails any other way lets the call through.
//!
//! With `--daemon`, the daemon decides instead (its policy, its grants, its audit log): a call
//! it asks about waits for a person on the approval page for up to `--wait` seconds, then is
//! withdrawn from the page and left to Claude Code's own prompt (`ask`) — an answer must come
//! before Claude Code's hook timeout, past which it runs the call. A daemon that cannot be
//! reached is an `ask` too.

use std::io::{Read, Write};

use clap::{Args, ValueEnum};
use serde_json::{Map, Value, json};
use toolgate_policy::{Call, Decision, LoadOptions};

use crate::args::PolicyArgs;
use crate::client::{Client, ClientArgs, field};
use crate::{EXIT_OK, Failure};

/// Decides tool calls as an agent's permission hook: the call on stdin, the decision on stdout.
#[derive(Debug, Args)]
pub(crate) struct HookArgs {
    /// Whose hook protocol to speak.
    #[arg(value_enum)]
    agent: Agent,
    #[command(flatten)]
    policy: PolicyArgs,
    /// Let the daemon decide (`toolgate serve`): its asks wait on the approval page.
    #[arg(long)]
    daemon: bool,
    /// With --daemon, how long a call waits for a person on the page before it is withdrawn
    /// from it and left to the agent's own prompt (keep it under the hook's timeout, 60 s by default in Claude Code).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 50.0,
        requires = "daemon"
    )]
    wait: f64,
    #[command(flatten)]
    client: ClientArgs,
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
    if args.daemon {
        return Ok(ask_the_daemon(args, &call));
    }
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

/// The daemon's decision on `call`, waiting up to `--wait` seconds for a person; `ask` (the
/// agent's own prompt) when none comes in time or the daemon cannot be reached.
fn ask_the_daemon(args: &HookArgs, call: &Call) -> (&'static str, String) {
    let prompt = |why: String| ("ask", format!("toolgate: {why}"));
    let client = match Client::new(&args.client) {
        Ok(client) => client,
        Err(e) => return prompt(format!("cannot ask the daemon ({})", failure_text(&e))),
    };
    let body = match serde_json::to_value(call) {
        Ok(body) => body,
        Err(e) => return prompt(format!("cannot send the call: {e}")),
    };
    let decided = |body: &Value| -> Option<(&'static str, String)> {
        let reason = field(body, "reason").as_str().unwrap_or_default();
        match field(body, "decision").as_str()? {
            "allow" => Some(("allow", format!("toolgate: {reason}"))),
            "deny" => Some(("deny", format!("toolgate: {reason}"))),
            _ => None,
        }
    };
    let reply = match client.send("POST", "/api/decisions", Some(&body)) {
        Ok(reply) => reply,
        Err(e) => return prompt(format!("cannot ask the daemon ({})", failure_text(&e))),
    };
    let id = match reply.status {
        200 => {
            return decided(&reply.body)
                .unwrap_or_else(|| prompt("the daemon's answer has no decision".into()));
        }
        202 => field(&reply.body, "id")
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        _ => return prompt(format!("the daemon refused the call: {}", reply.error())),
    };
    let deadline = std::time::Instant::now()
        + std::time::Duration::from_secs_f64(args.wait.clamp(0.0, 3600.0));
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            break;
        }
        let wait = left.as_secs_f64().min(60.0);
        let path = format!(
            "/api/decisions/{}?wait={wait:.1}",
            crate::client::encode(&id)
        );
        match client.send("GET", &path, None) {
            Ok(reply) if reply.status == 200 => {
                if let Some(answer) = decided(&reply.body) {
                    return answer;
                }
            }
            Ok(reply) => {
                return prompt(format!("the daemon lost request `{id}`: {}", reply.error()));
            }
            Err(e) => return prompt(format!("the daemon went away ({})", failure_text(&e))),
        }
    }
    // Nobody answered in time: the call goes to the agent's own prompt, so it is withdrawn
    // from the page (an answer there would reach nobody). An answer that came meanwhile wins.
    let path = format!("/api/decisions/{}", crate::client::encode(&id));
    let withdrawn = match client.send("DELETE", &path, None) {
        Ok(reply) if reply.status == 200 => "it is withdrawn from the page",
        Ok(reply) if reply.status == 409 => {
            if let Ok(reply) = client.send("GET", &path, None)
                && reply.status == 200
                && let Some(answer) = decided(&reply.body)
            {
                return answer;
            }
            "it is no longer pending"
        }
        _ => "it still waits there",
    };
    prompt(format!(
        "{} — nobody answered on the approval page in time (request `{id}`: {withdrawn})",
        field(&reply.body, "reason")
            .as_str()
            .unwrap_or("a person decides")
    ))
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
