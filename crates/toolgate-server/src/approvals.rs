//! People answering: the pending list, and the answers that end requests — recorded before
//! the waiting call hears of them.

use axum::Json;
use axum::extract::State;

use crate::body::{Path, Query};
use serde_json::{Value, json};
use toolgate_policy::Choice;
use toolgate_runtime::{Answer, Grant};

use crate::body::JsonBody;
use crate::error::ApiError;
use crate::lifecycle::resolve;
use crate::state::AppState;

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PendingQuery {
    limit: Option<u32>,
    session: Option<String>,
}

/// `GET /api/pending[?limit=N][&session=S]`: the requests waiting for a person, oldest first
/// (the first `limit`, 1 to 1,000, when given; one session's, when given), and how many wait in
/// all.
pub(crate) async fn pending(
    State(state): State<AppState>,
    Query(query): Query<PendingQuery>,
) -> Result<Json<Value>, ApiError> {
    let limit = crate::events::page_size(query.limit, "limit")?.unwrap_or(crate::events::MAX_PAGE);
    crate::body::not_empty(
        query.session.as_deref(),
        "bad_session",
        "`session` names a session; leave it out for every session's requests",
    )?;
    // (Not held to the rules of names a client gives: a hosted agent's session may be named
    // anything.)
    let (pending, total) = state
        .store()
        .pending_page(query.session.as_deref(), limit)
        .await?;
    Ok(Json(json!({ "pending": pending, "total": total })))
}

/// The longest name an answer's `by` may give.
const MAX_ACTOR: usize = 64;

/// Who answered, as the client names itself (`by`: at most 64 characters; control characters
/// are dropped), else `default`.
pub(crate) fn actor(body: &Value, default: &str) -> Result<String, ApiError> {
    match body.get("by") {
        None | Some(Value::Null) => Ok(default.to_owned()),
        Some(Value::String(named)) => named_actor(Some(named), default),
        Some(_) => Err(ApiError::bad_request(
            "invalid_by",
            "`by` is a name (a string)",
        )),
    }
}

/// Who acts, as the client names itself (`by`, from a body or a query), else `default`.
pub(crate) fn named_actor(named: Option<&str>, default: &str) -> Result<String, ApiError> {
    let Some(named) = named else {
        return Ok(default.to_owned());
    };
    if named.chars().count() > MAX_ACTOR {
        return Err(ApiError::bad_request(
            "invalid_by",
            format!("`by` is at most {MAX_ACTOR} characters"),
        ));
    }
    let named: String = named.chars().filter(|c| !c.is_control()).collect();
    Ok(if named.trim().is_empty() {
        default.to_owned()
    } else {
        named
    })
}

/// `POST /api/approvals/{id}` with `{"decision": "allow-once" | "allow-always" |
/// "reject-once" | "reject-always", "reason"?, "by"?}` (HPD's `{"approved", "choice"}` too).
pub(crate) async fn approve(
    State(state): State<AppState>,
    who: Option<axum::Extension<crate::roles::Who>>,
    Path(id): Path<String>,
    Query(crate::body::NoQuery {}): Query<crate::body::NoQuery>,
    JsonBody(body): JsonBody,
) -> Result<Json<Value>, ApiError> {
    crate::body::known_keys(
        &body,
        &[
            "decision",
            "reason",
            "by",
            "approved",
            "choice",
            "scope",
            "expires_in",
        ],
    )?;
    let answer = Answer::from_json(&body).map_err(|e| {
        // What is wrong with the reason is said as such.
        let code = if e.starts_with("`reason`") {
            "invalid_reason"
        } else if e.contains("scope") || e.contains("`expires_in`") {
            "invalid_lasting"
        } else {
            "invalid_decision"
        };
        ApiError::bad_request(code, e)
    })?;
    let by = crate::roles::acting(who.as_deref(), actor(&body, "api")?);
    let choice = answer.decision;
    let grants = resolve(&state, &id, answer, &by).await?;
    Ok(Json(
        json!({"status": "resolved", "id": id, "decision": choice, "grants": grants}),
    ))
}

