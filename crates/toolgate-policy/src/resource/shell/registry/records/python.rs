//! Python and its toolchain: the interpreter (and `-m` modules), pip, uv, pipx, poetry, pdm,
//! hatch, pipenv, conda, the test runners, linters and type checkers, servers, Alembic,
//! pre-commit, Jupyter, the documentation builders and twine.
//!
//! Sources: Python 3.12 command line (`python --help`); pip 24 reference; uv 0.5 CLI reference;
//! pipx 1.7; Poetry 1.8; PDM 2; Hatch 1.12; pipenv 2024; conda 24; pytest 8 (`pytest --help`,
//! "Configuration" and "How to invoke pytest"); Ruff 0.7; mypy 1.13; Black 24; isort 5; Flake8 7;
//! Pylint 3; Pyright 1.1; tox 4; nox 2024; Alembic 1.13; coverage.py 7; pre-commit 4; Uvicorn
//! 0.32; Gunicorn 23; Flask 3; Jupyter; Sphinx 8; MkDocs 1.6; twine 5.

use super::super::code;
use super::super::{
    Effect, Kind, Net, Operands, Opt, Program, Role, Sub, does, env, ex, flag, program, risk,
    risk_value, sub, value,
};

const OFFLINE: Opt = does("", "offline no-index", Effect::Offline);

/// pip's options, which every subcommand takes.
const PIP_OPTIONS: &[Opt] = &[
    value("i", "index-url extra-index-url proxy", Role::Url),
    value("f", "find-links", Role::Source),
    value(
        "rc",
        "requirement constraint build-constraint cert client-cert",
        Role::Read,
    ),
    value("e", "editable", Role::Source),
    value("t", "target prefix root src cache-dir", Role::Into),
    value("", "report log log-file", Role::Write),
    risk_value(
        "",
        "global-option install-option build-option",
        Role::Data,
        "passes options to a package's build, which runs code",
    ),
    value(
        "C",
        "config-settings trusted-host python-version platform implementation abi exists-action timeout retries progress-bar root-user-action upgrade-strategy no-binary only-binary python keyring-provider use-feature use-deprecated format exclude path group requirements-from-script",
        Role::Data,
    ),
    OFFLINE,
    flag(
        "UqvVhI",
        "upgrade force-reinstall no-deps pre no-build-isolation require-hashes quiet verbose dry-run no-cache-dir isolated user break-system-packages disable-pip-version-check no-input use-pep517 no-use-pep517 check-build-dependencies ignore-installed ignore-requires-python no-warn-script-location no-warn-conflicts compile no-compile no-clean require-virtualenv no-python-version-warning outdated uptodate local not-required exclude-editable include-editable all files yes help version no-color prefer-binary json no-build-cache",
    ),
];

const PIP_SUBS: &[Sub] = &[
    Sub {
        operands: Operands::all(Role::Source),
        ..sub(
            &["install", "download", "wheel", "lock"],
            Kind::Runs,
            Net::Always,
        )
    },
    Sub {
        operands: Operands::all(Role::Data),
        ..sub(&["uninstall"], Kind::Runs, Net::Never)
    },
    Sub {
        operands: Operands::all(Role::Data),
        ..sub(
            &[
                "freeze",
                "list",
                "show",
                "check",
                "hash",
                "debug",
                "inspect",
                "completion",
                "help",
            ],
            Kind::Reads,
            Net::Never,
        )
    },
    Sub {
        operands: Operands::all(Role::Data),
        ..sub(&["search", "index"], Kind::Reads, Net::Always)
    },
    Sub {
        subs: &[
            Sub {
                operands: Operands::all(Role::Data),
                ..sub(&["list", "get", "debug"], Kind::Reads, Net::Never)
            },
            Sub {
                operands: Operands::all(Role::Data),
                ..sub(&["set", "unset", "edit"], Kind::Runs, Net::Never)
            },
        ],
        operands: Operands::all(Role::Data),
        ..sub(&["config"], Kind::Reads, Net::Never)
    },
    Sub {
        operands: Operands::all(Role::Data),
        ..sub(&["cache"], Kind::Runs, Net::Never)
    },
];

