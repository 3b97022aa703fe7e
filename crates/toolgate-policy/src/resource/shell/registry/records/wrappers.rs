//! Programs that run another command: wrappers (`env`, `timeout`, `sudo`, `xargs`, …),
//! terminal multiplexers and schedulers (`tmux`, `screen`, `script`, `at`), shells, and
//! interpreters of other languages.
//!
//! A wrapper's options end where the command it runs starts, so every option of one is in its
//! record: an option toolgate does not know means it cannot tell which program runs.
//!
//! Sources: GNU coreutils 9.x (env, timeout, nice, nohup, stdbuf, chroot), util-linux 2.39
//! (setsid, unshare, nsenter, prlimit, taskset, chrt, flock, script, runuser, su), sudo 1.9,
//! OpenDoas 6.8, GNU findutils 4.9 (xargs), strace 6, ltrace 0.7, procps-ng 4 (watch),
//! systemd 255 (systemd-run), tmux 3.4, GNU screen 4.9, at 3.2, GNU parallel 2023, Expect 5.45,
//! bash 5.2, zsh 5.9, fish 3.7.

use super::super::code;
use super::super::{Effect, Net, Opt};
use super::super::{
    Kind, Operands, Program, Role, Sub, Syntax, Takes, attached, ex, flag, program, risk,
    risk_value, sub, value,
};
use super::{HELP, VERSION};

/// A wrapper: options first, then the command it runs.
const fn wrapper(names: &'static [&'static str], options: &'static [Opt]) -> Program {
    Program {
        options_first: true,
        complete: true,
        options,
        operands: Operands::all(Role::Command),
        ..program(names, Kind::Runs)
    }
}

/// A wrapper whose first operand is a value of its own (`timeout 5 CMD`, `taskset 0x1 CMD`).
const fn wrapper_after(
    names: &'static [&'static str],
    first: &'static [Role],
    options: &'static [Opt],
) -> Program {
    Program {
        operands: Operands {
            first,
            rest: Role::Command,
            last: None,
        },
        ..wrapper(names, options)
    }
}

/// An interpreter: runs a script file, program text given by option, or what it reads.
const fn interpreter(names: &'static [&'static str], options: &'static [Opt]) -> Program {
    Program {
        options_first: true,
        options,
        operands: Operands {
            first: &[Role::Read],
            rest: Role::Data,
            last: None,
        },
        interpreter: true,
        language: Some(code::interpreter),
        ..program(names, Kind::Runs)
    }
}

const CODE: Opt = Opt {
    short: "e",
    long: "eval",
    takes: Takes::Value(Role::Code),
    effect: Effect::None,
};

const SHELL_OPTIONS: &[Opt] = &[
    flag(
        "abBCeEfhHiklmnprstTuvxDP",
        "login noprofile norc posix restricted verbose debugger dump-strings dump-po-strings noediting pretty-print no-rcs no-globalrcs interactive emulate help version",
    ),
    value("oO", "", Role::Data),
    Opt {
        short: "c",
        long: "",
        takes: Takes::Nothing,
        effect: Effect::Mode("c"),
    },
    risk_value(
        "",
        "rcfile init-file",
        Role::Read,
        "runs a file of commands toolgate does not read",
    ),
];

