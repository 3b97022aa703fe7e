//! Resources: what a call touches — paths, shell commands, URLs — and how each is resolved.

pub(crate) mod glob;
pub(crate) mod matchers;
pub(crate) mod patch;
pub mod path;
pub mod shell;
pub mod url;
