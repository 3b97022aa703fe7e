//! No panic on any input: the policy loader, the call parser and everything downstream of them
//! (evaluate, explain, lint, examples) on random and mutated inputs. Bounded by case count so CI
//! time stays fixed; `fuzz/` holds the same targets for open-ended coverage-guided runs.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use proptest::prelude::*;
use toolgate_policy::{Call, LoadOptions, Policy, PolicySource, RunOptions};

const SEEDS: &[&str] = &[
    include_str!("../../../examples/policy.toml"),
    r#"
version = 1
mode = "deny-all"
fallback = "ask"
custom_tags = ["billing"]
[workspace]
roots = ["."]
protected = [".git/hooks/**"]
[approval]
timeout = "5m"
choices = ["allow-once", "reject-once"]
[[tool]]
match = "fs__*"
access = "read"
[[rule]]
name = "pay"
decision = "allow"
tool = ["pay", "pay_*"]
tags = ["billing"]
annotations = { readOnlyHint = true }
access = ["read", "write"]
origin = ["user"]
agent = "coder"
server = "srv*"
args = { "/amount" = { lt = 100, ge = 0.5 }, "/c" = { one_of = ["EUR", 1] }, "/n" = { regex = "a+", glob = "*" }, "/x" = { exists = true, equals = [1, { a = 2 }] }, "/y" = { exists = false } }
choices = ["allow-once", "reject-once"]
timeout = "30s"
grant = "tool"
examples = { match = [{ tool = "pay", args = { amount = 5, c = "EUR", n = "aa", x = [1.0, { a = 2 }] }, tags = ["billing"], annotations = { readOnlyHint = true }, context = { agent = "coder", origin = "user", server = "srv1", trusted_server = true } }] }
[[rule]]
builtin = "ask_destructive"
"#,
];

const TOKENS: &[&str] = &[
    "[[rule]]",
    "[rule]",
    "[[tool]]",
    "[workspace]",
    "[approval]",
    "=",
    "\"",
    "'",
    "[",
    "]",
    "{",
    "}",
    ",",
    "\n",
    "#",
    "\\",
    "\\u0000",
    "decision",
    "\"allow\"",
    "\"ask\"",
    "\"deny\"",
    "tool",
    "args",
    "\"/a\"",
    "lt",
    "1e400",
    "-0",
    "nan",
    "inf",
    "1979-05-27T07:32:00Z",
    "\"\"\"",
    "'''",
    "**",
    "{a,b}",
    "[!a]",
    "regex",
    "\"(\"",
    "\"\\\\\"",
    "examples",
    "match",
    "not_match",
    "mode",
    "\"deny-all\"",
    "\u{feff}",
    "\u{202e}",
    "é",
    "\r\n",
    "\t",
];

fn mutated() -> impl Strategy<Value = String> {
    (
        proptest::sample::select(SEEDS),
        proptest::collection::vec(
            (
                any::<prop::sample::Index>(),
                0usize..4,
                proptest::sample::select(TOKENS),
            ),
            1..8,
        ),
    )
        .prop_map(|(seed, edits)| {
            let mut text: Vec<char> = seed.chars().collect();
            for (at, kind, token) in edits {
                if text.is_empty() {
                    text.extend(token.chars());
                    continue;
                }
                let i = at.index(text.len());
                match kind {
                    0 => {
                        text.remove(i);
                    }
                    1 => {
                        let end = (i + 8).min(text.len());
                        text.drain(i..end);
                    }
                    2 => {
                        for (k, c) in token.chars().enumerate() {
                            text.insert(i + k, c);
                        }
                    }
                    _ => {
                        let j = (i * 7 + 13) % text.len();
                        text.swap(i, j);
                    }
                }
            }
            text.into_iter().collect()
        })
}

