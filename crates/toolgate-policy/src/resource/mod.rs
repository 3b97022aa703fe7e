//! Resources: what a call touches — paths, shell commands, URLs — and how each is resolved.

pub(crate) mod matchers;
pub mod path;
pub mod shell;
pub mod url;
