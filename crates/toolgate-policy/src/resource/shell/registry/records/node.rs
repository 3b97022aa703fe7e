//! JavaScript and TypeScript: node, the package managers (npm, npx, pnpm, yarn, bun, deno), and
//! the build, test and lint tools they run.
//!
//! Sources: Node.js 22 command-line options; npm 10 CLI commands and config (`npm help config`;
//! npm reads its options with nopt, which takes any unambiguous start of a long option, and reads
//! `npm_config_*` variables in any case); pnpm 9; Yarn 4; Bun 1.1; Deno 2; TypeScript 5 `tsc`;
//! ESLint 9; Prettier 3; Vitest 2; Jest 29; Playwright 1.4x; Vite 5.

use super::super::code;
use super::super::{
    Kind, Net, Operands, Opt, Program, Role, Sub, env, env_any_case, ex, flag, program, risk_value,
    sub, value,
};

const SCRIPT_SHELL: &str = "can set a program scripts run with";

/// npm's configuration options, which every subcommand takes (long ones abbreviated).
const NPM_OPTIONS: &[Opt] = &[
    risk_value(
        "",
        "node-options script-shell shell editor browser git init-module onload-script viewer",
        Role::Data,
        SCRIPT_SHELL,
    ),
    risk_value("", "userconfig globalconfig", Role::Read, SCRIPT_SHELL),
    value("C", "prefix", Role::Folder),
    value("", "registry proxy https-proxy", Role::Url),
    value("", "cache logs-dir", Role::Into),
    value("c", "call", Role::Script),
    value(
        "w",
        "workspace omit include loglevel depth tag access otp before color location install-strategy preid message lockfile-version cpu os libc scope auth-type fetch-retries fetch-timeout maxsockets network-concurrency save-prefix tag-version-prefix init-author-name init-license init-version sbom-format sbom-type expect-results expect-result-count diff diff-unified diff-src-prefix diff-dst-prefix format replace-registry-host cidr key cert ca cafile node-version umask heading searchexclude searchopts searchlimit provenance-file",
        Role::Data,
    ),
    value("p", "package", Role::Source),
    flag(
        "gSDOEBysfqlaPdhvx",
        "global save save-dev save-optional save-peer save-exact save-bundle no-save dry-run force legacy-peer-deps strict-peer-deps production audit no-audit fund no-fund silent quiet verbose json parseable long all yes no if-present ignore-scripts foreground-scripts workspaces include-workspace-root unicode progress timing install-links package-lock package-lock-only shrinkwrap bin-links rebuild-bundle sign-git-tag sign-git-commit git-tag-version commit-hooks allow-same-version prefer-offline prefer-online offline engine-strict global-style legacy-bundling strict-ssl update-notifier provenance read-only usage help version versions no-color no-progress no-package-lock workspaces-update include-attestations",
    ),
];

