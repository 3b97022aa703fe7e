//! External requesters: a gateway or another program submits a call and gets its decision —
//! at once, or, when a person must answer, an id to wait on.

use std::time::{Duration, SystemTime};

use axum::Json;
use axum::extract::State;

use crate::body::{Path, Query};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use toolgate_policy::{Call, Choice, Decision, Evaluation, Layer};
use toolgate_runtime::ask::{Consulted, Offer, stored_answer_at};
use toolgate_runtime::{
    Effect, GrantContext, PermissionRequest, Resolution, Scope, ScopeKind, messages,
};
use toolgate_store::{
    Batch, DecisionQuery, DecisionRow, DecisionStatus, EventRecord, JsonText, PendingRecord,
};

use crate::body::JsonBody;
use crate::error::ApiError;
use crate::lifecycle::{Ending, close_until_recorded, settle_unanswered};
use crate::state::AppState;

/// The longest a `GET /api/decisions/{id}?wait=` waits.
pub const MAX_WAIT: Duration = Duration::from_secs(60);

/// Who asks, in requests the daemon publishes for external requesters.
pub(crate) const SOURCE: &str = "toolgate";

pub(crate) fn now() -> String {
    humantime::format_rfc3339_micros(SystemTime::now()).to_string()
}

fn scope_of(call: &Call, request_id: &str) -> Scope {
    Scope {
        session: call.context.session.as_deref().map(Into::into),
        branch: call.context.branch.as_deref().map(Into::into),
        tool_call_id: Some(request_id.to_owned()),
        ..Scope::default()
    }
}

/// What the policy decides for a call of a session with this taint (see `crate::taint`).
pub(crate) fn decide(
    policy: &toolgate_policy::Policy,
    call: &Call,
    taint: Option<&toolgate_policy::SessionTaint>,
) -> Evaluation {
    let evaluation = policy.evaluate(call);
    match taint {
        Some(taint) => policy.under_taint(evaluation, taint),
        None => evaluation,
    }
}

/// The grant context of an external call.
pub(crate) fn grant_context(call: &Call) -> GrantContext {
    GrantContext {
        session: call.context.session.clone().unwrap_or_default(),
        branch: call.context.branch.clone().unwrap_or_default(),
        turn: 0,
        workspace: call.context.workspace.as_ref().map(Into::into),
    }
}

/// What an event says about the call it concerns (DESIGN §7's fields), kept with a pending
/// request so the event that resolves it says the same.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Facts {
    pub(crate) session: Option<String>,
    pub(crate) branch: Option<String>,
    pub(crate) server: Option<String>,
    /// The agent that asked (`context.agent`), when the call names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) agent: Option<String>,
    pub(crate) action: String,
    pub(crate) resource: Option<String>,
    /// The call's whole command line, when it runs one (what the resource, one simple command
    /// of it, is part of).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) command: Option<String>,
    pub(crate) rule: Option<String>,
}

/// The most of a command line an event keeps.
const MAX_COMMAND: usize = 4000;

/// A call's whole command line, from its arguments: its `command` (or `cmd`) argument, text or
/// words, cut to [`MAX_COMMAND`] characters.
pub(crate) fn command_line(args: &Value) -> Option<String> {
    let value = args.get("command").or_else(|| args.get("cmd"))?;
    let line = match value {
        Value::String(text) => text.clone(),
        Value::Array(words) => words
            .iter()
            .map(|w| w.as_str().map_or_else(|| w.to_string(), str::to_owned))
            .collect::<Vec<_>>()
            .join(" "),
        _ => return None,
    };
    Some(match line.char_indices().nth(MAX_COMMAND) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    })
}

