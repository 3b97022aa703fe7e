//! Programs that read text and print: GNU coreutils' readers, pagers, jq, sed, awk, and what
//! prints facts about the system.
//!
//! Sources: GNU coreutils 9.x `--help` and manual; util-linux; jq 1.7 manual; GNU sed 4.9 and
//! gawk 5 manuals.

use super::super::code;
use super::super::{
    Effect, Kind, Operands, Program, Role, Takes, attached, env, ex, flag, program, risk,
    risk_value, value,
};
use super::{HELP, VERSION};
use crate::resource::shell::registry::Opt;

const ZERO: Opt = flag("z", "zero-terminated zero null-data");

/// A reader: complete GNU-style options, operands that are files it reads.
const fn reader(names: &'static [&'static str], options: &'static [Opt]) -> Program {
    Program {
        complete: true,
        options,
        operands: Operands::all(Role::Read),
        ..program(names, Kind::Reads)
    }
}

/// A program that prints what it is given or facts, and opens nothing.
const fn printer(names: &'static [&'static str], options: &'static [Opt]) -> Program {
    Program {
        complete: true,
        options,
        operands: Operands::all(Role::Data),
        ..program(names, Kind::Reads)
    }
}

const CHECKSUM: &[Opt] = &[
    flag("b", "binary"),
    risk(
        "c",
        "check",
        "reads the files its checksum list names, which the command does not show",
    ),
    flag(
        "",
        "tag untagged ignore-missing quiet status strict base64 raw debug",
    ),
    flag("t", "text"),
    flag("w", "warn"),
    ZERO,
    value("l", "length", Role::Data),
    value("a", "algorithm", Role::Data),
    HELP,
    VERSION,
];