const NPM_SUBS: &[Sub] = &[
    Sub {
        operands: Operands::all(Role::Source),
        ..sub(
            &[
                "install",
                "add=install",
                "i=install",
                "in=install",
                "ins=install",
                "inst=install",
                "insta=install",
                "instal=install",
                "isnt=install",
                "isnta=install",
                "isntal=install",
                "isntall=install",
                "ci",
                "clean-install=ci",
                "ic=ci",
                "install-clean=ci",
                "isntall-clean=ci",
                "install-test",
                "it=install-test",
                "install-ci-test",
                "cit=install-ci-test",
                "update",
                "up=update",
                "upgrade=update",
                "udpate=update",
                "dedupe",
                "ddp=dedupe",
                "rebuild",
                "rb=rebuild",
            ],
            Kind::Runs,
            Net::Always,
        )
    },
    Sub {
        operands: Operands::all(Role::Data),
        ..sub(
            &[
                "run",
                "run-script=run",
                "rum=run",
                "urn=run",
                "test",
                "tst=test",
                "t=test",
                "start",
                "stop",
                "restart",
                "pack",
                "prune",
                "uninstall",
                "unlink=uninstall",
                "remove=uninstall",
                "rm=uninstall",
                "r=uninstall",
                "un=uninstall",
                "link",
                "ln=link",
                "version",
                "verison=version",
                "init",
                "create=init",
                "innit=init",
                "explore",
                "edit",
                "shrinkwrap",
                "set-script",
                "hook",
                "token",
                "profile",
                "team",
                "org",
                "owner",
                "author",
                "star",
                "unstar",
                "stars",
                "logout",
                "adduser",
                "login=adduser",
                "add-user=adduser",
                "cache",
                "set",
                "audit",
                "pkg",
                "query",
                "sbom",
                "fund",
                "doctor",
                "ping",
                "diff",
                "completion",
                "install-local",
            ],
            Kind::Runs,
            Net::Never,
        )
    },
    Sub {
        operands: Operands::all(Role::Command),
        ..sub(&["exec", "x=exec"], Kind::Runs, Net::Always)
    },
    Sub {
        acts: &["publish"],
        operands: Operands::all(Role::Source),
        ..sub(
            &[
                "publish",
                "unpublish",
                "deprecate",
                "undeprecate",
                "dist-tag",
                "dist-tags=dist-tag",
                "access",
                "trust",
            ],
            Kind::Runs,
            Net::Always,
        )
    },
    Sub {
        operands: Operands::all(Role::Data),
        ..sub(
            &[
                "ls",
                "list=ls",
                "la=ls",
                "ll=ls",
                "explain",
                "why=explain",
                "prefix",
                "root",
                "bin",
                "help",
                "help-search",
                "find-dupes",
                "get",
            ],
            Kind::Reads,
            Net::Never,
        )
    },
    Sub {
        subs: &[
            Sub {
                operands: Operands::all(Role::Data),
                ..sub(&["get", "list", "ls=list"], Kind::Reads, Net::Never)
            },
            Sub {
                operands: Operands::all(Role::Data),
                ..sub(
                    &["set", "delete", "rm=delete", "edit", "fix"],
                    Kind::Runs,
                    Net::Never,
                )
            },
        ],
        operands: Operands::all(Role::Data),
        ..sub(&["config", "c=config"], Kind::Reads, Net::Never)
    },
    Sub {
        operands: Operands::all(Role::Data),
        ..sub(
            &[
                "view",
                "info=view",
                "show=view",
                "v=view",
                "outdated",
                "search",
                "s=search",
                "se=search",
                "find=search",
                "whoami",
                "repo",
                "docs",
                "home=docs",
                "bugs",
                "issues=bugs",
            ],
            Kind::Reads,
            Net::Always,
        )
    },
];

/// The subcommands of pnpm, yarn and bun, which read their arguments much as npm does.
const PM_SUBS: &[Sub] = &[
    Sub {
        operands: Operands::all(Role::Source),
        ..sub(
            &[
                "install",
                "i=install",
                "add",
                "a=add",
                "update",
                "up=update",
                "upgrade",
                "remove",
                "rm=remove",
                "uninstall",
                "un=uninstall",
                "ci",
                "fetch",
                "import",
                "rebuild",
                "rb",
                "prune",
                "dedupe",
                "link",
                "unlink",
                "patch",
                "patch-commit",
                "deploy",
                "store",
                "setup",
                "env",
                "self-update",
                "approve-builds",
            ],
            Kind::Runs,
            Net::Always,
        )
    },
    Sub {
        operands: Operands::all(Role::Data),
        ..sub(
            &[
                "run",
                "run-script=run",
                "test",
                "t=test",
                "start",
                "build",
                "pack",
                "init",
                "version",
                "workspace",
                "workspaces",
                "constraints",
                "plugin",
                "server",
                "licenses",
                "cache",
                "config",
                "set",
                "tsc",
                "lint",
                "dev",
                "preview",
                "format",
            ],
            Kind::Runs,
            Net::Never,
        )
    },
    Sub {
        operands: Operands::all(Role::Command),
        ..sub(
            &["exec", "dlx", "x=dlx", "create", "bunx=dlx"],
            Kind::Runs,
            Net::Always,
        )
    },
    Sub {
        acts: &["publish"],
        operands: Operands::all(Role::Data),
        ..sub(&["publish", "npm"], Kind::Runs, Net::Always)
    },
    Sub {
        operands: Operands::all(Role::Data),
        ..sub(
            &[
                "ls", "list", "why", "info", "outdated", "audit", "bin", "root", "help", "pm",
                "search",
            ],
            Kind::Reads,
            Net::Never,
        )
    },
];