pub(super) const PROGRAMS: &[Program] = &[
    Program {
        language: Some(code::env),
        examples: &[
            ex("env FOO=1 git status", "runs:git kind:runs"),
            ex("env -i PATH=/bin ls", "risk runs:ls kind:runs"),
            ex("env -C src ls", "folder:src runs:ls kind:runs"),
            ex("env", "risk kind:reads"),
        ],
        ..wrapper(
            &["env"],
            &[
                flag("i0v", "ignore-environment null debug list-signal-handling"),
                value("u", "unset", Role::Data),
                value("C", "chdir", Role::Folder),
                value("S", "split-string", Role::Script),
                risk_value(
                    "P",
                    "",
                    Role::Data,
                    "searches for the program in folders it is given",
                ),
                attached("", "block-signal default-signal ignore-signal", Role::Data),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        examples: &[ex("timeout 5 nice -n 10 git status", "runs:nice kind:runs")],
        ..wrapper_after(
            &["timeout", "gtimeout"],
            &[Role::Data],
            &[
                value("sk", "signal kill-after", Role::Data),
                flag("v", "foreground preserve-status verbose"),
                HELP,
                VERSION,
            ],
        )
    },
    wrapper(
        &["nice"],
        &[
            value("n", "adjustment", Role::Data),
            flag("0123456789", ""),
            HELP,
            VERSION,
        ],
    ),
    wrapper(
        &["nohup", "coproc", "builtin", "unbuffer"],
        &[HELP, VERSION, flag("p", "")],
    ),
    wrapper(
        &["stdbuf"],
        &[
            value("ioe", "input output error", Role::Data),
            HELP,
            VERSION,
        ],
    ),
    Program {
        language: Some(code::on_a_process),
        ..wrapper(
            &["ionice"],
            &[
                value("cnpPu", "class classdata pid pgid uid", Role::Data),
                flag("t", "ignore"),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        language: Some(code::command_builtin),
        examples: &[
            ex("command -v git", "kind:reads"),
            ex("command git log", "runs:git kind:runs"),
        ],
        ..wrapper(&["command"], &[flag("pvV", "")])
    },
    wrapper(&["exec"], &[value("a", "", Role::Data), flag("cl", "")]),
    Program {
        examples: &[ex(
            "time -o .git/config ls",
            "write:.git/config runs:ls kind:runs",
        )],
        ..wrapper(
            &["time", "gtime"],
            &[
                flag("paqv", "append verbose quiet portability"),
                value("f", "format", Role::Data),
                value("o", "output", Role::Write),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        language: Some(code::elevated),
        examples: &[ex("sudo -u root rm -rf /tmp/x", "risk runs:rm kind:runs")],
        ..wrapper(
            &["sudo"],
            &[
                value(
                    "ughpCrtTU",
                    "user group host prompt close-from role type command-timeout other-user",
                    Role::Data,
                ),
                value("D", "chdir", Role::Folder),
                flag(
                    "AbEHiKklnPSsVv",
                    "askpass background set-home login reset-timestamp remove-timestamp list non-interactive preserve-groups stdin shell validate help version",
                ),
                attached("", "preserve-env", Role::Data),
                risk("e", "edit", "edits files as another user"),
            ],
        )
    },
    Program {
        language: Some(code::elevated),
        ..wrapper(
            &["doas"],
            &[
                value("u", "", Role::Data),
                value("C", "", Role::Read),
                flag("nsL", ""),
            ],
        )
    },
    Program {
        language: Some(code::xargs),
        examples: &[ex("xargs -0 wc -l", "risk runs:wc kind:runs")],
        ..wrapper(
            &["xargs", "gxargs"],
            &[
                flag(
                    "0prtxo",
                    "null interactive no-run-if-empty verbose exit open-tty show-limits",
                ),
                value("a", "arg-file", Role::Read),
                value(
                    "dEILnPs",
                    "delimiter max-args max-procs max-chars process-slot-var",
                    Role::Data,
                ),
                attached("eil", "eof replace max-lines", Role::Data),
                HELP,
                VERSION,
            ],
        )
    },
    wrapper(&["setsid"], &[flag("cfwhV", "ctty fork wait help version")]),
    wrapper(
        &["fakeroot"],
        &[
            flag("uhv", "unknown-is-real help version"),
            value("lb", "lib faked fd-base", Role::Data),
            value("s", "", Role::Write),
            value("i", "", Role::Read),
        ],
    ),
    wrapper(
        &["strace"],
        &[
            flag(
                "AcCdDfFhiknqrtTvVwxyYzZ",
                "output-append-mode summary-only summary summary-wall-clock follow-forks output-separately daemonize debug help version seccomp-bpf stack-trace syscall-number instruction-pointer timestamps absolute-timestamps relative-timestamps syscall-times no-abbrev decode-fds decode-pids quiet silent verbose raw columns summary-columns always-show-pid tips secontext trace-fds kill-on-exit",
            ),
            value("o", "output", Role::Write),
            value(
                "abeEIOpPsSuUX",
                "trace signal status abbrev read write user env attach trace-path inject fault kvm string-limit summary-sort-by argv0 const-print-style",
                Role::Data,
            ),
        ],
    ),
    wrapper(
        &["ltrace"],
        &[
            flag("bcCfhiLrStTV", "demangle no-signals help version debug"),
            value("o", "output", Role::Write),
            value("aADeFlnpsuwx", "align indent library config", Role::Data),
        ],
    ),
    wrapper(
        &["unshare"],
        &[
            flag(
                "imnpuUCTfrchV",
                "ipc mount net pid uts user cgroup time fork map-root-user map-current-user map-auto mount-proc mount-binfmt kill-child keep-caps help version",
            ),
            value(
                "RwSGl",
                "propagation setgroups map-user map-group map-users map-groups root wd setuid setgid monotonic boottime load-interp",
                Role::Data,
            ),
        ],
    ),
    wrapper(
        &["nsenter"],
        &[
            flag(
                "aFZhV",
                "all mount uts ipc net pid user cgroup time root wd no-fork preserve-credentials follow-context keep-caps user-parent env join-cgroup help version",
            ),
            value("tSG", "target setuid setgid", Role::Data),
            attached("muinpUCTrw", "", Role::Data),
        ],
    ),
    Program {
        language: Some(code::on_a_process),
        ..wrapper(
            &["prlimit"],
            &[
                flag("hV", "noheadings raw verbose help version"),
                value("po", "pid output", Role::Data),
                attached(
                    "cdefilmnqrstuvxy",
                    "as core cpu data fsize locks memlock msgqueue nice nofile nproc rss rtprio rttime sigpending stack",
                    Role::Data,
                ),
            ],
        )
    },
    Program {
        language: Some(code::on_a_process),
        ..wrapper_after(
            &["taskset"],
            &[Role::Data],
            &[flag("acphV", "all-tasks cpu-list pid help version")],
        )
    },
    Program {
        language: Some(code::on_a_process),
        ..wrapper_after(
            &["chrt"],
            &[Role::Data],
            &[
                flag(
                    "abdefhimopRrvV",
                    "all-tasks batch deadline ext fifo idle other rr reset-on-fork max pid verbose help version",
                ),
                value(
                    "TPD",
                    "sched-runtime sched-period sched-deadline",
                    Role::Data,
                ),
            ],
        )
    },
    Program {
        options_first: false,
        examples: &[
            ex(
                "flock -w 5 /tmp/lock cat x",
                "write:/tmp/lock runs:cat kind:runs",
            ),
            ex(
                "flock /tmp/lock -c cat\\sx",
                "write:/tmp/lock script kind:runs",
            ),
        ],
        ..wrapper_after(
            &["flock"],
            &[Role::Write],
            &[
                flag(
                    "sexnuoFhV",
                    "shared exclusive nonblock nb unlock close no-fork verbose help version",
                ),
                value("wE", "wait timeout conflict-exit-code", Role::Data),
                value("c", "command", Role::Script),
            ],
        )
    },
    Program {
        complete: false,
        ..wrapper(
            &["firejail"],
            &[attached(
                "",
                "noprofile private net quiet whitelist blacklist read-only profile name seccomp caps nonewprivs noroot private-tmp private-dev",
                Role::Data,
            )],
        )
    },
    Program {
        options_first: true,
        language: Some(code::watch),
        examples: &[
            ex("watch -n 1 cat x", "script kind:runs"),
            ex("watch -x cat x", "runs:cat kind:runs"),
        ],
        operands: Operands::all(Role::Data),
        ..wrapper(
            &["watch"],
            &[
                value("nq", "interval equexit shell", Role::Data),
                attached("d", "differences", Role::Data),
                flag(
                    "tbegpcCwxr",
                    "no-title beep errexit chgexit precise color no-color no-wrap exec no-rerun help version",
                ),
            ],
        )
    },
    Program {
        options_first: false,
        operands: Operands::all(Role::Data),
        language: Some(code::elevated),
        examples: &[ex("su -c cat\\sx root", "risk script kind:runs")],
        ..wrapper(
            &["su"],
            &[
                value("c", "command session-command", Role::Script),
                risk_value("s", "shell", Role::Data, "runs a shell of its choosing"),
                value("gGw", "group supp-group whitelist-environment", Role::Data),
                flag(
                    "lmpfPT",
                    "login preserve-environment fast pty no-pty help version",
                ),
            ],
        )
    },
    Program {
        language: Some(code::runuser),
        examples: &[ex("runuser -u nobody -- cat x", "risk runs:cat kind:runs")],
        ..wrapper(
            &["runuser"],
            &[
                value("c", "command session-command", Role::Script),
                value(
                    "ugGw",
                    "user group supp-group whitelist-environment",
                    Role::Data,
                ),
                risk_value("s", "shell", Role::Data, "runs a shell of its choosing"),
                flag("lmpfP", "login preserve-environment fast pty help version"),
            ],
        )
    },
    wrapper(
        &["systemd-run"],
        &[
            value(
                "upEM",
                "unit property setenv uid gid nice machine description slice on-calendar on-active on-boot on-startup on-unit-active on-unit-inactive on-clock-change on-timezone-change timer-property path-property socket-property service-type host slice-inherit",
                Role::Data,
            ),
            value("", "working-directory", Role::Folder),
            flag(
                "tPGqrdS",
                "user system scope wait pty pipe collect quiet no-block remain-after-exit same-dir shell no-ask-password send-sighup help version",
            ),
        ],
    ),
    wrapper(
        &["caffeinate"],
        &[value("tw", "", Role::Data), flag("dimsu", "")],
    ),
    wrapper(
        &["dbus-run-session"],
        &[
            value("", "config-file", Role::Read),
            risk_value("", "dbus-daemon", Role::Data, "runs a program"),
            HELP,
            VERSION,
        ],
    ),
    Program {
        examples: &[ex("busybox cat x", "runs:cat kind:runs")],
        ..wrapper(&["busybox"], &[flag("", "list list-full install help")])
    },
    Program {
        language: Some(code::chroot),
        ..wrapper_after(
            &["chroot"],
            &[Role::Read],
            &[
                value("", "userspec groups", Role::Data),
                flag("", "skip-chdir"),
                HELP,
                VERSION,
            ],
        )
    },
    Program {
        options_first: false,
        operands: Operands {
            first: &[Role::Write],
            rest: Role::Data,
            last: None,
        },
        language: Some(code::script),
        examples: &[
            ex(
                "script -qc curl\\sx /dev/null",
                "write:/dev/null script kind:runs",
            ),
            ex("script log.txt", "write:log.txt risk kind:runs"),
        ],
        ..wrapper(
            &["script"],
            &[
                value("c", "command", Role::Script),
                flag("aefqh", "append flush return quiet force help version"),
                value("TOBI", "log-timing log-out log-io log-in", Role::Write),
                attached("t", "timing", Role::Write),
                value("Emo", "echo logging-format output-limit", Role::Data),
            ],
        )
    },
    Program {
        syntax: Syntax::Exact,
        options_first: false,
        complete: false,
        operands: Operands::all(Role::Data),
        language: Some(code::tmux),
        examples: &[
            ex("tmux new -d curl\\sx", "sub:new-session script kind:runs"),
            ex("tmux ls", "sub:list-sessions kind:reads"),
            ex(
                "tmux send-keys -t x ls Enter",
                "risk sub:send-keys kind:runs",
            ),
        ],
        subs: &[
            Sub {
                operands: Operands::all(Role::Data),
                options: &[value("stnfcxyeFEPIB", "", Role::Data), flag("dADX", "")],
                ..sub(
                    &[
                        "new-session",
                        "new=new-session",
                        "new-window",
                        "neww=new-window",
                        "split-window",
                        "splitw=split-window",
                        "respawn-pane",
                        "respawnp=respawn-pane",
                        "respawn-window",
                        "respawnw=respawn-window",
                        "run-shell",
                        "run=run-shell",
                        "pipe-pane",
                        "pipep=pipe-pane",
                        "display-popup",
                        "popup=display-popup",
                    ],
                    Kind::Runs,
                    Net::Never,
                )
            },
            Sub {
                operands: Operands::all(Role::Data),
                options: &[value("tcNT", "", Role::Data), flag("lHKMRX", "")],
                ..sub(
                    &[
                        "send-keys",
                        "send=send-keys",
                        "source-file",
                        "source=source-file",
                        "if-shell",
                        "if=if-shell",
                        "load-buffer",
                        "loadb=load-buffer",
                        "command-prompt",
                        "bind-key",
                        "bind=bind-key",
                        "set-hook",
                        "set-option",
                        "set=set-option",
                    ],
                    Kind::Runs,
                    Net::Never,
                )
            },
            Sub {
                operands: Operands::all(Role::Data),
                options: &[value("tFSE", "", Role::Data), flag("apJ", "")],
                ..sub(
                    &[
                        "list-sessions",
                        "ls=list-sessions",
                        "list-windows",
                        "lsw=list-windows",
                        "list-panes",
                        "lsp=list-panes",
                        "capture-pane",
                        "capturep=capture-pane",
                        "display-message",
                        "display=display-message",
                        "has-session",
                        "has=has-session",
                        "list-keys",
                        "lsk=list-keys",
                        "show-options",
                        "show=show-options",
                        "info",
                        "list-clients",
                        "lsc=list-clients",
                    ],
                    Kind::Reads,
                    Net::Never,
                )
            },
            Sub {
                operands: Operands::all(Role::Data),
                options: &[value("ts", "", Role::Data), flag("aK", "")],
                ..sub(
                    &[
                        "kill-session",
                        "kill-server",
                        "kill-window",
                        "kill-pane",
                        "attach-session",
                        "attach=attach-session",
                        "a=attach-session",
                        "detach-client",
                        "detach",
                        "select-window",
                        "selectw",
                        "select-pane",
                        "selectp",
                        "resize-pane",
                        "resizep",
                        "rename-session",
                        "rename-window",
                        "wait-for",
                    ],
                    Kind::Runs,
                    Net::Never,
                )
            },
        ],
        ..program(&["tmux"], Kind::Runs)
    }
    .with_options(&[value("LSfcT", "", Role::Data), flag("2CDlNuvV", "")]),
    Program {
        syntax: Syntax::Words,
        options_first: true,
        examples: &[
            ex("screen -dmS x curl y", "runs:curl kind:runs"),
            ex("screen -ls", "kind:runs"),
            ex("screen -S x -X stuff ls", "risk runs:ls kind:runs"),
        ],
        ..wrapper(
            &["screen"],
            &[
                flag(
                    "",
                    "d m dm D DR DDR R RR r x ls list wipe q U a A O i f fn fa v L h",
                ),
                value("", "S dmS DmS t T p e Logfile", Role::Data),
                risk_value(
                    "",
                    "X",
                    Role::Data,
                    "sends a command to another screen session",
                ),
                risk_value("", "s", Role::Data, "runs a shell of its choosing"),
                value("", "c", Role::Config),
            ],
        )
    },
    Program {
        operands: Operands::all(Role::Data),
        language: Some(code::reads_commands),
        examples: &[ex("at now", "code kind:runs")],
        ..program(&["at", "batch", "atq-run", "crontab", "newgrp"], Kind::Runs)
    }
    .with_options(&[value("fqt", "", Role::Read), flag("mMlrvcdbiuVe", "")]),
    Program {
        options_first: false,
        operands: Operands::all(Role::Data),
        language: Some(code::sg),
        examples: &[ex("sg users -c curl\\sx", "risk script kind:runs")],
        ..program(&["sg"], Kind::Runs)
    }
    .with_options(&[flag("c", "")]),
    Program {
        examples: &[ex("expect -c spawn\\ssh", "code kind:runs")],
        ..interpreter(
            &["expect", "tclsh", "wish", "jimsh"],
            &[
                value("c", "", Role::Code),
                risk_value("f", "", Role::Read, "runs a program toolgate does not read"),
                flag("bdDinNv", ""),
            ],
        )
    },
    Program {
        operands: Operands::all(Role::Data),
        language: Some(code::always_risky),
        examples: &[ex("parallel ::: curl\\sx", "risk kind:runs")],
        ..program(
            &[
                "parallel",
                "sem",
                "rush",
                "pueue",
                "nq",
                "ts",
                "tsp",
                "pm2",
                "forever",
                "nodemon",
                "entr",
                "inotifywait-run",
                "watchexec",
                "concurrently",
                "npm-run-all",
                "run-p",
                "run-s",
            ],
            Kind::Runs,
        )
    },
    Program {
        options_first: true,
        operands: Operands::all(Role::Data),
        interpreter: true,
        language: Some(code::shell),
        examples: &[
            ex("bash -lc git\\sstatus", "script kind:runs"),
            ex("sh script.sh", "read:script.sh kind:runs"),
            ex("bash", "code kind:runs"),
            ex("bash -s", "code kind:runs"),
        ],
        ..program(
            &[
                "bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh", "rbash", "csh",
                "tcsh",
            ],
            Kind::Runs,
        )
    }
    .with_options(SHELL_OPTIONS),
    Program {
        options_first: true,
        operands: Operands {
            first: &[Role::Read],
            rest: Role::Data,
            last: None,
        },
        interpreter: true,
        language: Some(code::interpreter),
        examples: &[ex("fish -c ls", "script kind:runs")],
        ..program(&["fish"], Kind::Runs)
    }
    .with_options(&[
        value("c", "command init-command", Role::Script),
        flag(
            "ilnpP",
            "interactive login no-execute private no-config print-rusage-self help version",
        ),
        value(
            "Cdf",
            "debug debug-output features profile profile-startup",
            Role::Data,
        ),
    ]),
    interpreter(
        &["perl", "perl5"],
        &[
            CODE,
            value("E", "", Role::Code),
            flag("nplaswWXtTcvhSuUdDF0", ""),
            attached("IMmix", "", Role::Data),
        ],
    ),
    interpreter(
        &["ruby", "irb", "jruby"],
        &[
            CODE,
            flag(
                "nplacswWvhSyd",
                "verbose version help copyright disable-gems jit",
            ),
            attached(
                "IrCEFxKT",
                "enable disable encoding external-encoding internal-encoding",
                Role::Data,
            ),
        ],
    ),
    interpreter(
        &["php"],
        &[
            value("r", "", Role::Code),
            value("B", "", Role::Code),
            value("R", "", Role::Code),
            value("E", "", Role::Code),
            value("cdzt", "", Role::Data),
            flag("afhilmnsvwHq", ""),
            value("S", "", Role::Data),
        ],
    ),
    interpreter(
        &["lua", "luajit", "lua5.1", "lua5.3", "lua5.4"],
        &[CODE, value("l", "", Role::Data), flag("ivEW", "")],
    ),
    interpreter(
        &["Rscript", "R"],
        &[
            CODE,
            flag(
                "",
                "vanilla no-save no-restore quiet silent slave verbose version help",
            ),
        ],
    ),
    interpreter(&["osascript"], &[CODE, flag("is", "")]),
    interpreter(
        &["pwsh", "powershell", "powershell.exe"],
        &[
            value(
                "",
                "Command command c EncodedCommand encodedcommand ec",
                Role::Code,
            ),
            flag(
                "",
                "NoProfile noprofile nop NonInteractive noni NoLogo nologo",
            ),
            value("", "File file f ExecutionPolicy ep", Role::Data),
        ],
    ),
    interpreter(
        &[
            "julia",
            "guile",
            "sbcl",
            "ghci",
            "runghc",
            "scala",
            "groovy",
            "jshell",
            "racket",
            "clojure",
            "clj",
            "elixir",
            "iex",
            "erl",
            "escript",
            "swift",
            "dotnet-script",
            "kotlin-script",
            "ocaml",
            "gawk-script",
            "nu",
            "xonsh",
            "elvish",
            "tcl",
        ],
        &[CODE, value("", "load script", Role::Code), flag("iqv", "")],
    ),
];
