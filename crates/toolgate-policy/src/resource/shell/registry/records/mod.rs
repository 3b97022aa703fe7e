//! The records, by family. Each file holds the programs of one family; each record carries the
//! examples a test checks.

mod archives;
mod build;
mod files;
mod git;
mod go;
mod jvm;
mod net;
mod node;
mod python;
mod rust;
mod search;
mod shell;
mod system;
mod text;
mod wrappers;

use super::{Opt, flag};

/// Every family's records.
pub(super) const ALL: &[&[super::Program]] = &[
    text::PROGRAMS,
    search::PROGRAMS,
    files::PROGRAMS,
    archives::PROGRAMS,
    net::PROGRAMS,
    git::PROGRAMS,
    wrappers::PROGRAMS,
    shell::PROGRAMS,
    python::PROGRAMS,
    node::PROGRAMS,
    rust::PROGRAMS,
    go::PROGRAMS,
    jvm::PROGRAMS,
    build::PROGRAMS,
    system::PROGRAMS,
];

/// `--help` and `--version`, which every GNU program has.
pub(super) const HELP: Opt = flag("", "help");
pub(super) const VERSION: Opt = flag("", "version");