const PM_OPTIONS: &[Opt] = &[
    risk_value("", "node-options script-shell", Role::Data, SCRIPT_SHELL),
    value("C", "dir cwd prefix", Role::Folder),
    value("", "registry", Role::Url),
    value(
        "Fw",
        "filter filter-prod reporter loglevel workspace-concurrency package-import-method resolution-mode store-dir virtual-store-dir modules-dir lockfile-dir changed-files-ignore-pattern test-pattern tag access otp mode preid cpu os libc target outdir outfile env-file define external format sourcemap minify conditions backend network-concurrency child-concurrency use-node-version config",
        Role::Data,
    ),
    value("p", "package", Role::Source),
    flag(
        "rgDPOEysqvhWdt",
        "recursive global save-dev dev prod production save-optional save-exact save-peer yes silent quiet verbose help version frozen-lockfile no-frozen-lockfile immutable prefer-offline offline ignore-scripts stream parallel if-present workspace-root aggregate-output no-bail bail sort no-sort reverse include-workspace-root fix-lockfile force json long depth dry-run watch hot bun no-install smol shell-emulator interactive latest exact tilde caret check-files all ignore-pnpmfile lockfile-only no-lockfile save-text-lockfile frozen trust no-save dry",
    ),
];

/// A tool a package manager runs from `node_modules/.bin`: the project's code, plugins or
/// configuration run with it.
const fn js_tool(names: &'static [&'static str], options: &'static [Opt]) -> Program {
    Program {
        options,
        operands: Operands::all(Role::Read),
        ..program(names, Kind::Runs)
    }
}

