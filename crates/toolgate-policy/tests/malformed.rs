//! Malformed policies: each is refused with a message naming the problem, at the right line and
//! column, with a hint where one helps.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use toolgate_policy::{LoadError, LoadOptions, Policy, PolicySource};

struct Case {
    name: &'static str,
    toml: &'static str,
    message: &'static str,
    line: u32,
    column: u32,
    hint: Option<&'static str>,
}

const CASES: &[Case] = &[
    Case {
        name: "toml syntax error",
        toml: "version = 1\n[[rule]\nname = \"a\"\n",
        message: "invalid TOML: unclosed array table, expected `]`",
        line: 2,
        column: 8,
        hint: None,
    },
    Case {
        name: "unquoted string",
        toml: "version = 1\nmode = approve-reads\n",
        message: "invalid TOML: string values must be quoted, expected literal string",
        line: 2,
        column: 8,
        hint: Some("strings are written in double quotes"),
    },
    Case {
        name: "duplicate key",
        toml: "version = 1\n[[rule]]\nname = \"a\"\nname = \"b\"\ndecision = \"allow\"\n",
        message: "invalid TOML: duplicate key",
        line: 4,
        column: 1,
        hint: Some("each key may appear once per table"),
    },
    Case {
        name: "unknown top-level key with a suggestion",
        toml: "version = 1\nmdoe = \"deny-all\"\n",
        message: "unknown key `mdoe` in the policy",
        line: 2,
        column: 1,
        hint: Some("did you mean `mode`?"),
    },
    Case {
        name: "rules instead of rule",
        toml: "version = 1\n[[rules]]\nname = \"a\"\n",
        message: "unknown key `rules` in the policy",
        line: 2,
        column: 3,
        hint: Some("did you mean `rule`?"),
    },
    Case {
        name: "unknown rule key with a suggestion",
        toml: "version = 1\n\n[[rule]]\nname = \"a\"\ndecison = \"allow\"\n",
        message: "unknown key `decison` in a rule",
        line: 5,
        column: 1,
        hint: Some("did you mean `decision`?"),
    },
    Case {
        name: "toolregistry's word for decision",
        toml: "version = 1\n[[rule]]\nresult = \"allow\"\n",
        message: "unknown key `result` in a rule",
        line: 3,
        column: 1,
        hint: Some("did you mean `decision`?"),
    },
    Case {
        name: "unknown key without a close match lists the keys",
        toml: "version = 1\n[[rule]]\ndecision = \"deny\"\nzzzzzz = 1\n",
        message: "unknown key `zzzzzz` in a rule",
        line: 4,
        column: 1,
        hint: Some("expected `name`, `decision`"),
    },
    Case {
        name: "invalid mode",
        toml: "version = 1\nmode = \"approve_all\"\n",
        message: "unknown mode `approve_all`, expected `deny-all`, `approve-reads` or `approve-all`",
        line: 2,
        column: 8,
        hint: Some("did you mean `approve-all`?"),
    },
    Case {
        name: "mode of the wrong type",
        toml: "version = 1\nmode = 3\n",
        message: "`mode` must be a string, got an integer",
        line: 2,
        column: 8,
        hint: None,
    },
    Case {
        name: "capitalised decision",
        toml: "version = 1\n[[rule]]\nname = \"a\"\ndecision = \"Allow\"\n",
        message: "unknown decision `Allow`, expected `allow`, `ask` or `deny`",
        line: 4,
        column: 12,
        hint: Some("did you mean `allow`?"),
    },
    Case {
        name: "missing decision",
        toml: "version = 1\n[[rule]]\nname = \"a\"\ntool = \"x\"\n",
        message: "a rule needs a `decision`",
        line: 2,
        column: 1,
        hint: Some("add `decision = \"allow\"`"),
    },
    Case {
        name: "unsupported version",
        toml: "version = 2\n",
        message: "unsupported policy version `2`",
        line: 1,
        column: 11,
        hint: Some("this toolgate reads `version = 1`"),
    },
    Case {
        name: "invalid fallback",
        toml: "version = 1\nfallback = \"maybe\"\n",
        message: "unknown decision `maybe`, expected `allow`, `ask` or `deny`",
        line: 2,
        column: 12,
        hint: None,
    },
    Case {
        name: "invalid tool glob",
        toml: "version = 1\n[[rule]]\ndecision = \"deny\"\ntool = [\"ok\", \"fs[a-\"]\n",
        message: "`tool` pattern `fs[a-`: invalid glob: unclosed character class; missing ']'",
        line: 4,
        column: 15,
        hint: None,
    },
    Case {
        name: "invalid regex",
        toml: "version = 1\n[[rule]]\ndecision = \"deny\"\ntool = \"x\"\nargs = { \"/a\" = { regex = \"(unclosed\" } }\n",
        message: "invalid regex: unclosed group",
        line: 5,
        column: 27,
        hint: None,
    },
    Case {
        name: "argument pointer without a slash",
        toml: "version = 1\n[[rule]]\ndecision = \"deny\"\nargs = { amount = { lt = 1 } }\n",
        message: "argument pointer `amount` must start with `/`",
        line: 4,
        column: 10,
        hint: Some("write `/amount`"),
    },
    Case {
        name: "argument test that is not a table",
        toml: "version = 1\n[[rule]]\ndecision = \"deny\"\nargs = { \"/a\" = 5 }\n",
        message: "argument `/a` needs a table of tests, got an integer",
        line: 4,
        column: 17,
        hint: Some("`{ equals = \"main\" }`"),
    },
    Case {
        name: "unknown argument test",
        toml: "version = 1\n[[rule]]\ndecision = \"deny\"\nargs = { \"/a\" = { less_than = 5 } }\n",
        message: "unknown key `less_than` in an argument test",
        line: 4,
        column: 19,
        hint: Some("expected `exists`"),
    },
    Case {
        name: "comparison with a string",
        toml: "version = 1\n[[rule]]\ndecision = \"deny\"\nargs = { \"/a\" = { lt = \"5\" } }\n",
        message: "`lt` must be a number, got a string",
        line: 4,
        column: 24,
        hint: None,
    },
    Case {
        name: "empty tool list",
        toml: "version = 1\n[[rule]]\ndecision = \"deny\"\ntool = []\n",
        message: "`tool` cannot be an empty list",
        line: 4,
        column: 8,
        hint: Some("an empty list matches nothing"),
    },
    Case {
        name: "rule as a plain table",
        toml: "version = 1\n[rule]\ndecision = \"deny\"\n",
        message: "`rule` must be an array of tables",
        line: 2,
        column: 2,
        hint: Some("write `[[rule]]` instead of `[rule]`"),
    },
    Case {
        name: "unknown builtin",
        toml: "version = 1\n[[rule]]\nbuiltin = \"ask_destructiv\"\n",
        message: "unknown built-in rule `ask_destructiv`, expected `allow_readonly`, `ask_destructive`, `deny_privileged`, `ask_network` or `ask_file_system`",
        line: 3,
        column: 11,
        hint: Some("did you mean `ask_destructive`?"),
    },
    Case {
        name: "builtin with its own decision",
        toml: "version = 1\n[[rule]]\nbuiltin = \"ask_network\"\ndecision = \"allow\"\n",
        message: "a `builtin` rule cannot set `decision`",
        line: 4,
        column: 1,
        hint: Some("`ask_network` has a fixed name"),
    },
    Case {
        name: "invalid timeout",
        toml: "version = 1\n[approval]\ntimeout = \"5 minutes\"\n",
        message: "invalid `timeout`: unknown unit ` minutes` in `5 minutes`, expected `ms`, `s`, `m`, `h` or `d`",
        line: 3,
        column: 11,
        hint: Some("`\"5m\"`"),
    },
    Case {
        name: "choices without a way to refuse",
        toml: "version = 1\n[[rule]]\ndecision = \"ask\"\nchoices = [\"allow-once\", \"allow-always\"]\n",
        message: "`choices` offers no way to refuse the call",
        line: 4,
        column: 11,
        hint: Some("a person must always be able to say no"),
    },
    Case {
        name: "unknown choice",
        toml: "version = 1\n[[rule]]\ndecision = \"ask\"\nchoices = [\"allow_once\", \"reject-once\"]\n",
        message: "unknown choice `allow_once`, expected `allow-once`, `allow-always`, `reject-once` or `reject-always`",
        line: 4,
        column: 12,
        hint: Some("did you mean `allow-once`?"),
    },
    Case {
        name: "no scope",
        toml: "version = 1\n[[rule]]\ndecision = \"ask\"\nscopes = []\n",
        message: "`scopes` cannot be an empty list",
        line: 4,
        column: 10,
        hint: Some("an empty list matches nothing; remove the key or add a value"),
    },
    Case {
        name: "a scope twice",
        toml: "version = 1\n[approval]\nscopes = [\"user\", \"user\"]\n",
        message: "`user` is listed twice in `scopes`",
        line: 3,
        column: 19,
        hint: None,
    },
    Case {
        name: "unknown scope",
        toml: "version = 1\n[[rule]]\ndecision = \"ask\"\nscopes = [\"sesion\"]\n",
        message: "unknown scope `sesion`, expected `session`, `workspace` or `user`",
        line: 4,
        column: 11,
        hint: Some("did you mean `session`?"),
    },
    Case {
        name: "unknown access",
        toml: "version = 1\n[[rule]]\ndecision = \"ask\"\naccess = [\"read\", \"exec\"]\n",
        message: "unknown access `exec`, expected `read`, `write`, `execute` or `network`",
        line: 4,
        column: 19,
        hint: Some("did you mean `execute`?"),
    },
    Case {
        name: "unknown origin",
        toml: "version = 1\n[[rule]]\ndecision = \"deny\"\norigin = \"internet\"\n",
        message: "unknown origin `internet`, expected `user`, `network` or `automation`",
        line: 4,
        column: 10,
        hint: None,
    },
    Case {
        name: "custom tag that is built in",
        toml: "version = 1\ncustom_tags = [\"billing\", \"read_only\"]\n",
        message: "`read_only` is a built-in tag",
        line: 2,
        column: 27,
        hint: Some("list only your own tags"),
    },
    Case {
        name: "an example that does not match its rule",
        toml: "version = 1\n[[rule]]\nname = \"pay\"\ndecision = \"allow\"\ntool = \"pay\"\nargs = { \"/amount\" = { lt = 100 } }\nexamples = { match = [{ tool = \"pay\", args = { amount = 500 } }] }\n",
        message: "example does not match rule `pay`: argument `/amount` = 500 fails `lt = 100`",
        line: 7,
        column: 23,
        hint: Some("fix the example or the rule"),
    },
    Case {
        name: "a not_match example that matches",
        toml: "version = 1\n[[rule]]\nname = \"git\"\ndecision = \"allow\"\ntool = \"git_*\"\nexamples = { not_match = [{ tool = \"git_push\" }] }\n",
        message: "example matches rule `git`, but is listed under `not_match`",
        line: 6,
        column: 27,
        hint: Some("narrow the rule"),
    },
    Case {
        name: "an example of the wrong shape",
        toml: "version = 1\n[[rule]]\ndecision = \"deny\"\ntool = \"x\"\nexamples = { match = [{ tol = \"x\" }] }\n",
        message: "invalid example: unknown field `tol`, expected one of `tool`, `args`, `tags`, `annotations`, `context`",
        line: 5,
        column: 23,
        hint: Some("an example is a call"),
    },
    Case {
        name: "a string example on a rule without resources",
        toml: "version = 1\n[[rule]]\ndecision = \"deny\"\ntool = \"x\"\nexamples = { match = [\"git status\"] }\n",
        message: "a string example needs a `path`, `command` or `domain` condition in its rule",
        line: 5,
        column: 23,
        hint: Some("write the example as a call"),
    },
    Case {
        name: "date-times have no JSON form",
        toml: "version = 1\n[[rule]]\ndecision = \"deny\"\nargs = { \"/when\" = { equals = 1979-05-27 } }\n",
        message: "date-times have no JSON form",
        line: 4,
        column: 31,
        hint: Some("write the date as a string"),
    },
    Case {
        name: "a command environment without a command",
        toml: "version = 1\n[[tool]]\nmatch = \"my_*\"\naccess = \"execute\"\ncommand_env = \"/env\"\n",
        message: "`command_env` needs `command`",
        line: 2,
        column: 1,
        hint: Some("`command` names the program, `command_env` the variables it runs with"),
    },
    Case {
        name: "a profile without access",
        toml: "version = 1\n[[tool]]\nmatch = \"my_*\"\n",
        message: "a tool profile needs `access`",
        line: 2,
        column: 1,
        hint: None,
    },
    Case {
        name: "a non-UTF-8 column counts characters",
        toml: "version = 1\n[[rule]]\nname = \"é\"\ndecision = \"ask\"\ntimeout = \"0s\"\n",
        message: "invalid `timeout`: a duration must be longer than zero",
        line: 5,
        column: 11,
        hint: None,
    },
];