impl Facts {
    pub(crate) fn new(call: &Call, evaluation: &Evaluation) -> Facts {
        let resource = evaluation
            .deciding_subject()
            .and_then(|s| s.subject.resource());
        Facts {
            session: call.context.session.clone(),
            branch: call.context.branch.clone(),
            server: call.context.server.clone(),
            agent: call.context.agent.clone(),
            action: call.tool.clone(),
            resource,
            command: command_line(&call.args),
            rule: evaluation.rule_name().map(str::to_owned),
        }
    }

    /// A permission event with these facts (`decision` absent while pending), about the
    /// request `request_id`, which is also the tool call's id.
    pub(crate) fn event<'a>(
        &'a self,
        kind: &'a str,
        request_id: &'a str,
        decision: Option<Decision>,
        layer: Layer,
        reason: &'a str,
        actor: &'a str,
    ) -> PermissionEvent<'a> {
        PermissionEvent {
            facts: self,
            kind,
            request_id,
            tool_call_id: request_id,
            turn: None,
            decision,
            layer,
            reason,
            actor,
            request: None,
            answer: None,
            grants: Vec::new(),
        }
    }
}

/// A permission event (DESIGN §7), written straight to its JSON text.
pub(crate) struct PermissionEvent<'a> {
    facts: &'a Facts,
    kind: &'a str,
    request_id: &'a str,
    pub(crate) tool_call_id: &'a str,
    pub(crate) turn: Option<u64>,
    decision: Option<Decision>,
    layer: Layer,
    reason: &'a str,
    actor: &'a str,
    /// The request as published (in `permission_requested`).
    pub(crate) request: Option<&'a PermissionRequest>,
    /// The answer that resolved it, when a person's did (in `permission_resolved`).
    pub(crate) answer: Option<Choice>,
    /// The ids of the grants that answer made.
    pub(crate) grants: Vec<String>,
}

impl PermissionEvent<'_> {
    /// The event, stamped now.
    pub(crate) fn record(&self) -> Result<EventRecord, serde_json::Error> {
        self.record_at(now())
    }

    /// The event, stamped `time` (RFC 3339, as [`now`] writes it).
    pub(crate) fn record_at(&self, time: String) -> Result<EventRecord, serde_json::Error> {
        #[derive(serde::Serialize)]
        struct Body<'a> {
            session: &'a Option<String>,
            branch: &'a Option<String>,
            turn: Option<u64>,
            request_id: &'a str,
            tool_call_id: &'a str,
            action: &'a str,
            resource: &'a Option<String>,
            #[serde(skip_serializing_if = "Option::is_none")]
            command: &'a Option<String>,
            #[serde(skip_serializing_if = "Option::is_none")]
            decision: Option<Decision>,
            rule: &'a Option<String>,
            layer: Layer,
            reason: &'a str,
            actor: &'a str,
            server: &'a Option<String>,
            #[serde(skip_serializing_if = "Option::is_none")]
            agent: &'a Option<String>,
            #[serde(skip_serializing_if = "Option::is_none")]
            request: Option<&'a PermissionRequest>,
            #[serde(skip_serializing_if = "Option::is_none")]
            answer: Option<Choice>,
            #[serde(skip_serializing_if = "<[String]>::is_empty")]
            grants: &'a [String],
            #[serde(rename = "type")]
            kind: &'a str,
            timestamp: &'a str,
            schema: &'a str,
        }
        let facts = self.facts;
        let body = JsonText::of(&Body {
            session: &facts.session,
            branch: &facts.branch,
            turn: self.turn,
            request_id: self.request_id,
            tool_call_id: self.tool_call_id,
            action: &facts.action,
            resource: &facts.resource,
            command: &facts.command,
            decision: self.decision,
            rule: &facts.rule,
            layer: self.layer,
            reason: self.reason,
            actor: self.actor,
            server: &facts.server,
            agent: &facts.agent,
            request: self.request,
            answer: self.answer,
            grants: &self.grants,
            kind: self.kind,
            timestamp: &time,
            schema: toolgate_runtime::EVENT_SCHEMA,
        })?;
        Ok(EventRecord {
            seq: 0,
            kind: self.kind.to_owned(),
            time,
            session: facts.session.clone(),
            request_id: Some(self.request_id.to_owned()),
            tool_call_id: Some(self.tool_call_id.to_owned()),
            body,
        })
    }
}

