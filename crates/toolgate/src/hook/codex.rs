//! Codex's hooks (codex-rs `hooks/src/schema.rs` and `hooks/src/events/pre_tool_use.rs`,
//! `permission_request.rs`; developers.openai.com/codex/hooks; Codex 0.14x–0.15x). The input is
//! Claude Code's shape (`hook_event_name`, `session_id`, `cwd`, `permission_mode`, `tool_name`,
//! `tool_input`); every shell tool is `Bash` with `{"command": …}`, a patch is `apply_patch`
//! with the patch text in `command`, an MCP tool `mcp__SERVER__TOOL`. The workspace is `cwd`.
//!
//! - `PreToolUse` can only block: `permissionDecision: "deny"` with a reason refuses the call
//!   (the model reads "Command blocked by PreToolUse hook: …"); an allow is no output (a bare
//!   `allow` fails the hook). It cannot ask, so toolgate's ask is refused with the reason, or
//!   with `--defer-ask` left to Codex's own approval flow.
//! - `PermissionRequest` (Codex is about to ask its person) answers
//!   `decision.behavior` `allow` (approved, no prompt) or `deny`; an ask is no output, and
//!   Codex asks.
//! - Codex rejects unknown keys in the output, so each reply carries only the documented ones.

use serde_json::{Value, json};

use super::claude::{self, Dialect};
use super::{Answer, Input, Reply};

const CODEX: Dialect = Dialect {
    agent: "Codex",
    pre_tool_use_asks: false,
    acknowledged: &[
        "PostToolUse",
        "SessionStart",
        "UserPromptSubmit",
        "Stop",
        "PreCompact",
        "PostCompact",
        "SubagentStart",
        "SubagentStop",
    ],
};

pub(super) fn read(hook: &Value) -> Result<Input, String> {
    claude::read_as(hook, &CODEX, None)
}

pub(super) fn reply(event: &str, answer: &Answer) -> Reply {
    match (event, answer) {
        (_, Answer::Acknowledge | Answer::Defer) => Reply::empty(),
        ("PermissionRequest", answer) => claude::permission_request(answer),
        ("PreToolUse", Answer::Deny(reason) | Answer::Ask(reason)) => Reply::json(&json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        })),
        ("PreToolUse", Answer::Allow(_) | Answer::AllowRewritten(..)) => Reply::empty(),
        (
            _,
            Answer::Deny(reason)
            | Answer::Ask(reason)
            | Answer::Allow(reason)
            | Answer::AllowRewritten(reason, _),
        ) => Reply::blocked(reason),
    }
}
