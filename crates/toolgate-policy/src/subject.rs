//! Subjects: what a call touches. Each subject is decided on its own and the strictest result
//! wins.
//!
//! A call's subjects are its resources — each path, each simple command, each URL — or the call
//! itself when it has none. Rules without resource conditions apply to every subject.

use std::fmt;

use serde::Serialize;

/// One thing a call touches, decided on its own.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Subject {
    /// The call as a whole (a call with no resources).
    Call,
}

impl Subject {
    /// The subject's kind, as written in results (`call`).
    pub const fn kind(&self) -> &'static str {
        match self {
            Subject::Call => "call",
        }
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Subject::Call => f.write_str("the call"),
        }
    }
}

/// The subjects of a call, in the order they are decided.
pub(crate) fn subjects_of(_call: &crate::Call) -> Vec<Subject> {
    vec![Subject::Call]
}
