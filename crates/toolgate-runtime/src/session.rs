//! Sessions and branches: the conversation history, and the middleware state that goes with it.
//!
//! A session has named branches (`main` first). Each branch has its own history and
//! branch-scoped state; session-scoped state (remembered permission answers, for one) is shared
//! by all branches. A branch is forked from another ([`Agent::fork`](crate::Agent::fork)) and
//! becomes part of the session when committed
//! ([`Agent::commit_fork`](crate::Agent::commit_fork)), after the
//! `before_branch_fork_commit` hooks had their say.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::{Map, Value, json};

use crate::message::Message;
use crate::state::{MiddlewareState, StateMap, StateScope};

/// The branch a session starts with.
pub const MAIN_BRANCH: &str = "main";

#[derive(Default)]
pub(crate) struct BranchData {
    pub(crate) history: Vec<Message>,
    pub(crate) state: StateMap,
    pub(crate) turns: u64,
    pub(crate) forked_from: Option<String>,
}

#[derive(Default)]
pub(crate) struct SessionData {
    pub(crate) state: StateMap,
    pub(crate) branches: BTreeMap<String, BranchData>,
}

impl SessionData {
    pub(crate) fn branch(&mut self, name: &str) -> &mut BranchData {
        self.branches.entry(name.to_owned()).or_default()
    }
}

struct SessionInner {
    id: Arc<str>,
    data: Mutex<SessionData>,
    turn_locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

/// A conversation: its branches, their histories and the middleware state. Cheap to clone;
/// clones are the same session.
#[derive(Clone)]
pub struct Session {
    inner: Arc<SessionInner>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.inner.id)
            .field("branches", &self.branches())
            .finish()
    }
}

/// Why a saved session could not be restored, or a fork committed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionError(pub String);

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SessionError {}

impl Session {
    /// An empty session.
    pub fn new(id: impl Into<Arc<str>>) -> Session {
        Session::from_data(id.into(), SessionData::default())
    }

    fn from_data(id: Arc<str>, data: SessionData) -> Session {
        Session {
            inner: Arc::new(SessionInner {
                id,
                data: Mutex::new(data),
                turn_locks: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// Its id.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    pub(crate) fn id_arc(&self) -> Arc<str> {
        Arc::clone(&self.inner.id)
    }

    /// The names of its branches.
    pub fn branches(&self) -> Vec<String> {
        self.data().branches.keys().cloned().collect()
    }

    /// A copy of a branch's history (empty for a branch that does not exist yet).
    pub fn history(&self, branch: &str) -> Vec<Message> {
        self.data()
            .branches
            .get(branch)
            .map(|b| b.history.clone())
            .unwrap_or_default()
    }

    /// How many turns a branch has had.
    pub fn turns(&self, branch: &str) -> u64 {
        self.data().branches.get(branch).map_or(0, |b| b.turns)
    }

    /// The branch a branch was forked from.
    pub fn forked_from(&self, branch: &str) -> Option<String> {
        self.data()
            .branches
            .get(branch)
            .and_then(|b| b.forked_from.clone())
    }

    /// A copy of a state value, as seen from `branch`.
    pub fn state<T: MiddlewareState>(&self, branch: &str) -> T {
        let data = self.data();
        match T::SCOPE {
            StateScope::Session => data.state.get::<T>(),
            StateScope::Branch => data
                .branches
                .get(branch)
                .map(|b| b.state.get::<T>())
                .unwrap_or_default(),
        }
    }

    /// Updates a state value, as seen from `branch`, under the session's lock.
    pub fn update_state<T: MiddlewareState, R>(
        &self,
        branch: &str,
        f: impl FnOnce(&mut T) -> R,
    ) -> R {
        let mut data = self.data();
        match T::SCOPE {
            StateScope::Session => data.state.update(f),
            StateScope::Branch => data.branch(branch).state.update(f),
        }
    }

    /// The session as JSON: histories and persistent state (transient state is left out).
    pub fn snapshot(&self) -> Value {
        let data = self.data();
        let branches: Map<String, Value> = data
            .branches
            .iter()
            .map(|(name, b)| {
                (
                    name.clone(),
                    json!({
                        "history": b.history,
                        "turns": b.turns,
                        "forked_from": b.forked_from,
                        "state": b.state.snapshot(),
                    }),
                )
            })
            .collect();
        json!({
            "id": &*self.inner.id,
            "state": data.state.snapshot(),
            "branches": branches,
        })
    }

    /// A session from a [`snapshot`](Self::snapshot).
    pub fn restore(snapshot: &Value) -> Result<Session, SessionError> {
        let id = snapshot
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| SessionError("a saved session needs a string `id`".into()))?;
        let state_of = |v: Option<&Value>| match v {
            Some(Value::Object(map)) => map.clone(),
            _ => Map::new(),
        };
        let mut data = SessionData {
            state: StateMap::restored(state_of(snapshot.get("state"))),
            branches: BTreeMap::new(),
        };
        if let Some(Value::Object(branches)) = snapshot.get("branches") {
            for (name, b) in branches {
                let history = match b.get("history") {
                    Some(h) => serde_json::from_value(h.clone()).map_err(|e| {
                        SessionError(format!("branch `{name}`: invalid history: {e}"))
                    })?,
                    None => Vec::new(),
                };
                data.branches.insert(
                    name.clone(),
                    BranchData {
                        history,
                        state: StateMap::restored(state_of(b.get("state"))),
                        turns: b.get("turns").and_then(Value::as_u64).unwrap_or(0),
                        forked_from: b
                            .get("forked_from")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                    },
                );
            }
        }
        Ok(Session::from_data(id.into(), data))
    }

    pub(crate) fn data(&self) -> MutexGuard<'_, SessionData> {
        self.inner
            .data
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The lock that serialises turns on one branch.
    pub(crate) fn turn_lock(&self, branch: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self
            .inner
            .turn_locks
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        Arc::clone(locks.entry(branch.to_owned()).or_default())
    }
}

/// A branch forked from another, not yet part of its session.
pub struct BranchFork {
    pub(crate) session: Session,
    pub(crate) from: String,
    pub(crate) name: String,
    pub(crate) history: Vec<Message>,
    pub(crate) state: StateMap,
}

impl fmt::Debug for BranchFork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BranchFork")
            .field("session", &self.session.id())
            .field("from", &self.from)
            .field("name", &self.name)
            .field("history", &self.history.len())
            .finish()
    }
}

impl BranchFork {
    pub(crate) fn new(
        session: &Session,
        from: &str,
        name: &str,
        keep: Option<usize>,
    ) -> Result<BranchFork, SessionError> {
        let data = session.data();
        if data.branches.contains_key(name) {
            return Err(SessionError(format!(
                "session `{}` already has a branch `{name}`",
                session.id()
            )));
        }
        let source = data.branches.get(from).ok_or_else(|| {
            SessionError(format!(
                "session `{}` has no branch `{from}` to fork",
                session.id()
            ))
        })?;
        let mut history = source.history.clone();
        if let Some(keep) = keep {
            history.truncate(keep);
        }
        Ok(BranchFork {
            session: session.clone(),
            from: from.to_owned(),
            name: name.to_owned(),
            history,
            state: source.state.duplicate(),
        })
    }

    /// The new branch's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The branch it was forked from.
    pub fn from(&self) -> &str {
        &self.from
    }

    /// Its history.
    pub fn history(&self) -> &[Message] {
        &self.history
    }
}