fn exercise(text: &str) {
    for check_examples in [true, false] {
        let loaded = Policy::load(
            vec![PolicySource::given("fuzz.toml", text)],
            LoadOptions {
                check_examples,
                // Both ways: compiled at load, and on first use.
                compile_at_load: check_examples,
            },
        );
        match loaded {
            Ok(policy) => {
                let _ = policy.lint();
                let _ = policy.example_failures();
                for call in [
                    r#"{"tool":"pay","args":{"amount":5,"c":"EUR","n":"aa","x":[1]}}"#,
                    r#"{"tool":"bash","args":{"command":"cargo test"},"tags":["network","billing"],"context":{"origin":"network","mode":"deny-all"}}"#,
                    r#"{"tool":"read_file","args":{"path":"config/.env"},"annotations":{"readOnlyHint":true},"context":{"server":"x"}}"#,
                ] {
                    let call = Call::from_json(call).unwrap();
                    let run = RunOptions::default().with_full_access(true);
                    let _ = policy.evaluate(&call);
                    let _ = policy.explain(&call, &run).to_string();
                }
            }
            Err(error) => {
                let rendered = error.to_string();
                assert!(!rendered.is_empty());
                for d in &error.diagnostics {
                    assert!(
                        d.location
                            .as_ref()
                            .is_none_or(|l| l.line >= 1 && l.column >= 1)
                    );
                }
            }
        }
    }
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(Into::into),
        any::<i64>().prop_map(Into::into),
        any::<f64>().prop_map(
            |f| serde_json::Number::from_f64(f).map_or(serde_json::Value::Null, Into::into)
        ),
        "\\PC{0,12}".prop_map(serde_json::Value::from),
        proptest::sample::select(
            &[
                "tool",
                "args",
                "tags",
                "context",
                "mode",
                "deny-all",
                "read_only",
                "pay",
                "/amount"
            ][..]
        )
        .prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::Array),
            proptest::collection::btree_map(
                proptest::sample::select(
                    &[
                        "tool",
                        "args",
                        "tags",
                        "annotations",
                        "context",
                        "session",
                        "origin",
                        "mode",
                        "server",
                        "trusted_server",
                        "amount",
                        "c",
                        "n",
                        "x",
                        "zz"
                    ][..]
                ),
                inner,
                0..6
            )
            .prop_map(|m| serde_json::Value::Object(
                m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
            )),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn mutated_policies_never_panic(text in mutated()) {
        exercise(&text);
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,300}") {
        exercise(&text);
    }

    #[test]
    fn arbitrary_call_json_never_panics(value in json_value(), raw in "\\PC{0,80}") {
        let policy = Policy::from_toml("seed.toml", SEEDS[1]).unwrap();
        for text in [value.to_string(), raw] {
            if let Ok(call) = Call::from_json(&text) {
                let _ = policy.evaluate(&call);
                let _ = policy.explain(&call, &RunOptions::default()).to_string();
                let _ = policy.decide(&call, &RunOptions::default(), None);
            }
        }
    }
}

#[test]
fn the_seeds_load() {
    for seed in SEEDS {
        Policy::from_toml("seed.toml", seed).unwrap();
    }
}