fn load(toml: &str) -> Result<Policy, LoadError> {
    Policy::load(
        vec![PolicySource::given("policy.toml", toml)],
        LoadOptions::default(),
    )
}

#[test]
fn malformed_policies_are_refused_with_place_and_hint() {
    assert!(CASES.len() >= 20);
    let mut failures = Vec::new();
    for case in CASES {
        let error = match load(case.toml) {
            Ok(_) => {
                failures.push(format!("{}: loaded", case.name));
                continue;
            }
            Err(e) => e,
        };
        let first = &error.diagnostics[0];
        let got = (first.message.as_str(), first.line(), first.column());
        if got != (case.message, case.line, case.column) {
            failures.push(format!(
                "{}:\n  want {:?}\n  got  {:?}\n{error}",
                case.name,
                (case.message, case.line, case.column),
                got
            ));
            continue;
        }
        if let Some(hint) = case.hint
            && !first.hint.as_deref().unwrap_or("").contains(hint)
        {
            failures.push(format!(
                "{}: hint {:?} lacks {hint:?}",
                case.name, first.hint
            ));
        }
        let rendered = error.to_string();
        let place = format!("--> policy.toml:{}:{}", case.line, case.column);
        if !rendered.contains(&place) || !rendered.contains('^') {
            failures.push(format!(
                "{}: rendering lacks {place} or a caret:\n{rendered}",
                case.name
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_problem_in_a_file_is_reported_in_order() {
    let error = load(
        "version = 1\nmdoe = \"deny-all\"\n[[rule]]\ndecision = \"alow\"\n[[rule]]\ndecision = \"deny\"\ntool = \"[\"\n",
    )
    .unwrap_err();
    let places: Vec<(u32, u32)> = error
        .diagnostics
        .iter()
        .map(|d| (d.line(), d.column()))
        .collect();
    assert_eq!(places, [(2, 1), (4, 12), (7, 8)]);
    assert!(error.to_string().ends_with("3 errors"));
}

#[test]
fn errors_in_several_files_name_each_file() {
    let error = Policy::load(
        vec![
            PolicySource::given("a.toml", "version = 1\nmode = \"x\"\n"),
            PolicySource::given("b.toml", "version = 1\nfallback = \"y\"\n"),
        ],
        LoadOptions::default(),
    )
    .unwrap_err();
    let files: Vec<&str> = error.diagnostics.iter().map(|d| &*d.file).collect();
    assert_eq!(files, ["a.toml", "b.toml"]);
}

#[test]
fn unreadable_and_non_utf8_files_are_errors_without_a_place() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.toml");
    let error = Policy::load_paths(
        &[(toolgate_policy::PolicyRole::Given, missing.clone())],
        LoadOptions::default(),
    )
    .unwrap_err();
    assert!(error.diagnostics[0].message.starts_with("cannot read `"));
    assert_eq!(error.diagnostics[0].line(), 0);
    let latin1 = dir.path().join("latin1.toml");
    std::fs::write(&latin1, b"version = 1\n# caf\xe9\n").unwrap();
    let error = Policy::load_paths(
        &[(toolgate_policy::PolicyRole::Given, latin1)],
        LoadOptions::default(),
    )
    .unwrap_err();
    assert!(
        error.diagnostics[0]
            .message
            .ends_with("is not UTF-8 (byte 17)"),
        "{error}"
    );
}
