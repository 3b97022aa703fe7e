//! Go: the go command, gofmt and the linters people run with it.
//!
//! Sources: `go help build`, `go help test`, `go help testflag`, `go help environment` (Go
//! 1.23); gofmt; golangci-lint 1.6x; staticcheck 2024; Delve 1.23. The go command reads flags
//! with Go's `flag` package: `-name` or `--name`, never abbreviated.

use super::super::{
    Kind, Net, Operands, Opt, Program, Role, Sub, Syntax, env, ex, flag, program, risk_value, sub,
    value,
};

/// The build flags every go subcommand that builds takes.
const BUILD_FLAGS: &[Opt] = &[
    value("", "C", Role::Folder),
    value("", "o", Role::Write),
    risk_value(
        "",
        "toolexec",
        Role::Data,
        "runs a program for each tool the build runs",
    ),
    risk_value(
        "",
        "exec",
        Role::Data,
        "runs the test or program through another program",
    ),
    risk_value(
        "",
        "overlay",
        Role::Read,
        "replaces source files with others named in a file",
    ),
    value("", "modfile", Role::Read),
    value(
        "",
        "coverprofile cpuprofile memprofile blockprofile mutexprofile trace outputdir fuzzcache",
        Role::Write,
    ),
    value(
        "",
        "p tags ldflags gcflags asmflags gccgoflags mod pkgdir installsuffix buildmode compiler covermode coverpkg run skip bench benchtime count cpu parallel timeout shuffle fuzz fuzztime fuzzminimizetime list vet pgo buildvcs reuse f d",
        Role::Data,
    ),
    flag(
        "",
        "a n x v race msan asan cover work trimpath linkshared i c short failfast benchmem json u t m find deps test compiled export e l w s r insecure modcacherw fullpath testwork h help version args",
    ),
];

const GO_SUBS: &[Sub] = &[
    Sub {
        operands: Operands::all(Role::Data),
        ..sub(
            &[
                "build", "test", "run", "vet", "generate", "tool", "fix", "bug", "clean",
            ],
            Kind::Runs,
            Net::Never,
        )
    },
    Sub {
        operands: Operands::all(Role::Write),
        ..sub(&["fmt"], Kind::Runs, Net::Never)
    },
    Sub {
        operands: Operands::all(Role::Data),
        ..sub(
            &["version", "help", "doc", "list", "env"],
            Kind::Reads,
            Net::Never,
        )
    },
    Sub {
        operands: Operands::all(Role::Data),
        ..sub(
            &["get", "install", "mod", "work", "telemetry"],
            Kind::Runs,
            Net::Always,
        )
    },
];

pub(super) const PROGRAMS: &[Program] = &[
    Program {
        syntax: Syntax::Go,
        options_everywhere: true,
        subs: GO_SUBS,
        env: &[
            env(
                "GOFLAGS",
                "adds flags, such as `-toolexec`, to every go command",
            ),
            env("GOROOT", "changes which toolchain runs"),
            env("GOTOOLCHAIN", "makes go download and run another toolchain"),
            env("GOENV", "names a file of go settings"),
            env("GOPROXY", "changes where modules are downloaded from"),
            env("GOEXPERIMENT", "turns on unstable behaviour"),
            env("CGO_*", "passes flags and programs to the C build"),
        ],
        examples: &[
            ex("go test ./...", "sub:test kind:runs"),
            ex("go test -exec /tmp/x ./...", "risk sub:test kind:runs"),
            ex(
                "go build -o /tmp/gen ./tools/gen",
                "write:/tmp/gen sub:build kind:runs",
            ),
            ex("go vet ./...", "sub:vet kind:runs"),
            ex("go mod tidy", "sub:mod net kind:runs"),
            ex("go env GOPATH", "sub:env kind:reads"),
            ex(
                "go -C tools/gen test",
                "folder:tools/gen sub:test kind:runs",
            ),
        ],
        ..program(&["go"], Kind::Runs)
    }
    .with_options(BUILD_FLAGS),
    Program {
        syntax: Syntax::Go,
        operands: Operands::all(Role::Read),
        language: Some(super::super::code::gofmt),
        complete: true,
        examples: &[
            ex("gofmt -l .", "read:. recursive kind:reads"),
            ex("gofmt -w main.go", "write:main.go recursive kind:reads"),
        ],
        ..program(&["gofmt", "goimports", "gofumpt"], Kind::Reads)
    }
    .with_options(&[
        flag("", "l w d s e extra"),
        value("", "r cpuprofile local", Role::Data),
    ]),
    Program {
        syntax: Syntax::Go,
        operands: Operands::all(Role::Data),
        examples: &[ex("golangci-lint run ./...", "kind:runs")],
        ..program(
            &[
                "golangci-lint",
                "staticcheck",
                "revive",
                "gosec",
                "govulncheck",
                "dlv",
                "air",
                "mockgen",
                "stringer",
                "swag",
                "wire",
                "buf",
                "protoc",
                "protoc-gen-go",
                "sqlc",
                "templ",
                "goreleaser",
                "ko",
                "task",
                "mage",
                "gotestsum",
                "richgo",
                "gopls",
                "errcheck",
                "ineffassign",
                "misspell",
                "nilaway",
                "deadcode",
                "gofumports",
            ],
            Kind::Runs,
        )
    },
];