const UV_OPTIONS: &[Opt] = &[
    value("", "project directory", Role::Folder),
    value(
        "",
        "index-url default-index index extra-index-url",
        Role::Url,
    ),
    value("f", "find-links", Role::Source),
    value("", "env-file", Role::Read),
    value(
        "r",
        "requirements requirement constraints overrides",
        Role::Read,
    ),
    risk_value(
        "",
        "config-file",
        Role::Read,
        "reads settings, such as the index it installs from, from a file",
    ),
    value(
        "pwP",
        "python with with-editable with-requirements extra group only-group no-group package upgrade-package color cache-dir index-strategy resolution prerelease exclude-newer link-mode compile-bytecode refresh-package reinstall-package no-binary-package no-build-package from python-platform output-file format depth invert prune name build-constraints out-dir publish-url token username password trusted-publishing keyring-provider allow-insecure-host python-preference bounds branch tag rev marker optional dev-group",
        Role::Data,
    ),
    value("o", "", Role::Write),
    OFFLINE,
    flag(
        "qvnU",
        "quiet verbose no-cache frozen locked all-extras no-extras dev no-dev all-groups no-default-groups only-dev no-sync isolated native-tls no-progress no-config upgrade reinstall no-build-isolation no-build no-binary no-install-project no-install-workspace no-editable inexact exact active no-active all-packages system break-system-packages seed allow-existing preview no-python-downloads managed-python no-managed-python dry-run check check-exists gui-script module help version editable raw-sources no-hashes no-header no-annotate outdated universal strict lib app no-package no-readme no-workspace vcs short",
    ),
];

const UV_SUBS: &[Sub] = &[
    Sub {
        operands: Operands::all(Role::Command),
        ..sub(&["run"], Kind::Runs, Net::Always)
    },
    Sub {
        subs: &[
            Sub {
                operands: Operands::all(Role::Command),
                ..sub(&["run"], Kind::Runs, Net::Always)
            },
            Sub {
                operands: Operands::all(Role::Data),
                ..sub(
                    &[
                        "install",
                        "upgrade",
                        "uninstall",
                        "update-shell",
                        "dir",
                        "list",
                    ],
                    Kind::Runs,
                    Net::Always,
                )
            },
        ],
        operands: Operands::all(Role::Data),
        ..sub(&["tool"], Kind::Runs, Net::Always)
    },
    Sub {
        operands: Operands::all(Role::Data),
        ..sub(
            &["sync", "lock", "add", "remove", "export", "cache", "self"],
            Kind::Runs,
            Net::Always,
        )
    },
    Sub {
        operands: Operands::all(Role::Data),
        ..sub(&["tree", "version", "help"], Kind::Reads, Net::Never)
    },
    Sub {
        operands: Operands::all(Role::Write),
        ..sub(&["venv", "init"], Kind::Runs, Net::Always)
    },
    Sub {
        operands: Operands::all(Role::Data),
        ..sub(&["build"], Kind::Runs, Net::Always)
    },
    Sub {
        acts: &["publish"],
        operands: Operands::all(Role::Read),
        ..sub(&["publish"], Kind::Runs, Net::Always)
    },
    Sub {
        subs: PIP_SUBS,
        operands: Operands::all(Role::Data),
        ..sub(&["pip"], Kind::Runs, Net::Always)
    },
    Sub {
        subs: &[
            Sub {
                operands: Operands::all(Role::Data),
                ..sub(&["list", "find", "dir"], Kind::Reads, Net::Never)
            },
            Sub {
                operands: Operands::all(Role::Data),
                ..sub(
                    &["install", "uninstall", "pin", "upgrade"],
                    Kind::Runs,
                    Net::Always,
                )
            },
        ],
        operands: Operands::all(Role::Data),
        ..sub(&["python"], Kind::Runs, Net::Always)
    },
];

