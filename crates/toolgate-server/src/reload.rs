//! Loading the policy again without a restart: when asked (SIGHUP, through [`Server::reload`]),
//! and when one of its files changes (looked at every second). A policy that fails to load
//! leaves the one in force and says why: on stderr, in a `policy_reload_failed` event, and in
//! `GET /api/policy` (the page's banner, `toolgate doctor`). A policy that loads is put in force
//! whole, with a `policy_reloaded` event; then the requests this daemon holds open are decided
//! again under it: those it allows or refuses at once are answered so (the policy as their
//! `actor`), the others keep waiting.
//!
//! [`Server::reload`]: crate::Server::reload

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};
use toolgate_policy::{Call, Decision, FileStamps, Policy};
use toolgate_store::{Batch, EventRecord};

use crate::error::ApiError;
use crate::lifecycle::{Ending, close_until_recorded};
use crate::state::{AppState, lock};

/// Loads the policy again from where it came.
pub type Loader = Arc<dyn Fn() -> Result<Policy, String> + Send + Sync>;

/// Where the daemon's policy comes from: the files to watch, and how to load them.
#[derive(Clone)]
pub struct PolicySource {
    /// The files the policy is read from (watched for changes; none: the built-in policy).
    pub files: Vec<PathBuf>,
    /// Loads them.
    pub load: Loader,
}

impl std::fmt::Debug for PolicySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicySource")
            .field("files", &self.files)
            .finish_non_exhaustive()
    }
}

/// How the policy was last loaded.
pub(crate) struct Status {
    source: Option<PolicySource>,
    loaded_at: SystemTime,
    /// The last reload that failed, when no reload has succeeded since: why, and when.
    failed: Option<(String, SystemTime)>,
}

impl Status {
    pub(crate) fn new() -> Status {
        Status {
            source: None,
            loaded_at: SystemTime::now(),
            failed: None,
        }
    }
}

/// What a reload did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reloaded {
    /// Open requests the new policy decided (answered).
    pub decided: usize,
    /// Open requests it still asks about (left waiting).
    pub waiting: usize,
}

/// How often the policy's files are looked at.
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// Keeps `source` to load the policy again from, and watches its files: a change (a file
/// written, replaced, made or removed) loads it again.
pub(crate) fn watch(state: &AppState, source: PolicySource) {
    let stamps = Arc::new(Mutex::new(FileStamps::new(source.files.clone())));
    let watched = !source.files.is_empty();
    lock(&state.inner.policy_status).source = Some(source);
    if !watched {
        return;
    }
    crate::state::every(state, WATCH_EVERY, move |state| {
        let stamps = stamps.clone();
        async move {
            let changed = lock(&stamps).changed();
            if changed {
                let _ = reload(&state).await;
            }
        }
    });
}

/// Loads the policy again (see the module's documentation).
pub(crate) async fn reload(state: &AppState) -> Result<Reloaded, String> {
    let source = lock(&state.inner.policy_status).source.clone();
    let Some(source) = source else {
        return Err("the daemon was not told where its policy comes from".to_owned());
    };
    let loaded = (source.load)();
    let policy = match loaded {
        Ok(policy) => policy,
        Err(error) => {
            eprintln!("toolgate: the policy was not reloaded (the one in force stays): {error}");
            lock(&state.inner.policy_status).failed = Some((error.clone(), state.now()));
            let event = EventRecord::new(
                "policy_reload_failed",
                json!({"actor": "daemon", "reason": format!("the policy in force stays: {error}")}),
            );
            let _ = state
                .commit(Batch {
                    events: vec![event],
                    ..Batch::default()
                })
                .await;
            return Err(error);
        }
    };
    let files: Vec<String> = policy.files().map(|(name, _)| name.to_owned()).collect();
    state.set_policy(Arc::new(policy));
    {
        let mut status = lock(&state.inner.policy_status);
        status.loaded_at = state.now();
        status.failed = None;
    }
    let reloaded = decide_again(state, None, "the policy was reloaded").await;
    eprintln!(
        "toolgate: the policy was reloaded ({}): {} waiting request(s) decided by it, {} still waiting",
        if files.is_empty() {
            "the built-in policy".to_owned()
        } else {
            files.join(", ")
        },
        reloaded.decided,
        reloaded.waiting
    );
    let event = EventRecord::new(
        "policy_reloaded",
        json!({"actor": "daemon", "files": files, "decided": reloaded.decided,
               "waiting": reloaded.waiting,
               "reason": format!("the policy was reloaded: {} waiting request(s) decided by it",
                                 reloaded.decided)}),
    );
    let _ = state
        .commit(Batch {
            events: vec![event],
            ..Batch::default()
        })
        .await;
    Ok(reloaded)
}

