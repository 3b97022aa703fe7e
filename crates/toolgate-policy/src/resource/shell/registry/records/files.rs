//! Programs that write the files they are given: GNU coreutils' writers, `dd`, `mktemp`,
//! `patch`.
//!
//! Sources: GNU coreutils 9.x manual; GNU patch 2.7.

use super::super::code;
use super::super::{
    Effect, Kind, Operands, Program, Role, attached, does, ex, flag, program, risk, value,
};
use super::{HELP, VERSION};
use crate::resource::shell::registry::Opt;

/// A writer: complete options, every operand a file it writes.
const fn writer(names: &'static [&'static str], options: &'static [Opt]) -> Program {
    Program {
        complete: true,
        options,
        operands: Operands::all(Role::Write),
        ..program(names, Kind::Writes)
    }
}

/// The operands of a copy: sources read, the last one written.
const COPY: Operands = Operands {
    first: &[],
    rest: Role::Read,
    last: Some(Role::Write),
};

pub(super) const PROGRAMS: &[Program] = &[
    // Codex runs `apply_patch PATCH` (and `applypatch`) given through its shell tool itself
    // (codex-rs `apply-patch`): the files the patch names are written.
    Program {
        complete: true,
        operands: Operands::all(Role::Data),
        language: Some(code::apply_patch),
        examples: &[
            ex(
                "apply_patch ***\\sBegin\\sPatch\n***\\sAdd\\sFile:\\sa.md\n+x\n***\\sEnd\\sPatch",
                "write:a.md kind:writes",
            ),
            ex("apply_patch", "risk kind:writes"),
        ],
        ..program(&["apply_patch", "applypatch"], Kind::Writes)
    },
    Program {
        examples: &[
            ex("rm -rf target", "write:target recursive kind:writes"),
            ex("rm a b", "write:a write:b kind:writes"),
            ex("rm x -fr", "write:x recursive kind:writes"),
            ex("rm --recursive --force y", "write:y recursive kind:writes"),
        ],
        ..writer(
            &["rm"],
            &[
                flag("f", "force"),
                flag("i", "interactive"),
                flag("d", "dir"),
                flag("v", "verbose"),
                flag("I", ""),
                flag("", "one-file-system no-preserve-root preserve-root"),
                does("rR", "recursive", Effect::Recursive),
                HELP,
                VERSION,
            ],
        )
    },
    writer(
        &["rmdir"],
        &[
            flag("pv", "ignore-fail-on-non-empty parents verbose"),
            HELP,
            VERSION,
        ],
    ),
    writer(&["unlink"], &[HELP, VERSION]),
    writer(
        &["shred"],
        &[
            flag("fuvxz", "force remove verbose exact zero"),
            value("ns", "iterations size random-source", Role::Data),
            HELP,
            VERSION,
        ],
    ),
    Program {
        examples: &[
            ex("touch a", "write:a kind:writes"),
            ex("touch -r ref -d now b", "read:ref write:b kind:writes"),
        ],
        ..writer(
            &["touch"],
            &[
                flag("acfhm", "no-create no-dereference"),
                value("dt", "date time", Role::Data),
                value("r", "reference", Role::Read),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[ex("mkdir -p target/tmp", "write:target/tmp kind:writes")],
        ..writer(
            &["mkdir"],
            &[
                flag("pvZ", "parents verbose"),
                value("m", "mode context", Role::Data),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[
            ex("mv a b", "write:a write:b unknown:b/a kind:writes"),
            ex(
                "mv -t dir a b",
                "into:dir write:a write:b unknown:dir/a unknown:dir/b kind:writes",
            ),
            ex(
                "mv hooks .git",
                "write:hooks write:.git unknown:.git/hooks kind:writes",
            ),
        ],
        operands: COPY,
        language: Some(code::copy),
        ..writer(
            &["mv"],
            &[
                flag(
                    "bfinTuvZ",
                    "force interactive no-clobber no-target-directory verbose strip-trailing-slashes context exchange no-copy",
                ),
                value("t", "target-directory", Role::Into),
                attached("", "update", Role::Data),
                attached("", "backup", Role::Data),
                value("S", "suffix", Role::Data),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[
            ex("cp a b", "read:a write:b unknown:b/a kind:writes"),
            ex(
                "cp -r src out",
                "read:src write:out unknown:out/src recursive kind:writes",
            ),
            ex(
                "cp -rL a b",
                "read:a write:b unknown:b/a recursive follows kind:writes",
            ),
        ],
        operands: COPY,
        language: Some(code::copy),
        ..writer(
            &["cp"],
            &[
                flag("l", "link"),
                flag("s", "symbolic-link"),
                flag(
                    "bdfHinPpTuvxZ",
                    "force interactive no-clobber no-dereference no-target-directory verbose one-file-system strip-trailing-slashes parents attributes-only copy-contents remove-destination keep-directory-symlink debug",
                ),
                does("rR", "recursive", Effect::Recursive),
                does("a", "archive", Effect::Recursive),
                does("L", "dereference", Effect::Follows),
                value("t", "target-directory", Role::Into),
                attached(
                    "",
                    "preserve no-preserve reflink sparse update context",
                    Role::Data,
                ),
                attached("", "backup", Role::Data),
                value("S", "suffix", Role::Data),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[ex(
            "install -m 755 a bin/a",
            "read:a write:bin/a unknown:bin/a/a kind:writes",
        )],
        operands: COPY,
        language: Some(code::copy),
        ..writer(
            &["install"],
            &[
                flag(
                    "bcCdDpsTvZ",
                    "compare directory preserve-timestamps strip no-target-directory verbose debug preserve-context",
                ),
                value("mog", "mode owner group context", Role::Data),
                value("t", "target-directory", Role::Into),
                risk("", "strip-program", "runs a program"),
                attached("", "backup", Role::Data),
                value("S", "suffix", Role::Data),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[
            ex(
                "ln -s target link",
                "write:link unknown:link/target linked:target linked:./target linked:link/target kind:writes",
            ),
            ex("ln a b", "write:b unknown:b/a linked:a kind:writes"),
        ],
        operands: Operands {
            first: &[],
            rest: Role::Data,
            last: Some(Role::Write),
        },
        language: Some(code::link),
        ..writer(
            &["ln"],
            &[
                flag("s", "symbolic"),
                flag("f", "force"),
                flag(
                    "dFinLPrTv",
                    "directory interactive logical no-dereference physical relative no-target-directory verbose",
                ),
                value("t", "target-directory", Role::Into),
                attached("", "backup", Role::Data),
                value("S", "suffix", Role::Data),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[ex("link a b", "write:b unknown:b/a linked:a kind:writes")],
        operands: Operands {
            first: &[Role::Data],
            rest: Role::Write,
            last: None,
        },
        language: Some(code::link),
        ..writer(&["link"], &[HELP, VERSION])
    },
    Program {
        examples: &[ex("tee -a log.txt", "write:log.txt kind:writes")],
        ..writer(
            &["tee"],
            &[
                flag("aip", "append ignore-interrupts"),
                attached("", "output-error", Role::Data),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[ex("truncate -s 0 a", "write:a kind:writes")],
        ..writer(
            &["truncate"],
            &[
                flag("co", "no-create io-blocks"),
                value("s", "size", Role::Data),
                value("r", "reference", Role::Read),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[
            ex("chmod 600 key", "write:key kind:writes"),
            ex("chmod -R u+w dir", "write:dir recursive kind:writes"),
            ex("chmod --reference=a b", "read:a write:b kind:writes"),
        ],
        operands: Operands {
            first: &[Role::Data],
            rest: Role::Write,
            last: None,
        },
        language: Some(code::mode_operand),
        ..writer(
            &["chmod", "chown", "chgrp"],
            &[
                flag(
                    "cfvhHLP",
                    "changes silent quiet verbose no-dereference no-preserve-root preserve-root dereference",
                ),
                does("R", "recursive", Effect::Recursive),
                value("", "reference", Role::Read),
                value("", "from", Role::Data),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[
            ex("dd if=a of=b bs=1M", "read:a write:b kind:writes"),
            ex(
                "dd if=/dev/zero of=/dev/sda",
                "read:/dev/zero write:/dev/sda kind:writes",
            ),
        ],
        operands: Operands::all(Role::Data),
        language: Some(code::dd),
        ..writer(&["dd"], &[HELP, VERSION])
    },
    Program {
        examples: &[
            ex("mktemp", "into:/tmp kind:writes"),
            ex("mktemp -d -p build", "into:build kind:writes"),
        ],
        operands: Operands::all(Role::Data),
        language: Some(code::mktemp),
        ..writer(
            &["mktemp"],
            &[
                flag("dqut", "directory dry-run quiet"),
                value("p", "", Role::Into),
                attached("", "tmpdir", Role::Into),
                value("", "suffix", Role::Data),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[
            ex("patch -p1 -i fix.diff", "read:fix.diff risk kind:writes"),
            ex(
                "patch --dry-run -p1 -i fix.diff",
                "read:fix.diff kind:writes",
            ),
            ex(
                "patch -o out.c a.c",
                "write:out.c write:a.c risk kind:writes",
            ),
        ],
        operands: Operands {
            first: &[Role::Write],
            rest: Role::Read,
            last: None,
        },
        language: Some(code::patch),
        ..writer(
            &["patch"],
            &[
                flag(
                    "bceEflnNRstuv",
                    "backup context ed remove-empty-files force ignore-whitespace normal forward reverse silent quiet batch unified verbose posix binary dry-run merge follow-symlinks",
                ),
                value("i", "input", Role::Read),
                value("o", "output", Role::Write),
                value("r", "reject-file", Role::Write),
                value("d", "directory", Role::Folder),
                value("BYz", "prefix basename-prefix suffix", Role::Write),
                attached("p", "strip", Role::Data),
                value(
                    "DFgV",
                    "ifdef fuzz get version-control reject-format quoting-style read-only",
                    Role::Data,
                ),
                HELP,
                VERSION,
            ],
        )
    },
];