/// The fields of an outcome that offer answers to a person: only a pending outcome has them.
pub(crate) const OFFER: &[&str] = &["choices", "always", "timeout_ms", "grant"];

fn outcome(id: &str, status: &str, evaluation: &Evaluation, extra: Map<String, Value>) -> Value {
    let mut body = match serde_json::to_value(evaluation) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    };
    // A decided call offers nothing: what a person would have been offered goes.
    if status != "pending" {
        for key in OFFER {
            body.remove(*key);
        }
    }
    body.insert("id".into(), json!(id));
    body.insert("status".into(), json!(status));
    body.extend(extra);
    Value::Object(body)
}

/// `POST /api/decisions`: a call in; `200` with its decision, or `202` with an id to wait on.
pub(crate) async fn submit(
    State(state): State<AppState>,
    Query(crate::body::NoQuery {}): Query<crate::body::NoQuery>,
    JsonBody(mut body): JsonBody,
) -> Result<Response, ApiError> {
    let mut call = Call::from_value(body.clone())
        .map_err(|e| ApiError::bad_request("invalid_call", e.message))?;
    crate::sessions::check_workspace(
        call.context.workspace.as_deref(),
        "the call's `context.workspace`",
    )?;
    crate::sessions::check_branch(call.context.branch.as_deref())?;
    let mut taint = None;
    if let Some(session) = &call.context.session {
        let known = crate::sessions::ensure(
            &state,
            session,
            call.context.workspace.as_deref(),
            call.context.branch.as_deref(),
        )
        .await?;
        taint = known.taint;
        // A call that names no workspace is in its session's (checked again: an older toolgate
        // saved relative ones).
        if call.context.workspace.is_none() {
            crate::sessions::check_workspace(
                known.workspace.as_deref(),
                "the session's workspace (give the call's `context.workspace`)",
            )?;
            call.context.workspace = known.workspace;
            // Kept with the call, as the workspace it was decided in.
            if let (Some(workspace), Some(Value::Object(context))) = (
                &call.context.workspace,
                body.as_object_mut().map(|b| {
                    b.entry("context")
                        .or_insert_with(|| Value::Object(Map::new()))
                }),
            ) {
                context.insert("workspace".into(), json!(workspace));
            }
        }
    }
    let evaluation = decide(&state.policy(), &call, taint.as_ref());
    let id = uuid::Uuid::new_v4().to_string();
    let created = now();
    let decided =
        |evaluation: &Evaluation, decision: Decision, layer: Layer, reason: &str, actor: &str| {
            let mut extra = Map::new();
            extra.insert("decision".into(), json!(decision));
            extra.insert("layer".into(), json!(layer));
            extra.insert("reason".into(), json!(reason));
            extra.insert("actor".into(), json!(actor));
            let result = JsonText::of(&outcome(&id, "decided", evaluation, extra))?;
            let event = Facts::new(&call, evaluation)
                .event("decision", &id, Some(decision), layer, reason, actor)
                .record()?;
            // The response is the outcome as recorded.
            let response = crate::outcome::respond(StatusCode::OK, &result);
            let row = DecisionRow {
                id: id.clone(),
                status: DecisionStatus::Decided,
                call: body.clone(),
                result,
                created: created.clone(),
                updated: created.clone(),
            };
            Ok::<_, ApiError>((row, event, response))
        };
    // A decision made at once: its row and event committed, then its response.
    let answer_now = async |(row, event, response): (DecisionRow, EventRecord, Response)| {
        state
            .commit(Batch {
                events: vec![event],
                decision: Some(row),
                ..Batch::default()
            })
            .await?;
        Ok::<_, ApiError>(response)
    };
    match evaluation.decision {
        Decision::Allow | Decision::Deny => {
            return answer_now(decided(
                &evaluation,
                evaluation.decision,
                evaluation.layer,
                &evaluation.reason,
                "policy",
            )?)
            .await;
        }
        Decision::Ask => {}
    }

    let grant_cx = grant_context(&call);
    let now = state.now();
    let open =
        match stored_answer_at(&**state.store(), &call.tool, &evaluation, &grant_cx, now).await? {
            Consulted::Open(open) => open,
            Consulted::Answered(stored) => {
                let (decision, reason) = match stored.effect {
                    Effect::Allow => (
                        Decision::Allow,
                        format!("allowed by a stored grant ({})", stored.describe()),
                    ),
                    Effect::Deny => (Decision::Deny, stored.refusal(&call.tool)),
                };
                return answer_now(decided(
                    &evaluation,
                    decision,
                    Layer::Grant,
                    &reason,
                    &stored.actor(),
                )?)
                .await;
            }
        };

    // An "always" answer is remembered for the call's session; a call that names none has
    // nothing to scope it to (every other session-less caller would share it), so it is not
    // offered.
    let offer = match call.context.session.as_deref() {
        // "Always" covers what no grant answers yet.
        Some(session) if !session.is_empty() => Offer::for_subjects(
            &evaluation,
            ScopeKind::Session,
            &open,
        )
        .scoped(&evaluation, &call.tool, call.context.workspace.as_deref()),
        _ => Offer::new(&evaluation, ScopeKind::Session).once_only(),
    };
    let request = PermissionRequest {
        id: id.clone(),
        source: SOURCE.to_owned(),
        tool: call.tool.clone(),
        description: messages::NO_DESCRIPTION.to_owned(),
        call_id: id.clone(),
        arguments: call.args.clone(),
        reason: evaluation.reason.to_string(),
        rule: evaluation.rule_name().map(str::to_owned),
        layer: evaluation.layer,
        choices: offer.choices.clone(),
        always: offer.always.clone(),
        timeout_ms: u64::try_from(offer.timeout.as_millis()).unwrap_or(u64::MAX),
        workspace: call.context.workspace.clone(),
    };
    let mut extra = Map::new();
    extra.insert("choices".into(), json!(request.choices));
    extra.insert("always".into(), json!(request.always));
    let result = JsonText::of(&outcome(&id, "pending", &evaluation, extra))?;
    let response = crate::outcome::respond(StatusCode::ACCEPTED, &result);
    let facts = Facts::new(&call, &evaluation);
    let mut event = facts.event(
        "permission_requested",
        &id,
        None,
        evaluation.layer,
        &evaluation.reason,
        "policy",
    );
    event.request = Some(&request);
    let event = event.record()?;
    let pending = PendingRecord {
        id: id.clone(),
        kind: "decision".into(),
        session: call.context.session.clone(),
        created: created.clone(),
        request: json!({"request": request, "call": body, "facts": facts}),
    };
    // What it weighs while it waits: its record, and the call kept with its decision.
    let bytes = serde_json::to_string(&pending.request)
        .map_or(0, |text| text.len())
        .saturating_add(result.as_str().len());
    let room = state.room_for(call.context.session.as_deref(), bytes)?;
    let row = DecisionRow {
        id: id.clone(),
        status: DecisionStatus::Pending,
        call: body.clone(),
        result,
        created: created.clone(),
        updated: created,
    };
    let scope = scope_of(&call, &id);
    crate::lifecycle::open(
        &state,
        crate::lifecycle::Opening {
            id,
            facts,
            row,
            room,
            scope,
            request,
            pending,
            event,
            timeout: offer.timeout,
        },
    )
    .await?;
    Ok(response)
}