/// What a late answer hears when the request was resolved (`request … is no longer pending: it
/// was resolved: deny, <reason>`, the decision left out when the store cannot say it): an
/// external requester's from its decision, a hosted run's (which has none) from the log.
/// `None` when the request was not resolved, or (given a `session`) was not that session's.
pub(crate) async fn no_longer_pending(
    state: &AppState,
    id: &str,
    session: Option<&str>,
) -> Result<Option<String>, ApiError> {
    let said = |result: Option<Value>| {
        let how = result
            .as_ref()
            .and_then(|result| {
                let decision = result.get("decision")?.as_str()?;
                let reason = result.get("reason")?.as_str()?;
                Some(format!(": {decision}, {reason}"))
            })
            .unwrap_or_default();
        format!("request `{id}` is no longer pending: it was resolved{how}")
    };
    if let Some(row) = state.store().decision(id).await? {
        let elsewhere = session.is_some_and(|session| {
            row.call
                .get("context")
                .and_then(|c| c.get("session"))
                .and_then(Value::as_str)
                != Some(session)
        });
        if row.status != toolgate_store::DecisionStatus::Decided || elsewhere {
            return Ok(None);
        }
        return Ok(Some(said(row.result.to_value().ok())));
    }
    let filter = toolgate_store::EventFilter {
        request_id: Some(id.to_owned()),
        kinds: vec!["permission_resolved".to_owned()],
        session: session.map(str::to_owned),
        ..Default::default()
    };
    let resolved = state.store().events_after(0, &filter, 1).await?;
    Ok(resolved
        .first()
        .map(|event| said(event.body.to_value().ok())))
}

