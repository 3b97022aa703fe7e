//! Rust: cargo (and the cargo subcommands people install), rustc, rustup, rustfmt, maturin.
//!
//! Sources: The Cargo Book (commands and "Environment variables", Cargo 1.8x); rustc and
//! rustup 1.27 `--help`; maturin 1.7; cargo-nextest 0.9; cargo-deny 0.16; cargo-audit 0.21.
//! Cargo reads long options whole (clap), not abbreviated.

use super::super::{
    Effect, Kind, Net, Operands, Opt, Program, Role, Sub, Syntax, does, env, ex, flag, program,
    risk_value, sub, value,
};

/// Cargo's options that every subcommand takes (`cargo -q test`, `cargo test -q`).
const CARGO_OPTIONS: &[Opt] = &[
    risk_value(
        "",
        "config",
        Role::Data,
        "can set programs cargo runs (a rustc wrapper, a runner)",
    ),
    risk_value(
        "Z",
        "",
        Role::Data,
        "turns on unstable behaviour toolgate does not follow",
    ),
    value("C", "", Role::Folder),
    value("", "manifest-path lockfile-path", Role::Read),
    value("", "target-dir artifact-dir out-dir", Role::Into),
    value(
        "pFj",
        "package features jobs target bin example test bench exclude profile message-format color timings registry index vers depth edges invert prefix format charset rename git branch tag rev path optional token crate-type name edition vcs precise aggressive test-threads partition filterset limit max-fails retries message-format-version cargo-profile archive-file workspace-remap output-format ignore toolchain root",
        Role::Data,
    ),
    does("", "offline frozen", Effect::Offline),
    flag(
        "qvrhV",
        "quiet verbose locked release workspace all lib bins examples tests benches all-targets all-features no-default-features keep-going future-incompat-report ignore-rust-version no-run no-fail-fast doc no-deps document-private-items open allow-dirty allow-staged allow-no-vcs broken-code check dry-run no-verify list help version unit-graph build-plan dev build default-features force debug no-track fix nocapture include-ignored ignored exact show-output run-ignored no-capture no-tests quick json deny-warnings recursive duplicates manifest lockfile hide-progress no-dev-deps no-dedupe ignore-dev backtrace",
    ),
];

const CARGO_SUBS: &[Sub] = &[
    Sub {
        operands: Operands::all(Role::Data),
        ..sub(
            &[
                "build",
                "b=build",
                "check",
                "c=check",
                "test",
                "t=test",
                "bench",
                "run",
                "r=run",
                "clippy",
                "doc",
                "d=doc",
                "fix",
                "rustc",
                "rustdoc",
                "nextest",
                "llvm-cov",
                "miri",
                "insta",
                "expand",
                "watch",
                "make",
                "criterion",
                "tarpaulin",
                "mutants",
                "hack",
                "careful",
                "fuzz",
                "flamegraph",
                "semver-checks",
                "public-api",
                "msrv",
                "hakari",
                "xtask",
                "zigbuild",
                "cross",
                "ndk",
                "apk",
                "lambda",
                "shuttle",
                "leptos",
                "tauri",
                "dioxus",
                "component",
                "wasi",
                "bloat",
                "asm",
                "llvm-lines",
                "modules",
                "geiger",
                "about",
                "cyclonedx",
                "sort",
                "dist",
                "pgo",
                "bolt",
                "instruments",
            ],
            Kind::Runs,
            Net::Never,
        )
    },
    Sub {
        operands: Operands::all(Role::Read),
        ..sub(&["fmt", "clean"], Kind::Runs, Net::Never)
    },
    Sub {
        operands: Operands::all(Role::Data),
        ..sub(
            &[
                "tree",
                "metadata",
                "locate-project",
                "pkgid",
                "verify-project",
                "version",
                "help",
                "read-manifest",
                "report",
                "config",
                "info-local",
                "machete",
                "udeps",
                "deny",
                "audit",
                "outdated",
                "license",
                "vet",
                "spellcheck",
                "sweep",
                "cache",
                "show-asm",
            ],
            Kind::Reads,
            Net::Never,
        )
    },
    Sub {
        operands: Operands::all(Role::Source),
        ..sub(
            &[
                "add",
                "remove",
                "rm=remove",
                "update",
                "fetch",
                "generate-lockfile",
                "vendor",
                "install",
                "uninstall",
                "binstall",
                "search",
                "info",
                "login",
                "logout",
                "owner",
                "yank",
                "new",
                "init",
                "upgrade",
                "edit",
                "set-version",
                "package",
                "release",
            ],
            Kind::Runs,
            Net::Always,
        )
    },
    Sub {
        acts: &["publish"],
        operands: Operands::all(Role::Data),
        ..sub(&["publish"], Kind::Runs, Net::Always)
    },
];

