use std::sync::Arc;

use beacon_core::{Config, StatusBoard};
use tokio::sync::RwLock;

#[derive(Clone)]
pub struct AppState {
    pub config: Arc<Config>,
    pub board: Arc<RwLock<StatusBoard>>,
}

impl AppState {
    pub fn new(config: Config) -> Self {
        Self { config: Arc::new(config), board: Arc::new(RwLock::new(StatusBoard::new())) }
    }
}