/// `DELETE /api/decisions/{id}?by=NAME`: the requester withdraws a call that waits for a
/// person, because it stopped waiting (its own timeout, a call its client cancelled): the
/// request ends withdrawn — its `permission_resolved` event has layer `withdrawn`, no
/// decision, HPD's "cancelled" reason and `actor` `by`, else `requester` — and its polls hear a
/// refusal (layer `withdrawn`); the answer is the decision as it now stands. One no longer pending is a `409` and changes
/// nothing.
pub(crate) async fn withdraw(
    State(state): State<AppState>,
    who: Option<axum::Extension<crate::roles::Who>>,
    Path(id): Path<String>,
    Query(query): Query<crate::grants::ByQuery>,
) -> Result<Response, ApiError> {
    let by = crate::roles::acting(
        who.as_deref(),
        crate::approvals::named_actor(query.by.as_deref(), "requester")?,
    );
    let resolved = |message: String| ApiError::conflict("already_resolved", message);
    let Some(open) = state.open_request(&id) else {
        if let Some(message) = crate::approvals::no_longer_pending(&state, &id, None).await? {
            return Err(resolved(message));
        }
        return Err(ApiError::not_found(format!(
            "no pending decision `{id}` (only a call sent to `POST /api/decisions` is \
             withdrawn here)"
        )));
    };
    let being_answered = || {
        resolved(format!(
            "request `{id}` already has an answer, which is being recorded"
        ))
    };
    match state.inner.timer.cancel(&id) {
        Some(Some(Resolution::Cancelled)) => {}
        // Ended just before by its timeout, or answered: that stands.
        Some(Some(resolution)) => {
            settle_unanswered(&state, &id, &open.facts, resolution).await;
            return Err(
                match crate::approvals::no_longer_pending(&state, &id, None).await? {
                    Some(message) => resolved(message),
                    None => being_answered(),
                },
            );
        }
        Some(None) | None => return Err(being_answered()),
    }
    // Recorded as withdrawn, not as refused: the requester may have the call decided
    // elsewhere (an agent's own prompt). A poll still waiting on it hears a refusal.
    let ending = Ending {
        decision: Decision::Deny,
        reason: messages::CANCELLED.to_owned(),
        layer: Layer::Withdrawn,
        actor: by,
    };
    close_until_recorded(&state, &id, &open.facts, ending).await;
    match state.store().decision(&id).await? {
        Some(row) if row.status == DecisionStatus::Decided => {
            Ok(crate::outcome::respond(StatusCode::OK, &row.result))
        }
        // Not recorded yet (the store refused): it is tried again until it is, and the
        // request is no longer answerable meanwhile.
        _ => Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "store_unavailable",
            format!(
                "request `{id}` is withdrawn, but the store did not take it yet; it is \
                 refused as soon as the store does"
            ),
        )),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WaitQuery {
    wait: Option<f64>,
}