pub(super) const PROGRAMS: &[Program] = &[
    Program {
        syntax: Syntax::Exact,
        options_everywhere: true,
        subs: CARGO_SUBS,
        env: &[
            env("RUSTC", "names the compiler cargo runs"),
            env(
                "RUSTC_WRAPPER",
                "names a program cargo runs around the compiler",
            ),
            env(
                "RUSTC_WORKSPACE_WRAPPER",
                "names a program cargo runs around the compiler",
            ),
            env("RUSTDOC", "names the program cargo runs for documentation"),
            env(
                "RUSTFLAGS",
                "passes options to the compiler, such as a linker program",
            ),
            env(
                "RUSTDOCFLAGS",
                "passes options to rustdoc, such as a test runner",
            ),
            env("CARGO_*", "changes what cargo runs or where it writes"),
            env("RUSTUP_TOOLCHAIN", "changes which compiler runs"),
        ],
        examples: &[
            ex("cargo test --workspace", "sub:test kind:runs"),
            ex("cargo -q publish", "sub:publish net kind:runs"),
            ex("cargo publish --dry-run", "sub:publish net kind:runs"),
            ex("cargo build --config x", "risk sub:build kind:runs"),
            ex("cargo tree -i serde", "sub:tree kind:reads"),
            ex("cargo add tokio --features full", "sub:add net kind:runs"),
            ex("cargo update --offline", "sub:update kind:runs"),
            ex("cargo fmt --all", "sub:fmt kind:runs"),
            ex("cargo +stable build -q", "sub:build kind:runs"),
            ex(
                "cargo --manifest-path native/Cargo.toml build",
                "read:native/Cargo.toml sub:build kind:runs",
            ),
        ],
        toolchain_first: true,
        ..program(&["cargo"], Kind::Runs)
    }
    .with_options(CARGO_OPTIONS),
    Program {
        syntax: Syntax::Exact,
        operands: Operands::all(Role::Read),
        examples: &[
            ex("rustc -o /tmp/x main.rs", "write:/tmp/x read:main.rs kind:runs"),
            ex("rustc +nightly main.rs", "read:main.rs kind:runs"),
        ],
        toolchain_first: true,
        ..program(
            &["rustc", "rustdoc", "clippy-driver", "rust-gdb", "rust-lldb"],
            Kind::Runs,
        )
    }
    .with_options(&[
        value("o", "", Role::Write),
        value("", "out-dir emit-dir", Role::Into),
        value(
            "LlCAWDF",
            "edition crate-type crate-name emit print target cap-lints cfg check-cfg explain error-format json color extern sysroot codegen test-args extern-html-root-url",
            Role::Data,
        ),
        flag(
            "gOVvh",
            "test verbose version help document-private-items",
        ),
    ]),
    Program {
        syntax: Syntax::Exact,
        subs: &[
            Sub {
                operands: Operands::all(Role::Data),
                ..sub(
                    &["show", "which", "doc", "completions", "help", "check"],
                    Kind::Reads,
                    Net::Never,
                )
            },
            Sub {
                operands: Operands::all(Role::Command),
                ..sub(&["run"], Kind::Runs, Net::Never)
            },
            Sub {
                operands: Operands::all(Role::Data),
                ..sub(
                    &[
                        "update",
                        "upgrade",
                        "install",
                        "uninstall",
                        "toolchain",
                        "target",
                        "component",
                        "default",
                        "override",
                        "self",
                        "set",
                        "init",
                    ],
                    Kind::Runs,
                    Net::Always,
                )
            },
        ],
        examples: &[
            ex("rustup show", "sub:show kind:reads"),
            ex("rustup component add clippy", "sub:component net kind:runs"),
        ],
        ..program(&["rustup", "rustup-init"], Kind::Runs)
    }
    .with_options(&[
        flag(
            "vqhV",
            "verbose quiet help version installed active no-self-update force",
        ),
        value("", "toolchain profile path", Role::Data),
    ]),
    Program {
        syntax: Syntax::Exact,
        operands: Operands::all(Role::Write),
        examples: &[
            ex("rustfmt src/main.rs", "write:src/main.rs kind:writes"),
            ex("rustfmt --check a.rs", "write:a.rs kind:writes"),
        ],
        complete: true,
        toolchain_first: true,
        ..program(&["rustfmt"], Kind::Writes)
    }
    .with_options(&[
        flag(
            "vqhV",
            "check verbose quiet help version backup files-with-diff",
        ),
        value(
            "",
            "edition emit color style-edition print-config config",
            Role::Data,
        ),
        value("", "config-path", Role::Read),
    ]),
    Program {
        syntax: Syntax::Exact,
        subs: &[
            Sub {
                operands: Operands::all(Role::Data),
                ..sub(
                    &[
                        "develop",
                        "build",
                        "sdist",
                        "init",
                        "new",
                        "generate-ci",
                        "pep517",
                        "list-python",
                    ],
                    Kind::Runs,
                    Net::Always,
                )
            },
            Sub {
                acts: &["publish"],
                operands: Operands::all(Role::Data),
                ..sub(&["publish", "upload"], Kind::Runs, Net::Always)
            },
        ],
        examples: &[
            ex("maturin develop --release", "sub:develop net kind:runs"),
            ex("maturin publish", "sub:publish net kind:runs"),
        ],
        ..program(
            &[
                "maturin",
                "wasm-pack",
                "cargo-dist",
                "cross",
                "trunk",
                "dx",
                "tauri",
            ],
            Kind::Runs,
        )
    }
    .with_options(&[
        value(
            "mioF",
            "manifest-path interpreter out features target profile compatibility bindings scope",
            Role::Data,
        ),
        flag(
            "rqvh",
            "release strip quiet verbose help version skip-install uv zig sdist find-interpreter",
        ),
    ]),
];
