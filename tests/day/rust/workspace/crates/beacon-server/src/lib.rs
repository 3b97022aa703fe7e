//! The beacon HTTP API and the loop that runs checks on schedule.

mod error;
mod routes;
mod runner;
mod state;

use std::net::SocketAddr;

use beacon_core::Config;
use tower_http::trace::TraceLayer;

pub use routes::router;
pub use state::AppState;

/// Builds the app with tracing, ready for `axum::serve` or for tests.
pub fn app(state: AppState) -> axum::Router {
    router(state).layer(TraceLayer::new_for_http())
}

/// Runs the scheduler and serves the API on `addr` until Ctrl-C.
pub async fn serve(config: Config, addr: SocketAddr) -> anyhow::Result<()> {
    let state = AppState::new(config);
    tokio::spawn(runner::run(state.clone()));
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(%addr, "listening");
    axum::serve(listener, app(state))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
