//! toolgate's daemon: one place where every pending request of every gateway and session waits
//! for a person, answers are remembered, and every decision is audited.
//!
//! - External requesters (gateways, other programs) submit calls: `POST /api/decisions`
//!   answers at once, or with an id to wait on (`GET /api/decisions/{id}?wait=`).
//! - People answer from the page, the CLI or any client: `GET /api/pending`,
//!   `POST /api/approvals/{id}`.
//! - Every decision is an event in the store before it is acknowledged; `GET /api/events`
//!   streams them (resumable), `GET /api/audit` pages through them.
//!
//! The API listens on loopback, checks `Host` and `Origin` on every request, and wants the
//! token from the data directory (or the page's session key); see [`security`].

mod approvals;
mod body;
mod config;
mod connections;
mod decisions;
mod error;
mod events;
mod grants;
mod hosted;
mod lifecycle;
mod outcome;
mod page;
pub mod promote;
mod reload;
mod replicas;
mod retention;
mod roles;
pub mod security;
mod sessions;
mod state;
mod taint;
mod timer;
mod wire;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::routing::{delete, get, post};
use serde_json::json;
use toolgate_policy::{Decision, Layer, Policy};
use toolgate_store::SqliteStore;

pub use config::{
    ADDRESS_FILE, Clock, ConfigError, ConfigFile, DEFAULT_LISTEN,
    DEFAULT_MAX_ANONYMOUS_CONNECTIONS, DEFAULT_PORT, DEFAULT_READ_TIMEOUT, MAX_BODY, MIN_RETAIN,
    Retain, ServerConfig, check_private, default_data_dir, parse_listen, parse_retain, reachable,
};
pub use connections::raise_open_file_limit;
pub use decisions::MAX_WAIT;
pub use error::ApiError;
pub use events::MAX_PAGE;
pub use page::CSP;
pub use reload::{Loader, PolicySource, Reloaded};
pub use roles::Role;
pub use sessions::AGENT_ID;
pub use state::{
    AppState, LOGIN_CODE_LIFETIME, MAX_LOGIN_CODES, MAX_PENDING, MAX_PENDING_BYTES,
    MAX_PENDING_BYTES_PER_SESSION, MAX_PENDING_PER_SESSION,
};

/// The reason a request gets when the daemon stopped before anyone answered it.
pub const ABANDONED: &str =
    "The daemon restarted before this request was answered; it is refused (reject-once).";

/// Why a request is refused that another daemon sharing the store held when it stopped.
pub const ORPHANED: &str = "The daemon that held this request stopped before it was answered; \
                            it is refused (reject-once).";

/// The OpenAPI document of the API (committed as `openapi.json`; a test fails when it and the
/// routes drift apart).
pub const OPENAPI: &str = include_str!("../openapi.json");

/// Every API route, as (method, path template). The OpenAPI document describes exactly these.
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/api/health"),
    ("GET", "/api/openapi.json"),
    ("POST", "/api/login"),
    ("POST", "/api/login/codes"),
    ("POST", "/api/logout"),
    ("POST", "/api/decisions"),
    ("GET", "/api/decisions/{id}"),
    ("DELETE", "/api/decisions/{id}"),
    ("GET", "/api/decisions"),
    ("GET", "/api/pending"),
    ("POST", "/api/approvals/{id}"),
    ("GET", "/api/grants"),
    ("DELETE", "/api/grants/{id}"),
    ("POST", "/api/grants/{id}/promote"),
    ("GET", "/api/policy"),
    ("POST", "/api/tokens"),
    ("GET", "/api/tokens"),
    ("DELETE", "/api/tokens/{name}"),
    ("GET", "/api/events"),
    ("GET", "/api/sessions/{id}/events"),
    ("GET", "/api/audit"),
    ("POST", "/api/sessions"),
    ("GET", "/api/sessions"),
    ("GET", "/api/sessions/{id}"),
    ("POST", "/api/sessions/{id}/branches"),
    ("POST", "/api/sessions/{id}/approve"),
    ("POST", "/api/sessions/{id}/results"),
    ("DELETE", "/api/sessions/{id}/taint"),
    (
        "POST",
        "/agents/{agent}/sessions/{session}/branches/{branch}/responses",
    ),
];

/// A time as the audit log writes times (UTC, microseconds, fixed width: they compare as
/// text), from an RFC 3339 time with any offset; `None` when it is not one.
pub fn log_time(text: &str) -> Option<String> {
    events::since(text)
}

