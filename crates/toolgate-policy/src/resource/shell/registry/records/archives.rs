//! Archivers and compressors: tar, zip, unzip, 7z, cpio, gzip and its kin.
//!
//! Sources: GNU tar 1.35 manual (and bsdtar 3.7's), Info-ZIP zip 3.0 and unzip 6.0 man pages,
//! 7-Zip 23 command-line help, GNU cpio 2.15 manual, gzip 1.12, bzip2 1.0, xz 5.4, zstd 1.5.

use super::super::code;
use super::super::{
    Effect, Kind, Operands, Program, Role, Syntax, attached, does, ex, flag, program, risk,
    risk_value, value,
};
use super::{HELP, VERSION};

const TAR_RUNS: &str = "runs a program";

pub(super) const PROGRAMS: &[Program] = &[
    Program {
        syntax: Syntax::Tar,
        complete: true,
        operands: Operands::all(Role::Data),
        language: Some(code::tar),
        examples: &[
            ex(
                "tar -xzf a.tgz -C build",
                "read:a.tgz into:build recursive kind:writes",
            ),
            ex("tar xzf a.tgz", "read:a.tgz into:. recursive kind:writes"),
            ex(
                "tar czf out.tgz src",
                "write:out.tgz read:src recursive kind:writes",
            ),
            ex("tar -tzf a.tar.gz", "read:a.tar.gz recursive kind:writes"),
            ex(
                "tar -C .git -C hooks -xf a.tar",
                "read:a.tar into:.git/hooks recursive kind:writes",
            ),
            ex(
                "tar -g snap -cf x.tar src",
                "write:snap write:x.tar read:src recursive kind:writes",
            ),
            ex(
                "tar --index-file=idx -cvf x.tar src",
                "write:idx write:x.tar read:src recursive kind:writes",
            ),
            ex(
                "tar -xPf evil.tar",
                "read:evil.tar into:. risk recursive kind:writes",
            ),
            ex(
                "tar --to-command=sh -xf a.tar",
                "read:a.tar into:. risk recursive kind:writes",
            ),
            ex(
                "tar -cf x.tar -T list",
                "write:x.tar read:list risk recursive kind:writes",
            ),
            ex("tar -C src -czf - .", "read:src/. recursive kind:writes"),
            ex(
                "tar -chf x.tar dir",
                "write:x.tar read:dir recursive follows kind:writes",
            ),
        ],
        ..program(&["tar", "gtar", "bsdtar"], Kind::Writes)
    }
    .with_options(&[
        does("c", "create", Effect::Mode("c")),
        does("x", "extract get", Effect::Mode("x")),
        does("t", "list", Effect::Mode("t")),
        does("r", "append", Effect::Mode("c")),
        does("u", "update", Effect::Mode("c")),
        does("A", "catenate concatenate", Effect::Mode("c")),
        does("d", "diff compare", Effect::Mode("t")),
        does("", "delete", Effect::Mode("c")),
        value("f", "file", Role::Data),
        value("C", "directory", Role::Data),
        value("g", "listed-incremental", Role::Write),
        value("", "index-file", Role::Write),
        risk_value(
            "T",
            "files-from",
            Role::Read,
            "reads the names of the files it takes from a file or its input",
        ),
        value("X", "exclude-from", Role::Read),
        value(
            "bHKLNV",
            "blocking-factor format starting-file tape-length newer after-date label exclude owner group mode mtime newer-mtime record-size occurrence strip-components suffix backup sort warning quoting-style owner-map group-map clamp-mtime exclude-tag exclude-tag-under exclude-tag-all hole-detection pax-option anchored no-anchored checkpoint xattrs-include xattrs-exclude level one-top-level",
            Role::Data,
        ),
        risk_value("I", "use-compress-program", Role::Data, TAR_RUNS),
        risk_value(
            "F",
            "info-script new-volume-script",
            Role::Data,
            TAR_RUNS,
        ),
        risk_value(
            "",
            "to-command checkpoint-action rsh-command rmt-command",
            Role::Data,
            TAR_RUNS,
        ),
        risk_value(
            "",
            "transform xform",
            Role::Data,
            "renames what it unpacks, so toolgate cannot tell where it goes",
        ),
        risk_value(
            "s",
            "",
            Role::Data,
            "renames what it unpacks, so toolgate cannot tell where it goes",
        ),
        risk(
            "P",
            "absolute-names",
            "keeps the leading `/` of member names, so it may write anywhere",
        ),
        does("h", "dereference", Effect::Follows),
        flag(
            "vzjJaGMiWkBlmOopSUwZ",
            "verbose gzip gunzip ungzip bzip2 xz lzip lzma lzop zstd auto-compress compress uncompress incremental multi-volume ignore-zeros verify keep-old-files keep-newer-files skip-old-files overwrite overwrite-dir read-full-records check-links touch to-stdout no-same-owner same-owner no-same-permissions same-permissions preserve-permissions sparse unlink-first recursive-unlink interactive confirmation totals show-transformed-names show-stored-names no-recursion recursion null no-null unquote no-unquote wildcards no-wildcards wildcards-match-slash no-wildcards-match-slash ignore-case no-ignore-case ignore-failed-read ignore-command-error no-ignore-command-error remove-files atime-preserve numeric-owner full-time utc block-number show-defaults show-omitted-dirs restrict xattrs no-xattrs acls no-acls selinux no-selinux exclude-backups exclude-caches exclude-caches-under exclude-caches-all exclude-vcs exclude-vcs-ignores no-seek seek posix old-archive portability delay-directory-restore no-delay-directory-restore no-overwrite-dir one-file-system no-auto-compress check-device no-check-device usage verbatim-files-from no-verbatim-files-from keep-directory-symlink dereference-args",
        ),
        HELP,
        VERSION,
    ]),
    Program {
        complete: true,
        operands: Operands {
            first: &[Role::Write],
            rest: Role::Read,
            last: None,
        },
        language: Some(code::zip),
        examples: &[
            ex(
                "zip -r out.zip src",
                "write:out.zip read:src recursive follows kind:writes",
            ),
            ex(
                "zip -ry out.zip src",
                "write:out.zip read:src recursive kind:writes",
            ),
            ex("zip -@ out.zip", "write:out.zip risk kind:writes"),
            ex(
                "zip -R out.zip *.c",
                "write:out.zip read:*.c read:. recursive follows kind:writes",
            ),
        ],
        ..program(&["zip"], Kind::Writes)
    }
    .with_options(&[
        does("r", "recurse-paths", Effect::Recursive),
        does("R", "recurse-patterns", Effect::Recursive),
        risk(
            "@",
            "names-stdin",
            "reads the names of the files it takes from a file or its input",
        ),
        risk_value("", "unzip-command", Role::Data, "runs a program"),
        risk("T", "test", "runs a program to test the archive"),
        flag("y", "symlinks"),
        flag(
            "qvdumfFjkloADJLSXz0123456789e",
            "quiet verbose delete update move freshen fix fixfix junk-paths to-crlf from-crlf no-dir-entries adjust-sfx license system-hidden no-extra entry-comments encrypt archive-comment",
        ),
        value(
            "bnPtixI",
            "temp-path suffixes password from-date include exclude tt",
            Role::Data,
        ),
        HELP,
        VERSION,
    ]),
    Program {
        complete: true,
        operands: Operands {
            first: &[Role::Read],
            rest: Role::Data,
            last: None,
        },
        language: Some(code::unzip),
        examples: &[
            ex(
                "unzip a.zip -d out",
                "read:a.zip into:out recursive kind:writes",
            ),
            ex("unzip -l a.zip", "read:a.zip recursive kind:writes"),
            ex("unzip -o a.zip", "read:a.zip into:. recursive kind:writes"),
        ],
        ..program(&["unzip"], Kind::Writes)
    }
    .with_options(&[
        value("d", "", Role::Into),
        flag("lvtpczZfunoqjaACLMVWXKU", ""),
        value("xP", "", Role::Data),
        HELP,
        VERSION,
    ]),
    Program {
        operands: Operands {
            first: &[Role::Data],
            rest: Role::Read,
            last: None,
        },
        language: Some(code::seven_zip),
        examples: &[
            ex(
                "7z x a.7z -oout",
                "read:a.7z into:out recursive follows kind:writes",
            ),
            ex("7z l a.7z", "read:a.7z recursive follows kind:writes"),
            ex(
                "7z a out.7z src",
                "write:out.7z read:src recursive follows kind:writes",
            ),
        ],
        ..program(&["7z", "7za", "7zr", "7zz"], Kind::Writes)
    }
    .with_options(&[
        attached("o", "", Role::Into),
        attached("ptmvwixu", "", Role::Data),
        flag("ry", ""),
        flag("", "snl sdel"),
    ]),
    Program {
        operands: Operands::all(Role::Data),
        language: Some(code::cpio),
        examples: &[
            ex("cpio -idv", "into:. recursive kind:writes"),
            ex("cpio -o", "risk kind:writes"),
            ex("cpio -tv", "kind:writes"),
        ],
        ..program(&["cpio"], Kind::Writes)
    }
    .with_options(&[
        does("o", "create", Effect::Mode("c")),
        does("i", "extract", Effect::Mode("x")),
        does("p", "pass-through", Effect::Mode("p")),
        does("t", "list", Effect::Mode("t")),
        value("F", "file", Role::Data),
        value("D", "directory", Role::Folder),
        value(
            "EHIOR",
            "pattern-file format owner block-size io-size",
            Role::Data,
        ),
        flag(
            "dvumabBcfklLnrsSV",
            "make-directories verbose unconditional preserve-modification-time dereference no-absolute-filenames absolute-filenames",
        ),
        HELP,
        VERSION,
    ]),
    Program {
        complete: true,
        operands: Operands::all(Role::Write),
        language: Some(code::compressor),
        examples: &[
            ex("gzip a.txt", "write:a.txt kind:writes"),
            ex("gzip -dc a.gz", "read:a.gz kind:writes"),
            ex("zstd -o out.zst a", "write:out.zst write:a kind:writes"),
        ],
        ..program(
            &[
                "gzip",
                "gunzip",
                "bzip2",
                "bunzip2",
                "xz",
                "unxz",
                "lzma",
                "unlzma",
                "zstd",
                "unzstd",
                "lz4",
                "pigz",
                "unpigz",
                "compress",
                "uncompress",
                "brotli",
            ],
            Kind::Writes,
        )
    }
    .with_options(&[
        flag("c", "stdout to-stdout"),
        flag("l", "list"),
        flag("t", "test"),
        flag("r", "recursive"),
        flag(
            "dfkqvnNT0123456789z",
            "decompress uncompress force keep quiet verbose no-name name fast best rsyncable threads rm long ultra no-progress compress synchronous",
        ),
        value(
            "S",
            "suffix memlimit format check filters",
            Role::Data,
        ),
        value("o", "output", Role::Write),
        HELP,
        flag("V", "version"),
    ]),
    Program {
        complete: true,
        operands: Operands::all(Role::Read),
        examples: &[ex("zcat a.gz", "read:a.gz kind:reads")],
        ..program(
            &[
                "zcat", "bzcat", "xzcat", "zstdcat", "lz4cat", "zless", "zmore", "zdiff",
            ],
            Kind::Reads,
        )
    }
    .with_options(&[flag("fqv", "force quiet verbose"), HELP, VERSION]),
];
