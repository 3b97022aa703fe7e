//! Core types for beacon: what a check is, when it runs next, and what it last saw.
//!
//! The CLI and the server both build on [`Config`], [`Scheduler`] and [`StatusBoard`].

pub mod check;
pub mod config;
pub mod error;
pub mod probe;
pub mod schedule;
pub mod status;

pub use check::{Check, CheckId, CheckKind};
pub use config::Config;
pub use error::{Error, Result};
pub use schedule::Scheduler;
pub use status::{Outcome, Status, StatusBoard};
