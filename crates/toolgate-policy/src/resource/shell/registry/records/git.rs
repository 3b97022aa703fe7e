//! git, and the GitHub CLI.
//!
//! Sources: git 2.47 documentation (git(1) and each subcommand's page); gh 2.6x manual.
//! git reads long options abbreviated (`--upload-pa`), as parse-options allows.

use super::super::code;
use super::super::{
    Effect, Kind, Net, Operands, Opt, Program, Role, Sub, Syntax, attached, env, ex, flag, program,
    risk, risk_value, sub, value,
};

const RUNS_OR_ELSEWHERE: &str = "can make git run programs or use another repository";
const RUNS_OR_WRITES: &str = "can make git run a program or write a file";

/// Options of the commands that show diffs (`diff`, `log`, `show`, `format-patch`): the ones
/// that write a file or run a program, and the ones that take a value.
const DIFF_OPTIONS: &[Opt] = &[
    risk_value("", "output", Role::Write, RUNS_OR_WRITES),
    risk("", "ext-diff textconv", RUNS_OR_WRITES),
    flag("", "no-ext-diff no-textconv"),
    attached(
        "U",
        "unified inter-hunk-context find-copies-harder word-diff word-diff-regex color color-words color-moved color-moved-ws abbrev stat dirstat find-renames find-copies break-rewrites ignore-submodules src-prefix dst-prefix line-prefix relative diff-algorithm anchored ws-error-highlight submodule output-indicator-new output-indicator-old output-indicator-context diff-merges",
        Role::Data,
    ),
    attached("MCB", "", Role::Data),
    value(
        "lSG",
        "diff-filter skip-to rotate-to orderfile ignore-matching-lines stat-width stat-name-width stat-graph-width stat-count",
        Role::Data,
    ),
    value("O", "", Role::Read),
    flag(
        "pusaRwbzDN",
        "patch no-patch raw patch-with-raw patch-with-stat numstat shortstat cumulative summary name-only name-status compact-summary full-index binary no-renames rename-empty no-rename-empty check text ignore-cr-at-eol ignore-space-at-eol ignore-space-change ignore-all-space ignore-blank-lines minimal patience histogram indent-heuristic no-indent-heuristic exit-code quiet cached staged merge-base no-index no-color no-prefix default-prefix irreversible-delete function-context pickaxe-all pickaxe-regex ita-invisible-in-index ita-visible-in-index no-relative null",
    ),
];

/// Options of `log` and the commands that walk history like it.
const LOG_OPTIONS: &[Opt] = &[
    attached(
        "",
        "pretty format decorate decorate-refs decorate-refs-exclude date since after until before author committer grep max-count skip min-parents max-parents branches tags remotes glob exclude notes encoding expand-tabs show-linear-break since-as-filter ancestry-path",
        Role::Data,
    ),
    value("n", "", Role::Data),
    attached("L", "", Role::Data),
    flag(
        "gi",
        "oneline graph all reverse follow first-parent merges no-merges no-decorate source mailmap use-mailmap full-diff log-size abbrev-commit no-abbrev-commit relative-date parents children left-right cherry-pick cherry-mark cherry boundary topo-order date-order author-date-order walk-reflogs simplify-by-decoration simplify-merges full-history dense sparse show-pulls no-min-parents no-max-parents regexp-ignore-case basic-regexp extended-regexp fixed-strings perl-regexp all-match invert-grep remove-empty bisect stdin show-signature show-notes no-notes standard-notes no-standard-notes clear-decorations no-expand-tabs show-origin count no-walk do-walk in-commit-order reflog single-worktree not unpacked objects objects-edge indexed-objects combined-all-paths cc dd m c t remerge-diff unsorted",
    ),
];

/// Options of `branch`.
const BRANCH_OPTIONS: &[Opt] = &[
    flag(
        "dDmMcCfratvlqi",
        "delete move copy force remotes all track no-track verbose list quiet ignore-case edit-description unset-upstream show-current create-reflog omit-empty recurse-submodules no-column",
    ),
    attached(
        "",
        "contains no-contains merged no-merged points-at sort format abbrev color column set-upstream-to",
        Role::Data,
    ),
    value("u", "", Role::Data),
];