#[test]
fn deeply_nested_input_is_an_error_not_a_stack_overflow() {
    let toml = format!("a = {}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(Policy::from_toml("deep.toml", &toml).is_err());
    let json = format!(
        "{{\"tool\":\"t\",\"args\":{{\"a\":{}{}}}}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    assert!(Call::from_json(&json).is_err());
}

/// Every nesting construct of the shell grammar, thousands deep, analysed on a 1 MiB stack (half
/// of a tokio worker's): a few hundred nested `$(` used to overflow the stack and abort the
/// daemon (found by probing it with a gateway call). A line with a finding is never allowed,
/// and a deny rule still sees a command written before the nesting.
#[test]
fn deeply_nested_commands_are_refused_not_a_stack_overflow() {
    type Make = fn(usize) -> String;
    let constructs: &[(&str, Make)] = &[
        ("$( )", |d| format!("{}l{}", "$(".repeat(d), ")".repeat(d))),
        ("backticks in quotes", |d| {
            format!("echo {}x{}", "\"$(echo ".repeat(d), ")\"".repeat(d))
        }),
        ("<( )", |d| {
            format!("{}l{}", "cat <(".repeat(d), ")".repeat(d))
        }),
        ("$( with redirects", |d| {
            format!("{}l{}", "$(l > $(".repeat(d), "))".repeat(d))
        }),
        ("$( with heredocs", |d| {
            format!("{}l{}", "$(cat <<E\n$(".repeat(d), ")\nE\n)".repeat(d))
        }),
        ("( )", |d| format!("{}l{}", "( ".repeat(d), " )".repeat(d))),
        ("{ }", |d| {
            format!("{}l;{}", "{ ".repeat(d), " };".repeat(d))
        }),
        ("if", |d| {
            format!("{}l{}", "if true; then ".repeat(d), "; fi".repeat(d))
        }),
        ("while", |d| {
            format!("{}l{}", "while true; do ".repeat(d), "; done".repeat(d))
        }),
        ("case", |d| {
            format!("{}l{}", "case x in x) ".repeat(d), ";; esac".repeat(d))
        }),
        ("functions", |d| {
            format!("{}l{}", "f() { ".repeat(d), "; }".repeat(d))
        }),
        ("mixed", |d| {
            format!(
                "{}l{}",
                "$( if true; then ( ".repeat(d),
                " ) fi )".repeat(d)
            )
        }),
        ("!", |d| format!("{}l", "! ".repeat(d))),
        ("${:-}", |d| {
            format!("cat {}x{}", "${a:-".repeat(d), "}".repeat(d))
        }),
        ("[[ ( ) ]]", |d| {
            format!("[[ {}a{} ]]", "( ".repeat(d), " )".repeat(d))
        }),
        ("$(( ))", |d| {
            format!("cat $(( {}1{} ))", "(".repeat(d), ")".repeat(d))
        }),
        ("|", |d| format!("{}l", "l | ".repeat(d))),
        ("&&", |d| format!("{}l", "l && ".repeat(d))),
    ];
    let policy = std::sync::Arc::new(Policy::from_toml(
        "p.toml",
        "mode = \"approve-all\"\n[[rule]]\nname = \"no-rm\"\ndecision = \"deny\"\ntool = \"bash\"\ncommand = \"rm *\"\n",
    )
    .unwrap());
    for (name, make) in constructs {
        for depth in [70, 300, 3_000] {
            let line = make(depth);
            let policy = std::sync::Arc::clone(&policy);
            let name = *name;
            let verdict = std::thread::Builder::new()
                .stack_size(1 << 20)
                .spawn(move || {
                    let analysis = toolgate_policy::shell::analyze(&line);
                    let call = |command: &str| {
                        Call::from_value(
                            serde_json::json!({"tool": "bash", "args": {"command": command}}),
                        )
                        .unwrap()
                    };
                    let alone = policy.evaluate(&call(&line)).decision;
                    let after_rm = policy
                        .evaluate(&call(&format!("rm -rf ~; {line}")))
                        .decision;
                    (analysis.is_clean(), alone, after_rm, line.len())
                })
                .unwrap()
                .join()
                .unwrap_or_else(|_| panic!("{name} × {depth}: the analysis panicked"));
            let (clean, alone, after_rm, bytes) = verdict;
            if name.starts_with('$') || name.starts_with('<') || name == "mixed" {
                assert!(
                    !clean,
                    "{name} × {depth}: nested substitutions are never clean"
                );
            }
            if !clean {
                assert_ne!(alone, toolgate_policy::Decision::Allow, "{name} × {depth}");
            }
            if bytes < 60_000 {
                assert_eq!(
                    after_rm,
                    toolgate_policy::Decision::Deny,
                    "{name} × {depth}"
                );
            } else {
                // Longer than toolgate analyses: refused to a person, never allowed.
                assert_ne!(
                    after_rm,
                    toolgate_policy::Decision::Allow,
                    "{name} × {depth}"
                );
            }
        }
    }
}

/// An argument in another shape than the tool takes (a text where a list of paths goes) reached
/// no resource and passed for an absent one, so `{"paths": "config/.env"}` was allowed (found by
/// probing the daemon). It is a person's question now; the usual shapes decide as before.
#[test]
fn arguments_of_the_wrong_shape_are_not_read_as_absent() {
    use toolgate_policy::Decision::{Allow, Ask, Deny};
    let policy =
        Policy::from_toml("policy.toml", include_str!("../../../examples/policy.toml")).unwrap();
    for (args, tool, expected) in [
        (
            serde_json::json!({"paths": "config/.env"}),
            "read_multiple_files",
            Ask,
        ),
        (serde_json::json!({"paths": 5}), "read_multiple_files", Ask),
        (
            serde_json::json!({"paths": ["README.md"]}),
            "read_multiple_files",
            Allow,
        ),
        (
            serde_json::json!({"paths": ["config/.env"]}),
            "read_multiple_files",
            Deny,
        ),
        (
            serde_json::json!({"sessionId": "s", "command": "cat", "args": "config/.env"}),
            "terminal/create",
            Ask,
        ),
        (
            serde_json::json!({"sessionId": "s", "command": "cat", "args": {"a": "config/.env"}}),
            "terminal/create",
            Ask,
        ),
        (
            serde_json::json!({"sessionId": "s", "command": "git", "args": ["status"]}),
            "terminal/create",
            Allow,
        ),
    ] {
        let call = Call::from_value(serde_json::json!({"tool": tool, "args": args,
            "context": {"workspace": "/tmp/toolgate-shapes"}}))
        .unwrap();
        assert_eq!(policy.evaluate(&call).decision, expected, "{tool} {args}");
    }
}

const SHELL_TOKENS: &[&str] = &[
    "git", "status", "&&", "||", ";", "|", "&", "\n", "\r", "$(", ")", "`", "<(", ">", ">>", "<",
    "<<EOF\n", "EOF", "'", "\"", "\\", "$X", "${X@P}", "{a,b}", "bash", "-c", "sudo", "env", "A=1",
    "xargs", "find", "-exec", "\\;", "sed", "s/a/b/e", "rm", "-rf", "~", "..", "/tmp", "*", "#",
    "(", "((", "[[", "]]", "if", "then", "fi", "for", "in", "do", "done", "$[", "]", "\u{0}", "é",
    " ",
];

fn shell_line() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::collection::vec(proptest::sample::select(SHELL_TOKENS), 0..24)
            .prop_map(|t| t.join(" ")),
        proptest::collection::vec(proptest::sample::select(SHELL_TOKENS), 0..24)
            .prop_map(|t| t.concat()),
        "\\PC{0,120}",
        // Braces next to wide characters: the grammar's brace-range lookahead (see above).
        (
            "[ a-z]{0,3}",
            "\\{[0-9]{0,2}(\\.\\.[0-9]{0,2})?",
            "\\PC{0,3}"
        )
            .prop_map(|(a, b, c)| format!("{a}{b}{c}")),
    ]
}