/// What `GET /api/decisions` reads (a parameter not among them is refused).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListQuery {
    /// Calls made at or after this RFC 3339 time.
    since: Option<String>,
    /// Calls of this session (`context.session`).
    session: Option<String>,
    /// Calls after this one: the `next` of the page before.
    after: Option<String>,
    /// At most this many (1 to 1,000; 100 when absent).
    limit: Option<u32>,
}

/// A page of the calls of the audit log.
#[derive(serde::Serialize)]
pub(crate) struct CallPage {
    decisions: Vec<LoggedCall>,
    /// Where the next page starts (`after`): the last call's position, `null` when the page is
    /// empty.
    next: Option<String>,
}

/// One call of the audit log: as submitted (its workspace filled in from its session's), and
/// its outcome as served.
#[derive(serde::Serialize)]
struct LoggedCall {
    id: String,
    status: DecisionStatus,
    created: String,
    updated: String,
    call: Value,
    outcome: JsonText,
}

/// `GET /api/decisions`: the calls external requesters submitted, oldest first, each with its
/// outcome, a page at a time (what `toolgate replay` re-evaluates).
pub(crate) async fn list(
    State(state): State<AppState>,
    Query(query): Query<ListQuery>,
) -> Result<Json<CallPage>, ApiError> {
    let since = match &query.since {
        None => None,
        Some(text) => Some(crate::events::since(text).ok_or_else(|| {
            ApiError::bad_request(
                "bad_since",
                "`since` is an RFC 3339 time, like 2026-11-22T10:00:00Z (write a `+` in a URL as \
                 `%2B`)",
            )
        })?),
    };
    crate::body::not_empty(
        query.session.as_deref(),
        "bad_session",
        "`session` names a session; leave it out for every session's calls",
    )?;
    let after = match &query.after {
        None => None,
        Some(text) => Some(DecisionQuery::parse_cursor(text).ok_or_else(|| {
            ApiError::bad_request(
                "bad_after",
                "`after` is the `next` of the page before, as it was given",
            )
        })?),
    };
    let limit = crate::events::page_size(query.limit, "limit")?.unwrap_or(100);
    let rows = state
        .store()
        .decisions_page(
            &DecisionQuery {
                since,
                session: query.session,
                after,
            },
            limit,
        )
        .await?;
    let next = rows.last().map(DecisionRow::cursor);
    let decisions = rows
        .into_iter()
        .map(|row| LoggedCall {
            status: row.status,
            id: row.id,
            created: row.created,
            updated: row.updated,
            call: row.call,
            outcome: row.result,
        })
        .collect();
    Ok(Json(CallPage { decisions, next }))
}