/// Options of `clone`.
const CLONE_OPTIONS: &[Opt] = &[
    risk_value("u", "upload-pack", Role::Data, RUNS_OR_WRITES),
    risk_value("c", "config", Role::Data, RUNS_OR_ELSEWHERE),
    risk_value(
        "",
        "template",
        Role::Read,
        "copies hooks, which git runs, from a folder toolgate does not read",
    ),
    value("", "separate-git-dir", Role::Write),
    value(
        "boj",
        "branch origin reference reference-if-able depth shallow-since shallow-exclude jobs filter server-option bundle-uri revision",
        Role::Data,
    ),
    flag(
        "lsqvn",
        "local no-hardlinks shared dissociate quiet verbose progress no-checkout bare mirror single-branch no-single-branch no-tags recurse-submodules recursive shallow-submodules no-shallow-submodules remote-submodules no-remote-submodules sparse also-filter-submodules reject-shallow no-reject-shallow",
    ),
];

/// Options of `fetch`, `pull` and `ls-remote` that run a program on the other side.
const UPLOAD_PACK: Opt = risk_value("u", "upload-pack", Role::Data, RUNS_OR_WRITES);
const RECEIVE_PACK: Opt = risk_value("", "receive-pack exec", Role::Data, RUNS_OR_WRITES);

const FETCH_OPTIONS: &[Opt] = &[
    UPLOAD_PACK,
    flag(
        "aAfkpPqtv",
        "all append atomic force keep multiple prune prune-tags quiet tags no-tags verbose progress dry-run unshallow update-shallow no-recurse-submodules write-fetch-head no-write-fetch-head set-upstream rebase no-rebase ff no-ff ff-only squash no-squash commit no-commit edit no-edit autostash no-autostash stat no-stat show-forced-updates ipv4 ipv6",
    ),
    attached(
        "j",
        "depth deepen shallow-since shallow-exclude refmap recurse-submodules jobs negotiation-tip server-option filter strategy strategy-option cleanup gpg-sign signoff",
        Role::Data,
    ),
];

const PUSH_OPTIONS: &[Opt] = &[
    RECEIVE_PACK,
    flag("f", "force"),
    flag(
        "nquv",
        "all branches mirror delete tags follow-tags dry-run porcelain prune set-upstream quiet verbose progress no-verify verify atomic no-atomic thin no-thin ipv4 ipv6 force-if-includes no-force-if-includes",
    ),
    attached(
        "o",
        "force-with-lease push-option repo recurse-submodules signed",
        Role::Data,
    ),
];

const COMMIT_OPTIONS: &[Opt] = &[
    value(
        "mCct",
        "message reuse-message reedit-message fixup squash author date cleanup trailer pathspec-from-file",
        Role::Data,
    ),
    value("F", "file", Role::Read),
    attached("S", "gpg-sign untracked-files", Role::Data),
    flag(
        "aenopqsuvz",
        "all amend allow-empty allow-empty-message edit no-edit no-verify verify only include patch interactive quiet signoff status no-status verbose dry-run short branch porcelain long null reset-author no-post-rewrite pathspec-file-nul no-gpg-sign",
    ),
];

/// A git subcommand that only reads (its operands are revisions and paths it reads).
const fn reads(names: &'static [&'static str], options: &'static [Opt]) -> Sub {
    Sub {
        options,
        operands: Operands::all(Role::Read),
        ..sub(names, Kind::Reads, Net::Never)
    }
}

/// A git subcommand that changes the repository, the work tree or git's own files.
const CHECKOUT_OPTIONS: &[Opt] = &[
    value(
        "bBcC",
        "orphan conflict track pathspec-from-file",
        Role::Data,
    ),
    flag(
        "fmqptdl",
        "force merge quiet patch detach guess no-guess overlay no-overlay ignore-other-worktrees ours theirs progress no-progress discard-changes no-track recurse-submodules overwrite-ignore ignore-skip-worktree-bits create force-create",
    ),
];

const fn changes(names: &'static [&'static str], options: &'static [Opt], operands: Role) -> Sub {
    Sub {
        options,
        operands: Operands::all(operands),
        ..sub(names, Kind::Runs, Net::Never)
    }
}

/// A git subcommand that talks to a remote.
const fn remote(names: &'static [&'static str], options: &'static [Opt]) -> Sub {
    Sub {
        options,
        operands: Operands::all(Role::Data),
        ..sub(names, Kind::Runs, Net::Always)
    }
}

