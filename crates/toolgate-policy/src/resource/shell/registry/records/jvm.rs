//! Java and Kotlin: java, javac, jar, Maven, Gradle, the Kotlin compiler, sbt, Ant, Leiningen.
//!
//! Sources: JDK 21 tool reference (java, javac, jar); Maven 3.9 CLI; Gradle 8 command-line
//! interface; kotlinc 2.0; sbt 1.10.

use super::super::{Kind, Operands, Program, Role, Syntax, ex, flag, program, risk_value, value};

const BUILD_RUNS: &str = "runs code of a file toolgate does not read";

pub(super) const PROGRAMS: &[Program] = &[
    Program {
        syntax: Syntax::Words,
        options_first: true,
        operands: Operands {
            first: &[Role::Read],
            rest: Role::Data,
            last: None,
        },
        examples: &[
            ex(
                "java -jar build/libs/app.jar",
                "read:build/libs/app.jar kind:runs",
            ),
            ex(
                "java -javaagent:x.jar -cp out Main",
                "read:Main risk kind:runs",
            ),
        ],
        language: Some(super::super::code::java),
        ..program(&["java", "javaw"], Kind::Runs)
    }
    .with_options(&[
        value("", "jar", Role::Read),
        value(
            "",
            "cp classpath -class-path p -module-path m -module -add-modules -enable-native-access Xss Xmx Xms -source",
            Role::Data,
        ),
        flag(
            "",
            "version -version showversion -show-version help -help ? server client ea enableassertions da disableassertions esa verbose Xshare:auto XX:+UseG1GC -dry-run",
        ),
    ]),
    Program {
        syntax: Syntax::Words,
        operands: Operands::all(Role::Read),
        examples: &[ex(
            "javac -d out src/Main.java",
            "into:out read:src/Main.java kind:runs",
        )],
        ..program(
            &[
                "javac",
                "kotlinc",
                "kotlinc-jvm",
                "kotlinc-js",
                "scalac",
                "groovyc",
                "javadoc",
                "jar",
                "jlink",
                "jpackage",
                "native-image",
            ],
            Kind::Runs,
        )
    }
    .with_options(&[
        value("", "d s h", Role::Into),
        risk_value(
            "",
            "processorpath -processor-path processor Xplugin J",
            Role::Data,
            BUILD_RUNS,
        ),
        value(
            "",
            "cp classpath -class-path sourcepath source target -release encoding Xlint g jvm-target module-name api-version language-version opt-in p -module-path",
            Role::Data,
        ),
        flag(
            "",
            "version help -help verbose nowarn Werror Xlint:all parameters include-runtime no-stdlib no-reflect",
        ),
    ]),
    Program {
        syntax: Syntax::Gnu,
        operands: Operands::all(Role::Data),
        subs: &[],
        language: Some(super::super::code::build_goals),
        examples: &[
            ex("mvn -q test", "kind:runs"),
            ex("mvn deploy", "sub:publish kind:runs"),
            ex("gradle test --offline", "kind:runs"),
            ex(
                "./gradlew --init-script /tmp/x.gradle build",
                "read:/tmp/x.gradle risk kind:runs",
            ),
        ],
        ..program(
            &[
                "mvn", "mvnw", "mvnd", "gradle", "gradlew", "sbt", "ant", "lein", "bazel",
                "bazelisk", "buck", "buck2", "pants", "bloop", "mill",
            ],
            Kind::Runs,
        )
    }
    .with_options(&[
        value("f", "file project-dir build-file", Role::Read),
        risk_value("I", "init-script", Role::Read, BUILD_RUNS),
        risk_value(
            "s",
            "settings global-settings toolchains",
            Role::Read,
            "reads settings, such as repositories and programs, from a file",
        ),
        value("", "project-cache-dir gradle-user-home", Role::Into),
        value(
            "PDpTlxbe",
            "activate-profiles define projects threads log-file exclude-task builder encoding console warning-mode max-workers priority resume-from include-build project-prop system-prop tests",
            Role::Data,
        ),
        flag(
            "qXBUNohvciCmt",
            "quiet errors debug batch-mode update-snapshots non-recursive offline help version continue info stacktrace full-stacktrace no-daemon daemon parallel build-cache no-build-cache configuration-cache rerun-tasks refresh-dependencies dry-run scan no-scan continuous fail-at-end fail-fast fail-never also-make also-make-dependents no-transfer-progress strict-checksums lax-checksums show-version warn no-rebuild profile status stop watch-fs no-watch-fs write-locks export-keys client color no-colors",
        ),
    ]),
];
