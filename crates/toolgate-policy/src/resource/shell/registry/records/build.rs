//! Build tools that run recipes: make, cmake, ninja, meson, just, configure scripts.
//!
//! Sources: GNU make 4.4 manual ("Options Summary", `MAKEFLAGS`, `MAKEFILES`); CMake 3.30
//! command line; ninja 1.12; Meson 1.5; just 1.3x.

use super::super::code;
use super::super::{
    Kind, Operands, Program, Role, attached, env, ex, flag, program, risk_value, value,
};

pub(super) const PROGRAMS: &[Program] = &[
    Program {
        operands: Operands::all(Role::Data),
        language: Some(code::make),
        env: &[
            env(
                "MAKEFLAGS",
                "adds options, such as `--eval`, to every make it starts",
            ),
            env(
                "MAKEFILES",
                "names makefiles make reads before the project's",
            ),
            env(
                "GNUMAKEFLAGS",
                "adds options, such as `--eval`, to every make it starts",
            ),
        ],
        examples: &[
            ex("make test", "kind:runs"),
            ex("make -C web build", "folder:web kind:runs"),
            ex("make --eval=$(shell\\sid)", "risk kind:runs"),
            ex("make -f -", "code kind:runs"),
            ex("make -f /tmp/evil.mk", "read:/tmp/evil.mk risk kind:runs"),
            ex("make -j4 -k", "kind:runs"),
        ],
        complete: true,
        ..program(
            &["make", "gmake", "bmake", "pmake", "remake", "mingw32-make"],
            Kind::Runs,
        )
    }
    .with_options(&[
        value("f", "file makefile", Role::Read),
        value("C", "directory", Role::Folder),
        value("I", "include-dir", Role::Read),
        risk_value(
            "E",
            "eval",
            Role::Data,
            "runs text it is given as part of the makefile",
        ),
        value(
            "oW",
            "old-file assume-old what-if new-file assume-new jobserver-auth jobserver-style",
            Role::Data,
        ),
        attached(
            "jlO",
            "jobs load-average max-load output-sync debug shuffle",
            Role::Data,
        ),
        flag(
            "bBdeikLnpqrRsStvwh",
            "always-make environment-overrides ignore-errors keep-going check-symlink-times just-print dry-run recon print-data-base question no-builtin-rules no-builtin-variables silent quiet no-silent no-keep-going stop touch trace version print-directory no-print-directory warn-undefined-variables help",
        ),
    ]),
    Program {
        operands: Operands::all(Role::Read),
        examples: &[
            ex("cmake -S . -B build", "read:. into:build kind:runs"),
            ex("cmake --build build -j4", "read:build kind:runs"),
            ex("cmake -P x.cmake", "risk read:x.cmake kind:runs"),
        ],
        ..program(&["cmake", "ctest", "cpack"], Kind::Runs)
    }
    .with_options(&[
        value("S", "", Role::Read),
        value("B", "", Role::Into),
        value("", "build install test-dir", Role::Read),
        risk_value("P", "", Role::Read, "runs a cmake script"),
        risk_value(
            "E",
            "",
            Role::Data,
            "runs a command of cmake's own, which may write or delete files",
        ),
        attached(
            "DGUTACj",
            "preset target config parallel log-level toolchain install-prefix graphviz output-on-failure label-regex tests-regex exclude-regex build-config prefix component generator",
            Role::Data,
        ),
        flag(
            "LNhv",
            "fresh clean-first verbose help version trace trace-expand warn-uninitialized no-warn-unused-cli check-system-vars list-presets strip",
        ),
    ]),
    Program {
        operands: Operands::all(Role::Data),
        examples: &[ex("ninja -C build", "folder:build kind:runs")],
        ..program(
            &[
                "ninja",
                "samu",
                "meson",
                "muon",
                "just",
                "scons",
                "xmake",
                "waf",
                "premake5",
                "configure",
                "autoreconf",
                "autogen.sh",
                "bootstrap",
                "bootstrap.sh",
                "build.sh",
                "tup",
                "redo",
            ],
            Kind::Runs,
        )
    }
    .with_options(&[
        value(
            "C",
            "directory working-directory builddir",
            Role::Folder,
        ),
        value("f", "justfile file", Role::Read),
        risk_value(
            "",
            "shell",
            Role::Data,
            "runs recipes with a shell of its choosing",
        ),
        value(
            "jktdl",
            "set buildtype prefix backend jobs suite num-processes wrap-mode native-file cross-file",
            Role::Data,
        ),
        flag(
            "nvhq",
            "dry-run verbose help version quiet list summary reconfigure wipe clean dump evaluate choose print-errors no-rebuild yes unsorted",
        ),
    ]),
];