const GIT_SUBS: &[Sub] = &[
    reads(
        &["status"],
        &[
            flag(
                "sbvz",
                "short branch show-stash long verbose null renames no-renames ahead-behind no-ahead-behind",
            ),
            attached(
                "uM",
                "untracked-files ignored ignore-submodules porcelain column find-renames",
                Role::Data,
            ),
        ],
    ),
    reads(&["log", "whatchanged"], LOG_OPTIONS).shared(DIFF_OPTIONS),
    reads(&["show"], LOG_OPTIONS).shared(DIFF_OPTIONS),
    reads(
        &["diff", "diff-tree", "diff-files", "diff-index"],
        DIFF_OPTIONS,
    ),
    reads(
        &["blame", "annotate"],
        &[
            value("S", "", Role::Read),
            value(
                "LC",
                "ignore-rev ignore-revs-file since date",
                Role::Data,
            ),
            value("", "contents", Role::Read),
            flag(
                "bltfnspewcM",
                "root show-stats reverse first-parent incremental porcelain line-porcelain encoding score-debug show-name show-number show-email color-lines color-by-age progress",
            ),
        ],
    ),
    reads(&["shortlog"], LOG_OPTIONS),
    reads(
        &[
            "describe",
            "rev-parse",
            "rev-list",
            "ls-files",
            "ls-tree",
            "cat-file",
            "merge-base",
            "name-rev",
            "for-each-ref",
            "show-ref",
            "count-objects",
            "fsck",
            "verify-commit",
            "verify-tag",
            "check-ignore",
            "check-attr",
            "var",
            "range-diff",
            "cherry",
            "help",
            "version",
            "show-branch",
            "check-ref-format",
            "check-mailmap",
            "column",
            "get-tar-commit-id",
            "hash-object",
            "ls-remote-local",
            "mktree",
            "patch-id",
            "show-index",
            "unpack-file",
            "verify-pack",
            "whatchanged",
            "diagnose-read",
            "grep-read",
        ],
        LOG_OPTIONS,
    )
    .shared(DIFF_OPTIONS),
    reads(
        &["grep"],
        &[
            risk_value("O", "open-files-in-pager", Role::Data, RUNS_OR_WRITES),
            value(
                "eABCm",
                "after-context before-context context max-depth max-count threads",
                Role::Data,
            ),
            value("f", "", Role::Read),
            flag(
                "vhHilLnowcqzEFGPIa",
                "cached untracked no-index recurse-submodules text textconv no-textconv ignore-case word-regexp invert-match full-name extended-regexp basic-regexp fixed-strings perl-regexp line-number column files-with-matches files-without-match null only-matching count color no-color break heading show-function function-context and or not all-match quiet exclude-standard no-exclude-standard",
            ),
        ],
    ),
    changes(&["branch"], BRANCH_OPTIONS, Role::Data),
    changes(
        &["tag"],
        &[
            flag("a", "annotate"),
            flag("d", "delete"),
            flag("l", "list"),
            flag(
                "fsv",
                "force sign verify no-sign create-reflog ignore-case omit-empty",
            ),
            attached(
                "mFucn",
                "message file local-user cleanup sort format contains no-contains merged no-merged points-at color column trailer",
                Role::Data,
            ),
        ],
        Role::Data,
    ),
    Sub {
        subs: &[
            reads(&["list", "show"], DIFF_OPTIONS),
            changes(
                &[
                    "push", "save", "pop", "apply", "drop", "clear", "branch", "create", "store",
                ],
                &[
                    flag(
                        "kpuaSq",
                        "keep-index no-keep-index patch include-untracked all staged quiet index",
                    ),
                    value("m", "message pathspec-from-file", Role::Data),
                ],
                Role::Write,
            ),
        ],
        ..changes(
            &["stash"],
            &[
                flag(
                    "kpuaSq",
                    "keep-index patch include-untracked all staged quiet",
                ),
                value("m", "message", Role::Data),
            ],
            Role::Write,
        )
    },
    Sub {
        subs: &[
            Sub {
                options: &[flag("v", "verbose")],
                operands: Operands::all(Role::Data),
                ..sub(&["show", "get-url"], Kind::Reads, Net::Never)
            },
            Sub {
                operands: Operands::all(Role::Data),
                ..sub(&["update", "prune", "set-head"], Kind::Runs, Net::Always)
            },
            Sub {
                options: &[
                    value("tm", "track mirror", Role::Data),
                    flag("f", "fetch tags no-tags push add delete"),
                ],
                operands: Operands::all(Role::Data),
                ..sub(
                    &["add", "remove", "rm", "rename", "set-url", "set-branches"],
                    Kind::Runs,
                    Net::Never,
                )
            },
        ],
        options: &[flag("v", "verbose")],
        operands: Operands::all(Role::Data),
        ..sub(&["remote"], Kind::Reads, Net::Never)
    },
    changes(
        &["config"],
        &[
            flag("l", "list"),
            flag("e", "edit"),
            flag(
                "z",
                "get get-all get-regexp get-urlmatch show-origin show-scope name-only null global system local worktree includes no-includes replace-all add unset unset-all rename-section remove-section bool int bool-or-int path expiry-date fixed-value",
            ),
            value(
                "f",
                "file blob type default comment value",
                Role::Data,
            ),
        ],
        Role::Data,
    )
    .with_subs(&[
        Sub {
            operands: Operands::all(Role::Data),
            ..sub(&["get", "list"], Kind::Reads, Net::Never)
        },
        Sub {
            operands: Operands::all(Role::Data),
            ..sub(
                &["set", "unset", "rename-section", "remove-section", "edit"],
                Kind::Runs,
                Net::Never,
            )
        },
    ]),
    changes(
        &["add"],
        &[
            flag(
                "nvfipeuANl",
                "dry-run verbose force interactive patch edit update all no-all intent-to-add refresh ignore-errors ignore-missing no-warn-embedded-repo renormalize sparse pathspec-file-nul",
            ),
            attached("", "chmod pathspec-from-file", Role::Data),
        ],
        Role::Read,
    ),
    changes(
        &["rm"],
        &[
            flag(
                "fnrq",
                "force dry-run cached ignore-unmatch quiet sparse pathspec-file-nul",
            ),
            value("", "pathspec-from-file", Role::Data),
        ],
        Role::Write,
    ),
    changes(
        &["mv"],
        &[flag("fkvn", "force dry-run verbose")],
        Role::Write,
    ),
    changes(
        &["restore"],
        &[
            flag(
                "SWpqmU",
                "staged worktree patch quiet merge ours theirs ignore-unmerged overlay no-overlay progress no-progress ignore-skip-worktree-bits recurse-submodules",
            ),
            value(
                "s",
                "source conflict pathspec-from-file",
                Role::Data,
            ),
        ],
        Role::Write,
    ),
    changes(&["checkout"], CHECKOUT_OPTIONS, Role::Write),
    // `git switch` takes branches and commits, never paths.
    changes(&["switch"], CHECKOUT_OPTIONS, Role::Data),
    changes(
        &["reset"],
        &[
            flag(
                "qpN",
                "soft mixed hard merge keep quiet patch no-refresh recurse-submodules intent-to-add",
            ),
            value("", "pathspec-from-file", Role::Data),
        ],
        Role::Data,
    ),
    changes(&["commit"], COMMIT_OPTIONS, Role::Read),
    changes(
        &["merge"],
        &[
            flag(
                "nqv",
                "commit no-commit edit no-edit ff no-ff ff-only squash no-squash verify no-verify abort continue quit stat no-stat log no-log signoff allow-unrelated-histories autostash rerere-autoupdate progress quiet verbose",
            ),
            attached(
                "msXSF",
                "message strategy strategy-option gpg-sign file cleanup into-name",
                Role::Data,
            ),
        ],
        Role::Data,
    ),
    changes(
        &["rebase"],
        &[
            risk_value(
                "x",
                "exec",
                Role::Data,
                "runs a command after each commit it replays",
            ),
            flag(
                "iqvfkr",
                "interactive continue skip abort quit edit-todo show-current-patch quiet verbose force-rebase autostash no-autostash autosquash no-autosquash rebase-merges keep-base root update-refs committer-date-is-author-date reset-author-date signoff no-verify verify fork-point no-fork-point ignore-whitespace ignore-date apply merge empty reapply-cherry-picks stat no-stat",
            ),
            attached(
                "sXSC",
                "onto strategy strategy-option gpg-sign whitespace",
                Role::Data,
            ),
        ],
        Role::Data,
    ),
    changes(
        &["cherry-pick", "revert"],
        &[
            flag(
                "enxs",
                "edit no-edit no-commit signoff continue skip abort quit ff allow-empty keep-redundant-commits rerere-autoupdate",
            ),
            attached(
                "mXS",
                "mainline strategy strategy-option gpg-sign cleanup",
                Role::Data,
            ),
        ],
        Role::Data,
    ),
    changes(
        &["clean"],
        &[
            flag("dfinqxX", "force interactive dry-run quiet"),
            value("e", "exclude", Role::Data),
        ],
        Role::Write,
    ),
    Sub {
        acts: &[],
        ..changes(
            &["init"],
            &[
                flag("q", "quiet bare"),
                risk_value(
                    "",
                    "template",
                    Role::Read,
                    "copies hooks, which git runs, from a folder toolgate does not read",
                ),
                value(
                    "b",
                    "initial-branch separate-git-dir object-format ref-format shared",
                    Role::Data,
                ),
            ],
            Role::Data,
        )
    },
    changes(
        &["am", "apply"],
        &[
            flag(
                "3kqsuv",
                "check stat numstat summary show-current-patch index cached reverse reject recount allow-empty verbose quiet unidiff-zero continue skip abort quit signoff keep scissors no-scissors 3way",
            ),
            attached(
                "pC",
                "directory exclude include whitespace build-fake-ancestor",
                Role::Data,
            ),
        ],
        Role::Read,
    ),
    changes(
        &["format-patch"],
        &[
            value("o", "output-directory", Role::Into),
            flag(
                "nk",
                "stdout cover-letter numbered no-numbered signoff attach inline thread no-thread rfc zero-commit base progress",
            ),
            attached(
                "v",
                "subject-prefix reroll-count in-reply-to to cc from suffix start-number range-diff interdiff creation-factor add-header filename-max-length",
                Role::Data,
            ),
        ],
        Role::Read,
    )
    .shared(DIFF_OPTIONS),
    changes(
        &["archive"],
        &[
            value("o", "output", Role::Write),
            value("", "remote", Role::Url),
            risk_value("", "exec", Role::Data, RUNS_OR_WRITES),
            attached(
                "",
                "format prefix add-file add-virtual-file worktree-attributes mtime",
                Role::Data,
            ),
            flag("lv", "list verbose"),
        ],
        Role::Read,
    ),
    Sub {
        subs: &[
            Sub {
                operands: Operands {
                    first: &[Role::Write],
                    rest: Role::Data,
                    last: None,
                },
                ..sub(&["create"], Kind::Runs, Net::Never)
            },
            reads(&["verify", "list-heads"], &[]),
            changes(&["unbundle"], &[], Role::Read),
        ],
        ..changes(&["bundle"], &[], Role::Data)
    },
    changes(
        &["checkout-index"],
        &[
            value("", "prefix", Role::Into),
            flag(
                "aqfunz",
                "all force quiet index no-create temp ignore-skip-worktree-bits stdin",
            ),
            attached("", "stage", Role::Data),
        ],
        Role::Write,
    ),
    Sub {
        subs: &[
            Sub {
                operands: Operands {
                    first: &[Role::Write],
                    rest: Role::Data,
                    last: None,
                },
                options: &[
                    value("bB", "reason orphan", Role::Data),
                    flag(
                        "fdq",
                        "force detach checkout no-checkout lock quiet track no-track guess-remote",
                    ),
                ],
                ..sub(&["add"], Kind::Runs, Net::Never)
            },
            reads(
                &["list"],
                &[flag("vz", "porcelain verbose expire")],
            ),
            changes(
                &["remove", "prune", "move", "lock", "unlock", "repair"],
                &[flag("fn", "force dry-run verbose")],
                Role::Write,
            ),
        ],
        ..changes(&["worktree"], &[], Role::Data)
    },
    Sub {
        subs: &[
            Sub {
                operands: Operands {
                    first: &[Role::Source, Role::Write],
                    rest: Role::Data,
                    last: None,
                },
                options: &[
                    value("b", "branch name reference depth", Role::Data),
                    flag("fq", "force quiet"),
                ],
                ..sub(&["add"], Kind::Runs, Net::Always)
            },
            reads(&["status", "summary"], &[]),
            Sub {
                operands: Operands::all(Role::Data),
                ..sub(
                    &[
                        "update",
                        "sync",
                        "init",
                        "deinit",
                        "absorbgitdirs",
                        "set-url",
                        "set-branch",
                    ],
                    Kind::Runs,
                    Net::Always,
                )
            },
            Sub {
                operands: Operands::all(Role::Script),
                ..sub(&["foreach"], Kind::Runs, Net::Never)
            },
        ],
        ..changes(
            &["submodule"],
            &[flag(
                "q",
                "quiet recursive init remote checkout rebase merge force cached files",
            )],
            Role::Data,
        )
    },
    Sub {
        subs: &[Sub {
            operands: Operands::all(Role::Command),
            ..sub(&["run"], Kind::Runs, Net::Never)
        }],
        ..changes(&["bisect"], &[], Role::Data)
    },
    changes(
        &[
            "difftool",
            "mergetool",
            "filter-branch",
            "filter-repo",
            "credential",
            "credential-store",
            "credential-cache",
            "daemon",
            "instaweb",
            "gui",
            "gitk",
            "citool",
            "web--browse",
            "hook",
            "upload-pack",
            "receive-pack",
            "shell",
            "sh-i18n",
            "remote-ext",
            "remote-fd",
            "remote-http",
            "http-backend",
            "imap-send",
            "quiltimport",
            "p4",
            "svn",
            "cvsimport",
            "cvsserver",
            "archimport",
            "fast-import",
            "replace",
            "notes",
            "update-index",
            "update-ref",
            "read-tree",
            "write-tree",
            "commit-tree",
            "symbolic-ref",
            "gc",
            "prune",
            "repack",
            "maintenance",
            "sparse-checkout",
            "reflog",
            "rerere",
            "pack-refs",
            "prune-packed",
            "mailsplit",
            "mailinfo",
            "merge-file",
            "merge-tree",
            "mktag",
            "multi-pack-index",
            "pack-objects",
            "unpack-objects",
            "index-pack",
            "commit-graph",
            "fsmonitor--daemon",
            "scalar",
            "backfill",
        ],
        &[],
        Role::Data,
    ),
    Sub {
        acts: &[],
        ..remote(&["clone"], CLONE_OPTIONS)
    }
    .with_operands(Operands {
        first: &[Role::Source, Role::Write],
        rest: Role::Data,
        last: None,
    }),
    remote(&["fetch", "fetch-pack"], FETCH_OPTIONS),
    Sub {
        operands: Operands::all(Role::Data),
        ..remote(&["pull"], FETCH_OPTIONS)
    },
    Sub {
        acts: &["push"],
        ..remote(&["push", "send-pack"], PUSH_OPTIONS)
    },
    remote(
        &["ls-remote"],
        &[
            UPLOAD_PACK,
            flag(
                "hqtb",
                "heads tags branches refs quiet exit-code get-url symref",
            ),
            attached("o", "sort server-option", Role::Data),
        ],
    ),
    Sub {
        acts: &["push"],
        ..remote(&["send-email", "request-pull"], &[])
    },
    Sub {
        subs: &[
            Sub {
                acts: &["push"],
                operands: Operands::all(Role::Data),
                ..sub(&["push"], Kind::Runs, Net::Always)
            },
            Sub {
                operands: Operands::all(Role::Data),
                ..sub(&["pull", "add", "merge"], Kind::Runs, Net::Always)
            },
            Sub {
                operands: Operands::all(Role::Data),
                ..sub(&["split"], Kind::Runs, Net::Never)
            },
        ],
        options: &[
            value(
                "Pm",
                "prefix message branch onto annotate",
                Role::Data,
            ),
            flag(
                "dq",
                "debug quiet squash rejoin ignore-joins",
            ),
        ],
        ..changes(&["subtree"], &[], Role::Data)
    },
    Sub {
        subs: &[
            Sub {
                acts: &["push"],
                operands: Operands::all(Role::Data),
                ..sub(&["push"], Kind::Runs, Net::Always)
            },
            Sub {
                operands: Operands::all(Role::Data),
                ..sub(
                    &[
                        "pull", "fetch", "clone", "install", "track", "untrack", "migrate",
                        "prune", "checkout",
                    ],
                    Kind::Runs,
                    Net::Always,
                )
            },
            reads(&["ls-files", "status", "env", "version", "logs"], &[]),
        ],
        ..changes(&["lfs"], &[], Role::Data)
    },
];

