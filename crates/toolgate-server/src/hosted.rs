//! Agents the daemon hosts: toolgate-runtime agents running in the daemon's process, whose
//! permission requests join the same pending registry as external requesters' calls.
//!
//! [`AppState::host`] wires an agent to the daemon's broker, event bus and grant store. A bridge
//! task reads that bus and records what the agents do: each permission request becomes a pending
//! request in the store (so the page, `toolgate approvals`, `GET /api/pending`, HPD's and AGH's
//! routes see and answer it, and a restart after a crash resolves it as reject-once), each
//! resolution closes it, and the runs' other events join the audit stream. Streamed text deltas
//! are not stored (the model's whole response is).
//!
//! An answer given over HTTP is committed before the run hears of it, with the grants an
//! "always" answer makes (the run, released, finds them there and does not store them twice).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Weak};

use serde_json::{Value, json};
use toolgate_policy::{Decision, Layer};
use toolgate_runtime::grants::StoreError as GrantStoreError;
use toolgate_runtime::{
    AgentBuilder, Event, EventKind, Grant, GrantContext, GrantStore, MAIN_BRANCH,
    PermissionRequest, Resolution, Response, ScopeKind, messages,
};
use toolgate_store::{Batch, EventRecord, PendingRecord, Store};

use crate::decisions::{Facts, now};
use crate::error::ApiError;
use crate::state::{AppState, Inner};

/// The `kind` of pending records that hosted runs opened.
pub(crate) const HOSTED: &str = "hosted";

impl AppState {
    /// Prepares an agent to run inside the daemon: it asks through the daemon's broker (answered
    /// from the page, the CLI or the seeds' routes, and persisted like every pending request),
    /// publishes on the daemon's event bus (stored in the audit stream) and keeps its grants in
    /// the daemon's store, and its sessions' taint with the daemon's sessions. Add the agent's
    /// `PermissionMiddleware` as usual.
    pub fn host(&self, builder: AgentBuilder) -> AgentBuilder {
        let grants: Arc<dyn GrantStore> = Arc::new(HostedGrants {
            store: Arc::clone(self.store()),
            answered: Arc::clone(&self.inner.answered_with_grants),
        });
        builder
            .broker(self.broker().clone())
            .grants(grants)
            .taints(Arc::new(crate::taint::DaemonTaints {
                state: self.clone(),
            }))
            .approve_through_events()
    }
}

/// A hosted run's grant store: the daemon's, except that the grants of an answer the daemon
/// committed with its grants are not stored again when the run, released, stores them too
/// (not even one revoked meanwhile: it stays revoked).
struct HostedGrants {
    store: Arc<dyn Store>,
    answered: Arc<std::sync::Mutex<AnsweredWithGrants>>,
}

/// Hosted requests whose "always" answer the daemon committed with its grants (the latest
/// [`ANSWERED_KEPT`]).
#[derive(Debug, Default)]
pub(crate) struct AnsweredWithGrants {
    order: std::collections::VecDeque<String>,
    ids: HashSet<String>,
}

/// How many answered requests [`AnsweredWithGrants`] keeps: far more than runs wait on at once
/// (a run stores an answer's grants as soon as it is released).
const ANSWERED_KEPT: usize = 4096;

impl AnsweredWithGrants {
    pub(crate) fn insert(&mut self, id: &str) {
        if self.ids.insert(id.to_owned()) {
            self.order.push_back(id.to_owned());
        }
        while self.order.len() > ANSWERED_KEPT {
            if let Some(oldest) = self.order.pop_front() {
                self.ids.remove(&oldest);
            }
        }
    }

    fn contains(&self, id: &str) -> bool {
        self.ids.contains(id)
    }
}

#[async_trait::async_trait]
impl GrantStore for HostedGrants {
    async fn insert(&self, grant: Grant) -> Result<(), GrantStoreError> {
        if let Some(request) = &grant.request_id
            && crate::state::lock(&self.answered).contains(request)
        {
            return Ok(());
        }
        self.store.insert(grant).await
    }

    async fn for_tool(&self, tool: &str) -> Result<Vec<Grant>, GrantStoreError> {
        self.store.for_tool(tool).await
    }

    async fn applying(
        &self,
        lookup: &toolgate_runtime::Lookup,
    ) -> Result<Vec<Grant>, GrantStoreError> {
        self.store.applying(lookup).await
    }

