//! Asking a person through the client: MCP elicitation (`elicitation/create`, form mode).
//!
//! A call the policy asks about is held while the client's person answers a question that says
//! what the call does, why toolgate asks, and what each answer covers. The answer decides: the
//! held call is relayed, or refused; an "always" answer is remembered for the rest of the
//! session as a grant (toolgate-runtime's: its target is the one the policy's `grant` kind
//! names — the command's program and subcommand, the path, the host, or the tool), and later
//! calls it covers are decided without asking. A decline, a cancel, an answer that is none of
//! the offered ones, or no answer before the policy's approval timeout is a refusal.

use std::time::{Instant, SystemTime};

use serde_json::{Value, json};
use toolgate_policy::{AskDetails, Choice, SubjectOutcome};
use toolgate_runtime::grants::{
    Effect, Grant, GrantContext, GrantTarget, ScopeKind, match_grants, targets_for,
};

/// A call held while its question is out.
pub(crate) struct Held {
    /// The call's request id.
    pub(crate) call_id: Value,
    /// The call, as the client wrote it.
    pub(crate) line: String,
    pub(crate) tool: String,
    pub(crate) subjects: Vec<SubjectOutcome>,
    /// The answers offered.
    pub(crate) offered: Vec<Choice>,
    pub(crate) details: AskDetails,
    /// Why toolgate asked, with the rule.
    pub(crate) reason: String,
    /// When it resolves as refused.
    pub(crate) deadline: Instant,
}

/// What an "always" answer to an ask would remember, or `None` when nothing narrower than the
/// question can be named (then no "always" is offered).
pub(crate) fn targets(
    details: &AskDetails,
    subjects: &[SubjectOutcome],
) -> Option<Vec<GrantTarget>> {
    targets_for(details.grant, subjects)
}

/// The answers offered for an ask (toolgate-runtime's rule).
pub(crate) fn offered(details: &AskDetails, subjects: &[SubjectOutcome]) -> Vec<Choice> {
    toolgate_runtime::grants::offered(details, subjects)
}

/// The `elicitation/create` request for a held call.
pub(crate) fn question(id: &str, server: &str, held: &Held) -> Value {
    let covers = toolgate_runtime::grants::covered(held.details.grant, &held.subjects);
    let touches: Vec<String> = held
        .subjects
        .iter()
        .filter_map(|s| s.subject.resource())
        .collect();
    let mut message = format!("`{}` on the `{server}` server wants to run.\n", held.tool);
    if !touches.is_empty() {
        message.push_str(&format!("It touches: {}.\n", touches.join(", ")));
    }
    message.push_str(&format!("{}\n", held.reason));
    let titles: Vec<String> = held
        .offered
        .iter()
        .map(|choice| match choice {
            Choice::AllowOnce => "Allow this call".to_owned(),
            Choice::AllowAlways => format!("Allow {covers} of `{}` for this session", held.tool),
            Choice::RejectOnce => "Deny this call".to_owned(),
            Choice::RejectAlways => format!("Deny {covers} of `{}` for this session", held.tool),
        })
        .collect();
    let values: Vec<&str> = held.offered.iter().map(|c| c.as_str()).collect();
    form_question(
        id,
        message.trim_end(),
        "What toolgate does with this call",
        &values,
        &titles,
    )
}

/// An `elicitation/create` request in form mode that asks for one `decision` among `values`,
/// each shown by its title.
pub(crate) fn form_question(
    id: &str,
    message: &str,
    description: &str,
    values: &[&str],
    titles: &[String],
) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "decision": {
                        "type": "string",
                        "title": "toolgate",
                        "description": description,
                        "enum": values,
                        "enumNames": titles,
                    }
                },
                "required": ["decision"],
            },
        },
    })
}

/// What the client's answer to a question says: the choice, or why there is none.
pub(crate) fn answer(
    message: &serde_json::Map<String, Value>,
    offered: &[Choice],
) -> Result<Choice, &'static str> {
    let Some(result) = message.get("result") else {
        return Err("the client could not ask (it answered the question with an error)");
    };
    match result.get("action").and_then(Value::as_str) {
        Some("accept") => result
            .get("content")
            .and_then(|c| c.get("decision"))
            .and_then(Value::as_str)
            .and_then(|d| d.parse::<Choice>().ok())
            .filter(|c| offered.contains(c))
            .ok_or("the answer was none of the ones offered"),
        Some("decline") => Err("the person declined"),
        _ => Err("the question was cancelled"),
    }
}

/// The session's remembered answers.
#[derive(Default)]
pub(crate) struct SessionGrants {
    grants: Vec<Grant>,
}

impl SessionGrants {
    /// What the remembered answers say about an ask: allow, deny, or nothing.
    pub(crate) fn decide(
        &self,
        tool: &str,
        subjects: &[SubjectOutcome],
        context: &GrantContext,
    ) -> Option<Effect> {
        match_grants(&self.grants, tool, subjects, context, SystemTime::now()).map(|m| m.effect)
    }

    /// Remembers an "always" answer for the rest of the session.
    pub(crate) fn remember(
        &mut self,
        held: &Held,
        choice: Choice,
        context: &GrantContext,
        by: &str,
    ) {
        let effect = if choice.allows() {
            Effect::Allow
        } else {
            Effect::Deny
        };
        for target in targets(&held.details, &held.subjects).unwrap_or_default() {
            self.grants.push(Grant::new(
                effect,
                held.tool.clone(),
                target,
                context.scope(ScopeKind::Session),
                by,
            ));
        }
    }
}
