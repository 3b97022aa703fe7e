//! Where sessions' taint is kept (see `toolgate_policy`'s session taint): in memory by default
//! ([`MemoryTaints`]); a daemon hosting agents keeps it with its sessions, so its page shows it
//! and a person clears it there.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use toolgate_policy::SessionTaint;

/// A change to a session's taint: `true` when it changed it. It may be called again when
/// another change was saved meanwhile.
pub type TaintChange<'a> = &'a (dyn Fn(&mut SessionTaint) -> bool + Send + Sync);

/// Where sessions' taint is kept.
#[async_trait]
pub trait SessionTaints: Send + Sync {
    /// The session's taint (a session never tainted: an empty one).
    async fn get(&self, session: &str) -> Result<SessionTaint, String>;

    /// Changes the session's taint with `change`, and saves it when it changed. The taint as
    /// it now stands.
    async fn change(&self, session: &str, change: TaintChange<'_>) -> Result<SessionTaint, String>;
}

/// The most sessions [`MemoryTaints`] keeps; past it, the untainted are forgotten first, and a
/// new session is not kept (its calls are decided as the policy says).
pub const MAX_TAINTED_SESSIONS: usize = 10_000;

/// Sessions' taint in memory, for as long as the agent lives.
#[derive(Debug, Default)]
pub struct MemoryTaints {
    sessions: Mutex<HashMap<String, SessionTaint>>,
}

impl MemoryTaints {
    /// None kept.
    pub fn new() -> MemoryTaints {
        MemoryTaints::default()
    }
}

#[async_trait]
impl SessionTaints for MemoryTaints {
    async fn get(&self, session: &str) -> Result<SessionTaint, String> {
        let sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(sessions.get(session).cloned().unwrap_or_default())
    }

    async fn change(&self, session: &str, change: TaintChange<'_>) -> Result<SessionTaint, String> {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        if !sessions.contains_key(session) && sessions.len() >= MAX_TAINTED_SESSIONS {
            sessions.retain(|_, t| t.is_tainted());
            if sessions.len() >= MAX_TAINTED_SESSIONS {
                return Ok(SessionTaint::default());
            }
        }
        let taint = sessions.entry(session.to_owned()).or_default();
        change(taint);
        Ok(taint.clone())
    }
}