async fn openapi() -> axum::response::Response {
    use axum::response::IntoResponse;
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        OPENAPI,
    )
        .into_response()
}

/// The API: every route, behind the security guard.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(page::index))
        .route("/app.js", get(page::script))
        .route("/app.css", get(page::style))
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
        .route("/api/health", get(health))
        .route("/api/openapi.json", get(openapi))
        .route("/api/login", post(page::login))
        .route("/api/login/codes", post(page::new_login_code))
        .route("/api/logout", post(page::logout))
        .route(
            "/api/decisions",
            post(decisions::submit).get(decisions::list),
        )
        .route(
            "/api/decisions/{id}",
            get(decisions::get).delete(decisions::withdraw),
        )
        .route("/api/pending", get(approvals::pending))
        .route("/api/approvals/{id}", post(approvals::approve))
        .route("/api/grants", get(grants::list))
        .route("/api/policy", get(reload::status))
        .route("/api/tokens", post(roles::create).get(roles::list))
        .route("/api/tokens/{name}", delete(roles::revoke))
        .route("/api/grants/{id}", delete(grants::revoke))
        .route("/api/grants/{id}/promote", post(grants::promote))
        .route("/api/events", get(events::all))
        .route("/api/sessions/{id}/events", get(events::of_session))
        .route("/api/audit", get(events::audit))
        .route("/api/sessions", post(sessions::create).get(sessions::list))
        .route("/api/sessions/{id}", get(sessions::get))
        .route("/api/sessions/{id}/branches", post(sessions::fork))
        .route("/api/sessions/{id}/approve", post(sessions::agh_approve))
        .route("/api/sessions/{id}/results", post(taint::results))
        .route("/api/sessions/{id}/taint", delete(taint::clear))
        .route(
            "/agents/{agent}/sessions/{session}/branches/{branch}/responses",
            post(sessions::hpd_respond),
        )
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            security::guard,
        ))
        .with_state(state)
}

async fn health() -> axum::Json<serde_json::Value> {
    axum::Json(json!({"status": "ok", "version": env!("CARGO_PKG_VERSION")}))
}

async fn not_found() -> ApiError {
    ApiError::not_found("no such route")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this route does not take that method (state changes only with POST or DELETE)",
    )
}

/// How long requests in progress may take to finish once the daemon is told to stop.
pub const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// The largest request head (request line and header fields) the daemon reads: 128 KiB.
pub const MAX_HEAD_BYTES: usize = 128 * 1024;

/// A daemon ready to serve: its store opened, its token loaded, and requests left pending by a
/// previous run resolved as reject-once.
#[derive(Debug)]
pub struct Server {
    state: AppState,
    /// Requests the previous run left pending, now refused.
    pub recovered: usize,
}