/// Decides the requests this daemon holds open (of `session` only, when given) again under the
/// policy in force and their sessions' taint: those it allows or refuses are ended so (taken
/// from the broker first, as a withdrawal is, so no answer races it; their reason says `why`),
/// the rest keep waiting.
pub(crate) async fn decide_again(state: &AppState, session: Option<&str>, why: &str) -> Reloaded {
    let policy = state.policy();
    let mut reloaded = Reloaded::default();
    let mut taints: std::collections::HashMap<String, Option<toolgate_policy::SessionTaint>> =
        std::collections::HashMap::new();
    for (id, open) in state.open_requests() {
        if session.is_some_and(|s| open.facts.session.as_deref() != Some(s)) {
            continue;
        }
        let Ok(call) = Call::from_value(open.row.call.clone()) else {
            reloaded.waiting += 1;
            continue;
        };
        // Under the session's taint, as when it was asked: read (once a session) only for an
        // allow, the one decision a taint changes; a session that cannot be read is not
        // decided on (the request keeps waiting).
        let mut evaluation = policy.evaluate(&call);
        if evaluation.decision == Decision::Allow
            && policy.taint_settings().enabled
            && let Some(session) = &call.context.session
        {
            if !taints.contains_key(session) {
                match state.store().session(session).await {
                    Ok(row) => {
                        let taint = row.and_then(|row| crate::taint::of(&row.snapshot));
                        taints.insert(session.clone(), taint);
                    }
                    Err(_) => {
                        reloaded.waiting += 1;
                        continue;
                    }
                }
            }
            if let Some(Some(taint)) = taints.get(session) {
                evaluation = policy.under_taint(evaluation, taint);
            }
        }
        if evaluation.decision == Decision::Ask {
            reloaded.waiting += 1;
            continue;
        }
        match state.inner.timer.cancel(&id) {
            Some(Some(toolgate_runtime::Resolution::Cancelled)) => {}
            // Answered, timed out or withdrawn meanwhile: that stands.
            Some(Some(resolution)) => {
                crate::lifecycle::settle_unanswered(state, &id, &open.facts, resolution).await;
                continue;
            }
            Some(None) | None => continue,
        }
        let ending = Ending {
            decision: evaluation.decision,
            layer: evaluation.layer,
            reason: format!("{} ({why})", evaluation.reason),
            actor: "policy".to_owned(),
        };
        close_until_recorded(state, &id, &open.facts, ending).await;
        reloaded.decided += 1;
    }
    reloaded
}

/// `GET /api/policy`: the policy in force — its files, its mode, when it was loaded — and the
/// last reload that failed since (`reload_failed`: why and when), which the page shows as a
/// banner.
pub(crate) async fn status(
    State(state): State<AppState>,
    crate::body::Query(crate::body::NoQuery {}): crate::body::Query<crate::body::NoQuery>,
) -> Result<Json<Value>, ApiError> {
    let policy = state.policy();
    let files: Vec<&str> = policy.files().map(|(name, _)| name).collect();
    let time = |t: SystemTime| humantime::format_rfc3339_seconds(t).to_string();
    let status = lock(&state.inner.policy_status);
    let mut body = json!({
        "files": files,
        "mode": policy.settings().mode.as_str(),
        "loaded_at": time(status.loaded_at),
        "watched": status.source.as_ref().is_some_and(|s| !s.files.is_empty()),
    });
    if let (Some((why, at)), Some(fields)) = (&status.failed, body.as_object_mut()) {
        fields.insert(
            "reload_failed".into(),
            json!({"reason": why, "at": time(*at)}),
        );
    }
    Ok(Json(body))
}