pub(super) const PROGRAMS: &[Program] = &[
    Program {
        subs: GIT_SUBS,
        language: Some(code::git),
        env: &[env(
            "GIT_*",
            "changes what git runs or which repository it uses",
        )],
        examples: &[
            ex("git status -s", "sub:status kind:reads"),
            ex("git -C src log --oneline", "folder:src sub:log kind:reads"),
            ex(
                "git diff --stat HEAD~1",
                "sub:diff read:HEAD~1 recursive kind:reads",
            ),
            ex(
                "git show HEAD:.env",
                "sub:show read:HEAD:.env mentioned:.env recursive kind:reads",
            ),
            ex("git -c core.pager=sh log", "risk sub:log kind:reads"),
            ex(
                "git diff --output=/tmp/x",
                "risk write:/tmp/x sub:diff recursive kind:reads",
            ),
            ex(
                "git ls-remote --upload-pa=x test",
                "risk sub:ls-remote net kind:runs",
            ),
            ex("git push origin main", "sub:push net kind:runs"),
            ex(
                "git send-pack origin main",
                "sub:send-pack sub:push net kind:runs",
            ),
            ex(
                "git subtree push --prefix dist origin gh-pages",
                "sub:subtree sub:push net kind:runs",
            ),
            ex("git add -A", "sub:add recursive kind:runs"),
            ex(
                "git checkout -b feature",
                "sub:checkout recursive kind:runs",
            ),
            ex("git branch -vv", "sub:branch kind:reads"),
            ex("git branch evil", "risk sub:branch kind:runs"),
            ex("git remote -v", "sub:remote kind:reads"),
            ex("git config user.email", "sub:config kind:reads"),
            ex("git config core.fsmonitor x", "risk sub:config kind:runs"),
            ex(
                "git clone https://github.com/a/b.git",
                "url:https://github.com/a/b.git write:b sub:clone net kind:runs",
            ),
            ex(
                "git clone git@github.com:a/b.git dir",
                "url:ssh://git@github.com/a/b.git write:dir sub:clone net kind:runs",
            ),
            ex("git reset HEAD~3 --hard", "sub:reset kind:runs"),
            ex("git tag --list", "sub:tag kind:reads"),
            ex("git stash list", "sub:stash sub:list recursive kind:reads"),
        ],
        ..program(&["git"], Kind::Runs)
    }
    .with_options(&[
        value("C", "", Role::Folder),
        risk_value("c", "config-env", Role::Data, RUNS_OR_ELSEWHERE),
        risk_value(
            "",
            "git-dir work-tree namespace",
            Role::Data,
            RUNS_OR_ELSEWHERE,
        ),
        risk("p", "paginate", RUNS_OR_ELSEWHERE),
        attached("", "exec-path", Role::Data),
        flag(
            "Pv",
            "no-pager no-replace-objects no-lazy-fetch no-optional-locks no-advice bare literal-pathspecs glob-pathspecs noglob-pathspecs icase-pathspecs html-path man-path info-path version help",
        ),
        attached(
            "",
            "list-cmds attr-source super-prefix",
            Role::Data,
        ),
    ]),
    Program {
        syntax: Syntax::Exact,
        net: Net::Always,
        operands: Operands::all(Role::Data),
        options_everywhere: true,
        language: Some(code::gh),
        examples: &[
            ex("gh pr view 12", "sub:pr sub:view net kind:reads"),
            ex("gh pr create --fill", "sub:pr sub:create net kind:runs"),
            ex(
                "gh release create v1",
                "sub:release sub:create sub:publish net kind:runs",
            ),
            ex("gh auth token", "risk sub:auth sub:token net kind:runs"),
            ex("gh api repos/a/b", "sub:api net kind:runs"),
        ],
        subs: &[
            Sub {
                subs: &[
                    Sub {
                        operands: Operands::all(Role::Data),
                        ..sub(
                            &["view", "list", "status", "diff", "checks"],
                            Kind::Reads,
                            Net::Always,
                        )
                    },
                    Sub {
                        operands: Operands::all(Role::Data),
                        ..sub(&["checkout"], Kind::Runs, Net::Always)
                    },
                    Sub {
                        operands: Operands::all(Role::Data),
                        ..sub(
                            &[
                                "create", "merge", "close", "reopen", "review", "comment", "edit",
                                "ready", "lock", "unlock", "delete", "develop", "transfer", "pin",
                                "unpin",
                            ],
                            Kind::Runs,
                            Net::Always,
                        )
                    },
                ],
                operands: Operands::all(Role::Data),
                ..sub(&["pr", "issue"], Kind::Runs, Net::Always)
            },
            Sub {
                subs: &[
                    Sub {
                        operands: Operands::all(Role::Data),
                        ..sub(&["view", "list", "watch"], Kind::Reads, Net::Always)
                    },
                    Sub {
                        operands: Operands::all(Role::Data),
                        ..sub(&["download"], Kind::Runs, Net::Always)
                    },
                    Sub {
                        operands: Operands::all(Role::Data),
                        ..sub(&["rerun", "cancel", "delete"], Kind::Runs, Net::Always)
                    },
                ],
                operands: Operands::all(Role::Data),
                ..sub(&["run", "workflow", "cache"], Kind::Runs, Net::Always)
            },
            Sub {
                subs: &[
                    Sub {
                        operands: Operands::all(Role::Data),
                        ..sub(&["view", "list"], Kind::Reads, Net::Always)
                    },
                    Sub {
                        acts: &["publish"],
                        operands: Operands::all(Role::Data),
                        ..sub(
                            &["create", "upload", "edit", "delete", "delete-asset"],
                            Kind::Runs,
                            Net::Always,
                        )
                    },
                    Sub {
                        operands: Operands::all(Role::Data),
                        ..sub(&["download"], Kind::Runs, Net::Always)
                    },
                ],
                operands: Operands::all(Role::Data),
                ..sub(&["release"], Kind::Runs, Net::Always)
            },
            Sub {
                subs: &[
                    Sub {
                        operands: Operands::all(Role::Data),
                        ..sub(&["view", "list"], Kind::Reads, Net::Always)
                    },
                    Sub {
                        operands: Operands::all(Role::Data),
                        ..sub(
                            &[
                                "clone",
                                "fork",
                                "create",
                                "delete",
                                "edit",
                                "rename",
                                "archive",
                                "sync",
                                "set-default",
                                "deploy-key",
                            ],
                            Kind::Runs,
                            Net::Always,
                        )
                    },
                ],
                operands: Operands::all(Role::Data),
                ..sub(&["repo"], Kind::Runs, Net::Always)
            },
            Sub {
                subs: &[
                    Sub {
                        operands: Operands::all(Role::Data),
                        ..sub(&["status"], Kind::Reads, Net::Always)
                    },
                    Sub {
                        operands: Operands::all(Role::Data),
                        ..sub(
                            &["token", "login", "logout", "refresh", "setup-git", "switch"],
                            Kind::Runs,
                            Net::Always,
                        )
                    },
                ],
                operands: Operands::all(Role::Data),
                ..sub(&["auth"], Kind::Runs, Net::Always)
            },
            Sub {
                operands: Operands::all(Role::Data),
                ..sub(
                    &[
                        "api",
                        "secret",
                        "variable",
                        "gist",
                        "extension",
                        "codespace",
                        "ssh-key",
                        "gpg-key",
                        "label",
                        "project",
                        "ruleset",
                        "alias",
                        "config",
                        "attestation",
                        "org",
                        "copilot",
                    ],
                    Kind::Runs,
                    Net::Always,
                )
            },
            Sub {
                operands: Operands::all(Role::Data),
                ..sub(
                    &[
                        "search",
                        "browse",
                        "status",
                        "help",
                        "version",
                        "completion",
                    ],
                    Kind::Reads,
                    Net::Always,
                )
            },
        ],
        ..program(&["gh"], Kind::Runs)
    }
    .with_options(&[
        value(
            "RLBqtsSjAHXbpo",
            "repo limit label state base head title body body-file json jq template search assignee author reviewer milestone method field raw-field header input hostname branch workflow job commit event status user created name dir pattern notes notes-file target jq-filter paginate-limit cache",
            Role::Data,
        ),
        flag(
            "dfwcWvyi",
            "draft fill fill-first fill-verbose web comments verbose yes approve request-changes comment merge squash rebase auto delete-branch admin paginate slurp include silent exit-status log log-failed prerelease latest generate-notes clobber help force interactive",
        ),
    ]),
];

#[expect(
    dead_code,
    reason = "documents what toolgate treats every git long option as"
)]
const ABBREVIATED: Effect = Effect::None;