impl Server {
    /// Opens the data directory and recovers what a crash left behind.
    pub async fn open(config: ServerConfig, policy: Policy) -> Result<Server, ConfigError> {
        config.validate()?;
        // Its token answers any request: no agent the daemon judges reads or writes it.
        let mut policy = policy;
        policy.guard_data_folder(&config.data_dir);
        // Made readable by its owner alone; a folder that exists keeps the mode it has (the
        // files in it are kept private by the store and the token's checks).
        let mut folder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut folder, 0o700);
        folder
            .recursive(true)
            .create(&config.data_dir)
            .map_err(|e| {
                let hint = if config.data_dir.is_file() {
                    " (it is a file, not a folder: give another --data-dir)"
                } else {
                    ""
                };
                ConfigError(format!(
                    "cannot create the data directory {}: {e}{hint}",
                    config.data_dir.display()
                ))
            })?;
        let token = config::load_or_create_token(&config.token_file())?;
        let store: Arc<dyn toolgate_store::Store> = match &config.store {
            Some(url) => Arc::new(
                toolgate_store::PostgresStore::open(url)
                    .await
                    .map_err(|e| ConfigError(e.to_string()))?,
            ),
            None => Arc::new(
                SqliteStore::open_with(&config.database(), config.durability)
                    .await
                    .map_err(|e| ConfigError(e.to_string()))?,
            ),
        };
        let state = AppState::new(config, store, Arc::new(policy), token)
            .await
            .map_err(|e| ConfigError(e.to_string()))?;
        let recovered = recover(&state, ABANDONED)
            .await
            .map_err(|e| ConfigError(e.message))?;
        retention::start(&state);
        grants::start_removing_ended(&state);
        roles::refresh(&state)
            .await
            .map_err(|e| ConfigError(e.message))?;
        roles::start(&state);
        replicas::start(&state);
        Ok(Server { state, recovered })
    }

    /// The shared state (for tests and embedders).
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Says where the policy comes from, so it can be loaded again: [`Server::reload`] loads
    /// it, and so does a change to one of its files (looked at every second while the daemon
    /// runs).
    pub fn reload_from(&self, source: PolicySource) {
        reload::watch(&self.state, source);
    }

    /// Loads the policy again (on SIGHUP): a policy that fails to load leaves the one in force
    /// and says why; one that loads is put in force, and the requests this daemon holds open
    /// are decided again under it (those it allows or refuses are answered, the others keep
    /// waiting).
    pub async fn reload(&self) -> Result<Reloaded, String> {
        reload::reload(&self.state).await
    }

    /// The API.
    pub fn router(&self) -> Router {
        router(self.state.clone())
    }

    /// Serves on `listener` until `shutdown` completes. Then new connections are refused,
    /// event streams end, long polls answer with the decision as it stands, and requests in
    /// progress get [`SHUTDOWN_GRACE`] to finish; the store is checkpointed last.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let closing = self.state.inner.closing.clone();
        let mut http = hyper::server::conn::http1::Builder::new();
        // A head's size is checked on the whole head, not only while it is partial: without
        // this, one large read could bring a head past hyper's buffer and have it accepted.
        http.timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(self.state.inner.config.read_timeout)
            .max_header_size(MAX_HEAD_BYTES);
        // Every connection holds a receiver; when the last is gone, all have ended.
        let (all_ended, alive) = tokio::sync::watch::channel(());
        let connections = connections::Connections::new(connections::budget(
            self.state.inner.config.max_anonymous_connections,
        ));
        let mut listener = wire::Listener(listener);
        let router = self.router();
        let mut shutdown = std::pin::pin!(shutdown);
        loop {
            let (stream, _) = tokio::select! {
                accepted = axum::serve::Listener::accept(&mut listener) => accepted,
                () = &mut shutdown => break,
            };
            let slot = connections.admit();
            let (closing, alive, http, router) =
                (closing.clone(), alive.clone(), http.clone(), router.clone());
            let read_timeout = self.state.inner.config.read_timeout;
            tokio::spawn(async move {
                let credentialed = slot.credentialed.clone();
                let served = async move {
                    let mut stream = stream;
                    if wire::refused_http2(&mut stream, read_timeout).await {
                        return;
                    }
                    // Each request carries its connection's mark, which the guard sets when
                    // the request shows credentials.
                    let router = tower::ServiceExt::map_request(
                        router,
                        move |mut request: axum::http::Request<hyper::body::Incoming>| {
                            request.extensions_mut().insert(credentialed.clone());
                            request
                        },
                    );
                    let connection = http.serve_connection(
                        hyper_util::rt::TokioIo::new(stream),
                        hyper_util::service::TowerToHyperService::new(router),
                    );
                    let mut connection = std::pin::pin!(connection);
                    tokio::select! {
                        _ = connection.as_mut() => {}
                        () = closing.cancelled() => {
                            // Idle connections close now; a request in progress finishes first.
                            connection.as_mut().graceful_shutdown();
                            let _ = connection.await;
                        }
                    }
                };
                tokio::select! {
                    () = served => {}
                    // A newer connection took its place: it had shown no credentials.
                    () = slot.evicted.cancelled() => {}
                }
                drop((alive, slot));
            });
        }
        drop((listener, alive));
        closing.cancel();
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, all_ended.closed()).await;
        self.state.store().close().await;
        Ok(())
    }
}

/// Refuses every request a previous run left pending (its waiter is gone), with its event.
/// Refuses the requests no running daemon waits on: at a start, those a previous run left; with
/// a shared store, also those of another daemon that stopped (see [`replicas`]).
pub(crate) async fn recover(state: &AppState, reason: &str) -> Result<usize, ApiError> {
    let pending = state.store().orphaned().await?;
    let mut recovered = 0;
    for record in pending {
        let facts = lifecycle::facts_of(&record);
        let ending = lifecycle::Ending {
            decision: Decision::Deny,
            layer: Layer::Timeout,
            reason: reason.to_owned(),
            actor: "daemon".to_owned(),
        };
        let _ = lifecycle::close(state, &record.id, &facts, &ending, None).await?;
        recovered += 1;
    }
    Ok(recovered)
}
