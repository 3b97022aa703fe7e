//! The shell's own commands. The shell grammar reads the ones that change what later commands
//! do (`cd`, `export`, `alias`, `source`, `eval`, assignments); these records say what the rest
//! touch.
//!
//! Source: the GNU Bash 5.2 reference manual, "Shell Builtin Commands".

use super::super::{Kind, Operands, Program, Role, ex, flag, program, value};

/// A builtin that changes only the shell's own state, or prints it.
const fn builtin(names: &'static [&'static str]) -> Program {
    Program {
        complete: true,
        operands: Operands::all(Role::Data),
        ..program(names, Kind::Reads)
    }
}

pub(super) const PROGRAMS: &[Program] = &[
    Program {
        examples: &[ex("cd src", "kind:reads"), ex("export A=1", "kind:reads")],
        ..builtin(&[
            "cd",
            "pushd",
            "popd",
            "dirs",
            "export",
            "unset",
            "set",
            "shift",
            "local",
            "declare",
            "typeset",
            "readonly",
            "return",
            "break",
            "continue",
            "exit",
            "logout",
            "hash",
            "times",
            "umask",
            "ulimit",
            "jobs",
            "fg",
            "bg",
            "disown",
            "wait",
            "shopt",
            "caller",
            "suspend",
            "getopts",
            "read",
            "mapfile",
            "readarray",
            "compgen",
            "complete",
            "compopt",
            "unalias",
            "bind",
            "let",
            "unsetopt",
            "setopt",
            "emulate",
            "rehash",
            "whence",
            "where",
            "print",
            "autoload",
            "zmodload",
            "functions",
            "vared",
        ])
    }
    .with_options(&[flag("aAfFgilnpruxvwPLsoe", ""), value("dt", "", Role::Data)]),
    super::text::HISTORY,
];