/// Inputs that crashed the process inside tree-sitter-bash's external scanner (SIGSEGV on Linux:
/// `isdigit` on a code point beyond its table, tree-sitter-bash#337). They must be refused as
/// unparseable and never allowed, yet read well enough from a stand-in for deny rules to apply.
#[test]
fn a_brace_next_to_a_wide_character_is_read_from_a_stand_in_and_never_allowed() {
    let policy = Policy::from_toml("p.toml", "mode = \"approve-all\"\n").unwrap();
    for line in [
        "{\u{E011F}",
        "{\u{31860}",
        "x {12\u{4E00}",
        "echo {1..\u{1F389}",
        "echo {1..22\u{1F389}}",
        "git commit -m \"{\u{1F389}\"",
    ] {
        let analysis = toolgate_policy::shell::analyze(line);
        assert!(!analysis.is_clean(), "{line:?}");
        assert!(
            analysis
                .findings
                .iter()
                .any(|f| f.detail.contains("tree-sitter-bash#337")),
            "{line:?}: {:?}",
            analysis.findings
        );
        let call = Call::from_value(serde_json::json!({"tool": "bash", "args": {"command": line}}))
            .unwrap();
        assert_ne!(
            policy.evaluate(&call).decision,
            toolgate_policy::Decision::Allow,
            "{line:?}"
        );
    }
    // Deny rules still see the commands around it, and words keep their own text.
    let deny = Policy::from_toml(
        "p.toml",
        "mode = \"approve-all\"\n[[rule]]\nname = \"d\"\ndecision = \"deny\"\ncommand = [\"rm\"]\n",
    )
    .unwrap();
    let call = Call::from_value(
        serde_json::json!({"tool": "bash", "args": {"command": "echo {\u{1F389} && rm -rf ~"}}),
    )
    .unwrap();
    assert_eq!(
        deny.evaluate(&call).decision,
        toolgate_policy::Decision::Deny
    );
    let analysis = toolgate_policy::shell::analyze("echo '{\u{1F389}' && ls {12\u{4E00}");
    let programs: Vec<_> = analysis
        .commands
        .iter()
        .map(|c| c.argv[0].value().unwrap().to_owned())
        .collect();
    assert_eq!(programs, ["echo", "ls"]);
    assert_eq!(analysis.commands[0].argv[1].value(), Some("{\u{1F389}"));
    for line in [
        "echo {\u{e9}}",
        "echo \u{1F389}{a,b}",
        "echo {1..3}",
        "echo {a..\u{e9}}",
    ] {
        let analysis = toolgate_policy::shell::analyze(line);
        assert!(
            !analysis
                .findings
                .iter()
                .any(|f| f.detail.contains("tree-sitter-bash#337")),
            "{line:?}: {:?}",
            analysis.findings
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn shell_analysis_never_panics(line in shell_line()) {
        // A clean analysis knows every program it names (an argument's value may be unknown
        // where the program only prints or compares it: `echo $X`).
        let analysis = toolgate_policy::shell::analyze(&line);
        if analysis.is_clean() {
            for command in &analysis.commands {
                prop_assert!(command.argv.first().is_none_or(|w| w.value().is_some()), "{line:?}");
                prop_assert!(
                    command.reading.is_some() || command.argv.iter().all(|w| w.value().is_some()),
                    "{line:?}"
                );
            }
        }
        let policy = Policy::from_toml("p.toml", "mode = \"approve-all\"\n[[rule]]\nname = \"d\"\ndecision = \"deny\"\ncommand = [\"rm\"]\n").unwrap();
        let call = Call::from_value(serde_json::json!({"tool": "bash", "args": {"command": line}})).unwrap();
        let evaluation = policy.evaluate(&call);
        // An approve-all policy only asks or denies what toolgate cannot see through or refuses
        // where the call runs (there, globs are expanded to the names they match).
        let cwd = std::env::current_dir().unwrap();
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        let here = toolgate_policy::shell::analyze_in(&line, &cwd, home.as_deref());
        if here.is_clean() {
            for command in &here.commands {
                prop_assert!(command.argv.first().is_none_or(|w| w.value().is_some()), "{line:?}");
                prop_assert!(
                    command.reading.is_some() || command.argv.iter().all(|w| w.value().is_some()),
                    "{line:?}"
                );
            }
        } else {
            prop_assert_ne!(evaluation.decision, toolgate_policy::Decision::Allow, "{:?}", line);
        }
    }

    #[test]
    fn url_checks_never_panic(text in prop_oneof![
        "\\PC{0,60}",
        ("(https?|ftp|file)://", "[a-zA-Z0-9.@:%\\[\\]\\\\-]{0,30}", "(/[a-z]{0,5})?").prop_map(|(a, b, c)| format!("{a}{b}{c}")),
    ]) {
        if let Ok(url) = toolgate_policy::url::check(&text) {
            prop_assert!(!text.chars().any(char::is_control));
            prop_assert_eq!(url.host.clone(), url.host.to_ascii_lowercase());
        }
    }
}

#[test]
fn paths_that_resolve_outside_are_never_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let ws = base.join("ws");
    std::fs::create_dir_all(ws.join("src/deep")).unwrap();
    std::fs::create_dir_all(base.join("outside")).unwrap();
    std::os::unix::fs::symlink(base.join("outside"), ws.join("out")).unwrap();
    std::os::unix::fs::symlink(ws.join("src/deep"), ws.join("in")).unwrap();
    std::os::unix::fs::symlink(ws.join("nowhere"), ws.join("dangling")).unwrap();
    let policy = Policy::from_toml("p.toml", "mode = \"approve-all\"\n").unwrap();
    const SEGMENTS: &[&str] = &[
        "..", ".", "src", "deep", "out", "in", "dangling", "x", "", "~", "ws", "outside", "\\",
        "ws-evil",
    ];
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 3000,
        ..ProptestConfig::default()
    });
    let strategy = (
        proptest::bool::ANY,
        proptest::collection::vec(proptest::sample::select(SEGMENTS), 0..7),
    );
    runner
        .run(&strategy, |(absolute, parts)| {
            let path = if absolute {
                format!("{}/{}", base.display(), parts.join("/"))
            } else {
                parts.join("/")
            };
            let call = Call::from_value(serde_json::json!({
                "tool": "write_file", "args": {"path": path, "content": ""},
                "context": {"workspace": ws.display().to_string()}
            }))
            .unwrap();
            let evaluation = policy.evaluate(&call);
            if evaluation.decision == toolgate_policy::Decision::Allow {
                for outcome in &evaluation.subjects {
                    if let toolgate_policy::Subject::Path(p) = &outcome.subject {
                        let r = p.resolved.as_ref().unwrap();
                        // Outside the workspace, only a scratch place (the system's temporary
                        // folder), and never the workspace's neighbours in it.
                        let inside = |x: &std::path::Path| {
                            x.starts_with(&ws)
                                || p.place == Some(toolgate_policy::OutsidePlace::Scratch)
                                    && !x.starts_with(&base)
                        };
                        prop_assert!(inside(&r.resolved), "{path:?} resolved to {:?}", r.resolved);
                        prop_assert!(r.alternative.as_deref().is_none_or(inside), "{path:?}");
                    }
                }
            }
            Ok(())
        })
        .unwrap();
}