pub(super) const PROGRAMS: &[Program] = &[
    Program {
        options_first: true,
        operands: Operands {
            first: &[Role::Read],
            rest: Role::Data,
            last: None,
        },
        interpreter: true,
        language: Some(code::interpreter),
        env: &[
            env("NODE_OPTIONS", "adds options, such as `--require` of any module, to every node it starts"),
            env("NODE_PATH", "changes where node loads modules from"),
        ],
        examples: &[
            ex("node scripts/build.js --prod", "read:scripts/build.js kind:runs"),
            ex("node -e x", "kind:runs"),
            ex("node -e fetch(1)", "code kind:runs"),
            ex("node --env-file=.env server.js", "read:.env read:server.js kind:runs"),
            ex("node -r ./setup.js x.js", "read:./setup.js read:x.js kind:runs"),
            ex("node --version", "kind:reads"),
        ],
        ..program(&["node", "nodejs", "tsx", "ts-node", "ts-node-esm", "esno", "vite-node", "jiti", "babel-node"], Kind::Runs)
    }
    .with_options(&[
        value("ep", "eval print", Role::Code),
        value("r", "require import loader experimental-loader", Role::Source),
        value("", "env-file env-file-if-exists", Role::Read),
        value("C", "conditions input-type title max-old-space-size stack-size inspect-port test-name-pattern test-reporter test-concurrency watch-path experimental-default-type tsconfig project compiler transpiler test-reporter-destination openssl-config icu-data-dir diagnostic-dir redirect-warnings heapsnapshot-signal", Role::Data),
        flag("ivhcT", "interactive version help check test watch inspect inspect-brk enable-source-maps no-warnings no-deprecation trace-warnings experimental-strip-types experimental-transform-types experimental-vm-modules experimental-specifier-resolution abort-on-uncaught-exception preserve-symlinks pending-deprecation throw-deprecation trace-deprecation expose-gc test-only experimental-test-coverage transpile-only swc esm files pretty skip-project cjs"),
    ]),
    Program {
        abbreviated_subs: true,
        options_everywhere: true,
        subs: NPM_SUBS,
        env: &[env_any_case("npm_config_*", "sets npm's configuration, such as `node-options` or `script-shell`")],
        examples: &[
            ex("npm test", "sub:test kind:runs"),
            ex("npm run build -- --watch", "sub:run kind:runs"),
            ex("npm test --node-opt=--require\\s/tmp/x.js", "risk sub:test kind:runs"),
            ex("npm publ", "sub:publish net kind:runs"),
            ex("npm install zod", "sub:install net kind:runs"),
            ex("npm ci", "sub:ci net kind:runs"),
            ex("npm ls react", "sub:ls kind:reads"),
            ex("npm config set registry http://x.example/", "sub:config sub:set kind:runs"),
            ex("npm config get registry", "sub:config sub:get kind:reads"),
            ex("npm exec -- vitest run", "sub:exec runs:vitest net kind:runs"),
            ex("npm --prefix web run build", "folder:web sub:run kind:runs"),
            ex("npm install ../evil", "read:../evil sub:install net kind:runs"),
        ],
        ..program(&["npm"], Kind::Runs)
    }
    .with_options(NPM_OPTIONS),
    Program {
        net: Net::Always,
        options_first: true,
        operands: Operands::all(Role::Command),
        examples: &[
            ex("npx vitest run", "runs:vitest net kind:runs"),
            ex("npx -y create-vite app", "runs:create-vite net kind:runs"),
            ex("npx -c curl\\sx", "script net kind:runs"),
        ],
        ..program(&["npx", "pnpx", "bunx"], Kind::Runs)
    }
    .with_options(&[
        value("p", "package", Role::Source),
        value("c", "call", Role::Script),
        risk_value("", "shell node-options script-shell", Role::Data, SCRIPT_SHELL),
        value("C", "prefix", Role::Folder),
        value("", "registry", Role::Url),
        flag("yqn", "yes no quiet ignore-existing no-install prefer-offline silent bun"),
    ]),
    Program {
        options_everywhere: true,
        subs: PM_SUBS,
        language: Some(code::package_script),
        env: &[
            env_any_case("npm_config_*", "sets the package manager's configuration, such as `node-options` or `script-shell`"),
            env("YARN_*", "sets yarn's configuration"),
            env("BUN_*", "sets bun's configuration"),
        ],
        examples: &[
            ex("pnpm test", "sub:test kind:runs"),
            ex("pnpm -C web run lint", "folder:web sub:run kind:runs"),
            ex("yarn add zod", "sub:add net kind:runs"),
            ex("pnpm dlx create-vite", "sub:dlx runs:create-vite net kind:runs"),
            ex("yarn npm publish", "sub:npm sub:publish net kind:runs"),
            ex("bun run dev", "sub:run kind:runs"),
        ],
        ..program(&["pnpm", "yarn", "yarnpkg", "bun"], Kind::Runs)
    }
    .with_options(PM_OPTIONS),
    Program {
        subs: &[
            Sub { operands: Operands { first: &[Role::Read], rest: Role::Data, last: None }, ..sub(&["run", "serve", "test", "bench", "repl", "jupyter", "compile", "check", "fmt", "lint", "doc", "info", "cache", "coverage", "types", "init", "clean", "completions", "lsp"], Kind::Runs, Net::Never) },
            Sub { operands: Operands::all(Role::Data), ..sub(&["task"], Kind::Runs, Net::Never) },
            Sub { operands: Operands::all(Role::Code), ..sub(&["eval"], Kind::Runs, Net::Never) },
            Sub { operands: Operands::all(Role::Source), ..sub(&["install", "add", "remove", "uninstall", "upgrade", "outdated", "vendor"], Kind::Runs, Net::Always) },
            Sub { acts: &["publish"], operands: Operands::all(Role::Data), ..sub(&["publish"], Kind::Runs, Net::Always) },
        ],
        examples: &[ex("deno task dev", "sub:task kind:runs"), ex("deno eval x", "code sub:eval kind:runs")],
        ..program(&["deno"], Kind::Runs)
    }
    .with_options(&[value("c", "config import-map lock cert env-file", Role::Read), flag("Aqr", "allow-all allow-read allow-write allow-net allow-env allow-run allow-ffi allow-sys allow-import no-prompt quiet reload watch check no-check unstable frozen help version ext node-modules-dir no-lock")]),
    js_tool(&["tsc", "tsserver", "vue-tsc", "tsgo"], &[value("p", "project", Role::Read), value("", "outDir declarationDir rootDir tsBuildInfoFile", Role::Into), value("", "outFile", Role::Write), value("", "target module moduleResolution lib jsx types locale generateTrace", Role::Data), flag("bwhv", "build watch noEmit pretty incremental composite declaration sourceMap strict listFiles listEmittedFiles showConfig skipLibCheck extendedDiagnostics diagnostics help version force verbose clean dry emitDeclarationOnly allowJs checkJs isolatedModules noErrorTruncation traceResolution explainFiles init all")]),
    js_tool(&["eslint", "oxlint", "biome", "standard", "xo", "stylelint", "tslint", "rome", "knip", "depcheck", "publint", "attw", "madge", "jscpd"], &[value("c", "config ext rule plugin parser parser-options env global format max-warnings resolve-plugins-relative-to ignore-pattern cache-strategy fix-type report-unused-disable-directives-severity flag stdin-filename reporter log-level diagnostic-level max-diagnostics changed-since since workspace include exclude", Role::Data), value("o", "output-file", Role::Write), value("", "cache-location", Role::Into), value("", "rulesdir ignore-path", Role::Read), flag("fhv", "fix fix-dry-run cache quiet no-eslintrc no-ignore no-inline-config stdin debug help version color no-color write apply apply-unsafe check ci error-on-unmatched-pattern no-error-on-unmatched-pattern pass-on-no-patterns report-unused-disable-directives print-config init env-info staged unsafe deny-warnings")]),
    js_tool(&["prettier", "dprint", "prettierd"], &[value("", "config ignore-path parser plugin plugin-search-dir end-of-line print-width tab-width trailing-comma arrow-parens prose-wrap quote-props cache-location cache-strategy log-level stdin-filepath experimental-ternaries object-wrap", Role::Data), flag("clwu", "check list-different write ignore-unknown no-config no-editorconfig cache single-quote no-semi use-tabs no-color help version debug-check find-config-path file-info support-info no-error-on-unmatched-pattern with-node-modules bracket-same-line jsx-single-quote fmt")]),
    js_tool(&["vitest", "jest", "mocha", "ava", "tap", "c8", "nyc", "jasmine", "karma", "uvu", "node-test", "cucumber-js", "cypress", "wdio", "testcafe", "playwright-test"], &[value("ctr", "config root dir project reporter outputFile output-file coverage.provider coverage.reporter testNamePattern testPathPattern testTimeout maxWorkers pool environment shard mode spec browser require grep timeout workspace retry seed coverageDirectory ci-build-id", Role::Data), flag("uwhvx", "run watch coverage update updateSnapshot ui silent passWithNoTests changed related bail ci runInBand detectOpenHandles forceExit verbose help version typecheck no-coverage only headless headed no-watch clearCache listTests onlyChanged allowOnly sequence.shuffle standalone clearMocks")]),
    Program {
        net: Net::Never,
        subs: &[
            Sub { operands: Operands::all(Role::Read), ..sub(&["test", "show-report", "show-trace", "merge-reports", "codegen", "open", "screenshot", "pdf", "clear-cache"], Kind::Runs, Net::Never) },
            Sub { operands: Operands::all(Role::Data), ..sub(&["install", "install-deps", "uninstall"], Kind::Runs, Net::Always) },
        ],
        examples: &[ex("playwright test e2e", "sub:test read:e2e kind:runs"), ex("playwright install chromium", "sub:install net kind:runs")],
        ..js_tool(&["playwright"], &[value("cgjx", "config project grep grep-invert workers reporter retries repeat-each timeout shard output max-failures trace update-snapshots browser host port target tsconfig", Role::Data), flag("hudq", "headed debug ui list quiet forbid-only fully-parallel pass-with-no-tests last-failed only-changed ignore-snapshots help version with-deps dry-run force")])
    },
    js_tool(&["vite", "next", "nuxt", "nuxi", "astro", "svelte-kit", "remix", "gatsby", "webpack", "webpack-cli", "webpack-dev-server", "rollup", "esbuild", "parcel", "turbo", "nx", "lerna", "rspack", "rsbuild", "tsup", "unbuild", "swc", "babel", "storybook", "start-storybook", "build-storybook", "expo", "react-native", "ng", "vue-cli-service", "ember", "electron", "electron-builder", "wrangler", "vercel", "netlify", "serve", "http-server", "live-server", "json-server", "sass", "postcss", "tailwindcss", "lightningcss", "terser", "uglifyjs", "size-limit", "changeset", "semantic-release-js", "commitlint", "husky", "lint-staged", "patch-package", "syncpack", "typedoc", "api-extractor", "openapi-typescript", "orval", "prisma", "drizzle-kit", "typeorm", "knex", "sequelize", "graphql-codegen", "tsc-alias", "vite-bundle-visualizer"], &[value("cmpo", "config mode port host outDir out-dir outfile base filter scope entry target format platform project configuration output schema name", Role::Data), flag("hwv", "watch open strict-port force debug help version minify bundle sourcemap prod dev turbo production analyze clean emptyOutDir no-cache dry-run parallel continue all skip-nx-cache")]),
    Program {
        net: Net::Always,
        subs: &[Sub { operands: Operands::all(Role::Data), ..sub(&["enable", "disable", "prepare", "install", "use", "pin", "up", "pack", "ls", "current", "alias", "exec", "run", "uninstall", "which"], Kind::Runs, Net::Always) }],
        ..program(&["corepack", "nvm", "fnm", "volta", "n", "nodenv", "asdf", "mise", "rtx", "proto"], Kind::Runs)
    },
];
