//! The shell's own commands. The shell grammar reads the ones that change what later commands
//! do (`cd`, `export`, `alias`, `source`, `eval`, assignments); these records say what the rest
//! touch.
//!
//! Source: the GNU Bash 5.2 reference manual, "Shell Builtin Commands".

use super::super::code;
use super::super::{Kind, Operands, Program, Role, ex, flag, program, risk_value, value};

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
        examples: &[
            ex("cd src", "kind:reads"),
            ex("export A=1", "kind:reads"),
            ex("set -euo pipefail", "kind:reads"),
            ex("set", "risk kind:reads"),
            ex("export -p", "risk kind:reads"),
            ex("declare -x", "risk kind:reads"),
            ex("read -r name rest", "kind:reads"),
            ex("read -r HOME", "risk kind:reads"),
            ex("hash -p /tmp/x git", "risk kind:reads"),
        ],
        language: Some(code::shell_builtin),
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
    // `source FILE` runs the file's commands in this shell, as `sh FILE` runs them in another.
    // Named without a `/`, bash looks the file up in `$PATH` first: which file runs is not known.
    Program {
        examples: &[
            ex(
                "source .venv/bin/activate",
                "read:.venv/bin/activate kind:runs",
            ),
            ex(". ./env.sh a b", "read:./env.sh kind:runs"),
            ex("source activate", "read:activate risk kind:runs"),
        ],
        complete: true,
        operands: Operands {
            first: &[Role::Read],
            rest: Role::Data,
            last: None,
        },
        language: Some(code::source),
        ..program(&["source", "."], Kind::Runs)
    },
    Program {
        examples: &[
            ex("mapfile -t lines", "kind:reads"),
            ex("mapfile -t PATH", "risk kind:reads"),
            ex("readarray -C cb -c 1 a", "risk kind:reads"),
        ],
        complete: true,
        operands: Operands::all(Role::Data),
        language: Some(code::shell_builtin),
        ..program(&["mapfile", "readarray"], Kind::Reads)
    }
    .with_options(&[
        flag("t", ""),
        value("dnOsuc", "", Role::Data),
        risk_value(
            "C",
            "",
            Role::Data,
            "runs the callback it names for each line",
        ),
    ]),
    super::text::HISTORY,
];