/// `GET /api/decisions/{id}?wait=SECONDS`: the decision, waiting up to `wait` seconds
/// (at most 60) while it is pending.
pub(crate) async fn get(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(query): Query<WaitQuery>,
) -> Result<Response, ApiError> {
    let wait = match query.wait {
        None => Duration::ZERO,
        Some(w) if w.is_finite() && (0.0..=MAX_WAIT.as_secs_f64()).contains(&w) => {
            Duration::from_secs_f64(w)
        }
        Some(_) => {
            return Err(ApiError::bad_request(
                "bad_wait",
                "`wait` is a number of seconds, 0 to 60",
            ));
        }
    };
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        // Interest first: a change while the row is read still wakes this poll.
        let mut watch = state.watch_decision(&id);
        // Pending, and opened by this process: as it stands, without reading the store (it is
        // remembered once committed, and forgotten before its end is announced) — unless other
        // daemons share the store, where an answer given on another is there first.
        let open = state.open_request(&id).filter(|_| !state.store().shared());
        let stored = match open {
            Some(_) => None,
            None => Some(
                state
                    .store()
                    .decision(&id)
                    .await?
                    .ok_or_else(|| ApiError::not_found(format!("no decision `{id}`")))?,
            ),
        };
        let decided = stored
            .as_ref()
            .is_some_and(|row| row.status == DecisionStatus::Decided);
        let as_it_stands = move || match (open, stored) {
            (_, Some(row)) => crate::outcome::respond(StatusCode::OK, &row.result),
            (Some(open), None) => crate::outcome::respond(StatusCode::OK, &open.row.result),
            (None, None) => Json(Value::Null).into_response(),
        };
        if decided {
            return Ok(as_it_stands());
        }
        let closing = state.inner.closing.clone();
        let changed = tokio::select! {
            changed = tokio::time::timeout_at(deadline, watch.changed()) => changed,
            // The daemon is stopping: the decision as it stands (the requester polls again).
            () = closing.cancelled() => return Ok(as_it_stands()),
        };
        match changed {
            Err(_) => return Ok(as_it_stands()),
            // Written once by whoever decided it (who hears that this poll has its response
            // when `released` is dropped, here).
            Ok(Some(released)) => {
                return Ok((
                    [(
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("application/json"),
                    )],
                    released.result,
                )
                    .into_response());
            }
            // Changed without its final form: read it again.
            Ok(None) => {}
        }
    }
}
