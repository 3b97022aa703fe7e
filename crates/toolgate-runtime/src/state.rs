//! Middleware state: typed values scoped to a session or a branch, updated through closures.
//!
//! A state type says where it lives ([`StateScope`]) and whether it is saved with the session
//! ([`MiddlewareState::PERSISTENT`]). Updates happen under a lock, inside the closure, so a
//! read-modify-write cannot interleave with another update, and a later middleware in the same
//! phase sees the new value at once.
//!
//! ```rust,standalone_crate
//! use serde::{Deserialize, Serialize};
//! use toolgate_runtime::{MiddlewareState, Session, StateScope};
//!
//! #[derive(Clone, Default, Serialize, Deserialize)]
//! struct Seen { calls: u32 }
//! impl MiddlewareState for Seen {
//!     const KEY: &'static str = "example.seen";
//!     const SCOPE: StateScope = StateScope::Session;
//!     const PERSISTENT: bool = true;
//! }
//!
//! let session = Session::new("s1");
//! session.update_state::<Seen, _>("main", |s| s.calls += 1);
//! assert_eq!(session.state::<Seen>("other-branch").calls, 1); // session scope: shared
//! let saved = session.snapshot();
//! assert_eq!(saved["state"]["example.seen"]["calls"], 1);
//! ```

use std::any::{Any, TypeId};
use std::collections::HashMap;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// Where a state value lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StateScope {
    /// One value per session, shared by all its branches.
    Session,
    /// One value per branch; a fork starts with a copy.
    Branch,
}

/// A middleware's own state.
pub trait MiddlewareState:
    Clone + Default + Serialize + DeserializeOwned + Send + Sync + 'static
{
    /// Its name in a saved session. Unique per type.
    const KEY: &'static str;
    /// Where it lives.
    const SCOPE: StateScope = StateScope::Branch;
    /// Whether it is saved with the session (transient state lives as long as the session
    /// object in memory).
    const PERSISTENT: bool = false;
}

type AnyValue = Box<dyn Any + Send + Sync>;

struct Entry {
    value: AnyValue,
    key: &'static str,
    save: Option<fn(&AnyValue) -> Option<Value>>,
    clone: fn(&AnyValue) -> AnyValue,
}

fn save<T: MiddlewareState>(value: &AnyValue) -> Option<Value> {
    value
        .downcast_ref::<T>()
        .and_then(|v| serde_json::to_value(v).ok())
}

fn clone<T: MiddlewareState>(value: &AnyValue) -> AnyValue {
    Box::new(value.downcast_ref::<T>().cloned().unwrap_or_default())
}

/// The state values of one scope.
#[derive(Default)]
pub(crate) struct StateMap {
    values: HashMap<TypeId, Entry>,
    /// Persistent values restored from a snapshot, typed on first use.
    saved: Map<String, Value>,
}

impl StateMap {
    /// Runs `f` on the value of `T`, creating it (from a saved value, or the default) first.
    pub(crate) fn update<T: MiddlewareState, R>(&mut self, f: impl FnOnce(&mut T) -> R) -> R {
        let saved = &mut self.saved;
        let entry = self.values.entry(TypeId::of::<T>()).or_insert_with(|| {
            let initial = saved
                .remove(T::KEY)
                .and_then(|v| serde_json::from_value::<T>(v).ok())
                .unwrap_or_default();
            Entry {
                value: Box::new(initial),
                key: T::KEY,
                save: T::PERSISTENT.then_some(save::<T> as fn(&AnyValue) -> Option<Value>),
                clone: clone::<T>,
            }
        });
        if let Some(value) = entry.value.downcast_mut::<T>() {
            return f(value);
        }
        // Unreachable by construction (the map is keyed by the type); stay total anyway.
        let mut value = T::default();
        let result = f(&mut value);
        entry.value = Box::new(value);
        result
    }

    /// A copy of the value of `T` (the default when it was never set).
    pub(crate) fn get<T: MiddlewareState>(&self) -> T {
        match self.values.get(&TypeId::of::<T>()) {
            Some(entry) => entry.value.downcast_ref::<T>().cloned().unwrap_or_default(),
            None => self
                .saved
                .get(T::KEY)
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .unwrap_or_default(),
        }
    }

    /// The persistent values, by key.
    pub(crate) fn snapshot(&self) -> Map<String, Value> {
        let mut out = self.saved.clone();
        for entry in self.values.values() {
            if let Some(value) = entry.save.and_then(|save| save(&entry.value)) {
                out.insert(entry.key.to_owned(), value);
            }
        }
        out
    }

    /// A map that will yield these persistent values.
    pub(crate) fn restored(saved: Map<String, Value>) -> StateMap {
        StateMap {
            values: HashMap::new(),
            saved,
        }
    }

    /// A copy of every value (for a fork).
    pub(crate) fn duplicate(&self) -> StateMap {
        StateMap {
            values: self
                .values
                .iter()
                .map(|(id, e)| {
                    (
                        *id,
                        Entry {
                            value: (e.clone)(&e.value),
                            key: e.key,
                            save: e.save,
                            clone: e.clone,
                        },
                    )
                })
                .collect(),
            saved: self.saved.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Clone, Default, Serialize, Deserialize, PartialEq, Debug)]
    struct Counter(u32);
    impl MiddlewareState for Counter {
        const KEY: &'static str = "test.counter";
        const PERSISTENT: bool = true;
    }

    #[derive(Clone, Default, Serialize, Deserialize, PartialEq, Debug)]
    struct Scratch(Vec<String>);
    impl MiddlewareState for Scratch {
        const KEY: &'static str = "test.scratch";
    }

    #[test]
    fn updates_are_visible_at_once_and_only_persistent_values_are_saved() {
        let mut map = StateMap::default();
        map.update::<Counter, _>(|c| c.0 += 2);
        map.update::<Scratch, _>(|s| s.0.push("x".into()));
        assert_eq!(map.get::<Counter>(), Counter(2));
        assert_eq!(map.get::<Scratch>(), Scratch(vec!["x".into()]));
        let saved = map.snapshot();
        assert_eq!(
            Value::Object(saved.clone()),
            serde_json::json!({"test.counter": 2})
        );

        let mut restored = StateMap::restored(saved);
        assert_eq!(restored.get::<Counter>(), Counter(2));
        assert_eq!(restored.get::<Scratch>(), Scratch::default());
        restored.update::<Counter, _>(|c| c.0 += 1);
        assert_eq!(restored.get::<Counter>(), Counter(3));
    }

    #[test]
    fn a_duplicate_is_independent() {
        let mut map = StateMap::default();
        map.update::<Counter, _>(|c| c.0 = 5);
        let mut copy = map.duplicate();
        copy.update::<Counter, _>(|c| c.0 = 9);
        assert_eq!(map.get::<Counter>(), Counter(5));
        assert_eq!(copy.get::<Counter>(), Counter(9));
    }
}