/// The grants an "always" answer stores: exactly the targets the request showed, in the scope
/// the answer chose among those offered (else the request's default), placed by the context
/// `place` gives for that scope (none: no grants), until `now` plus what the answer says they
/// last, if it says.
pub(crate) fn always_grants(
    request: &toolgate_runtime::PermissionRequest,
    answer: &Answer,
    by: &str,
    now: std::time::SystemTime,
    place: impl FnOnce(toolgate_runtime::ScopeKind) -> Option<toolgate_runtime::GrantContext>,
) -> Vec<Grant> {
    let choice = answer.decision;
    let effect = match choice {
        Choice::AllowAlways => toolgate_runtime::Effect::Allow,
        Choice::RejectAlways => toolgate_runtime::Effect::Deny,
        Choice::AllowOnce | Choice::RejectOnce => return Vec::new(),
    };
    let Some(covers) = request.always.iter().find(|a| a.choice == choice) else {
        return Vec::new();
    };
    // (A scope not offered was refused before the request was claimed.)
    let scope = answer
        .scope
        .filter(|scope| covers.offers(*scope))
        .unwrap_or(covers.scope);
    let Some(context) = place(scope) else {
        return Vec::new();
    };
    covers
        .targets
        .iter()
        .map(|target| {
            let mut grant = Grant::new(
                effect,
                request.tool.clone(),
                target.clone(),
                context.scope(scope),
                by,
            );
            grant.request_id = Some(request.id.clone());
            grant.expires_at = answer.lasts.and_then(|lasts| now.checked_add(lasts));
            grant
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use async_trait::async_trait;
    use axum::body::Body;
    use axum::http::{StatusCode, header};
    use http_body_util::BodyExt;
    use toolgate_runtime::GrantStore;
    use toolgate_runtime::grants::StoreError as GrantError;
    use toolgate_store::{
        Batch, DecisionRow, EventFilter, EventRecord, SessionRow, SqliteStore, Store, StoreError,
    };
    use tower::ServiceExt;

    use super::*;
    use crate::ServerConfig;
    use toolgate_store::{Committed, PendingRecord};

    /// A store whose commits fail while `failing` is set, as on a full disk.
    struct Flaky {
        inner: SqliteStore,
        failing: AtomicBool,
    }

    impl Flaky {
        fn check(&self) -> Result<(), StoreError> {
            if self.failing.load(Ordering::SeqCst) {
                Err(StoreError::unavailable(
                    "No space left on device (os error 28)",
                ))
            } else {
                Ok(())
            }
        }
    }

    #[async_trait]
    impl Store for Flaky {
        async fn commit(&self, batch: Batch) -> Result<Committed, StoreError> {
            self.check()?;
            self.inner.commit(batch).await
        }
        async fn events_after(
            &self,
            after: i64,
            filter: &EventFilter,
            limit: u32,
        ) -> Result<Vec<EventRecord>, StoreError> {
            self.inner.events_after(after, filter, limit).await
        }
        async fn latest(
            &self,
            filter: &EventFilter,
            limit: u32,
        ) -> Result<Vec<EventRecord>, StoreError> {
            self.inner.latest(filter, limit).await
        }
        async fn last_seq(&self) -> Result<i64, StoreError> {
            self.inner.last_seq().await
        }
        async fn prunable(&self, before: &str) -> Result<toolgate_store::Pruned, StoreError> {
            self.inner.prunable(before).await
        }
        async fn prune(
            &self,
            before: &str,
            limit: u32,
        ) -> Result<toolgate_store::Pruned, StoreError> {
            self.check()?;
            self.inner.prune(before, limit).await
        }
        async fn pending(&self) -> Result<Vec<PendingRecord>, StoreError> {
            self.inner.pending().await
        }
        async fn pending_request(&self, id: &str) -> Result<Option<PendingRecord>, StoreError> {
            self.inner.pending_request(id).await
        }
        async fn decision(&self, id: &str) -> Result<Option<DecisionRow>, StoreError> {
            self.inner.decision(id).await
        }
        async fn decisions_page(
            &self,
            query: &toolgate_store::DecisionQuery,
            limit: u32,
        ) -> Result<Vec<DecisionRow>, StoreError> {
            self.inner.decisions_page(query, limit).await
        }
        async fn put_session(&self, id: &str, snapshot: &Value) -> Result<(), StoreError> {
            self.check()?;
            self.inner.put_session(id, snapshot).await
        }
        async fn session(&self, id: &str) -> Result<Option<SessionRow>, StoreError> {
            self.inner.session(id).await
        }
        async fn sessions(&self) -> Result<Vec<SessionRow>, StoreError> {
            self.inner.sessions().await
        }
        async fn tokens(&self) -> Result<Vec<toolgate_store::TokenRow>, StoreError> {
            self.inner.tokens().await
        }
        async fn add_token(&self, token: toolgate_store::TokenRow) -> Result<bool, StoreError> {
            self.check()?;
            self.inner.add_token(token).await
        }
        async fn remove_token(&self, name: &str) -> Result<bool, StoreError> {
            self.check()?;
            self.inner.remove_token(name).await
        }
    }

    #[async_trait]
    impl GrantStore for Flaky {
        async fn insert(&self, grant: Grant) -> Result<(), GrantError> {
            self.inner.insert(grant).await
        }
        async fn for_tool(&self, tool: &str) -> Result<Vec<Grant>, GrantError> {
            self.inner.for_tool(tool).await
        }
        async fn applying(
            &self,
            lookup: &toolgate_runtime::Lookup,
        ) -> Result<Vec<Grant>, GrantError> {
            self.inner.applying(lookup).await
        }
        async fn use_once(&self, id: &str) -> Result<bool, GrantError> {
            self.inner.use_once(id).await
        }
        async fn list(&self) -> Result<Vec<Grant>, GrantError> {
            self.inner.list().await
        }
        async fn revoke(&self, id: &str) -> Result<bool, GrantError> {
            self.inner.revoke(id).await
        }
    }

    const POLICY: &str = r#"
version = 1

[approval]
timeout = "1s"

[[rule]]
name = "ask-pay"
decision = "ask"
reason = "payments need a person"
tool = "pay"
"#;

    async fn daemon() -> (tempfile::TempDir, Arc<Flaky>, AppState) {
        let dir = tempfile::tempdir().unwrap();
        let config = ServerConfig::new(dir.path());
        let store = Arc::new(Flaky {
            inner: SqliteStore::open(&config.database()).await.unwrap(),
            failing: AtomicBool::new(false),
        });
        let policy = toolgate_policy::Policy::from_toml("p.toml", POLICY).unwrap();
        let state = AppState::new(config, store.clone(), Arc::new(policy), "t0ken".into())
            .await
            .unwrap();
        (dir, store, state)
    }

    async fn call(
        state: &AppState,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let port = state.inner.config.listen.port();
        let request = axum::http::Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, format!("127.0.0.1:{port}"))
            .header(header::AUTHORIZATION, "Bearer t0ken")
            .header(header::CONTENT_TYPE, "application/json")
            .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))
            .unwrap();
        let response = crate::router(state.clone()).oneshot(request).await.unwrap();
        let status = response.status();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    async fn ask(state: &AppState) -> String {
        let (status, body) = call(
            state,
            "POST",
            "/api/decisions",
            Some(json!({"tool": "pay", "args": {"amount": 5}})),
        )
        .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        body["id"].as_str().unwrap().to_owned()
    }

    /// An answer the store cannot record gets 503, and the request is refused once the store
    /// takes writes again: the waiting call is not left pending for good.
    #[tokio::test]
    async fn an_answer_that_cannot_be_recorded_ends_in_a_refusal_once_the_store_is_back() {
        let (_dir, store, state) = daemon().await;
        let id = ask(&state).await;
        store.failing.store(true, Ordering::SeqCst);
        let (status, body) = call(
            &state,
            "POST",
            &format!("/api/approvals/{id}"),
            Some(json!({"decision": "allow-once"})),
        )
        .await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
        assert_eq!(body["error"]["code"], "store_unavailable", "{body}");
        let (_, decision) = call(&state, "GET", &format!("/api/decisions/{id}"), None).await;
        assert_eq!(decision["status"], "pending", "{decision}");
        // A second answer meanwhile hears what is going on.
        let (status, body) = call(
            &state,
            "POST",
            &format!("/api/approvals/{id}"),
            Some(json!({"decision": "reject-once"})),
        )
        .await;
        assert_eq!(status, StatusCode::CONFLICT);
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("being recorded"), "{body}");

        store.failing.store(false, Ordering::SeqCst);
        let (status, decision) =
            call(&state, "GET", &format!("/api/decisions/{id}?wait=10"), None).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(decision["decision"], "deny", "{decision}");
        assert_eq!(
            decision["reason"],
            "the answer could not be recorded, so the request is refused"
        );
        assert!(state.store().pending().await.unwrap().is_empty());
        // Answering it now is a conflict, not a second decision.
        let (status, _) = call(
            &state,
            "POST",
            &format!("/api/approvals/{id}"),
            Some(json!({"decision": "allow-once"})),
        )
        .await;
        assert_eq!(status, StatusCode::CONFLICT);
    }

    /// A timeout the store cannot record is recorded when it can be.
    #[tokio::test]
    async fn a_timeout_that_cannot_be_recorded_is_recorded_later() {
        let (_dir, store, state) = daemon().await;
        let id = ask(&state).await;
        store.failing.store(true, Ordering::SeqCst);
        // Past the 1 s timeout, with every commit failing.
        tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
        let (_, decision) = call(&state, "GET", &format!("/api/decisions/{id}"), None).await;
        assert_eq!(decision["status"], "pending", "{decision}");
        store.failing.store(false, Ordering::SeqCst);
        let (_, decision) =
            call(&state, "GET", &format!("/api/decisions/{id}?wait=10"), None).await;
        assert_eq!(decision["decision"], "deny", "{decision}");
        assert_eq!(decision["layer"], "timeout", "{decision}");
    }
}