pub(super) const PROGRAMS: &[Program] = &[
    Program {
        examples: &[
            ex(
                "cat -n src/a.rs b.txt",
                "read:src/a.rs read:b.txt kind:reads",
            ),
            ex("cat --show-all x", "read:x kind:reads"),
            ex("cat", "kind:reads"),
        ],
        ..reader(
            &["cat"],
            &[
                flag("A", "show-all"),
                flag("b", "number-nonblank"),
                flag("eEtTuv", "show-ends show-tabs show-nonprinting"),
                flag("n", "number"),
                flag("s", "squeeze-blank"),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[
            ex("head -n 20 src/a.rs", "read:src/a.rs kind:reads"),
            ex("head -c100 a -q b", "read:a read:b kind:reads"),
            ex("head -5 x", "read:x kind:reads"),
        ],
        ..reader(
            &["head"],
            &[
                value("c", "bytes", Role::Data),
                value("n", "lines", Role::Data),
                flag("q", "quiet silent"),
                flag("v", "verbose"),
                ZERO,
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[
            ex("tail -n +5 -f log.txt", "read:log.txt kind:reads"),
            ex("tail --pid 12 -s 1 x", "read:x kind:reads"),
        ],
        ..reader(
            &["tail"],
            &[
                value("c", "bytes", Role::Data),
                attached("f", "follow", Role::Data),
                flag("F", "retry"),
                value("n", "lines", Role::Data),
                value("", "max-unchanged-stats pid", Role::Data),
                flag("q", "quiet silent"),
                value("s", "sleep-interval", Role::Data),
                flag("v", "verbose"),
                ZERO,
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[
            ex("wc -l a b", "read:a read:b kind:reads"),
            ex("wc --files0-from=list", "read:list risk kind:reads"),
        ],
        ..reader(
            &["wc"],
            &[
                flag("c", "bytes"),
                flag("m", "chars"),
                flag("l", "lines"),
                flag("L", "max-line-length"),
                flag("w", "words"),
                value("", "total", Role::Data),
                risk_value(
                    "",
                    "files0-from",
                    Role::Read,
                    "reads the names of the files it takes from a file or its input",
                ),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[
            ex("ls -la src", "read:src kind:reads"),
            ex("ls --color=auto -I x --hide y", "kind:reads"),
            ex("ls -1 --sort time a b", "read:a read:b kind:reads"),
        ],
        ..reader(
            &["ls", "dir", "vdir"],
            &[
                flag(
                    "aAbBcCdDfgGhHiklLmnNopqQrRsStuUvxXZ1",
                    "all almost-all author escape ignore-backups directory dired file-type full-time group-directories-first no-group human-readable si dereference-command-line dereference-command-line-symlink-to-dir inode kibibytes dereference numeric-uid-gid literal hide-control-chars show-control-chars quote-name reverse recursive size context zero",
                ),
                value(
                    "",
                    "block-size format hide indicator-style quoting-style sort time time-style",
                    Role::Data,
                ),
                value("I", "ignore", Role::Data),
                value("T", "tabsize", Role::Data),
                value("w", "width", Role::Data),
                attached("F", "classify", Role::Data),
                attached("", "color hyperlink", Role::Data),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[ex("stat -c %s a", "read:a kind:reads")],
        ..reader(
            &["stat"],
            &[
                flag("L", "dereference"),
                flag("f", "file-system"),
                value("c", "format printf", Role::Data),
                flag("t", "terse"),
                value("", "cached", Role::Data),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[
            ex("file -b src/lib.rs", "read:src/lib.rs kind:reads"),
            ex("file -m config/.env: src/x", "read:src/x risk kind:reads"),
            ex("file -C", "risk kind:reads"),
        ],
        env: &[env(
            "MAGIC",
            "names the magic files `file` reads, whose lines it may print",
        )],
        ..reader(
            &["file"],
            &[
                flag(
                    "bcdEhiklLNn0prsSvzZ",
                    "brief checking-printout debug exclude-quiet extension no-dereference mime mime-type mime-encoding keep-going list dereference no-pad no-buffer print0 preserve-date raw no-sandbox special-files uncompress uncompress-noreport",
                ),
                risk("C", "compile", "writes a compiled magic file"),
                value("e", "exclude", Role::Data),
                value("F", "separator", Role::Data),
                risk_value(
                    "f",
                    "files-from",
                    Role::Read,
                    "reads the names of the files it takes from a file or its input",
                ),
                risk_value(
                    "m",
                    "magic-file",
                    Role::Data,
                    "reads magic files, whose lines it may print",
                ),
                value("P", "parameter", Role::Data),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[
            ex("du -sh .", "read:. kind:reads"),
            ex("du -d 1 --exclude '*.o' src", "read:src kind:reads"),
        ],
        ..reader(
            &["du"],
            &[
                flag(
                    "0abcDHhklLmPSsx",
                    "null all apparent-size bytes total dereference-args human-readable inodes dereference count-links no-dereference separate-dirs si summarize one-file-system",
                ),
                value("B", "block-size", Role::Data),
                value("d", "max-depth", Role::Data),
                value("t", "threshold", Role::Data),
                value("", "exclude time-style", Role::Data),
                attached("", "time", Role::Data),
                value("X", "exclude-from", Role::Read),
                risk_value(
                    "",
                    "files0-from",
                    Role::Read,
                    "reads the names of the files it takes from a file or its input",
                ),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[ex("df -h .", "read:. kind:reads")],
        ..reader(
            &["df"],
            &[
                flag(
                    "ahHiklPT",
                    "all human-readable si inodes local no-sync portability sync total print-type",
                ),
                value("B", "block-size", Role::Data),
                value("t", "type", Role::Data),
                value("x", "exclude-type", Role::Data),
                attached("", "output", Role::Data),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[
            ex("diff -u a b", "read:a read:b recursive kind:reads"),
            ex(
                "diff -r --exclude=x -x y old new",
                "read:old read:new recursive kind:reads",
            ),
        ],
        language: Some(code::recursive_always),
        ..reader(
            &["diff"],
            &[
                flag(
                    "abBdEiNpPqrstTuwyZ",
                    "text ignore-space-change ignore-blank-lines minimal ignore-tab-expansion ignore-case new-file show-c-function unidirectional-new-file brief recursive report-identical-files expand-tabs initial-tab ignore-all-space side-by-side ignore-trailing-space strip-trailing-cr suppress-common-lines left-column no-dereference normal rcs ed speed-large-files suppress-blank-empty no-ignore-file-name-case ignore-file-name-case",
                ),
                attached("", "color", Role::Data),
                attached("cC", "context", Role::Data),
                attached("U", "unified", Role::Data),
                value("D", "ifdef", Role::Data),
                value("F", "show-function-line", Role::Data),
                value("I", "ignore-matching-lines", Role::Data),
                value("L", "label", Role::Data),
                value("S", "starting-file", Role::Data),
                value("W", "width", Role::Data),
                value("x", "exclude", Role::Data),
                value("X", "exclude-from", Role::Read),
                value("", "from-file to-file", Role::Read),
                value(
                    "",
                    "horizon-lines line-format old-line-format new-line-format unchanged-line-format old-group-format new-group-format changed-group-format unchanged-group-format tabsize palette",
                    Role::Data,
                ),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[ex("cmp -l a b", "read:a read:b kind:reads")],
        ..reader(
            &["cmp"],
            &[
                flag("blsz", "print-bytes verbose quiet silent zero-terminated"),
                value("i", "ignore-initial", Role::Data),
                value("n", "bytes", Role::Data),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[ex("comm -12 a b", "read:a read:b kind:reads")],
        ..reader(
            &["comm"],
            &[
                flag("123z", "check-order nocheck-order total zero-terminated"),
                value("", "output-delimiter", Role::Data),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[ex("join -t , -1 2 a b", "read:a read:b kind:reads")],
        ..reader(
            &["join"],
            &[
                flag(
                    "iz",
                    "ignore-case check-order nocheck-order header zero-terminated",
                ),
                value("aeojtv12", "", Role::Data),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[ex("paste -d , a b", "read:a read:b kind:reads")],
        ..reader(
            &["paste"],
            &[
                flag("sz", "serial zero-terminated"),
                value("d", "delimiters", Role::Data),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[ex(
            "cut -d : -f 1 /etc/passwd",
            "read:/etc/passwd kind:reads",
        )],
        ..reader(
            &["cut"],
            &[
                value(
                    "bcdf",
                    "bytes characters delimiter fields output-delimiter",
                    Role::Data,
                ),
                flag("nsz", "complement only-delimited zero-terminated"),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[ex("tr -d a-z", "kind:reads")],
        ..printer(
            &["tr"],
            &[
                flag("cCdst", "complement delete squeeze-repeats truncate-set1"),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[ex("nl -ba src/a.rs", "read:src/a.rs kind:reads")],
        ..reader(
            &["nl"],
            &[
                value(
                    "bdfhilnsvw",
                    "body-numbering section-delimiter footer-numbering header-numbering line-increment join-blank-lines number-format number-separator starting-line-number number-width",
                    Role::Data,
                ),
                flag("p", "no-renumber"),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[ex("od -An -tx1 -N 16 a", "read:a kind:reads")],
        ..reader(
            &["od"],
            &[
                value(
                    "AjNt",
                    "address-radix skip-bytes read-bytes format endian",
                    Role::Data,
                ),
                attached("Sw", "strings width", Role::Data),
                flag("abcdfilosxv", "output-duplicates traditional"),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[ex("hexdump -C -n 64 a", "read:a kind:reads")],
        ..reader(
            &["hexdump", "hd"],
            &[
                flag("bcCdoxvL", ""),
                value("ens", "", Role::Data),
                value("f", "", Role::Read),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[
            ex("xxd a.bin", "read:a.bin kind:reads"),
            ex("xxd -r hex out.bin", "read:hex write:out.bin kind:reads"),
        ],
        operands: Operands {
            first: &[Role::Read],
            rest: Role::Write,
            last: None,
        },
        complete: false,
        ..reader(
            &["xxd"],
            &[
                flag(
                    "abCEehiprdu",
                    "ps plain revert include autoskip bits capitalize EBCDIC uppercase",
                ),
                value("cglsonR", "cols groupsize len seek name", Role::Data),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[ex("strings -n 8 a.bin", "read:a.bin kind:reads")],
        ..reader(
            &["strings"],
            &[
                flag("adfwo", "all data print-file-name include-all-whitespace"),
                value(
                    "nteTs",
                    "bytes radix encoding target output-separator unicode",
                    Role::Data,
                ),
                HELP,
                VERSION,
            ],
        )
    },
    reader(
        &[
            "md5sum",
            "sha1sum",
            "sha224sum",
            "sha256sum",
            "sha384sum",
            "sha512sum",
            "b2sum",
            "cksum",
            "sum",
            "shasum",
        ],
        CHECKSUM,
    ),
    Program {
        examples: &[ex("base64 -w0 a", "read:a kind:reads")],
        ..reader(
            &["base64", "base32", "basenc"],
            &[
                flag(
                    "di",
                    "decode ignore-garbage base64 base64url base32 base32hex base16 base2msbf base2lsbf z85",
                ),
                value("w", "wrap", Role::Data),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[ex("column -t -s , a.csv", "read:a.csv kind:reads")],
        ..reader(
            &["column"],
            &[
                flag(
                    "txneJrL",
                    "table fillrows table-noheadings keep-empty-lines json table-header-repeat",
                ),
                value(
                    "socNRTWHOEdl",
                    "separator output-separator output-width table-columns table-right table-truncate table-wrap table-hide table-order table-noextreme table-name table-columns-limit",
                    Role::Data,
                ),
                HELP,
                VERSION,
            ],
        )
    },
    reader(
        &["fold"],
        &[
            flag("bs", "bytes spaces"),
            value("w", "width", Role::Data),
            HELP,
            VERSION,
        ],
    ),
    reader(
        &["fmt"],
        &[
            flag(
                "cstu",
                "crown-margin tagged-paragraph split-only uniform-spacing",
            ),
            value("pwg", "prefix width goal", Role::Data),
            HELP,
            VERSION,
        ],
    ),
    reader(
        &["expand", "unexpand"],
        &[
            flag("ia", "initial all first-only"),
            value("t", "tabs", Role::Data),
            HELP,
            VERSION,
        ],
    ),
    reader(&["rev"], &[HELP, VERSION]),
    reader(
        &["tac"],
        &[
            flag("br", "before regex"),
            value("s", "separator", Role::Data),
            HELP,
            VERSION,
        ],
    ),
    Program {
        examples: &[
            ex("sort -u names.txt", "read:names.txt kind:reads"),
            ex(
                "sort -o out.txt in.txt",
                "write:out.txt read:in.txt kind:reads",
            ),
            ex("sort -S 1b --compress-program sh", "risk kind:reads"),
            ex("sort --files0 list", "read:list risk kind:reads"),
        ],
        ..reader(
            &["sort"],
            &[
                flag(
                    "bdfgiMhnRrVmsuzC",
                    "ignore-leading-blanks dictionary-order ignore-case general-numeric-sort ignore-nonprinting month-sort human-numeric-sort numeric-sort random-sort reverse version-sort merge stable unique zero-terminated debug",
                ),
                attached("c", "check", Role::Data),
                value(
                    "kSt",
                    "key buffer-size field-separator sort batch-size parallel",
                    Role::Data,
                ),
                value("", "random-source", Role::Read),
                value("o", "output", Role::Write),
                value("T", "temporary-directory", Role::Into),
                risk_value("", "compress-program", Role::Data, "runs a program"),
                risk_value(
                    "",
                    "files0-from",
                    Role::Read,
                    "reads the names of the files it takes from a file or its input",
                ),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[
            ex("uniq -c a", "read:a kind:reads"),
            ex("uniq -s 0 src/a out", "read:src/a write:out kind:reads"),
            ex(
                "uniq +0 src/a .git/config",
                "read:+0 write:src/a write:.git/config kind:reads",
            ),
        ],
        operands: Operands {
            first: &[Role::Read],
            rest: Role::Write,
            last: None,
        },
        ..reader(
            &["uniq"],
            &[
                flag(
                    "cdDiuz",
                    "count repeated ignore-case unique zero-terminated",
                ),
                attached("", "all-repeated group", Role::Data),
                value("fsw", "skip-fields skip-chars check-chars", Role::Data),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[
            ex("shuf -n 3 a", "read:a kind:reads"),
            ex("shuf -o out -e a b", "write:out kind:reads"),
        ],
        language: Some(code::shuf),
        ..reader(
            &["shuf"],
            &[
                flag("erz", "echo repeat zero-terminated"),
                value("i", "input-range", Role::Data),
                value("n", "head-count", Role::Data),
                value("o", "output", Role::Write),
                value("", "random-source", Role::Read),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[
            ex("echo hi there", "kind:reads"),
            ex("echo -n .env", "kind:reads"),
        ],
        ..printer(&["echo"], &[flag("neE", "")])
    },
    Program {
        examples: &[
            ex("printf %s\\n a b", "kind:reads"),
            ex("printf -v HOME /tmp/h", "risk kind:reads"),
            ex("printf -v line %s a", "kind:reads"),
        ],
        language: Some(code::printf),
        ..printer(&["printf"], &[value("v", "", Role::Data)])
    },
    printer(&["true", "false", ":"], &[]),
    printer(&["yes"], &[HELP, VERSION]),
    printer(
        &["seq"],
        &[
            value("fs", "format separator", Role::Data),
            flag("w", "equal-width"),
            HELP,
            VERSION,
        ],
    ),
    printer(&["sleep"], &[HELP, VERSION]),
    printer(&["pwd"], &[flag("LP", "logical physical"), HELP, VERSION]),
    printer(
        &["basename"],
        &[
            flag("az", "multiple zero"),
            value("s", "suffix", Role::Data),
            HELP,
            VERSION,
        ],
    ),
    printer(&["dirname"], &[flag("z", "zero"), HELP, VERSION]),
    Program {
        examples: &[ex(
            "realpath --relative-to=. src/a",
            "read:. read:src/a kind:reads",
        )],
        ..reader(
            &["realpath"],
            &[
                flag(
                    "emLPqsz",
                    "canonicalize-existing canonicalize-missing logical physical quiet strip no-symlinks zero",
                ),
                value("", "relative-to relative-base", Role::Read),
                HELP,
                VERSION,
            ],
        )
    },
    reader(
        &["readlink"],
        &[
            flag(
                "femnqsvz",
                "canonicalize canonicalize-existing canonicalize-missing no-newline quiet silent verbose zero",
            ),
            HELP,
            VERSION,
        ],
    ),
    printer(
        &["which"],
        &[flag(
            "asi",
            "all skip-alias read-alias skip-functions read-functions skip-dot skip-tilde show-dot show-tilde tty-only",
        )],
    ),
    printer(
        &["whereis"],
        &[flag("bmsuflg", ""), value("BMS", "", Role::Data)],
    ),
    printer(&["type"], &[flag("afPpt", "")]),
    // Facts about the user, the machine and its processes: their operands are names, numbers
    // and expressions, and no option of theirs opens a file or runs anything.
    printer(
        &[
            "id",
            "whoami",
            "groups",
            "logname",
            "tty",
            "nproc",
            "arch",
            "users",
            "uptime",
            "lsb_release",
            "getconf",
            "locale",
            "tput",
            "clear",
            "free",
            "vmstat",
            "lscpu",
            "lsblk",
            "pgrep",
            "pidof",
            "ps",
            "w",
            "who",
            "cal",
            "factor",
            "numfmt",
            "expr",
            "test",
            "[",
            "[[",
            "getent",
            "lsof",
            "ss",
            "netstat",
            "uname",
            "sw_vers",
            "infocmp",
        ],
        &[],
    ),
    Program {
        examples: &[
            ex("printenv PATH", "kind:reads"),
            ex("printenv", "risk kind:reads"),
            ex("printenv GITHUB_TOKEN", "risk kind:reads"),
        ],
        language: Some(code::printenv),
        ..printer(&["printenv"], &[flag("0", "null"), HELP, VERSION])
    },
    // What reads the files it is given: binaries' symbols and headers, three-way and side by
    // side diffs, a word list, a highlighter. Their options are not all listed: an unknown
    // one asks, and a letter is taken as a flag (so a file after it is still read).
    Program {
        examples: &[
            ex(
                "objdump -d target/release/app",
                "read:target/release/app kind:reads",
            ),
            ex("nm -D lib.so", "read:lib.so kind:reads"),
            ex("bat ~/.ssh/id_rsa", "read:~/.ssh/id_rsa kind:reads"),
        ],
        complete: false,
        ..reader(
            &[
                "nm", "objdump", "readelf", "size", "diff3", "bat", "batcat", "mimetype",
            ],
            &[
                flag(
                    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
                    "",
                ),
                HELP,
                VERSION,
            ],
        )
    },
    // Linters that read the files they are given and print what they find.
    Program {
        examples: &[
            ex(
                "actionlint .github/workflows/ci.yml",
                "read:.github/workflows/ci.yml kind:reads",
            ),
            ex("shellcheck -x scripts/a.sh", "read:scripts/a.sh kind:reads"),
        ],
        complete: false,
        ..reader(
            &[
                "actionlint",
                "shellcheck",
                "hadolint",
                "yamllint",
                "markdownlint",
                "markdownlint-cli2",
                "typos",
                "vale",
                "checkmake",
            ],
            &[
                flag("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", ""),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[ex(
            "sdiff -o merged a b",
            "write:merged read:a read:b kind:reads",
        )],
        ..reader(
            &["sdiff"],
            &[
                value("o", "output", Role::Write),
                flag(
                    "abBdEHilstWZ",
                    "text ignore-blank-lines minimal ignore-tab-expansion speed-large-files ignore-case left-column suppress-common-lines expand-tabs ignore-all-space ignore-trailing-space strip-trailing-cr",
                ),
                value("w", "width", Role::Data),
                value("I", "ignore-matching-lines", Role::Data),
                risk_value("", "diff-program", Role::Data, "runs the program it names"),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[ex("look pre words.txt", "read:words.txt kind:reads")],
        operands: Operands {
            first: &[Role::Data],
            rest: Role::Read,
            last: None,
        },
        ..reader(&["look"], &[flag("bdfa", "alternative")])
    },
    Program {
        examples: &[
            ex("hostname -f", "kind:reads"),
            ex("hostname evil", "risk kind:reads"),
        ],
        language: Some(code::hostname),
        ..printer(
            &["hostname"],
            &[
                flag(
                    "aAbdfiIsy",
                    "alias all-fqdns boot domain fqdn long ip-address all-ip-addresses short yp nis",
                ),
                value("F", "file", Role::Read),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[
            ex("date +%s", "kind:reads"),
            ex("date -r Cargo.toml +%s", "read:Cargo.toml kind:reads"),
            ex("date -s 2020-01-01", "risk kind:reads"),
            ex("date 010100002030", "risk kind:reads"),
        ],
        language: Some(code::date),
        ..printer(
            &["date", "gdate"],
            &[
                value("d", "date", Role::Data),
                flag("RuD", "debug rfc-email utc universal resolution"),
                value("f", "file", Role::Read),
                attached("I", "iso-8601", Role::Data),
                value("", "rfc-3339", Role::Data),
                value("r", "reference", Role::Read),
                risk_value("s", "set", Role::Data, "sets the system clock"),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[
            ex("tree -L 2 src", "read:src kind:reads"),
            ex("tree -o out.txt src", "write:out.txt read:src kind:reads"),
            ex("tree -Lo 2 x", "risk read:2 read:x kind:reads"),
            ex("tree -R -H . src", "risk read:src kind:reads"),
        ],
        language: Some(code::tree),
        ..reader(
            &["tree"],
            &[
                flag(
                    "adlfxqNQpugshDFvtcUrACSnJXi",
                    "gitignore ignore-case matchdirs metafirst prune info noreport si du inodes device dirsfirst filesfirst nolinks fromfile fromtabfile fflinks condense",
                ),
                value(
                    "LPIHT",
                    "charset filelimit timefmt sort hintro houtro scheme authority",
                    Role::Data,
                ),
                value("", "infofile gitfile", Role::Read),
                value("o", "", Role::Write),
                risk("R", "", "writes a file into every folder it lists"),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[
            ex("man ls", "kind:reads"),
            ex("man -P sh ls", "risk kind:reads"),
            ex("man --html=x ls", "risk kind:reads"),
        ],
        ..printer(
            &["man", "info", "help"],
            &[
                risk_value("P", "pager", Role::Data, "runs a program"),
                risk_value("H", "html", Role::Data, "runs a program"),
                risk_value("", "browser", Role::Data, "runs a program"),
                flag("akwfl", "apropos whatis local-file all"),
                value(
                    "SsMLmCRE",
                    "sections manpath locale systems config-file recode encoding",
                    Role::Data,
                ),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[ex("less x", "read:x risk kind:reads")],
        language: Some(code::pager),
        complete: false,
        ..reader(&["less", "more", "most", "pg"], &[])
    },
    Program {
        examples: &[
            ex("jq -r .a -- package.json", "read:package.json kind:reads"),
            ex("jq --arg k v .[$k] f.json", "read:f.json kind:reads"),
            ex("jq -n env", "code kind:reads"),
            ex(
                "jq -f prog.jq data.json",
                "risk read:prog.jq read:data.json kind:reads",
            ),
            ex("jq --rawfile a x.txt -n $a", "read:x.txt kind:reads"),
        ],
        operands: Operands::all(Role::Data),
        language: Some(code::jq),
        env: &[env(
            "JQ_LIBRARY_PATH",
            "names the folders jq reads modules from",
        )],
        ..reader(
            &["jq", "gojq", "jaq", "yq"],
            &[
                flag(
                    "nRscrjaSCMeb0",
                    "null-input raw-input slurp compact-output raw-output join-output ascii-output sort-keys color-output monochrome-output tab unbuffered stream stream-errors seq exit-status args jsonargs raw-output0 binary build-configuration",
                ),
                value("", "indent", Role::Data),
                risk_value(
                    "f",
                    "from-file",
                    Role::Read,
                    "runs a program toolgate does not read",
                ),
                value("L", "library-path", Role::Data),
                Opt {
                    short: "",
                    long: "arg argjson",
                    takes: Takes::Two(Role::Data),
                    effect: Effect::None,
                },
                Opt {
                    short: "",
                    long: "slurpfile rawfile argfile",
                    takes: Takes::Two(Role::Read),
                    effect: Effect::None,
                },
                risk("", "run-tests", "runs a program toolgate does not read"),
                flag("h", "help"),
                flag("V", "version"),
            ],
        )
    },
    Program {
        examples: &[
            ex("sed -n 1,20p src/lib.rs", "read:src/lib.rs kind:reads"),
            ex("sed -i s/a/b/ f.txt", "write:f.txt kind:reads"),
            ex("sed s/x/y/e f", "risk read:f kind:reads"),
            ex("sed -f s.sed f", "risk read:s.sed read:f kind:reads"),
            ex("sed -e p -e w\\sout f", "risk read:f kind:reads"),
        ],
        operands: Operands::all(Role::Data),
        language: Some(code::sed),
        ..reader(
            &["sed", "gsed"],
            &[
                flag(
                    "nErsuzb",
                    "quiet silent regexp-extended separate unbuffered null-data zero-terminated posix debug sandbox follow-symlinks binary",
                ),
                value("e", "expression", Role::Data),
                risk_value(
                    "f",
                    "file",
                    Role::Read,
                    "reads its script from a file toolgate cannot see",
                ),
                attached("i", "in-place", Role::Data),
                value("l", "line-length", Role::Data),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[
            ex("awk {print\\s$1} data.txt", "read:data.txt kind:reads"),
            ex(
                "awk -F : -v x=1 {print} /etc/passwd",
                "read:/etc/passwd kind:reads",
            ),
            ex("awk BEGIN{system(\"id\")}", "code kind:reads"),
            ex("awk -f prog.awk x", "code read:prog.awk read:x kind:reads"),
        ],
        operands: Operands::all(Role::Data),
        interpreter: true,
        language: Some(code::awk),
        ..reader(
            &["awk", "gawk", "mawk", "nawk"],
            &[
                value("vF", "assign field-separator", Role::Data),
                value("f", "file", Role::Read),
                value("eE", "source exec", Role::Data),
                value("il", "include load", Role::Read),
                attached(
                    "dDopL",
                    "dump-variables debug pretty-print profile lint",
                    Role::Write,
                ),
                flag(
                    "bcCghMNnOPrsStV",
                    "characters-as-bytes traditional copyright gen-pot bignum use-lc-numeric non-decimal-data optimize posix re-interval no-optimize sandbox lint-old version help",
                ),
            ],
        )
    },
];

/// Options of `history` that read or write history files.
pub(super) const HISTORY: Program = Program {
    examples: &[
        ex("history 20", "kind:reads"),
        ex("history -a ~/.bashrc", "risk kind:reads"),
    ],
    complete: true,
    options: &[
        risk("awrns", "", "reads or writes history files"),
        flag("cdp", ""),
    ],
    operands: Operands::all(Role::Data),
    ..program(&["history"], Kind::Reads)
};