    async fn use_once(&self, id: &str) -> Result<bool, GrantStoreError> {
        self.store.use_once(id).await
    }

    async fn list(&self) -> Result<Vec<Grant>, GrantStoreError> {
        self.store.list().await
    }

    async fn revoke(&self, id: &str) -> Result<bool, GrantStoreError> {
        self.store.revoke(id).await
    }
}

/// The grants an "always" answer to a hosted request makes, committed with the answer, placed
/// by the request's recorded session, branch, turn and workspace. (A workspace grant for a run
/// whose workspace is not valid UTF-8 cannot be named here; the run, released, stores it.)
pub(crate) fn grants_for(
    record: &PendingRecord,
    request: &PermissionRequest,
    answer: &toolgate_runtime::Answer,
    by: &str,
    now: std::time::SystemTime,
) -> Vec<Grant> {
    let recorded = record.request.get("grant_context");
    let text = |key: &str| {
        recorded
            .and_then(|c| c.get(key))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    crate::approvals::always_grants(request, answer, by, now, |kind| {
        let workspace = text("workspace").map(std::path::PathBuf::from);
        if kind == ScopeKind::Workspace && workspace.is_none() {
            return None;
        }
        Some(GrantContext {
            session: text("session")?,
            branch: text("branch")?,
            turn: recorded
                .and_then(|c| c.get("turn"))
                .and_then(Value::as_u64)?,
            workspace,
        })
    })
}

/// Starts the task that records hosted runs' events. A filter on the publishing side keeps
/// external requesters' requests (recorded where they are opened and answered) and streamed
/// text deltas from waking it. It holds the state weakly and ends with it.
pub(crate) fn start_bridge(state: &AppState) {
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<Arc<Event>>();
    let bus = state.broker().events().clone();
    let subscription = bus.subscribe_fn(move |event| {
        if !is_external(event) && !matches!(event.kind, EventKind::TextDelta { .. }) {
            let _ = sender.send(Arc::new(event.clone()));
        }
    });
    let weak: Weak<Inner> = Arc::downgrade(&state.inner);
    tokio::spawn(async move {
        let mut bridge = Bridge::default();
        while let Some(first) = receiver.recv().await {
            let mut events = vec![first];
            while events.len() < 256
                && let Ok(next) = receiver.try_recv()
            {
                events.push(next);
            }
            let Some(inner) = weak.upgrade() else { break };
            let state = AppState { inner };
            bridge.record(&state, &events).await;
        }
        bus.unsubscribe(subscription);
    });
}

#[derive(Default)]
struct Bridge {
    /// Sessions and branches known to exist in the store.
    known: HashSet<(String, String)>,
    /// Continuation requests asked and not yet resolved: the broker holds them, not the store,
    /// and their resolution is logged as it is.
    continuations: HashSet<String>,
    /// Permission requests the store would not take (see [`Bridge::refuse_unrecorded`]): how
    /// each ended is logged as an event when it does.
    unrecorded: HashMap<String, Unrecorded>,
}

/// What the `permission_resolved` event of a request the store would not take says of it.
struct Unrecorded {
    facts: Facts,
    turn: Option<u64>,
    call_id: String,
}

impl Bridge {
    /// Refuses at once a hosted request the store would not take (nested too deep to store, or
    /// the store down): nobody could see or answer it, and its run would wait out its whole
    /// timeout. The run hears why; how the request ended (this refusal, or what came first) is
    /// logged when the bridge hears of it.
    fn refuse_unrecorded(
        &mut self,
        state: &AppState,
        event: &Event,
        request: &PermissionRequest,
        why: &str,
    ) {
        self.unrecorded.insert(
            request.id.clone(),
            Unrecorded {
                facts: facts(event, request),
                turn: event.scope.turn,
                call_id: request.call_id.clone(),
            },
        );
        state.broker().fail(
            &request.id,
            format!("the request could not be recorded, so it is refused: {why}"),
        );
    }

    async fn record(&mut self, state: &AppState, events: &[Arc<Event>]) {
        let mut plain = Vec::new();
        for event in events {
            if let Some(session) = &event.scope.session {
                let branch = event.scope.branch.as_deref().unwrap_or(MAIN_BRANCH);
                let key = (session.to_string(), branch.to_owned());
                if !self.known.contains(&key) {
                    let known = crate::sessions::record(state, session, None, Some(branch)).await;
                    if known.is_ok() {
                        self.known.insert(key);
                    }
                }
            }
            match &event.kind {
                EventKind::PermissionRequested(request) => {
                    let (pending, requested) = match opened(event, request) {
                        Ok(opened) => opened,
                        Err(error) => {
                            let error = ApiError::from(error);
                            self.refuse_unrecorded(state, event, request, &error.message);
                            report::<()>(Err(error));
                            continue;
                        }
                    };
                    plain.push(requested);
                    let events = std::mem::take(&mut plain);
                    let batch = Batch {
                        open: Some(pending),
                        events: events.clone(),
                        ..Batch::default()
                    };
                    if let Err(error) = state.commit(batch).await {
                        let error = ApiError::from(error);
                        self.refuse_unrecorded(state, event, request, &error.message);
                        report::<()>(Err(error));
                        // The events that were to go with it are kept as every event is: what
                        // nests past the events' bound left out (the request's arguments may
                        // be why the store refused it).
                        plain.extend(events.into_iter().map(
                            |logged| match logged.body.to_value() {
                                Ok(body) => EventRecord::new(&logged.kind, body),
                                Err(_) => logged,
                            },
                        ));
                    }
                }
                EventKind::ContinuationRequested(request) => {
                    self.continuations.insert(request.id.clone());
                    plain.push(EventRecord::from_event(event));
                }
                EventKind::RequestResolved { request_id, .. }
                    if self.continuations.remove(request_id) =>
                {
                    plain.push(EventRecord::from_event(event));
                }
                EventKind::RequestResolved {
                    request_id,
                    resolution,
                } => match self.unrecorded.remove(request_id) {
                    // Never stored: its ending is an event of its own.
                    Some(unrecorded) => {
                        let ending = ending_of(resolution);
                        let mut resolved = unrecorded.facts.event(
                            "permission_resolved",
                            request_id,
                            Some(ending.decision),
                            ending.layer,
                            &ending.reason,
                            &ending.actor,
                        );
                        resolved.turn = unrecorded.turn;
                        resolved.tool_call_id = &unrecorded.call_id;
                        match resolved.record() {
                            Ok(resolved) => plain.push(resolved),
                            Err(error) => report::<()>(Err(ApiError::from(error))),
                        }
                    }
                    None => {
                        flush(state, &mut plain).await;
                        report(settle(state, request_id, resolution).await);
                    }
                },
                _ => plain.push(EventRecord::from_event(event)),
            }
        }
        flush(state, &mut plain).await;
    }
}

/// Whether an event is about an external requester's request: those are opened outside any run
/// (every run's scope names it).
fn is_external(event: &Event) -> bool {
    matches!(
        event.kind,
        EventKind::PermissionRequested(_) | EventKind::RequestResolved { .. }
    ) && event.scope.run.is_none()
}

async fn flush(state: &AppState, plain: &mut Vec<EventRecord>) {
    if plain.is_empty() {
        return;
    }
    let batch = Batch {
        events: std::mem::take(plain),
        ..Batch::default()
    };
    report(state.commit(batch).await.map_err(ApiError::from));
}

fn report<T>(result: Result<T, ApiError>) {
    if let Err(error) = result {
        // Nothing to answer to: the run goes on, and the operator hears of it.
        eprintln!(
            "toolgate: a hosted run's events could not be recorded: {}",
            error.message
        );
    }
}

fn facts(event: &Event, request: &PermissionRequest) -> Facts {
    Facts {
        session: event.scope.session.as_deref().map(str::to_owned),
        branch: event.scope.branch.as_deref().map(str::to_owned),
        server: None,
        agent: None,
        action: request.tool.clone(),
        resource: None,
        command: crate::decisions::command_line(&request.arguments),
        rule: request.rule.clone(),
    }
}

/// The pending record and the `permission_requested` event for a hosted run's request.
fn opened(
    event: &Event,
    request: &PermissionRequest,
) -> Result<(PendingRecord, EventRecord), serde_json::Error> {
    let facts = facts(event, request);
    let call = json!({
        "tool": request.tool,
        "args": request.arguments,
        "context": {"session": facts.session, "branch": facts.branch,
                    "workspace": request.workspace},
    });
    let mut requested = facts.event(
        "permission_requested",
        &request.id,
        None,
        request.layer,
        &request.reason,
        &request.source,
    );
    requested.request = Some(request);
    requested.turn = event.scope.turn;
    requested.tool_call_id = &request.call_id;
    let requested = requested.record()?;
    let pending = PendingRecord {
        id: request.id.clone(),
        kind: HOSTED.into(),
        session: facts.session.clone(),
        created: now(),
        // AGH's approve route can name it by its turn.
        request: json!({"request": request, "call": call, "facts": facts, "hosted": true,
                        "turn": event.scope.turn.map(|t| t.to_string()),
                        "grant_context": {"session": facts.session, "branch": facts.branch,
                                          "turn": event.scope.turn,
                                          "workspace": request.workspace}}),
    };
    Ok((pending, requested))
}

/// Closes a hosted request the run saw end, unless an answer over HTTP already closed it.
async fn settle(state: &AppState, id: &str, resolution: &Resolution) -> Result<(), ApiError> {
    let Some(record) = state.store().pending_request(id).await? else {
        return Ok(());
    };
    let facts = crate::lifecycle::facts_of(&record);
    crate::lifecycle::close_until_recorded(state, id, &facts, ending_of(resolution)).await;
    Ok(())
}

/// How a hosted request's resolution is recorded: its decision, reason, layer and actor.
fn ending_of(resolution: &Resolution) -> crate::lifecycle::Ending {
    let (decision, reason, layer, actor) = match resolution {
        Resolution::Answered {
            response: Response::Permission(answer),
            by,
        } if answer.decision.allows() => (
            Decision::Allow,
            format!("approved by {by} ({})", answer.decision),
            Layer::Handler,
            by.clone(),
        ),
        Resolution::Answered {
            response: Response::Permission(answer),
            by,
        } => (
            Decision::Deny,
            answer
                .reason
                .clone()
                .filter(|r| !r.trim().is_empty())
                .unwrap_or_else(|| messages::USER_DENIED.to_owned()),
            Layer::Handler,
            by.clone(),
        ),
        Resolution::Answered { by, .. } => (
            Decision::Deny,
            "the answer was not a permission answer".to_owned(),
            Layer::Handler,
            by.clone(),
        ),
        Resolution::TimedOut => (
            Decision::Deny,
            messages::TIMED_OUT.to_owned(),
            Layer::Timeout,
            "timeout".to_owned(),
        ),
        Resolution::Cancelled => (
            Decision::Deny,
            messages::CANCELLED.to_owned(),
            Layer::Handler,
            "cancelled".to_owned(),
        ),
        Resolution::Failed { message } => (
            Decision::Deny,
            message.clone(),
            Layer::Handler,
            "daemon".to_owned(),
        ),
    };
    crate::lifecycle::Ending {
        decision,
        reason,
        layer,
        actor,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use toolgate_runtime::{Effect, GrantScope, GrantTarget};

    /// A grant the daemon committed with a hosted request's answer is not stored again when the
    /// run, released, stores it, even once revoked; another request's is.
    #[tokio::test]
    async fn a_run_does_not_store_again_what_an_answer_committed() {
        let dir = tempfile::tempdir().unwrap();
        let policy = toolgate_policy::Policy::from_toml("p.toml", "version = 1\n").unwrap();
        let server = crate::Server::open(crate::ServerConfig::new(dir.path()), policy)
            .await
            .unwrap();
        let state = server.state();
        let grants = HostedGrants {
            store: Arc::clone(state.store()),
            answered: Arc::clone(&state.inner.answered_with_grants),
        };
        crate::state::lock(&state.inner.answered_with_grants).insert("answered");
        let grant = |request: &str| {
            let mut grant = Grant::new(
                Effect::Allow,
                "pay",
                GrantTarget::Tool,
                GrantScope::Session {
                    session: "s1".into(),
                },
                "hpd",
            );
            grant.request_id = Some(request.to_owned());
            grant
        };
        // (Committed with the answer, then revoked: nothing is stored now.)
        grants.insert(grant("answered")).await.unwrap();
        assert!(state.store().list().await.unwrap().is_empty());
        grants.insert(grant("other")).await.unwrap();
        let stored = state.store().list().await.unwrap();
        assert_eq!(stored.len(), 1);
        assert_eq!(stored[0].request_id.as_deref(), Some("other"));
        // Kept for the latest 4,096 answers.
        let mut answered = AnsweredWithGrants::default();
        for i in 0..=ANSWERED_KEPT {
            answered.insert(&i.to_string());
        }
        assert!(!answered.contains("0") && answered.contains("1"));
        assert_eq!(answered.order.len(), ANSWERED_KEPT);
    }
}