/// A Python tool that runs the project's code, plugins or configuration: its operands are the
/// files and folders it reads.
const fn python_tool(names: &'static [&'static str], options: &'static [Opt]) -> Program {
    Program {
        options,
        operands: Operands::all(Role::Read),
        ..program(names, Kind::Runs)
    }
}

/// A project manager's subcommands: installs reach the network, `run` runs a command,
/// `publish` publishes.
const MANAGER_SUBS: &[Sub] = &[
    Sub {
        operands: Operands::all(Role::Command),
        ..sub(&["run", "exec", "x"], Kind::Runs, Net::Never)
    },
    Sub {
        operands: Operands::all(Role::Source),
        ..sub(
            &[
                "install",
                "add",
                "remove",
                "update",
                "upgrade",
                "lock",
                "sync",
                "create",
                "uninstall",
                "self",
                "env",
                "source",
                "shell",
                "new",
                "init",
                "build",
                "fmt",
                "test",
                "clean",
                "version",
                "python",
                "use",
                "import",
                "outdated",
                "venv",
                "graph",
                "scripts",
                "cache",
                "export",
                "fix",
                "plugin",
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
    Sub {
        operands: Operands::all(Role::Data),
        ..sub(
            &[
                "list",
                "show",
                "info",
                "check",
                "search",
                "list-plugins",
                "about",
                "help",
                "config",
                "which",
                "status",
            ],
            Kind::Reads,
            Net::Never,
        )
    },
];

const MANAGER_OPTIONS: &[Opt] = &[
    value("C", "directory project path", Role::Folder),
    value("", "config config-file", Role::Config),
    value(
        "epngEGr",
        "extras group with without only env python name source repository username password venv dev-group",
        Role::Data,
    ),
    flag(
        "qvyhVDd",
        "quiet verbose no-interaction yes dry-run no-root sync all-extras dev no-dev lock no-lock frozen locked help version editable ansi no-ansi no-cache global build skip-existing system",
    ),
];

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
        examples: &[
            ex("python3 script.py a", "read:script.py kind:runs"),
            ex("python -c print(1)", "kind:runs"),
            ex("python -c import\\sos", "code kind:runs"),
            ex("python -m pytest -q tests", "runs:pytest kind:runs"),
            ex("python", "code kind:runs"),
            ex("python3 --version", "kind:reads"),
            ex("python3.12 -I x.py", "read:x.py kind:runs"),
        ],
        env: &[
            env("PYTHONSTARTUP", "names a file Python runs first"),
            env("PYTHONHOME", "changes where Python loads its library from"),
            env("PYTHONUSERBASE", "changes where Python loads packages from"),
            env("PYTHONBREAKPOINT", "names code `breakpoint()` runs"),
            env(
                "PYTHONINSPECT",
                "makes Python read commands from its input after the script",
            ),
        ],
        ..program(
            &[
                "python", "python2", "python3", "pypy", "pypy3", "ipython", "ipython3", "py",
                "mpython", "bpython", "ptpython",
            ],
            Kind::Runs,
        )
    }
    .with_options(&[
        value("c", "", Role::Code),
        value("m", "", Role::Command),
        value("WX", "check-hash-based-pycs", Role::Data),
        flag(
            "bBdEhiIOPqsSuvVx3",
            "help version help-env help-xoptions help-all no-banner quick classic simple-prompt nosep TerminalIPythonApp.display_banner",
        ),
    ]),
    Program {
        operands: Operands::all(Role::Write),
        examples: &[ex("venv .venv", "write:.venv kind:runs")],
        ..program(&["venv", "virtualenv"], Kind::Runs)
    }
    .with_options(&[
        flag(
            "",
            "system-site-packages symlinks copies clear upgrade without-pip upgrade-deps without-scm-ignore-files help",
        ),
        value("p", "prompt python", Role::Data),
    ]),
    Program {
        net: Net::Always,
        operands: Operands::all(Role::Read),
        examples: &[ex("http.server 8000", "read:8000 net kind:runs")],
        ..program(
            &[
                "http.server",
                "SimpleHTTPServer",
                "smtpd",
                "ftplib",
                "webbrowser",
            ],
            Kind::Runs,
        )
    }
    .with_options(&[
        value("bd", "bind directory protocol", Role::Data),
        flag("", "cgi"),
    ]),
    Program {
        complete: true,
        operands: Operands {
            first: &[Role::Read],
            rest: Role::Write,
            last: None,
        },
        examples: &[ex("json.tool a.json", "read:a.json kind:reads")],
        ..program(
            &[
                "json.tool",
                "pydoc",
                "pydoc3",
                "tokenize",
                "ast",
                "dis",
                "this",
                "calendar",
                "site",
                "sysconfig",
                "platform",
                "mimetypes",
                "base64-module",
            ],
            Kind::Reads,
        )
    }
    .with_options(&[
        flag(
            "",
            "sort-keys compact json-lines no-ensure-ascii tab no-indent indent",
        ),
        flag("kwbnp", ""),
    ]),
    Program {
        env: &[
            env(
                "PIP_*",
                "changes pip's settings, such as the index it installs from",
            ),
            env("PIP_INDEX_URL", "changes the index pip installs from"),
        ],
        options_everywhere: true,
        abbreviated_subs: false,
        subs: PIP_SUBS,
        examples: &[
            ex(
                "pip install -e .[dev]",
                "read:.[dev] sub:install net kind:runs",
            ),
            ex("pip install requests", "sub:install net kind:runs"),
            ex(
                "pip install --no-index -f ./wheels x",
                "read:./wheels sub:install kind:runs",
            ),
            ex(
                "pip install git+https://x.example/r",
                "url:https://x.example/r sub:install net kind:runs",
            ),
            ex("pip list --outdated", "sub:list kind:reads"),
            ex(
                "pip config set global.index-url x",
                "sub:config sub:set kind:runs",
            ),
        ],
        ..program(&["pip", "pip2", "pip3"], Kind::Runs)
    }
    .with_options(PIP_OPTIONS),
    Program {
        options_everywhere: true,
        subs: UV_SUBS,
        env: &[env(
            "UV_*",
            "changes uv's settings, such as the index it installs from",
        )],
        examples: &[
            ex("uv run pytest -q", "sub:run runs:pytest net kind:runs"),
            ex("uv sync --frozen", "sub:sync net kind:runs"),
            ex(
                "uv pip install -e .",
                "read:. sub:pip sub:install net kind:runs",
            ),
            ex("uv publish", "sub:publish net kind:runs"),
        ],
        ..program(&["uv"], Kind::Runs)
    }
    .with_options(UV_OPTIONS),
    Program {
        net: Net::Always,
        options_first: true,
        operands: Operands::all(Role::Command),
        examples: &[ex("uvx ruff check", "runs:ruff net kind:runs")],
        ..program(&["uvx", "pipx-run"], Kind::Runs)
    }
    .with_options(UV_OPTIONS),
    Program {
        subs: MANAGER_SUBS,
        options_everywhere: true,
        examples: &[
            ex("poetry run pytest", "sub:run runs:pytest kind:runs"),
            ex("poetry publish", "sub:publish net kind:runs"),
            ex("pipx run black .", "sub:run runs:black kind:runs"),
        ],
        ..program(
            &[
                "poetry",
                "pdm",
                "hatch",
                "pipenv",
                "pipx",
                "conda",
                "mamba",
                "micromamba",
                "rye",
                "pixi",
                "flit",
            ],
            Kind::Runs,
        )
    }
    .with_options(MANAGER_OPTIONS),
    Program {
        env: &[
            env(
                "PYTEST_ADDOPTS",
                "adds options to every pytest run, such as `-p` plugins",
            ),
            env("PYTEST_PLUGINS", "names plugins pytest loads"),
        ],
        language: Some(code::pytest),
        examples: &[
            ex("pytest -q tests/unit", "read:tests/unit kind:runs"),
            ex("pytest -x -k test_a --maxfail=1", "kind:runs"),
            ex("pytest --basetemp=/ tests", "write:/ read:tests kind:runs"),
            ex("pytest --pastebin=all", "risk kind:runs"),
            ex("pytest -p evil", "risk kind:runs"),
            ex("pytest -p no:cacheprovider", "kind:runs"),
            ex("pytest --junitxml=/tmp/r.xml", "write:/tmp/r.xml kind:runs"),
        ],
        ..python_tool(
            &["pytest", "py.test", "pytest-3", "ptw", "pytest-watch"],
            &[
                value(
                    "kmW",
                    "maxfail tb durations durations-min capture log-level log-cli-level log-format log-date-format import-mode deselect ignore ignore-glob cov cov-report cov-fail-under numprocesses dist maxprocesses timeout reruns benchmark-only last-failed-no-failures doctest-glob show-capture color code-highlight pythonwarnings asyncio-mode randomly-seed count junit-prefix",
                    Role::Data,
                ),
                value("n", "numprocesses-short", Role::Data),
                value("r", "", Role::Data),
                value("p", "", Role::Data),
                value("o", "override-ini", Role::Data),
                value("", "basetemp", Role::Write),
                value(
                    "",
                    "junitxml junit-xml resultlog log-file html json-report-file report-log",
                    Role::Write,
                ),
                value("", "rootdir confcutdir", Role::Read),
                risk_value(
                    "c",
                    "config-file",
                    Role::Read,
                    "reads its settings, which can load plugins, from a file toolgate does not read",
                ),
                risk_value(
                    "",
                    "pastebin",
                    Role::Data,
                    "uploads the test session's output to a paste service",
                ),
                flag(
                    "xqvslhVa",
                    "exitfirst quiet verbose showlocals help version lf last-failed ff failed-first nf new-first sw stepwise co collect-only setup-show setup-only setup-plan fixtures fixtures-per-test markers no-header no-summary pdb trace cache-clear cache-show strict-markers strict-config continue-on-collection-errors doctest-modules runxfail disable-warnings full-trace debug looponfail benchmark-skip no-cov cov-append noconftest keep-duplicates collect-in-virtualenv lfnf force-sugar instafail randomly-dont-reorganize p-no-randomly",
                ),
            ],
        )
    },
    Program {
        subs: &[
            Sub {
                operands: Operands::all(Role::Read),
                ..sub(&["check", "format", "analyze"], Kind::Runs, Net::Never)
            },
            Sub {
                operands: Operands::all(Role::Data),
                ..sub(
                    &[
                        "rule", "config", "linter", "version", "help", "clean", "server",
                    ],
                    Kind::Reads,
                    Net::Never,
                )
            },
        ],
        examples: &[ex("ruff check --fix src", "sub:check read:src kind:runs")],
        ..python_tool(
            &["ruff"],
            &[
                value(
                    "",
                    "config select ignore extend-select extend-ignore per-file-ignores line-length target-version output-format stdin-filename exclude extend-exclude fixable unfixable",
                    Role::Data,
                ),
                value("o", "output-file", Role::Write),
                value("", "cache-dir", Role::Into),
                flag(
                    "qsenwh",
                    "fix no-fix unsafe-fixes show-fixes show-files show-settings diff check exit-zero exit-non-zero-on-fix watch preview no-cache quiet silent statistics isolated add-noqa help version verbose",
                ),
            ],
        )
    },
    python_tool(
        &["mypy", "dmypy", "stubgen", "stubtest"],
        &[
            risk_value(
                "",
                "config-file",
                Role::Read,
                "reads settings, which can load plugins, from a file toolgate does not read",
            ),
            value(
                "",
                "cache-dir html-report txt-report xml-report linecount-report lineprecision-report any-exprs-report cobertura-xml-report junit-xml",
                Role::Write,
            ),
            value(
                "pm",
                "package module python-version platform exclude follow-imports always-true always-false enable-error-code disable-error-code python-executable",
                Role::Data,
            ),
            flag(
                "hvV",
                "strict ignore-missing-imports no-implicit-optional show-error-codes pretty install-types non-interactive check-untyped-defs warn-unused-ignores no-incremental help version verbose show-column-numbers no-error-summary explicit-package-bases namespace-packages disallow-untyped-defs",
            ),
        ],
    ),
    python_tool(
        &[
            "black",
            "isort",
            "flake8",
            "pylint",
            "pyright",
            "basedpyright",
            "bandit",
            "pyflakes",
            "pycodestyle",
            "pydocstyle",
            "autopep8",
            "yapf",
            "vulture",
            "radon",
            "pyupgrade",
            "codespell",
            "ty",
            "pyrefly",
            "docformatter",
            "autoflake",
            "darglint",
            "interrogate",
            "xenon",
            "safety",
            "pip-audit",
            "deptry",
        ],
        &[
            value(
                "lc",
                "config line-length target-version include exclude extend-exclude force-exclude select ignore extend-ignore max-line-length rcfile disable enable profile jobs output-format project pythonpath pythonversion skip format severity-level confidence-level",
                Role::Data,
            ),
            value("o", "output output-file", Role::Write),
            flag(
                "qvhV",
                "check diff quiet verbose help version fast preview skip-string-normalization errors-only recursive in-place watch stats count show-source exit-zero",
            ),
        ],
    ),
    Program {
        net: Net::Always,
        subs: &[Sub {
            operands: Operands::all(Role::Data),
            ..sub(
                &[
                    "run",
                    "exec",
                    "list",
                    "devenv",
                    "legacy",
                    "config",
                    "depends",
                    "quickstart",
                ],
                Kind::Runs,
                Net::Always,
            )
        }],
        ..python_tool(
            &["tox", "nox"],
            &[
                value(
                    "efsp",
                    "env sessions session python tags keywords conf workdir installpkg root noxfile envdir",
                    Role::Data,
                ),
                flag(
                    "rRlqvx",
                    "recreate reuse-existing-virtualenvs no-venv list list-sessions quiet verbose notest skip-missing-interpreters parallel error-on-missing-interpreters help version",
                ),
            ],
        )
    },
    Program {
        subs: &[Sub {
            operands: Operands::all(Role::Data),
            ..sub(
                &[
                    "upgrade",
                    "downgrade",
                    "revision",
                    "current",
                    "history",
                    "heads",
                    "branches",
                    "stamp",
                    "merge",
                    "show",
                    "check",
                    "init",
                    "edit",
                    "ensure_version",
                    "list_templates",
                ],
                Kind::Runs,
                Net::Never,
            )
        }],
        examples: &[ex("alembic upgrade head", "sub:upgrade kind:runs")],
        ..python_tool(
            &["alembic"],
            &[
                value("c", "config", Role::Read),
                value(
                    "nx",
                    "name raiseerr message rev-range autogenerate head splice branch-label version-path rev-id depends-on",
                    Role::Data,
                ),
                flag(
                    "m",
                    "sql verbose help version indicate-current resolve-dependencies",
                ),
            ],
        )
    },
    Program {
        subs: &[
            Sub {
                operands: Operands::all(Role::Read),
                options: &[value("m", "module", Role::Command)],
                ..sub(&["run"], Kind::Runs, Net::Never)
            },
            Sub {
                operands: Operands::all(Role::Data),
                ..sub(
                    &[
                        "report", "html", "xml", "json", "lcov", "erase", "combine", "debug",
                        "annotate",
                    ],
                    Kind::Runs,
                    Net::Never,
                )
            },
        ],
        examples: &[
            ex("coverage run -m pytest", "sub:run runs:pytest kind:runs"),
            ex("coverage report -m", "sub:report kind:runs"),
        ],
        ..python_tool(
            &["coverage"],
            &[
                value(
                    "",
                    "rcfile data-file omit include source fail-under precision format contexts context debug",
                    Role::Data,
                ),
                value("o", "", Role::Write),
                value("d", "directory", Role::Into),
                flag(
                    "aimpqh",
                    "append branch parallel-mode show-missing skip-covered skip-empty ignore-errors quiet help timid concurrency pylib show-contexts no-skip-covered",
                ),
            ],
        )
    },
    Program {
        net: Net::Always,
        subs: &[
            Sub {
                operands: Operands::all(Role::Read),
                ..sub(
                    &[
                        "run",
                        "try-repo",
                        "install-hooks",
                        "autoupdate",
                        "gc",
                        "clean",
                        "validate-config",
                        "validate-manifest",
                        "sample-config",
                        "migrate-config",
                        "hook-impl",
                        "help",
                    ],
                    Kind::Runs,
                    Net::Always,
                )
            },
            Sub {
                operands: Operands::all(Role::Data),
                ..sub(
                    &["install", "uninstall", "init-templatedir"],
                    Kind::Runs,
                    Net::Always,
                )
            },
        ],
        language: Some(code::pre_commit),
        examples: &[
            ex("pre-commit run --all-files", "sub:run net kind:runs"),
            ex(
                "pre-commit install",
                "write:.git/hooks/pre-commit sub:install net kind:runs",
            ),
        ],
        ..python_tool(
            &["pre-commit", "prek"],
            &[
                value("t", "hook-type", Role::Data),
                value(
                    "c",
                    "config from-ref to-ref source origin files hook-stage repo color commit-msg-filename",
                    Role::Data,
                ),
                flag(
                    "aovh",
                    "all-files show-diff-on-failure verbose overwrite install-hooks allow-missing-config help version bleeding-edge freeze skip-on-missing-config",
                ),
            ],
        )
    },
    Program {
        net: Net::Always,
        examples: &[ex(
            "uvicorn app.main:app --reload --port 8000",
            "read:app.main:app net kind:runs",
        )],
        ..python_tool(
            &[
                "uvicorn",
                "gunicorn",
                "hypercorn",
                "daphne",
                "granian",
                "waitress-serve",
                "fastapi",
                "flask",
                "streamlit",
                "gradio",
                "celery",
                "rq",
                "dramatiq",
                "huey_consumer",
                "django-admin",
                "manage.py",
                "jupyter",
                "jupyter-lab",
                "jupyter-notebook",
                "voila",
                "panel",
                "bokeh",
                "locust",
                "mkdocs",
                "sphinx-build",
                "sphinx-autobuild",
                "pdoc",
                "pyinstaller",
                "cython",
                "cythonize",
                "nuitka",
                "datasette",
                "sqlite-utils",
                "textual",
                "marimo",
                "dagster",
                "airflow",
                "prefect",
                "scrapy",
                "behave",
                "robot",
                "hypothesis",
                "nose2",
                "green",
                "ward",
                "slotscheck",
                "pyre",
                "pytype",
                "towncrier",
                "bumpversion",
                "bump2version",
                "bump-my-version",
                "cz",
                "commitizen",
                "semantic-release",
                "dvc",
                "mlflow",
                "wandb",
            ],
            &[
                value(
                    "bwkcpe",
                    "host port bind workers worker-class app app-dir env-file log-level reload-dir config settings pythonpath loop http ws timeout threads name address project builder output sourcedir site-dir dest theme config-file",
                    Role::Data,
                ),
                flag(
                    "dqvhV",
                    "reload debug daemon help version preload no-access-log proxy-headers clean strict dirty no-reload use-directory-urls",
                ),
            ],
        )
    },
    Program {
        subs: &[
            Sub {
                acts: &["publish"],
                operands: Operands::all(Role::Read),
                ..sub(&["upload", "register"], Kind::Runs, Net::Always)
            },
            Sub {
                operands: Operands::all(Role::Read),
                ..sub(&["check"], Kind::Reads, Net::Never)
            },
        ],
        examples: &[ex(
            "twine upload dist/*",
            "sub:upload sub:publish read:dist/* net kind:runs",
        )],
        ..python_tool(
            &["twine"],
            &[
                value(
                    "rupc",
                    "repository repository-url username password comment config-file sign-with identity cert client-cert",
                    Role::Data,
                ),
                flag(
                    "sh",
                    "sign skip-existing verbose disable-progress-bar non-interactive help version strict",
                ),
            ],
        )
    },
];

#[expect(
    dead_code,
    reason = "documents the pip option that keeps it off the network"
)]
const NO_INDEX: Opt = risk("", "no-index-doc", "");
