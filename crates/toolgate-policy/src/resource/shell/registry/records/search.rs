//! Programs that search files and folders: grep and its kin, ripgrep, the silver searcher, ack,
//! ugrep, fd, find, locate.
//!
//! Sources: GNU grep 3.11 manual; ripgrep 14 `--help`; ag 2.2 and ack 3 man pages; ugrep 6;
//! fd 10; GNU findutils 4.9 manual.

use super::super::code;
use super::super::{
    Effect, Kind, Operands, Program, Role, Syntax, attached, does, env, ex, flag, program, risk,
    risk_value, value,
};
use super::{HELP, VERSION};

pub(super) const PROGRAMS: &[Program] = &[
    Program {
        examples: &[
            ex("grep -rn fn\\smain src", "read:src recursive kind:reads"),
            ex("grep -e TODO -e FIXME a b", "read:a read:b kind:reads"),
            ex("grep -rif.env x", "read:.env read:x recursive kind:reads"),
            ex("grep -r TODO", "read:. recursive kind:reads"),
            ex(
                "grep -R key ~/.ssh",
                "read:~/.ssh recursive follows kind:reads",
            ),
            ex("grep --rec --reg TODO", "read:. recursive kind:reads"),
            ex("grep -d recurse x dir", "read:dir recursive kind:reads"),
            ex("grep x", "kind:reads"),
        ],
        complete: true,
        operands: Operands::all(Role::Data),
        language: Some(code::grep),
        ..program(&["grep", "egrep", "fgrep", "ggrep", "zgrep"], Kind::Reads)
    }
    .with_options(&[
        flag(
            "EFGPivwxycLloqsbHhnTZaIUz",
            "extended-regexp fixed-strings basic-regexp perl-regexp ignore-case no-ignore-case invert-match word-regexp line-regexp count files-without-match files-with-matches only-matching quiet silent no-messages byte-offset with-filename no-filename line-number initial-tab null text line-buffered binary null-data",
        ),
        value("e", "regexp", Role::Data),
        value("f", "file", Role::Read),
        value(
            "mABC",
            "max-count after-context before-context context label binary-files exclude exclude-dir include devices",
            Role::Data,
        ),
        value("D", "", Role::Data),
        value("d", "directories", Role::Data),
        value("", "exclude-from", Role::Read),
        attached("", "color colour", Role::Data),
        does("r", "recursive", Effect::Recursive),
        does("R", "dereference-recursive", Effect::Follows),
        HELP,
        flag("V", "version"),
    ]),
    Program {
        syntax: Syntax::Exact,
        examples: &[
            ex("rg -n TODO src", "read:src recursive kind:reads"),
            ex("rg TODO", "read:. recursive kind:reads"),
            ex("rg --files", "read:. recursive kind:reads"),
            ex("rg -e TODO src", "read:src recursive kind:reads"),
            ex("rg --pre=sh x", "risk read:. recursive kind:reads"),
            ex("rg -z x", "risk read:. recursive kind:reads"),
            ex("rg -L key ~", "read:~ recursive follows kind:reads"),
            ex("rg -g *.py -t py TODO src", "read:src recursive kind:reads"),
        ],
        complete: true,
        operands: Operands::all(Role::Data),
        language: Some(code::grep),
        env: &[env(
            "RIPGREP_CONFIG_PATH",
            "names a file of options ripgrep adds, such as `--pre`",
        )],
        ..program(&["rg"], Kind::Reads)
    }
    .with_options(&[
        flag(
            "iswxvclnNopqbHIaUPFS0.u",
            "ignore-case case-sensitive smart-case word-regexp line-regexp invert-match count count-matches files-with-matches files-without-match line-number no-line-number only-matching pretty quiet byte-offset with-filename no-filename text multiline multiline-dotall pcre2 fixed-strings null hidden unrestricted no-ignore no-ignore-dot no-ignore-exclude no-ignore-files no-ignore-global no-ignore-parent no-ignore-vcs no-require-git ignore-file-case-insensitive json vimgrep heading no-heading column trim stats debug trace files type-list passthru one-file-system glob-case-insensitive crlf null-data no-unicode no-pcre2-unicode auto-hybrid-regex include-zero line-buffered block-buffered no-messages binary no-binary mmap no-mmap no-config max-columns-preview sort-files pcre2-version no-follow no-hidden no-pre no-search-zip engine-auto",
        ),
        value("e", "regexp", Role::Data),
        value("f", "file", Role::Read),
        value(
            "gtTABCmMdjEr",
            "glob iglob type type-not type-add type-clear after-context before-context context max-count max-columns max-depth maxdepth max-filesize threads encoding replace sort sortr engine path-separator colors context-separator field-context-separator field-match-separator dfa-size-limit regex-size-limit generate",
            Role::Data,
        ),
        value("", "ignore-file", Role::Read),
        attached("", "color", Role::Data),
        risk_value("", "pre", Role::Data, "runs a preprocessor program"),
        value("", "pre-glob", Role::Data),
        risk("z", "search-zip", "runs a preprocessor program"),
        risk_value(
            "",
            "hostname-bin",
            Role::Data,
            "runs a program to learn the host name",
        ),
        does("L", "follow", Effect::Follows),
        flag("h", "help"),
        flag("V", "version"),
    ]),
    Program {
        examples: &[
            ex("ag TODO src", "read:src recursive kind:reads"),
            ex("ag -f x", "read:. recursive follows kind:reads"),
            ex("ack -i foo", "read:. recursive kind:reads"),
        ],
        operands: Operands::all(Role::Data),
        language: Some(code::grep),
        ..program(&["ag", "ack", "ack-grep"], Kind::Reads)
    }
    .with_options(&[
        flag(
            "iswvclLnoQHaUu",
            "ignore-case case-sensitive smart-case word-regexp invert-match count files-with-matches files-without-matches literal hidden all-text unrestricted nocolor color column noheading heading nobreak vimgrep filename nofilename no-filename line-numbers ignore-dir",
        ),
        value(
            "ABCGmg",
            "after before context file-search-regex max-count depth ignore type",
            Role::Data,
        ),
        does("f", "follow", Effect::Follows),
        HELP,
        VERSION,
    ]),
    Program {
        examples: &[
            ex("ugrep -r x src", "read:src recursive kind:reads"),
            ex("ug -R x", "read:. recursive follows kind:reads"),
        ],
        operands: Operands::all(Role::Data),
        language: Some(code::grep),
        ..program(&["ugrep", "ug"], Kind::Reads)
    }
    .with_options(&[
        flag(
            "EFGPivwxcLlnoqsHhbIz",
            "ignore-case invert-match word-regexp count line-number quiet no-messages with-filename no-filename",
        ),
        value("e", "regexp", Role::Data),
        value("f", "file", Role::Read),
        value(
            "mABCdDgO",
            "max-count after-context before-context context directories devices glob file-extension include exclude include-dir exclude-dir",
            Role::Data,
        ),
        does("r", "recursive", Effect::Recursive),
        does(
            "RS",
            "dereference-recursive dereference",
            Effect::Follows,
        ),
        HELP,
        VERSION,
    ]),
    Program {
        examples: &[
            ex("fd -e rs main src", "read:src recursive kind:reads"),
            ex("fd main", "read:. recursive kind:reads"),
            ex("fd -x rm", "risk read:. recursive kind:reads"),
        ],
        complete: true,
        syntax: Syntax::Exact,
        operands: Operands {
            first: &[Role::Data],
            rest: Role::Read,
            last: None,
        },
        language: Some(code::fd),
        ..program(&["fd", "fdfind"], Kind::Reads)
    }
    .with_options(&[
        flag("H", "hidden"),
        flag("u", "unrestricted"),
        flag(
            "IsiFaglL0p1q",
            "no-ignore no-ignore-vcs no-ignore-parent case-sensitive ignore-case fixed-strings absolute-path glob regex list-details follow print0 full-path quiet show-errors prune one-file-system no-follow no-hidden require-git",
        ),
        value(
            "edtESjc",
            "extension max-depth min-depth exact-depth type exclude size changed-within changed-before owner threads max-results max-buffer-time color base-directory path-separator format strip-cwd-prefix hyperlink and search-path",
            Role::Data,
        ),
        value("", "ignore-file", Role::Read),
        risk(
            "xX",
            "exec exec-batch",
            "runs a command for each file",
        ),
        flag("h", "help"),
        flag("V", "version"),
    ]),
    Program {
        examples: &[
            ex("find src -name *.rs -type f", "read:src kind:reads"),
            ex("find . -delete", "risk read:. recursive kind:reads"),
            ex("find -name .env", "read:. kind:reads"),
            ex("find / -name id_rsa", "read:/ kind:reads"),
            ex("find . -fprint /tmp/x", "risk read:. kind:reads"),
            ex(
                "find -L src -exec cat {} ;",
                "read:src risk recursive follows kind:reads",
            ),
        ],
        syntax: Syntax::Words,
        complete: true,
        operands: Operands::all(Role::Data),
        language: Some(code::find),
        ..program(&["find", "gfind"], Kind::Reads)
    },
    Program {
        examples: &[ex("locate -i foo", "kind:reads")],
        complete: true,
        operands: Operands::all(Role::Data),
        ..program(&["locate", "plocate", "mlocate"], Kind::Reads)
    }
    .with_options(&[
        flag(
            "AbceiLPqSrw0",
            "all basename count existing ignore-case follow nofollow quiet statistics regex wholename null",
        ),
        value("dln", "database limit", Role::Data),
        HELP,
        VERSION,
    ]),
];
