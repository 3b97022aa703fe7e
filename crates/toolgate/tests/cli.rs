//! The `toolgate` binary end to end: the `check` contract (one result per line, error lines, exit
//! codes), explain, lint, test, the corpora, policy file discovery, the README's commands and the
//! help text.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

mod common;

use common::{BIN, DaemonProcess, Killed, copy_tree, wait_for_line};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// A command with no user or project policy in reach: HOME and the config dirs point at an empty
/// folder and the working folder is a fresh one.
struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        std::fs::create_dir_all(dir.path().join("work/.git")).unwrap();
        Env { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .current_dir(self.path("work"))
            .env("HOME", self.path("home"))
            .env("XDG_CONFIG_HOME", self.path("home/.config"))
            .env_remove("TOOLGATE_CONFIG_DIR");
        cmd
    }

    fn spawn(&self, args: &[&str]) -> Child {
        self.cmd(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    fn run(&self, args: &[&str], stdin: &str) -> Output {
        let mut child = self.spawn(args);
        // A command that fails before reading its input (a policy that does not load) closes
        // the pipe first: that is its business, and the output says what happened.
        if let Err(e) = child.stdin.take().unwrap().write_all(stdin.as_bytes()) {
            assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
        }
        child.wait_with_output().unwrap()
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

fn json_lines(o: &Output) -> Vec<Value> {
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

const POLICY: &str = r#"
version = 1
mode = "approve-reads"

[[rule]]
name = "no-pay"
decision = "deny"
tool = "pay"
reason = "no payments"

[[rule]]
name = "ask-writes"
decision = "ask"
tool = "write_file"
"#;

#[test]
fn check_one_call_by_flags() {
    let env = Env::new();
    let policy = env.write("p.toml", POLICY);
    let o = env.run(
        &[
            "check",
            "--policy",
            policy.to_str().unwrap(),
            "--tool",
            "pay",
            "--args",
            r#"{"amount": 5}"#,
        ],
        "",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = json_lines(&o);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["decision"], "deny");
    assert_eq!(out[0]["reason"], "no payments");
    assert_eq!(out[0]["rule"], "no-pay");
    assert_eq!(out[0]["layer"], "rule");
    assert_eq!(
        out[0]["source"],
        json!({"file": policy.to_str().unwrap(), "line": 5})
    );
    let o = env.run(
        &[
            "check",
            "--policy",
            policy.to_str().unwrap(),
            "--call",
            r#"{"tool": "read_file", "args": {"path": "a"}}"#,
        ],
        "",
    );
    assert_eq!(json_lines(&o)[0]["decision"], "allow");
    let o = env.run(
        &[
            "check",
            "--policy",
            policy.to_str().unwrap(),
            "--tool",
            "t",
            "--tag",
            "read_only",
            "--context",
            r#"{"mode": "deny-all"}"#,
        ],
        "",
    );
    assert_eq!(json_lines(&o)[0]["decision"], "ask");
    assert_eq!(json_lines(&o)[0]["mode"], "deny-all");
    let o = env.run(
        &[
            "check",
            "--isolated",
            "--tool",
            "x",
            "--tags",
            "read_only,slow",
            "--origin",
            "network",
            "--server",
            "s",
            "--trusted-server",
        ],
        "",
    );
    let out = &json_lines(&o)[0];
    // In a turn that came over the network, a tool with no profile is not a read on its
    // tags' word: it asks.
    assert_eq!(
        (out["decision"].clone(), out["layer"].clone()),
        (json!("ask"), json!("default"))
    );
    let o = env.run(
        &["check", "--isolated", "--tool", "x", "--origin", "internet"],
        "",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown origin `internet`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn check_a_batch_one_result_per_line_and_the_batch_goes_on() {
    let env = Env::new();
    let policy = env.write("p.toml", POLICY);
    let input = [
        r#"{"tool": "pay", "id": 1}"#,
        "{not json",
        "",
        "   ",
        r#"{"args": {}}"#,
        r#"{"tool": "write_file", "args": ["a"], "id": "x"}"#,
        r#"{"tool": "write_file", "arguments": {}}"#,
        r#"[1, 2]"#,
        r#"{"tool": "t", "context": {"mode": "yolo"}}"#,
        r#"{"tool": "write_file", "args": {"path": "a"}}"#,
    ]
    .join("\n");
    let o = env.run(&["check", "--policy", policy.to_str().unwrap()], &input);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    let out = json_lines(&o);
    assert_eq!(out.len(), 8, "blank lines are skipped:\n{}", stdout(&o));
    assert_eq!(
        (out[0]["id"].clone(), out[0]["decision"].clone()),
        (json!(1), json!("deny"))
    );
    assert_eq!(out[1]["error"]["kind"], "invalid_json");
    assert!(out[1].get("decision").is_none());
    assert_eq!(out[2]["error"]["kind"], "invalid_call");
    assert_eq!(out[2]["error"]["message"], "missing field `tool`");
    assert_eq!(out[3]["decision"], "deny");
    assert_eq!(out[3]["layer"], "validate");
    assert_eq!(out[3]["id"], "x");
    assert_eq!(
        out[3]["error"],
        json!({"kind": "invalid_arguments", "message": "arguments must be a JSON object, got an array"})
    );
    assert_eq!(out[4]["error"]["kind"], "invalid_call");
    assert!(
        out[4]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown field `arguments`")
    );
    assert_eq!(
        out[5]["error"]["message"],
        "a call is a JSON object, got an array"
    );
    assert!(
        out[6]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown mode `yolo`")
    );
    assert_eq!(out[7]["decision"], "ask");
    assert_eq!(
        out[7]["choices"],
        json!(["allow-once", "allow-always", "reject-once", "reject-always"])
    );
    assert_eq!(out[7]["timeout_ms"], 300000);
    for line in &out {
        if line.get("decision").is_some() {
            for key in ["decision", "reason", "rule", "layer", "mode", "subjects"] {
                assert!(line.get(key).is_some(), "{key} missing in {line}");
            }
        }
    }
}

#[test]
fn check_survives_bytes_that_are_not_text_and_overlong_lines() {
    let env = Env::new();
    let policy = env.write("p.toml", POLICY);
    let mut child = env.spawn(&["check", "--policy", policy.to_str().unwrap()]);
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        stdin.write_all(b"{\"tool\": \"caf\xe9\"}\n").unwrap();
        stdin.write_all(&vec![b' '; 17 << 20]).unwrap();
        stdin
            .write_all(b"\n{\"tool\": \"pay\"}\r\n{\"tool\": \"pay\"}")
            .unwrap();
    });
    let o = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert_eq!(o.status.code(), Some(0));
    let out = json_lines(&o);
    assert_eq!(out.len(), 4);
    assert_eq!(out[0]["error"]["message"], "line is not UTF-8 (byte 13)");
    assert!(
        out[1]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("more than the limit")
    );
    assert_eq!(out[2]["decision"], "deny");
    assert_eq!(out[3]["decision"], "deny", "the last line needs no newline");
}

#[test]
fn check_stops_quietly_when_the_reader_goes_away() {
    let env = Env::new();
    let policy = env.write("p.toml", POLICY);
    let mut child = env.spawn(&["check", "--policy", policy.to_str().unwrap()]);
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let line = b"{\"tool\": \"pay\"}\n".repeat(1000);
        for _ in 0..200 {
            if stdin.write_all(&line).is_err() {
                break;
            }
        }
    });
    let mut first = [0u8; 16];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut first)
        .unwrap();
    drop(child.stdout.take());
    let status = child.wait().unwrap();
    writer.join().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(err, "");
}

#[test]
fn check_exits_2_when_a_policy_fails_to_load() {
    let env = Env::new();
    let bad = env.write(
        "bad.toml",
        "version = 1\n[[rule]]\nname = \"x\"\ndecison = \"allow\"\n",
    );
    let o = env.run(
        &["check", "--policy", bad.to_str().unwrap()],
        "{\"tool\": \"x\"}\n",
    );
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stdout(&o), "");
    let err = stderr(&o);
    assert!(
        err.contains("error: unknown key `decison` in a rule"),
        "{err}"
    );
    assert!(err.contains(&format!("--> {}:4:1", bad.display())), "{err}");
    assert!(
        err.contains("4 | decison = \"allow\"\n  | ^^^^^^^"),
        "{err}"
    );
    assert!(err.contains("hint: did you mean `decision`?"), "{err}");
    let o = env.run(&["check", "--policy", "missing.toml", "--tool", "x"], "");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("cannot read `missing.toml`"),
        "{}",
        stderr(&o)
    );
    let failing_example = env.write(
        "ex.toml",
        "[[rule]]\nname = \"r\"\ndecision = \"allow\"\ntool = \"a\"\nexamples = { match = [{ tool = \"b\" }] }\n",
    );
    let o = env.run(
        &[
            "check",
            "--policy",
            failing_example.to_str().unwrap(),
            "--tool",
            "a",
        ],
        "",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("example does not match rule `r`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn check_usage_and_input_errors_exit_2() {
    let env = Env::new();
    let o = env.run(&["check", "--tool", "x", "--call", "{}"], "");
    assert_eq!(o.status.code(), Some(2));
    let o = env.run(&["check", "--isolated", "missing-input.jsonl"], "");
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot read `missing-input.jsonl`"));
    let o = env.run(
        &["check", "--isolated", "--tool", "x", "--args", "{oops"],
        "",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--args is not valid JSON"));
    let o = env.run(
        &["check", "--isolated", "--mode", "yolo", "--tool", "x"],
        "",
    );
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn check_run_options() {
    let env = Env::new();
    let policy = env.write("p.toml", POLICY);
    let p = policy.to_str().unwrap();
    let decide = |extra: &[&str], call: &str| -> Value {
        let mut args = vec!["check", "--policy", p];
        args.extend_from_slice(extra);
        json_lines(&env.run(&args, call))[0].clone()
    };
    let write = r#"{"tool": "write_file"}"#;
    assert_eq!(decide(&["--full-access"], write)["decision"], "allow");
    assert_eq!(decide(&["--full-access"], write)["layer"], "override");
    assert_eq!(
        decide(&["--full-access"], r#"{"tool": "pay"}"#)["decision"],
        "deny"
    );
    assert_eq!(
        decide(
            &["--require-permission", "read_file"],
            r#"{"tool": "read_file"}"#
        )["decision"],
        "ask"
    );
    assert_eq!(
        decide(&["--disable-permission", "write_file"], write)["decision"],
        "allow"
    );
    assert_eq!(
        decide(&["--mode", "approve-all"], r#"{"tool": "other"}"#)["decision"],
        "allow"
    );
    assert_eq!(
        decide(
            &["--mode", "approve-all"],
            r#"{"tool": "other", "context": {"mode": "deny-all"}}"#
        )["decision"],
        "ask"
    );
}

#[test]
fn check_text_format() {
    let env = Env::new();
    let policy = env.write("p.toml", POLICY);
    let o = env.run(
        &[
            "check",
            "--policy",
            policy.to_str().unwrap(),
            "--format",
            "text",
        ],
        "{\"tool\": \"pay\", \"id\": \"p1\"}\nnope\n",
    );
    let text = stdout(&o);
    let expected = format!(
        "deny   [p1] pay {{}}\n       rule `no-pay` ({}:5): no payments\nerror  line 2: invalid_json: expected ident at line 1 column 2\n",
        policy.display()
    );
    assert_eq!(text, expected);
}

#[test]
fn user_and_project_files_are_found_and_layered() {
    let env = Env::new();
    env.write(
        "home/.config/toolgate/policy.toml",
        "[[rule]]\nname = \"user-allows-ls\"\ndecision = \"allow\"\ntool = \"ls\"\n",
    );
    env.write(
        "work/.toolgate/policy.toml",
        "[[rule]]\nname = \"project-denies-ls\"\ndecision = \"deny\"\ntool = \"ls\"\n",
    );
    std::fs::create_dir_all(env.path("work/sub/dir")).unwrap();
    let o = env
        .cmd(&["check", "--tool", "ls"])
        .current_dir(env.path("work/sub/dir"))
        .output()
        .unwrap();
    assert_eq!(
        json_lines(&o)[0]["rule"],
        "project-denies-ls",
        "{}",
        stderr(&o)
    );
    let o = env.run(&["check", "--isolated", "--tool", "ls"], "");
    assert_eq!(json_lines(&o)[0]["layer"], "default");
    let o = env.run(&["explain", "--tool", "ls"], "");
    let text = stdout(&o);
    let user = text.find("home/.config/toolgate/policy.toml").unwrap();
    let project = text.find(".toolgate/policy.toml\n").unwrap();
    assert!(user < project, "the user file loads first:\n{text}");
    let o = env
        .cmd(&["check", "--tool", "ls"])
        .env("TOOLGATE_CONFIG_DIR", env.path("nowhere"))
        .output()
        .unwrap();
    assert_eq!(json_lines(&o)[0]["rule"], "project-denies-ls");
    // The search stops at the repository root.
    env.write(
        "outer/.toolgate/policy.toml",
        "[[rule]]\nname = \"outer\"\ndecision = \"deny\"\n",
    );
    std::fs::create_dir_all(env.path("outer/repo/.git")).unwrap();
    let o = env
        .cmd(&["check", "--tool", "x"])
        .current_dir(env.path("outer/repo"))
        .env("TOOLGATE_CONFIG_DIR", env.path("nowhere"))
        .output()
        .unwrap();
    assert_eq!(json_lines(&o)[0]["layer"], "default");
}

#[test]
fn explain_text_and_json() {
    let env = Env::new();
    let policy = env.write("p.toml", POLICY);
    let o = env.run(
        &[
            "explain",
            "--policy",
            policy.to_str().unwrap(),
            "--tool",
            "write_file",
        ],
        "",
    );
    assert_eq!(o.status.code(), Some(0));
    let text = stdout(&o);
    for needle in [
        "call: write_file",
        "mode: approve-reads (from the policy)",
        "profile: built-in profile `write_file` (MCP filesystem server) says `write`",
        "no    deny `no-pay` (line 5): tool `write_file` does not match `pay`",
        "match ask `ask-writes` (line 11): every condition holds",
        "result: ask (rule) by rule `ask-writes`",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    let o = env.run(
        &["explain", "--policy", policy.to_str().unwrap(), "--json"],
        "{\"tool\": \"pay\"}\n{bad\n",
    );
    let out = json_lines(&o);
    assert_eq!(out[0]["evaluation"]["decision"], "deny");
    assert_eq!(
        out[0]["subjects"][0]["files"][0]["rules"][0]["verdict"],
        "matched"
    );
    assert_eq!(out[1]["error"]["kind"], "invalid_json");
}

#[test]
fn lint_exit_codes() {
    let env = Env::new();
    let clean = env.write("clean.toml", "[[rule]]\nname = \"a\"\ndecision = \"deny\"\ntool = \"x\"\nexamples = { match = [{ tool = \"x\" }] }\n");
    let o = env.run(&["lint", "--policy", clean.to_str().unwrap()], "");
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert_eq!(stdout(&o), "1 rules checked: 0 errors, 0 warnings\n");
    let warn = env.write(
        "warn.toml",
        "[[rule]]\nname = \"a\"\ndecision = \"deny\"\ntool = \"x\"\n",
    );
    let o = env.run(&["lint", "--policy", warn.to_str().unwrap()], "");
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("warning[no-example]: rule `a` has no examples"));
    let o = env.run(
        &["lint", "--strict", "--policy", warn.to_str().unwrap()],
        "",
    );
    assert_eq!(o.status.code(), Some(1));
    let err = env.write("err.toml", "[[rule]]\nname = \"all\"\ndecision = \"allow\"\n[[rule]]\nname = \"no\"\ndecision = \"deny\"\ntool = \"rm\"\n");
    let o = env.run(&["lint", "--policy", err.to_str().unwrap()], "");
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("error[shadowed]: rule `no` never applies"));
    assert!(stdout(&o).contains("error[allow-all]: rule `all` allows every call"));
    let o = env.run(
        &[
            "lint",
            "--format",
            "json",
            "--policy",
            err.to_str().unwrap(),
        ],
        "",
    );
    let codes: Vec<Value> = json_lines(&o).iter().map(|f| f["code"].clone()).collect();
    assert!(codes.contains(&json!("shadowed")) && codes.contains(&json!("allow-all")));
}

#[test]
fn test_command_reports_failing_examples_and_cases() {
    let env = Env::new();
    let policy = env.write(
        "p.toml",
        "[[rule]]\nname = \"r\"\ndecision = \"deny\"\ntool = \"a\"\nexamples = { match = [{ tool = \"a\" }, { tool = \"b\" }] }\n",
    );
    let cases = env.write(
        "cases.jsonl",
        "# comment\n{\"call\": {\"tool\": \"a\"}, \"expect\": \"deny\"}\n\n{\"name\": \"wrong\", \"call\": {\"tool\": \"a\"}, \"expect\": {\"decision\": \"deny\", \"rule\": \"other\"}}\n{\"call\": {\"tool\": \"c\"}, \"expect\": \"allow\"}\nnot json\n",
    );
    let o = env.run(
        &[
            "test",
            "--policy",
            policy.to_str().unwrap(),
            "--cases",
            cases.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(o.status.code(), Some(1));
    let text = stdout(&o);
    assert!(text.contains("examples: 1 passed, 1 failed"), "{text}");
    assert!(
        text.contains("example does not match rule `r`: tool `b` does not match `a`"),
        "{text}"
    );
    assert!(
        text.contains(&format!("cases {}: 1 passed, 3 failed", cases.display())),
        "{text}"
    );
    assert!(
        text.contains(":4: (wrong) tool `a`: expected rule `other`, got `r`"),
        "{text}"
    );
    assert!(
        text.contains(":5: tool `c`: expected allow, got ask"),
        "{text}"
    );
    assert!(text.contains(":6: not a case"), "{text}");
    assert!(
        text.trim_end()
            .ends_with("test result: FAILED. 2 passed; 4 failed"),
        "{text}"
    );
}

#[test]
fn every_corpus_holds_through_toolgate_test() {
    let env = Env::new();
    let corpus = root().join("tests/corpus");
    // The fixture workspace, copied so its absolute path is known: `__WS__` in cases stands for it.
    let fixture = env.path("fixture");
    for name in ["ws", "outside", "ws-evil"] {
        copy_tree(&corpus.join("paths").join(name), &fixture.join(name));
    }
    let ws = std::fs::canonicalize(fixture.join("ws")).unwrap();
    let ws_text = ws.to_str().unwrap().to_owned();
    let lookalike = format!("{}w\u{0455}", &ws_text[..ws_text.len() - 2]);
    let mut runs = vec![(
        root().join("examples/policy.toml"),
        corpus.join("example-policy.jsonl"),
    )];
    for entry in std::fs::read_dir(&corpus).unwrap() {
        let dir = entry.unwrap().path();
        if dir.join("policy.toml").is_file() {
            runs.push((dir.join("policy.toml"), dir.join("cases.jsonl")));
        }
    }
    assert!(runs.len() >= 7, "{runs:?}");
    // Cases without a workspace are decided in the folder `toolgate test` runs in: one of the
    // test's own, not the repository's (a clone under `/tmp` would make `cd ..` a scratch place).
    // It holds a secrets file, as a project does (a pathspec pattern that names it reads it).
    let cwd = env.path("cwd/project");
    std::fs::create_dir_all(cwd.join("src")).unwrap();
    std::fs::write(cwd.join("src/.env"), "TOKEN=x\n").unwrap();
    let mut total = 0;
    for (policy, cases) in runs {
        let text = std::fs::read_to_string(&cases)
            .unwrap()
            .replace("__WS_LOOKALIKE__", &lookalike)
            .replace("__WS__", &ws_text);
        total += text.lines().filter(|l| l.starts_with('{')).count();
        let resolved = env.write(&format!("cases-{}.jsonl", total), &text);
        let o = Command::new(BIN)
            .args([
                "test",
                "--isolated",
                "--policy",
                policy.to_str().unwrap(),
                "--cases",
                resolved.to_str().unwrap(),
            ])
            .current_dir(&cwd)
            .env("HOME", env.path("home"))
            .output()
            .unwrap();
        let out = stdout(&o);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}:\n{out}{}",
            cases.display(),
            stderr(&o)
        );
        assert!(out.contains("0 failed\n"), "{out}");
    }
    assert!(total >= 250, "the corpora hold {total} cases");
}

/// The first ```-block of `lang` after `marker` in the README.
fn readme_block<'a>(readme: &'a str, marker: &str, lang: &str) -> &'a str {
    let start = readme.find(marker).unwrap();
    let fence = format!("```{lang}\n");
    let block_start = readme[start..].find(&fence).unwrap() + start + fence.len();
    let block_end = readme[block_start..].find("```").unwrap() + block_start;
    &readme[block_start..block_end]
}

#[test]
fn the_readme_quick_start_runs_as_written() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let commands: Vec<&str> = readme_block(&readme, "## Quick start", "sh")
        .lines()
        .collect();
    assert_eq!(commands.len(), 2, "the quick start is two commands");
    assert_eq!(commands[1], "cargo test --workspace");
    let main_job = commands[0]
        .strip_prefix("cargo run -- ")
        .expect("the main job runs the binary");
    assert!(
        main_job == "serve" || main_job.starts_with("serve "),
        "the main job starts the daemon"
    );
    let data = tempfile::tempdir().unwrap();
    let child = Command::new(BIN)
        .args(main_job.split(' '))
        .current_dir(root())
        .env("HOME", "/nonexistent")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("TOOLGATE_CONFIG_DIR")
        .env("TOOLGATE_DATA_DIR", data.path())
        .env("TOOLGATE_LISTEN", "127.0.0.1:0")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Killed(child);
    let output = child.0.stdout.take().unwrap();
    let (policy_line, seen) = wait_for_line(output, "  policy: ");
    if main_job == "serve" {
        // With no policy file, the built-in policy decides, and the daemon says so.
        assert_eq!(policy_line, "  policy: toolgate:default");
    }
    let listening = seen
        .iter()
        .find(|l| l.starts_with("toolgate is listening on http://"))
        .unwrap();
    let address = listening
        .trim_start_matches("toolgate is listening on http://")
        .to_owned();
    // The daemon answers, and printed what the README shows.
    let shown = readme_block(&readme, "## Quick start", "text");
    assert!(shown.starts_with("toolgate is listening on http://127.0.0.1:7811"));
    let response = common::raw_get(&address, &address, "/api/health");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("\"status\":\"ok\""), "{response}");
    assert!(data.path().join("token").exists() && data.path().join("toolgate.db").exists());
    drop(child);

    // The engine's own command, and the excerpt the README shows of its output.
    let marker = "### The policy engine on its own";
    let check = readme_block(&readme, marker, "sh").trim();
    let args = check.strip_prefix("cargo run -- ").unwrap();
    let o = Command::new(BIN)
        .args(args.split(' '))
        .current_dir(root())
        .env("HOME", "/nonexistent")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("TOOLGATE_CONFIG_DIR")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    let calls = std::fs::read_to_string(root().join("examples/calls.jsonl")).unwrap();
    let results = text.lines().filter(|l| !l.starts_with(' ')).count();
    assert_eq!(
        results,
        calls.lines().count(),
        "one result per call:\n{text}"
    );
    for line in readme_block(&readme, marker, "text").lines() {
        assert!(
            text.contains(line),
            "README shows {line:?}, the command prints:\n{text}"
        );
    }
    // The JSON the README shows is what `check` writes for that call, up to its subjects.
    let shown = readme_block(&readme, marker, "json");
    let shown = shown.split(",\"subjects\"").next().unwrap().trim();
    let id = shown.split('"').nth(3).unwrap();
    let args: Vec<&str> = args
        .split(' ')
        .filter(|a| *a != "--format" && *a != "text")
        .collect();
    let o = Command::new(BIN)
        .args(&args)
        .current_dir(root())
        .env("HOME", "/nonexistent")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("TOOLGATE_CONFIG_DIR")
        .output()
        .unwrap();
    let json = stdout(&o);
    assert!(
        json.lines()
            .any(|l| l.starts_with(shown) && l.contains(&format!("\"id\":\"{id}\""))),
        "README shows {shown}, check writes:\n{json}"
    );
}

#[test]
fn help_text_is_committed_and_current() {
    let mut help = String::new();
    for sub in [
        None,
        Some("check"),
        Some("explain"),
        Some("lint"),
        Some("test"),
        Some("serve"),
        Some("approvals"),
        Some("grants"),
        Some("tail"),
        Some("page"),
        Some("hook"),
        Some("policy"),
    ] {
        let mut args: Vec<&str> = sub.into_iter().collect();
        args.push("--help");
        let o = Command::new(BIN)
            .args(&args)
            .env("COLUMNS", "100")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0));
        help += &format!("$ toolgate {}\n{}\n", args.join(" "), stdout(&o));
    }
    let path = root().join("docs/cli-help.txt");
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, &help).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == help,
        "docs/cli-help.txt is out of date; run `UPDATE_SNAPSHOTS=1 cargo test -p toolgate --test cli help` and commit it"
    );
}

/// The daemon lists the oldest 1,000 waiting requests and a page of grants: `approvals` says
/// how many more wait and how to reach them; `grants` lists every page, and revokes by the start
/// of an id past the first page.
#[test]
fn the_clients_say_how_many_more_there_are_than_a_list_shows() {
    let data = tempfile::tempdir().unwrap();
    let daemon = DaemonProcess::start(data.path());
    let mut ids = Vec::new();
    for i in 0..1001 {
        let call = json!({"tool": "bash", "args": {"command": format!("cargo publish -p c{i}")},
                          "context": {"workspace": "/tmp", "session": format!("s{i}")}});
        let (status, body) = daemon.http("POST", "/api/decisions", Some(&call)).unwrap();
        assert_eq!(status, 202, "{body}");
        ids.push(body["id"].as_str().unwrap().to_owned());
    }
    let listed = stdout(&daemon.client(&["approvals"]));
    assert!(
        listed
            .ends_with("… and 1 more waiting (answer these to see them, or list one --session)\n"),
        "{}",
        &listed[listed.len().saturating_sub(300)..]
    );
    for id in &ids {
        let (status, body) = daemon
            .http(
                "POST",
                &format!("/api/approvals/{id}"),
                Some(&json!({"decision": "allow-always"})),
            )
            .unwrap();
        assert_eq!(status, 200, "{body}");
    }
    let listed = stdout(&daemon.client(&["grants"]));
    assert_eq!(listed.lines().count(), 1001, "every grant, page after page");
    let (_, last) = daemon
        .http("GET", "/api/grants?session=s1000", None)
        .unwrap();
    let last = last["grants"][0]["id"].as_str().unwrap().to_owned();
    assert!(
        listed.lines().last().unwrap().starts_with(&last),
        "oldest first"
    );
    assert_eq!(
        stdout(&daemon.client(&["grants", "--session", "s7"]))
            .lines()
            .count(),
        1
    );
    let revoked = stdout(&daemon.client(&["grants", "revoke", &last[..8]]));
    assert_eq!(revoked, format!("{last}: revoked\n"), "past the first page");
    let (_, left) = daemon.http("GET", "/api/grants?limit=1", None).unwrap();
    assert_eq!(left["total"], 1000);
}

/// From the terminal, an "always" answer chooses where it applies among the scopes the request
/// offers (the list says what each covers) and how long it lasts; `grants` shows the scope and
/// the end, and filters by scope. `--scope` without `--always` is a usage error, and a life the
/// daemon cannot take is refused (exit 2).
#[test]
fn an_always_answer_from_the_terminal_chooses_its_scope_and_life() {
    let data = tempfile::tempdir().unwrap();
    let daemon = DaemonProcess::start(data.path());
    let workspace = data.path().canonicalize().unwrap();
    let call = |command: &str, session: &str| {
        json!({"tool": "bash", "args": {"command": command},
               "context": {"workspace": workspace, "session": session}})
    };
    let (status, body) = daemon
        .http("POST", "/api/decisions", Some(&call("cargo publish", "s1")))
        .unwrap();
    assert_eq!(status, 202, "{body}");
    let id = body["id"].as_str().unwrap().to_owned();
    let listed = stdout(&daemon.client(&["approvals"]));
    let place = workspace.display().to_string();
    assert!(
        listed.contains(&format!(
            "      --scope workspace: `bash`: commands starting with `cargo publish`, for every \
             session in the workspace `{place}`\n"
        )),
        "{listed}"
    );
    assert!(
        listed.contains(
            "      --scope user: `bash`: commands starting with `cargo publish`, for every \
             session of this user, in every workspace\n"
        ),
        "{listed}"
    );
    let o = daemon.client(&["approvals", "allow", &id, "--scope", "user"]);
    assert_eq!(o.status.code(), Some(2), "--scope needs --always");
    let o = daemon.client(&["approvals", "allow", &id, "--always", "--for", "soon"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--for is a duration"), "{}", stderr(&o));
    let o = daemon.client(&[
        "approvals",
        "allow",
        &id,
        "--always",
        "--scope",
        "workspace",
        "--for",
        "8h",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let answered = stdout(&o);
    assert!(
        answered.contains(&format!(
            "remembered: allow commands starting with `cargo publish` of `bash` in the \
             workspace `{place}` until "
        )),
        "{answered}"
    );
    // Another session in the workspace: answered by the grant.
    let (status, body) = daemon
        .http(
            "POST",
            "/api/decisions",
            Some(&call("cargo publish --dry-run", "s2")),
        )
        .unwrap();
    assert_eq!(
        (status, body["layer"].as_str()),
        (200, Some("grant")),
        "{body}"
    );
    let grants = stdout(&daemon.client(&["grants", "--scope", "workspace"]));
    assert_eq!(grants.lines().count(), 1, "{grants}");
    assert!(grants.contains(" until "), "{grants}");
    assert_eq!(
        stdout(&daemon.client(&["grants", "--scope", "user"])),
        "no grants\n"
    );
}

/// `toolgate grants promote` writes the rule an "always" answer amounts to into the workspace's
/// policy, first among its rules, with the call that made it as its example: shown first, then
/// written with --yes, the grant revoked; the daemon loads the file again and the rule decides
/// the next call. An allow of an exact command has no rule of the same reach: refused.
#[test]
fn a_grant_becomes_a_rule_in_the_workspaces_policy() {
    let data = tempfile::tempdir().unwrap();
    let ws_dir = tempfile::tempdir().unwrap();
    let ws = ws_dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(ws.join(".toolgate")).unwrap();
    let policy = ws.join(".toolgate/policy.toml");
    let original = "version = 1\n\n[[rule]]\nname = \"releases\"\ndecision = \"ask\"\n\
                    command = [\"cargo publish\", \"rm -rf\"]\n\n[[rule]]\nname = \"npm\"\n\
                    decision = \"ask\"\ncommand = [\"npm publish\"]\n\n[[rule]]\n\
                    name = \"pushes\"\ndecision = \"ask\"\ncommand = [\"git push\"]\n\n\
                    [[rule]]\nname = \"no-force\"\ndecision = \"deny\"\ncommand = [\"git push --force\"]\n";
    std::fs::write(&policy, original).unwrap();
    let daemon = DaemonProcess::start_with_policy(data.path(), policy.to_str().unwrap(), &[]);
    let call = |command: &str, session: &str| {
        json!({"tool": "bash", "args": {"command": command},
               "context": {"workspace": ws, "session": session}})
    };
    let always = |command: &str| {
        let (status, body) = daemon
            .http("POST", "/api/decisions", Some(&call(command, "s1")))
            .unwrap();
        assert_eq!(status, 202, "{body}");
        let id = body["id"].as_str().unwrap().to_owned();
        let (status, body) = daemon
            .http(
                "POST",
                &format!("/api/approvals/{id}"),
                Some(&json!({"decision": "allow-always", "scope": "workspace"})),
            )
            .unwrap();
        assert_eq!(status, 200, "{body}");
        body["grants"][0]["id"].as_str().unwrap().to_owned()
    };
    let grant = always("cargo publish --dry-run");

    // Shown, not written.
    let o = daemon.client(&["grants", "promote", &grant[..8]]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let shown = stdout(&o);
    let name = format!("promoted-{}", &grant[..8]);
    for line in [
        "@@ -3,0 +3,".to_owned(),
        "+[[rule]]".to_owned(),
        format!("+name = \"{name}\""),
        "+decision = \"allow\"".to_owned(),
        "+tool = \"bash\"".to_owned(),
        "+command = [[\"cargo\", \"publish\"]]".to_owned(),
        "+examples = { match = [{ tool = \"bash\", args = { command = \"cargo publish --dry-run\" } }] }".to_owned(),
        "not written: --yes writes it".to_owned(),
    ] {
        assert!(shown.contains(&line), "{line}:\n{shown}");
    }
    assert_eq!(std::fs::read_to_string(&policy).unwrap(), original);

    // Written: first among the rules; the grant revoked; the daemon loads the file again.
    let o = daemon.client(&["grants", "promote", &grant, "--yes"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains(&format!("revoked grant {grant}")),
        "{}",
        stdout(&o)
    );
    let written = std::fs::read_to_string(&policy).unwrap();
    assert!(
        written.starts_with(&format!("version = 1\n\n[[rule]]\nname = \"{name}\"")),
        "{written}"
    );
    assert!(
        written.ends_with(original.strip_prefix("version = 1\n\n").unwrap()),
        "{written}"
    );
    let (_, grants) = daemon.http("GET", "/api/grants", None).unwrap();
    assert_eq!(grants["total"], 0, "{grants}");
    let started = std::time::Instant::now();
    loop {
        let (status, body) = daemon
            .http("POST", "/api/decisions", Some(&call("cargo publish", "s9")))
            .unwrap();
        if status == 200 {
            assert_eq!(
                (body["decision"].as_str(), body["rule"].as_str()),
                (Some("allow"), Some(name.as_str())),
                "{body}"
            );
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "the daemon kept the old policy"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }

    // An allow goes just before the rule that asked for it (every rule above still decides
    // first): `npm` is the 3rd rule now, at line 16.
    let npm = always("npm publish");
    let o = daemon.client(&["grants", "promote", &npm]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("@@ -16,0 +16,7 @@\n+[[rule]]"),
        "{}",
        stdout(&o)
    );
    // A deny below where it would go, which it could take calls from: refused.
    let push = always("git push origin main");
    let o = daemon.client(&["grants", "promote", &push, "--yes"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("the deny rule `no-force` below"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_to_string(&policy).unwrap(), written);

    // Exactly `rm -rf build`: no rule says "exactly".
    let exact = always("rm -rf build");
    let o = daemon.client(&["grants", "promote", &exact, "--yes"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("allows exactly `rm -rf build`"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_to_string(&policy).unwrap(), written);
}

/// `toolgate token` names tokens with roles: the token is printed once; an approver's token
/// lists and answers (the log names it), an agent's is refused there; revoked, it is refused.
#[test]
fn named_tokens_have_roles_from_the_command_line() {
    let data = tempfile::tempdir().unwrap();
    let daemon = DaemonProcess::start(data.path());
    let made = |name: &str, role: &str| {
        let o = daemon.client(&["token", "create", "--name", name, "--role", role]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(stderr(&o).contains("shown this once"), "{}", stderr(&o));
        stdout(&o).trim().to_owned()
    };
    let approver = made("alice", "approver");
    let agent = made("claude", "agent");
    assert_eq!(approver.len(), 64);
    let listed = stdout(&daemon.client(&["token", "list"]));
    assert!(listed.starts_with("alice  approver  (made "), "{listed}");
    assert!(listed.contains("\nclaude  agent  (made "), "{listed}");
    assert!(!listed.contains(&approver));

    let call =
        json!({"tool": "bash", "args": {"command": "cargo publish"}, "context": {"session": "s1"}});
    let (status, body) = daemon.http("POST", "/api/decisions", Some(&call)).unwrap();
    assert_eq!(status, 202, "{body}");
    let id = body["id"].as_str().unwrap().to_owned();
    let as_token = |token: &str, args: &[&str]| {
        Command::new(BIN)
            .args(args)
            .env("TOOLGATE_URL", format!("http://{}", daemon.address))
            .env("TOOLGATE_TOKEN", token)
            .output()
            .unwrap()
    };
    let o = as_token(&agent, &["approvals"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stderr(&o).contains("`approver` role"), "{}", stderr(&o));
    let o = as_token(&approver, &["approvals", "allow", &id, "--by", "not-alice"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (_, audit) = daemon
        .http("GET", "/api/audit?type=permission_resolved", None)
        .unwrap();
    assert_eq!(audit["events"][0]["actor"], "alice", "{audit}");

    assert_eq!(
        stdout(&daemon.client(&["token", "revoke", "alice"])),
        "alice: revoked\n"
    );
    let o = as_token(&approver, &["approvals"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("refused the token"), "{}", stderr(&o));
    let o = daemon.client(&["token", "revoke", "alice"]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn people_answer_list_and_revoke_from_the_command_line() {
    let data = tempfile::tempdir().unwrap();
    let daemon = DaemonProcess::start(data.path());
    let call = |command: &str| json!({"tool": "bash", "args": {"command": command}, "context": {"workspace": "/tmp", "session": "s1"}});
    let (status, _) = daemon
        .http("POST", "/api/decisions", Some(&call("cargo publish")))
        .unwrap();
    assert_eq!(status, 202);

    let o = daemon.client(&["approvals"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let listed = stdout(&o);
    // Each argument on its line, in words what an "always" covers.
    assert!(
        listed.contains("  bash\n    command: cargo publish\n"),
        "{listed}"
    );
    assert!(listed.contains("answers: allow-once, allow-always, reject-once, reject-always"));
    assert!(
        listed.contains(
            "allow-always covers: commands starting with `cargo publish` in this session"
        ),
        "{listed}"
    );
    let id = listed.split_whitespace().next().unwrap().to_owned();
    // One session's requests.
    assert_eq!(
        stdout(&daemon.client(&["approvals", "--session", "s1"])),
        listed
    );
    assert_eq!(
        stdout(&daemon.client(&["approvals", "list", "--session", "s2"])),
        "nothing is waiting in session `s2`\n"
    );
    let o = daemon.client(&["approvals", "deny", &id, "--session", "s1"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "an answer names its request by id"
    );

    // The start of an id names the request, as a short commit id does (from 4 characters).
    let o = daemon.client(&["approvals", "deny", &id[..3]]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("is pending"), "{}", stderr(&o));
    let o = daemon.client(&[
        "approvals",
        "allow",
        &id[..8],
        "--always",
        "--reason",
        "ok here",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let answered = stdout(&o);
    assert!(
        answered.starts_with(&format!(
            "{id}: allow-always\n    remembered: allow commands starting with `cargo publish` of \
             `bash` in session `s1` — \"ok here\" (grant "
        )),
        "{answered}"
    );
    let o = daemon.client(&["approvals", "deny", &id, "--by", "alice"]);
    assert_eq!(o.status.code(), Some(1), "a second answer is a conflict");
    assert!(stderr(&o).contains("no longer pending"), "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    assert_eq!(
        stdout(&daemon.client(&["approvals"])),
        "nothing is waiting\n"
    );

    // The grant answers the next call at once.
    let (status, body) = daemon
        .http(
            "POST",
            "/api/decisions",
            Some(&call("cargo publish --dry-run")),
        )
        .unwrap();
    assert_eq!((status, body["layer"].as_str()), (200, Some("grant")));
    let o = daemon.client(&["grants"]);
    let grants = stdout(&o);
    assert!(
        grants.contains(
            "  allow commands starting with `cargo publish` of `bash` in session `s1` — \"ok \
             here\"  (by cli)"
        ),
        "{grants}"
    );
    let grant = grants.split_whitespace().next().unwrap().to_owned();
    // Listed by session or tool.
    assert_eq!(
        stdout(&daemon.client(&["grants", "--session", "s1", "--tool", "bash"])),
        grants
    );
    assert_eq!(
        stdout(&daemon.client(&["grants", "list", "--tool", "fetch"])),
        "no grants\n"
    );
    // The start of its id names it; who revoked it is logged.
    let o = daemon.client(&["grants", "revoke", &grant[..6], "--json", "--by", "alice"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let revoked: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(revoked, json!({"id": grant, "status": "revoked"}));
    let o = daemon.client(&["tail", "--no-follow", "--json", "--last", "1"]);
    let event: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(
        (event["type"].as_str(), event["actor"].as_str()),
        (Some("grant_revoked"), Some("alice"))
    );
    let o = daemon.client(&["grants", "revoke", "  "]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("a grant's id is needed"),
        "{}",
        stderr(&o)
    );
    let o = daemon.client(&["grants", "revoke", &grant]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no grant"), "{}", stderr(&o));
    let o = daemon.client(&["grants", "revoke", &grant, "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let missing: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(missing["error"]["code"], "not_found", "{missing}");

    let o = daemon.client(&["tail", "--no-follow", "--json"]);
    let kinds: Vec<String> = stdout(&o)
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "permission_requested",
            "permission_resolved",
            "decision",
            "grant_revoked"
        ]
    );
    let o = daemon.client(&["tail", "--no-follow"]);
    assert!(
        stdout(&o).contains(
            "permission_resolved  [s1] bash `cargo publish` allow allow-always cli — approved by cli (allow-always)"
        ),
        "{}",
        stdout(&o)
    );
    // A revocation says which grant, in words.
    assert!(
        stdout(&o).contains(&format!(
            "grant_revoked        [s1] bash grant {grant}: allow commands starting with `cargo \
             publish` of `bash` in session `s1`"
        )),
        "{}",
        stdout(&o)
    );
    let o = daemon.client(&["approvals", "allow", " "]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("a request's id is needed"),
        "{}",
        stderr(&o)
    );
    // The newest events only, in order, as `tail -n` shows them.
    let o = daemon.client(&["tail", "--no-follow", "--json", "--last", "2"]);
    let kinds: Vec<String> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["type"].to_string())
        .collect();
    assert_eq!(
        kinds,
        ["\"decision\"", "\"grant_revoked\""],
        "{}",
        stderr(&o)
    );
    let o = daemon.client(&["tail", "--last", "2", "--after", "1"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "--last and --after exclude each other"
    );
    // One session's events; an unknown session is said, not waited on.
    let o = daemon.client(&["tail", "--no-follow", "--json", "--session", "s1"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        stdout(&o).lines().count(),
        4,
        "the revocation of a session's grant is the session's: {}",
        stdout(&o)
    );
    for follow in [true, false] {
        let mut args = vec!["tail", "--session", "a/b&c"];
        if !follow {
            args.push("--no-follow");
        }
        let o = daemon.client(&args);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains("no session `a/b&c`"), "{}", stderr(&o));
    }

    let o = Command::new(BIN)
        .args(["approvals", "--url", "http://127.0.0.1:1"])
        .env("TOOLGATE_TOKEN", "x")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("cannot reach the daemon at http://127.0.0.1:1 (given with --url)")
    );

    // A token file others can read is refused, as the daemon refuses it.
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("token");
    std::fs::write(&shared, "x".repeat(40)).unwrap();
    std::fs::set_permissions(&shared, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let o = Command::new(BIN)
        .args(["approvals", "--url", "http://127.0.0.1:1", "--token-file"])
        .arg(&shared)
        .env_remove("TOOLGATE_TOKEN")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("can be read by others (mode 644)"),
        "{}",
        stderr(&o)
    );

    // An HTTP server that is not toolgate is said to be one.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        use std::io::{Read, Write};
        if let Ok((mut stream, _)) = listener.accept() {
            let mut buffer = [0u8; 4096];
            let _ = stream.read(&mut buffer);
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
            );
        }
    });
    let o = Command::new(BIN)
        .args(["approvals", "--url", &format!("http://{address}")])
        .env("TOOLGATE_TOKEN", "x")
        .output()
        .unwrap();
    server.join().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("answered 200 with something that is not JSON")
            && stderr(&o).contains("is it a toolgate daemon?"),
        "{}",
        stderr(&o)
    );
}

/// The terminal list folds what the agent wrote (showing its start and its end), says where a
/// request comes from, and an
/// answer the daemon refuses, or a token it refuses, is said on stderr with exit code 2.
#[test]
fn the_terminal_list_folds_long_values_and_refusals_are_said_on_stderr() {
    let data = tempfile::tempdir().unwrap();
    let daemon = DaemonProcess::start(data.path());
    let long = format!("cargo publish {} && git push -f", "x".repeat(5000));
    let call = json!({"tool": "bash", "args": {"command": long}, "context": {"workspace": "/tmp"}});
    let (status, body) = daemon.http("POST", "/api/decisions", Some(&call)).unwrap();
    assert_eq!(status, 202, "{body}");
    let id = body["id"].as_str().unwrap().to_owned();

    let listed = stdout(&daemon.client(&["approvals"]));
    // Its start and its end, where a `&& …` would be.
    assert!(
        listed.contains("    command: cargo publish xxx"),
        "{listed}"
    );
    assert!(
        listed.contains("xxx … (4709 more characters; --json shows them) … xxx"),
        "{listed}"
    );
    assert!(listed.contains("xxx && git push -f\n"), "{listed}");
    assert!(listed.len() < 1000, "{listed}");
    assert!(listed.contains("    in: workspace /tmp"), "{listed}");
    assert!(
        listed.contains("answers: allow-once, reject-once"),
        "{listed}"
    );
    let all = stdout(&daemon.client(&["approvals", "--json"]));
    assert!(all.contains(&long), "--json shows everything");

    // "always" is not offered to a call without a session.
    let o = daemon.client(&["approvals", "allow", &id, "--always"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("not offered"), "{}", stderr(&o));
    assert_eq!(stdout(&o), "");

    let o = Command::new(BIN)
        .args(["approvals"])
        .env("TOOLGATE_URL", format!("http://{}", daemon.address))
        .env("TOOLGATE_TOKEN", "not-the-token")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("the daemon refused the token"),
        "{}",
        stderr(&o)
    );
    // With --json, every client prints the daemon's error body on stdout as it is (what a
    // script parses), and says what went wrong on stderr.
    for args in [
        &["approvals", "--json"][..],
        &["approvals", "allow", &id, "--json"],
        &["grants", "--json"],
        &["grants", "revoke", "x", "--json"],
        &["tail", "--json"],
        &["tail", "--json", "--no-follow"],
        &["tail", "--json", "--last", "3"],
    ] {
        let o = Command::new(BIN)
            .args(args)
            .env("TOOLGATE_URL", format!("http://{}", daemon.address))
            .env("TOOLGATE_TOKEN", "not-the-token")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let body: Value = serde_json::from_str(&stdout(&o))
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {:?}", stdout(&o)));
        assert_eq!(body["error"]["code"], "unauthorized", "{args:?}: {body}");
        assert!(
            stderr(&o).contains("the daemon refused the token"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
}

/// `toolgate tail` follows the daemon across a restart, resuming after the last event it
/// printed (nothing twice, nothing missed), and when the daemon is gone for good it says so
/// and exits 2 instead of ending as if all were well.
/// `toolgate tail --json` following the daemon at `address` with the token in `data`, giving up
/// after `retry_for` seconds without it; the events it prints, as they come.
fn follow(
    data: &Path,
    address: &str,
    retry_for: &str,
) -> (Killed, std::sync::mpsc::Receiver<Value>) {
    use std::io::BufRead;
    let mut tail = Killed(
        Command::new(BIN)
            .args(["tail", "--json", "--retry-for", retry_for])
            .env("TOOLGATE_DATA_DIR", data)
            .env("TOOLGATE_URL", format!("http://{address}"))
            .env_remove("TOOLGATE_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let (lines, seen) = std::sync::mpsc::channel();
    let output = tail.0.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(output)
            .lines()
            .map_while(Result::ok)
        {
            let event: Value = serde_json::from_str(&line).unwrap();
            if lines.send(event).is_err() {
                return;
            }
        }
    });
    (tail, seen)
}

/// What a tail process said on stderr, once stopped (killed if it still runs).
fn said_by(tail: &mut Killed) -> String {
    let _ = tail.0.kill();
    let _ = tail.0.wait();
    let mut said = String::new();
    if let Some(mut stderr) = tail.0.stderr.take() {
        let _ = stderr.read_to_string(&mut said);
    }
    said
}

#[test]
fn tail_follows_the_daemon_across_a_restart_and_says_when_it_is_gone() {
    let data = tempfile::tempdir().unwrap();
    let mut daemon = DaemonProcess::start(data.path());
    let address = daemon.address.clone();
    let call = |daemon: &DaemonProcess, n: usize| {
        let call = json!({"tool": "bash", "args": {"command": format!("echo {n}")}, "context": {"workspace": "/tmp", "session": "s1"}});
        let (status, _) = daemon.http("POST", "/api/decisions", Some(&call)).unwrap();
        assert_eq!(status, 200);
    };
    for n in 1..=12 {
        call(&daemon, n);
    }
    // Without --after or --last: the newest ten, as `tail` starts; --after 0: the whole log.
    let printed = |args: &[&str]| -> Vec<i64> {
        let o = Command::new(BIN)
            .args(args)
            .env("TOOLGATE_DATA_DIR", data.path())
            .env("TOOLGATE_URL", format!("http://{address}"))
            .env_remove("TOOLGATE_TOKEN")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        json_lines(&o)
            .iter()
            .map(|e| e["seq"].as_i64().unwrap())
            .collect()
    };
    assert_eq!(
        printed(&["tail", "--json", "--no-follow"]),
        (3..=12).collect::<Vec<_>>()
    );
    assert_eq!(
        printed(&["tail", "--json", "--no-follow", "--after", "0"]),
        (1..=12).collect::<Vec<_>>()
    );
    assert_eq!(
        printed(&["tail", "--json", "--no-follow", "--after", "11"]),
        [12]
    );
    // Long enough for a restart on a loaded machine (a whole test suite at once: once it took
    // more than 8 s, and the tail gave up before the daemon was back).
    let (mut tail, seen) = follow(data.path(), &address, "20");
    // The next event tail prints; when none comes, what it said on stderr.
    let next = |tail: &mut Killed| match seen.recv_timeout(Duration::from_secs(20)) {
        Ok(event) => event,
        Err(_) => panic!("tail printed nothing more; it said: {}", said_by(tail)),
    };
    for seq in 3..=12 {
        assert_eq!(next(&mut tail)["seq"], seq, "the newest ten first");
    }

    daemon.signal("TERM");
    assert!(daemon.wait_exit(Duration::from_secs(20)).is_some());
    let mut daemon = DaemonProcess::start_with(data.path(), &["--listen", &address]);
    call(&daemon, 13);
    assert_eq!(
        next(&mut tail)["seq"],
        13,
        "resumed after the last event, once"
    );

    daemon.kill();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = tail.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "tail did not give up"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let said = said_by(&mut tail);
    assert_eq!(status.code(), Some(2), "{said}");
    assert!(said.contains("reconnecting to http://"), "{said}");
    assert!(
        said.contains("resume with `toolgate tail --after 13`"),
        "{said}"
    );
}

/// A daemon restored from a backup while `tail` follows it: its log ends before what tail
/// printed, which the daemon says (409 `ahead_of_log`) and tail says on stderr, then follows
/// the restored log from its end (it would otherwise skip every event up to the old number).
#[test]
fn tail_says_when_the_daemon_comes_back_with_an_older_log() {
    let data = tempfile::tempdir().unwrap();
    let backup = tempfile::tempdir().unwrap();
    let call = |daemon: &DaemonProcess, n: usize| {
        let call = json!({"tool": "bash", "args": {"command": format!("echo {n}")}, "context": {"workspace": "/tmp", "session": "s1"}});
        let (status, _) = daemon.http("POST", "/api/decisions", Some(&call)).unwrap();
        assert_eq!(status, 200);
    };
    let copy = |from: &Path, to: &Path| {
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_file() {
                std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
            }
        }
    };
    let mut daemon = DaemonProcess::start(data.path());
    let address = daemon.address.clone();
    for n in 1..=2 {
        call(&daemon, n);
    }
    daemon.signal("TERM");
    assert!(daemon.wait_exit(Duration::from_secs(20)).is_some());
    copy(data.path(), backup.path());
    let mut daemon = DaemonProcess::start_with(data.path(), &["--listen", &address]);
    for n in 3..=6 {
        call(&daemon, n);
    }
    let (mut tail, seen) = follow(data.path(), &address, "20");
    // The next event tail prints; when none comes, what it said on stderr.
    let next = |tail: &mut Killed| match seen.recv_timeout(Duration::from_secs(20)) {
        Ok(event) => event,
        Err(_) => panic!("tail printed nothing more; it said: {}", said_by(tail)),
    };
    let newest = (0..6)
        .map(|_| next(&mut tail)["seq"].as_i64().unwrap())
        .max()
        .unwrap();
    assert_eq!(newest, 6);

    // Restored from the backup: its log ends at event 2.
    daemon.signal("TERM");
    assert!(daemon.wait_exit(Duration::from_secs(20)).is_some());
    for entry in std::fs::read_dir(data.path()).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::remove_file(entry.path()).unwrap();
        }
    }
    copy(backup.path(), data.path());
    let daemon = DaemonProcess::start_with(data.path(), &["--listen", &address]);
    let (status, stream) = daemon.http("GET", "/api/events?after=6", None).unwrap();
    assert_eq!(
        (status, stream["error"]["code"].as_str()),
        (409, Some("ahead_of_log")),
        "{stream}"
    );
    call(&daemon, 7);
    // The restored log's newest events, then on: the event logged since it came back is not
    // skipped, whenever tail reconnected.
    let printed: Vec<i64> = (0..3)
        .map(|_| next(&mut tail)["seq"].as_i64().unwrap())
        .collect();
    assert_eq!(printed, [1, 2, 3]);
    let said = said_by(&mut tail);
    assert!(
        said.contains("ends before #6: it is not the log printed so far"),
        "{said}"
    );
    // A number given with --after past the log's end is said to be that one.
    let mut given = Killed(
        Command::new(BIN)
            .args(["tail", "--json", "--after", "999"])
            .env("TOOLGATE_DATA_DIR", data.path())
            .env("TOOLGATE_URL", format!("http://{address}"))
            .env_remove("TOOLGATE_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let _ = wait_for_line(given.0.stdout.take().unwrap(), "{");
    let said = said_by(&mut given);
    assert!(
        said.contains("ends before #999: the number given with --after"),
        "{said}"
    );
}

/// `toolgate serve` with the shipped policy and the settings file `config`, nothing from the
/// environment.
fn serve_with(config: &Path) -> Command {
    let mut command = Command::new(BIN);
    command
        .args([
            "serve",
            "--isolated",
            "--policy",
            "examples/policy.toml",
            "--config",
        ])
        .arg(config)
        .current_dir(common::root())
        .env_remove("TOOLGATE_LISTEN")
        .env_remove("TOOLGATE_DATA_DIR");
    command
}

/// `toolgate serve --config FILE`: settings the command line does not give; flags win; a bad
/// file names its line and column.
#[test]
fn serve_reads_its_settings_file() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    // A bad settings file: exit 2, and what stderr says.
    let refused = |text: &str| {
        std::fs::write(&bad, text).unwrap();
        let output = serve_with(&bad).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{text}");
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    for (text, said) in [
        (
            "durability = \"full\"\nlisen = \"127.0.0.1:0\"\n",
            "bad.toml:2:1: unknown field `lisen`",
        ),
        (
            "durability = \"fast\"\n",
            "bad.toml:1:14: unknown variant `fast`",
        ),
        (
            "retain = \"5m\"\n",
            "bad.toml:1:10: `5m` is shorter than the shortest retention, 1h",
        ),
        // A `hosts` entry names where it is written.
        (
            "durability = \"full\"\nhosts = [\"ok.lan\", \"localhost\"]\n",
            "bad.toml:2:20: `hosts` entry `localhost` is not a host name",
        ),
        (
            "listen = \"localhost:x\"\n",
            "bad.toml:1:10: `x` is not a port",
        ),
        (
            "max_anonymous_connections = 0\n",
            "bad.toml: `max_anonymous_connections` is at least 1",
        ),
    ] {
        let stderr = refused(text);
        assert!(stderr.contains(said), "{stderr}");
    }
    // The keys it knows are named.
    assert!(
        refused("lisen = 1\n").contains("`listen`"),
        "the keys it knows"
    );

    let good = dir.path().join("daemon.toml");
    std::fs::write(
        &good,
        "listen = \"localhost:0\"\ndata_dir = \"state\"\nhosts = [\"toolgate.lan:7811\"]\ndurability = \"process\"\nmax_anonymous_connections = 64\nretain = \"90d\"\n",
    )
    .unwrap();
    let child = serve_with(&good)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Killed(child);
    let (_, seen) = wait_for_line(child.0.stdout.take().unwrap(), "  policy: ");
    // Which policy decides is said at start.
    assert_eq!(
        seen.last().unwrap(),
        "  policy: toolgate:default, examples/policy.toml"
    );
    let store = seen
        .iter()
        .find(|l| l.starts_with("  store: "))
        .unwrap()
        .clone();
    // The relative data directory is the file's neighbour.
    assert_eq!(
        store.trim(),
        format!(
            "  store: {}",
            dir.path().join("state/toolgate.db").display()
        )
        .trim()
    );
    assert!(dir.path().join("state/token").exists());
    let address = seen
        .iter()
        .find_map(|l| l.strip_prefix("toolgate is listening on http://"))
        .unwrap()
        .to_owned();
    // The file's extra Host is accepted, another is not.
    for (host, status) in [("toolgate.lan:7811", "200"), ("evil.lan:7811", "403")] {
        let response = common::raw_get(&address, host, "/api/health");
        assert!(
            response.starts_with(&format!("HTTP/1.1 {status}")),
            "{host}: {response}"
        );
    }
}

/// The command-line clients find a daemon configured by its settings file: its address and
/// its data directory (so its token) come from the same `daemon.toml`.
#[test]
fn clients_find_the_daemon_its_settings_file_describes() {
    let config_home = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let file = config_home.path().join("toolgate/daemon.toml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(
        &file,
        format!("listen = \"127.0.0.1:{port}\"\ndata_dir = \"state\"\n"),
    )
    .unwrap();
    let child = serve_with(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Killed(child);
    wait_for_line(child.0.stdout.take().unwrap(), "  store: ");
    let output = Command::new(BIN)
        .arg("approvals")
        .env("XDG_CONFIG_HOME", config_home.path())
        .env_remove("TOOLGATE_URL")
        .env_remove("TOOLGATE_DATA_DIR")
        .env_remove("TOOLGATE_TOKEN")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output).trim(), "nothing is waiting");
}

/// SIGHUP loads the policy again, as daemons do: the daemon goes on, a request its new policy
/// decides is answered, and the log says the policy was reloaded; a policy that fails to load
/// leaves the one in force, and `GET /api/policy` says why.
#[test]
fn sighup_loads_the_policy_again() {
    let data = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let policy = folder.path().join("policy.toml");
    let asking = "version = 1\n[[rule]]\nname = \"ask-push\"\ndecision = \"ask\"\ncommand = [\"git push\"]\n";
    std::fs::write(&policy, asking).unwrap();
    let mut daemon = DaemonProcess::start_with_policy(data.path(), policy.to_str().unwrap(), &[]);
    let call =
        json!({"tool": "bash", "args": {"command": "git push"}, "context": {"session": "s1"}});
    let (status, body) = daemon.http("POST", "/api/decisions", Some(&call)).unwrap();
    assert_eq!(status, 202, "{body}");
    let id = body["id"].as_str().unwrap().to_owned();
    // Unchanged, it is loaded again all the same (the file watch has nothing to see).
    daemon.signal("HUP");
    let reloaded = |daemon: &DaemonProcess| {
        let (_, audit) = daemon
            .http("GET", "/api/audit?type=policy_reloaded", None)
            .unwrap();
        audit["events"].as_array().map_or(0, Vec::len)
    };
    let started = std::time::Instant::now();
    while reloaded(&daemon) == 0 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "no reload on SIGHUP"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        daemon
            .wait_exit(std::time::Duration::from_millis(200))
            .is_none(),
        "SIGHUP stopped it"
    );
    let (_, decision) = daemon
        .http("GET", &format!("/api/decisions/{id}"), None)
        .unwrap();
    assert_eq!(decision["status"], "pending", "{decision}");

    // A broken policy: the one in force stays, and the daemon says why.
    std::fs::write(&policy, "version = 1\nmode = \"sometimes\"\n").unwrap();
    daemon.signal("HUP");
    let started = std::time::Instant::now();
    let failed = loop {
        let (_, status) = daemon.http("GET", "/api/policy", None).unwrap();
        if status.get("reload_failed").is_some() {
            break status;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "{status}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(
        failed["reload_failed"]["reason"]
            .as_str()
            .unwrap()
            .contains("policy.toml:2:"),
        "{failed}"
    );
    let (status, _) = daemon.http("POST", "/api/decisions", Some(&call)).unwrap();
    assert_eq!(status, 202, "the old policy still asks");
    // `toolgate doctor` says it too.
    let doctor = Command::new(BIN)
        .arg("doctor")
        .env("TOOLGATE_DATA_DIR", data.path())
        .env_remove("TOOLGATE_URL")
        .env_remove("TOOLGATE_TOKEN")
        .current_dir(folder.path())
        .output()
        .unwrap();
    let said = stdout(&doctor);
    assert!(said.contains("ITS POLICY DID NOT RELOAD"), "{said}");
    assert!(said.contains("policy.toml:2:"), "{said}");
}

/// Asked to stop (Ctrl-C, or SIGTERM from a service manager), the daemon stops promptly even
/// while the page's event stream and a long poll are open: both end, and it exits 0.
#[test]
fn serve_stops_when_asked_with_streams_and_polls_open() {
    use std::io::{BufRead, BufReader, Write};
    for signal in ["INT", "TERM"] {
        let data = tempfile::tempdir().unwrap();
        let mut daemon = DaemonProcess::start(data.path());
        let token = daemon.token();
        let call = json!({"tool": "bash", "args": {"command": "cargo publish"}, "context": {"session": "s1"}});
        let (status, body) = daemon.http("POST", "/api/decisions", Some(&call)).unwrap();
        assert_eq!(status, 202);
        let id = body["id"].as_str().unwrap().to_owned();

        let open = |path: &str| {
            let mut stream = std::net::TcpStream::connect(&daemon.address).unwrap();
            stream
                .set_read_timeout(Some(std::time::Duration::from_secs(20)))
                .unwrap();
            write!(
                stream,
                "GET {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\n\r\n",
                daemon.address
            )
            .unwrap();
            BufReader::new(stream)
        };
        let mut events = open("/api/events");
        let mut line = String::new();
        events.read_line(&mut line).unwrap();
        assert!(line.starts_with("HTTP/1.1 200"), "{line}");
        let poll = open(&format!("/api/decisions/{id}?wait=60"));
        std::thread::sleep(std::time::Duration::from_millis(200));

        daemon.signal(signal);
        let status = daemon
            .wait_exit(std::time::Duration::from_secs(15))
            .unwrap_or_else(|| panic!("SIG{signal}: still running with a stream open"));
        assert_eq!(status.code(), Some(0), "SIG{signal}");
        // The stream ended (the daemon closed it), rather than timing out.
        let mut rest = String::new();
        let read = std::io::Read::read_to_string(&mut events, &mut rest);
        assert!(
            read.is_ok(),
            "SIG{signal}: the event stream was closed: {read:?}"
        );
        // The poll was answered with the decision as it stands.
        let mut answered = String::new();
        let _ = std::io::Read::read_to_string(&mut { poll }, &mut answered);
        assert!(
            answered.starts_with("HTTP/1.1 200"),
            "SIG{signal}: {answered}"
        );
        assert!(
            answered.contains("\"status\":\"pending\""),
            "SIG{signal}: {answered}"
        );
    }
}

/// What an agent wrote (arguments, a reason) reaches the person's terminal escaped: it cannot
/// clear the screen, retitle the window, reorder text or fake a line.
#[test]
fn the_terminal_clients_print_what_agents_wrote_escaped() {
    let data = tempfile::tempdir().unwrap();
    let daemon = DaemonProcess::start(data.path());
    let call = json!({"tool": "bash",
        "args": {"command": "cargo publish \u{1b}]0;pwn\u{7} \u{202e}txt.exe\n  [1] allow"},
        "context": {"session": "s1"}});
    let (status, _) = daemon.http("POST", "/api/decisions", Some(&call)).unwrap();
    assert_eq!(status, 202);
    let hostile =
        |text: &str| text.contains('\u{1b}') || text.contains('\u{202e}') || text.contains('\u{7}');

    let listed = stdout(&daemon.client(&["approvals"]));
    assert!(!hostile(&listed), "{listed:?}");
    assert!(listed.contains("\\u{202e}txt.exe"), "{listed}");
    let id = listed.split_whitespace().next().unwrap().to_owned();
    let o = daemon.client(&[
        "approvals",
        "deny",
        &id,
        "--reason",
        "\u{1b}[2Jgone\rfake line",
        "--by",
        "alice\u{1b}[2J",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    let tail = stdout(&daemon.client(&["tail", "--no-follow"]));
    assert!(!hostile(&tail), "{tail:?}");
    assert!(!tail.contains('\r'), "{tail:?}");
    assert!(tail.contains("\\u{1b}[2Jgone\\rfake line"), "{tail}");
    // Who answered, as they said it (the daemon drops control characters from a name).
    assert!(tail.contains(" deny reject-once alice[2J — "), "{tail}");
    let grants = stdout(&daemon.client(&["grants"]));
    assert!(!hostile(&grants), "{grants:?}");
}

/// A daemon started with its own data directory and port is reached with `--data-dir` alone
/// (it writes its address there, readable by its owner only), and the clients' flags may follow
/// the subcommand; without them, the message says how.
#[test]
fn the_clients_find_a_daemon_by_its_data_directory() {
    let data = tempfile::tempdir().unwrap();
    let daemon = DaemonProcess::start(data.path());
    let written = std::fs::read_to_string(data.path().join("address")).unwrap();
    assert_eq!(written, format!("http://{}\n", daemon.address));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(data.path().join("address"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        Command::new(BIN)
            .args(args)
            .env("HOME", home.path())
            .env_remove("TOOLGATE_URL")
            .env_remove("TOOLGATE_TOKEN")
            .env_remove("TOOLGATE_DATA_DIR")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_CACHE_HOME")
            .env_remove("XDG_DATA_HOME")
            .output()
            .unwrap()
    };
    let dir = data.path().to_str().unwrap();
    for args in [
        &["approvals", "--data-dir", dir][..],
        &["approvals", "list", "--data-dir", dir],
        &["grants", "list", "--data-dir", dir, "--json"],
        &["tail", "--no-follow", "--data-dir", dir],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    }
    // A fresh sign-in address for the page, spent by signing in.
    let o = run(&["page", "--data-dir", dir]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let printed = stdout(&o);
    let prefix = format!("open the approval page: http://{}/#login=", daemon.address);
    let code = printed
        .lines()
        .next()
        .and_then(|line| line.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("{printed}"))
        .to_owned();
    assert!(
        printed.contains("signs you in once, within 10 minutes"),
        "{printed}"
    );
    let (status, body) = daemon
        .http("POST", "/api/login", Some(&json!({"code": code})))
        .unwrap();
    assert_eq!(status, 200, "{body}");
    let (status, _) = daemon
        .http("POST", "/api/login", Some(&json!({"code": code})))
        .unwrap();
    assert_eq!(status, 401, "spent");
    let o = run(&["approvals"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("reached with `--data-dir DIR` here too"),
        "{}",
        stderr(&o)
    );
    // A daemon that stops takes its address away: the port may be another program's next.
    let mut daemon = daemon;
    daemon.signal("TERM");
    assert!(daemon.wait_exit(Duration::from_secs(30)).is_some());
    assert!(!data.path().join("address").exists());
    assert!(
        std::fs::read_dir(data.path()).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains(".new")),
        "no file is left half written"
    );
}

/// `toolgate hook claude`: Claude Code's `PreToolUse` input in, its decision out; the project's
/// policy is found from the project folder; whatever goes wrong is a `deny`.
#[test]
fn hook_speaks_claude_codes_pre_tool_use() {
    use std::io::Write;
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let project = std::fs::canonicalize(project.path()).unwrap();
    std::fs::create_dir_all(project.join("src")).unwrap();
    let hook = |args: &[&str], input: &str, project_dir: Option<&Path>| -> Value {
        let mut command = Command::new(BIN);
        command
            .arg("hook")
            .arg("claude")
            .args(args)
            .current_dir(root())
            .env("HOME", home.path())
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_CACHE_HOME")
            .env_remove("TOOLGATE_CONFIG_DIR")
            .env_remove("CLAUDE_PROJECT_DIR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        if let Some(dir) = project_dir {
            command.env("CLAUDE_PROJECT_DIR", dir);
        }
        let mut child = command.spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let output = child.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{input}");
        let out: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(out["hookSpecificOutput"]["hookEventName"], "PreToolUse");
        out["hookSpecificOutput"].clone()
    };
    let shipped = ["--isolated", "--policy", "examples/policy.toml"];
    let input = |tool: &str, args: Value| {
        json!({"session_id": "s1", "cwd": project, "hook_event_name": "PreToolUse",
               "tool_name": tool, "tool_input": args})
        .to_string()
    };
    let decided = |out: Value| {
        (
            out["permissionDecision"].as_str().unwrap().to_owned(),
            out["permissionDecisionReason"].as_str().unwrap().to_owned(),
        )
    };
    let (decision, reason) = decided(hook(
        &shipped,
        &input(
            "Bash",
            json!({"command": "cat config/.env", "description": "x"}),
        ),
        None,
    ));
    assert_eq!(decision, "deny");
    assert_eq!(
        reason,
        "toolgate (no-secrets): secrets stay on this machine"
    );
    let file = project.join("src/main.rs").display().to_string();
    assert_eq!(
        decided(hook(
            &shipped,
            &input("Read", json!({"file_path": file})),
            None
        ))
        .0,
        "allow"
    );
    assert_eq!(
        decided(hook(
            &shipped,
            &input("Bash", json!({"command": "git push origin main"})),
            None
        ))
        .0,
        "ask"
    );
    // An MCP tool is its server's: the fetch server's profile reads its URL.
    assert_eq!(
        decided(hook(
            &shipped,
            &input("mcp__fetch__fetch", json!({"url": "https://docs.rs/serde"})),
            None
        )),
        (
            "allow".to_owned(),
            "toolgate (documentation): documentation, package registries and code hosting are read-only to the agent".to_owned()
        )
    );
    assert_eq!(
        decided(hook(
            &shipped,
            &input("Read", json!({"file_path": "/etc/passwd"})),
            None
        ))
        .0,
        "deny"
    );
    // Claude Code names the project; the session may have moved below it.
    let below = json!({"cwd": project.join("src"), "tool_name": "Read",
                       "tool_input": {"file_path": project.join("README.md")}})
    .to_string();
    assert_eq!(decided(hook(&shipped, &below, Some(&project))).0, "allow");
    assert_eq!(decided(hook(&shipped, &below, None)).0, "deny");
    // The project's own policy, found from the project.
    std::fs::create_dir_all(project.join(".toolgate")).unwrap();
    std::fs::write(
        project.join(".toolgate/policy.toml"),
        "[[rule]]\nname = \"no-reading\"\ndecision = \"deny\"\ntool = \"Read\"\n",
    )
    .unwrap();
    assert_eq!(
        decided(hook(&[], &input("Read", json!({"file_path": file})), None)),
        (
            "deny".to_owned(),
            "toolgate (no-reading): matched rule `no-reading`".to_owned()
        )
    );
    // Whatever goes wrong refuses the call: a hook that fails otherwise lets it through.
    for (input, said) in [
        ("not json", "is not JSON"),
        ("{\"cwd\": \"/tmp\"}", "has no `tool_name`"),
        (
            "{\"tool_name\": \"Bash\", \"tool_input\": \"ls\", \"cwd\": \"/tmp\"}",
            "is not an object",
        ),
        ("{\"tool_name\": \"Bash\"}", "says where the project is"),
    ] {
        let (decision, reason) = decided(hook(&shipped, input, None));
        assert_eq!(decision, "deny", "{input}");
        assert!(reason.contains(said), "{input}: {reason}");
    }
    std::fs::write(
        project.join(".toolgate/policy.toml"),
        "[[rule]]\nname = 1\n",
    )
    .unwrap();
    let (decision, reason) = decided(hook(&[], &input("Read", json!({"file_path": file})), None));
    assert_eq!(decision, "deny");
    assert!(reason.contains("the policy does not load"), "{reason}");
}

/// `toolgate hook claude --daemon`: the daemon decides; its ask waits on the page, and a person's
/// answer there is the hook's; nobody answering in time leaves it to Claude Code's prompt; no
/// daemon is Claude Code's prompt too.
#[test]
fn the_hook_asks_the_daemon_and_waits_for_the_page() {
    use std::io::Write;
    let data = tempfile::tempdir().unwrap();
    let daemon = DaemonProcess::start(data.path());
    let project = tempfile::tempdir().unwrap();
    let project = std::fs::canonicalize(project.path()).unwrap();
    let url = format!("http://{}", daemon.address);
    let spawn = |command: &str, wait: &str| {
        let mut child = Command::new(BIN)
            .args(["hook", "claude", "--daemon", "--wait", wait, "--url", &url])
            .arg("--data-dir")
            .arg(data.path())
            .env_remove("TOOLGATE_TOKEN")
            .env("CLAUDE_PROJECT_DIR", &project)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let input = json!({"session_id": "claude-1", "cwd": project, "tool_name": "Bash",
                           "tool_input": {"command": command}});
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.to_string().as_bytes())
            .unwrap();
        child
    };
    let decided = |child: std::process::Child| {
        let output = child.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(0));
        let out: Value = serde_json::from_slice(&output.stdout).unwrap();
        (
            out["hookSpecificOutput"]["permissionDecision"]
                .as_str()
                .unwrap()
                .to_owned(),
            out["hookSpecificOutput"]["permissionDecisionReason"]
                .as_str()
                .unwrap()
                .to_owned(),
        )
    };
    // Decided at once by the daemon's policy.
    assert_eq!(decided(spawn("cat config/.env", "5")).0, "deny");
    assert_eq!(decided(spawn("git status", "5")).0, "allow");
    // An ask waits on the page; answered there, the hook says so.
    let waiting = spawn("npm publish", "30");
    let id = (0..100)
        .find_map(|_| {
            let (_, pending) = daemon.http("GET", "/api/pending", None).unwrap();
            let id = pending["pending"][0]["id"].as_str().map(str::to_owned);
            if id.is_none() {
                std::thread::sleep(Duration::from_millis(100));
            }
            id
        })
        .expect("the hook's call waits on the page");
    let (status, _) = daemon
        .http(
            "POST",
            &format!("/api/approvals/{id}"),
            Some(&json!({"decision": "allow-once"})),
        )
        .unwrap();
    assert_eq!(status, 200);
    let (decision, reason) = decided(waiting);
    assert_eq!(decision, "allow");
    assert!(reason.contains("approved by"), "{reason}");
    // Nobody answers in time: Claude Code's own prompt asks, and the call is withdrawn from
    // the page (recorded as withdrawn: the agent's prompt decides it).
    let (decision, reason) = decided(spawn("npm publish", "0.5"));
    assert_eq!(decision, "ask");
    assert!(
        reason.contains("nobody answered on the approval page in time"),
        "{reason}"
    );
    assert!(reason.contains("it is withdrawn from the page"), "{reason}");
    let (_, pending) = daemon.http("GET", "/api/pending", None).unwrap();
    assert_eq!(pending["total"], 0, "{pending}");
    let (_, audit) = daemon
        .http("GET", "/api/audit?type=permission_resolved&last=1", None)
        .unwrap();
    let withdrawn = &audit["events"][0];
    assert_eq!(
        (
            withdrawn["reason"].as_str(),
            withdrawn["actor"].as_str(),
            withdrawn["layer"].as_str(),
            withdrawn.get("decision")
        ),
        (
            Some("Permission request was cancelled."),
            Some("requester"),
            Some("withdrawn"),
            None
        ),
        "recorded as withdrawn, not as a refusal: {audit}"
    );
    // No daemon: Claude Code's own prompt asks.
    drop(daemon);
    let (decision, reason) = decided(spawn("git status", "1"));
    assert_eq!(decision, "ask");
    assert!(reason.contains("cannot ask the daemon"), "{reason}");
}

/// toolgate's cache folder (what it remembers of policies it checked, the sandbox's plans) is
/// its own data: no tool call reads or writes it — an agent could otherwise forge what a later
/// hook or sandbox trusts.
#[test]
fn toolgates_cache_is_its_own_data() {
    let dir = tempfile::tempdir().unwrap();
    let cache = std::fs::canonicalize(dir.path()).unwrap();
    let kept = cache.join("toolgate/checked/0123.sandbox.json");
    for call in [
        json!({"tool": "write_file", "args": {"path": kept.display().to_string(), "content": "{}"},
               "context": {"workspace": cache.display().to_string()}}),
        json!({"tool": "bash", "args": {"command": format!("cat {}", kept.display())},
               "context": {"workspace": "/srv/app"}}),
    ] {
        let mut child = Command::new(BIN)
            .args(["check", "--isolated", "-"])
            .env("XDG_CACHE_HOME", &cache)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(call.to_string().as_bytes())
            .unwrap();
        let output = child.wait_with_output().unwrap();
        let result: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(result["decision"], "deny", "{result}");
        assert_eq!(result["rule"], "protected-path", "{result}");
    }
}

/// A token kept outside the data directory (`--token-file`, as daemons sharing one database
/// do) is made there, private; clients find it through the settings file's `token_file`.
#[test]
fn a_token_file_named_in_the_settings_reaches_the_daemon() {
    let data = tempfile::tempdir().unwrap();
    let shared = tempfile::tempdir().unwrap();
    let token = shared.path().join("team.token");
    let daemon = DaemonProcess::start_with(data.path(), &["--token-file", token.to_str().unwrap()]);
    assert!(!data.path().join("token").exists());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&token).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let config = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(config.path().join("toolgate")).unwrap();
    std::fs::write(
        config.path().join("toolgate/daemon.toml"),
        format!(
            "data_dir = {:?}\ntoken_file = {:?}\n",
            data.path().display().to_string(),
            token.display().to_string()
        ),
    )
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    let o = Command::new(BIN)
        .args(["approvals", "list"])
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", config.path())
        .env_remove("TOOLGATE_URL")
        .env_remove("TOOLGATE_TOKEN")
        .env_remove("TOOLGATE_DATA_DIR")
        .env_remove("XDG_DATA_HOME")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        daemon.token(),
        std::fs::read_to_string(&token).unwrap().trim()
    );
}

/// `toolgate replay` re-evaluates the calls of the audit log under another policy: a recorded
/// log of a few thousand calls (three days of ordinary work and attacks, twice, through a real
/// daemon, some asks answered by a person) replayed under the same policy changes nothing, and
/// under another the changes are exactly those `toolgate check` finds between what the daemon
/// answered then and what the other policy decides; the same from a file of the log's records,
/// for one session, and since a time. `lint --against-log` names the rules no call matched and
/// a rule that would deny what a person allowed.
#[test]
fn a_replay_of_the_log_under_another_policy_shows_what_would_change() {
    let data = tempfile::tempdir().unwrap();
    let daemon = DaemonProcess::start(data.path());
    let home = std::env::var("HOME").unwrap_or_default();
    let mut calls = Vec::new();
    for round in ["a", "b"] {
        for day in ["python", "typescript", "rust"] {
            for kind in ["ordinary", "attacks"] {
                let text =
                    std::fs::read_to_string(root().join(format!("tests/day/{day}/{kind}.jsonl")))
                        .unwrap();
                let workspace = root().join(format!("tests/day/{day}/workspace"));
                for line in text
                    .lines()
                    .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
                {
                    let line = line
                        .replace("__WS__", &workspace.display().to_string())
                        .replace("__HOME__", &home);
                    let mut call = serde_json::from_str::<Value>(&line).unwrap()["call"].clone();
                    let session = format!("{day}-{round}");
                    call["context"]["session"] = json!(session);
                    calls.push(call);
                }
            }
        }
    }
    assert!(calls.len() > 2500, "{}", calls.len());
    // Recorded: what the daemon decided then, by id (an ask stays pending, but for a few a
    // person answers).
    let mut then = std::collections::HashMap::new();
    let mut answered = 0;
    let mut middle = String::new();
    for (index, call) in calls.iter().enumerate() {
        if index == calls.len() / 2 {
            std::thread::sleep(Duration::from_millis(5));
            middle = log_now();
            std::thread::sleep(Duration::from_millis(5));
        }
        let (status, body) = daemon.http("POST", "/api/decisions", Some(call)).unwrap();
        let id = body["id"].as_str().unwrap().to_owned();
        let decision = match status {
            200 => body["decision"].as_str().unwrap().to_owned(),
            202 => {
                let command = call["args"]["command"].as_str().unwrap_or_default();
                if command.starts_with("git push") && answered < 3 {
                    answered += 1;
                    let (status, body) = daemon
                        .http(
                            "POST",
                            &format!("/api/approvals/{id}"),
                            Some(&json!({"decision": "allow-once"})),
                        )
                        .unwrap();
                    assert_eq!(status, 200, "{body}");
                }
                "ask".to_owned()
            }
            _ => panic!("{status} {body}"),
        };
        then.insert(id, (index, decision));
    }
    assert_eq!(answered, 3, "pushes a person allowed");

    // Under the same policy, nothing changes (the asks a person answered were asks).
    let replay = |args: &[&str]| {
        let mut all = vec!["replay", "--isolated", "--format", "json"];
        all.extend_from_slice(args);
        let o = daemon.client(&all);
        let body: Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|_| panic!("{}\n{}", stdout(&o), stderr(&o)));
        (o.status.code(), body)
    };
    let example = root().join("examples/policy.toml");
    let (code, same) = replay(&["--policy", example.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{same}");
    assert_eq!(same["calls"], calls.len());
    assert_eq!(same["changed"], 0, "{}", same["changes"][0]);

    // Another policy: the built-in one, refusing pushes.
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other.toml");
    std::fs::write(
        &other,
        "version = 1\nextends = \"default\"\n\n[[rule]]\nname = \"no-push\"\ndecision = \"deny\"\n\
         reason = \"no pushes from agents\"\ncommand = [\"git push\"]\n\n[[rule]]\n\
         name = \"no-terraform\"\ndecision = \"deny\"\ncommand = [\"terraform apply\"]\n",
    )
    .unwrap();
    let other = other.to_str().unwrap();
    let (code, report) = replay(&["--policy", other]);
    assert_eq!(code, Some(1), "something changes: exit 1");
    // The oracle: `toolgate check` under the other policy, against what the daemon said then.
    let mut input = String::new();
    for call in &calls {
        input += &format!("{call}\n");
    }
    let mut child = Command::new(BIN)
        .args(["check", "--isolated", "--policy", other])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()).unwrap());
    let checked = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let now: Vec<String> = String::from_utf8_lossy(&checked.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["decision"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(now.len(), calls.len());
    let mut expected: Vec<(String, String, String)> = then
        .iter()
        .filter(|(_, (index, decision))| now[*index] != *decision)
        .map(|(id, (index, decision))| (id.clone(), decision.clone(), now[*index].clone()))
        .collect();
    expected.sort();
    let mut found: Vec<(String, String, String)> = report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_owned(),
                c["from"].as_str().unwrap().to_owned(),
                c["to"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    found.sort();
    assert_eq!(found, expected);
    let count = |from: &str, to: &str| {
        report["counts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["from"] == from && c["to"] == to)
            .map_or(0, |c| c["count"].as_u64().unwrap())
    };
    assert!(
        count("ask", "deny") >= 6,
        "pushes are refused now: {}",
        report["counts"]
    );
    assert!(count("ask", "allow") > 0, "{}", report["counts"]);
    let push = report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| {
            c["call"]["args"]["command"]
                .as_str()
                .is_some_and(|c| c.starts_with("git push"))
        })
        .unwrap();
    assert_eq!(
        (&push["rule"], &push["to"]),
        (&json!("no-push"), &json!("deny"))
    );

    // The text says the same counts.
    let o = daemon.client(&["replay", "--isolated", "--policy", other]);
    let text = stdout(&o);
    assert!(
        text.starts_with(&format!("{} calls replayed (", calls.len()))
            && text.contains(&format!(": {} would be decided otherwise", expected.len())),
        "{text}"
    );
    assert!(
        text.contains(&format!("    ask → deny   {}", count("ask", "deny"))),
        "{text}"
    );
    assert!(text.contains("(rule `no-push`)"), "{text}");

    // From a file of the log's records: the same report.
    let mut records = String::new();
    let mut after: Option<String> = None;
    loop {
        let path = match &after {
            Some(after) => format!(
                "/api/decisions?limit=700&after={}",
                after.replace(' ', "%20")
            ),
            None => "/api/decisions?limit=700".to_owned(),
        };
        let (status, page) = daemon.http("GET", &path, None).unwrap();
        assert_eq!(status, 200, "{page}");
        let rows = page["decisions"].as_array().unwrap();
        for row in rows {
            records += &format!("{row}\n");
        }
        if rows.len() < 700 {
            break;
        }
        after = Some(page["next"].as_str().unwrap().to_owned());
    }
    assert_eq!(records.lines().count(), calls.len());
    let log = dir.path().join("log.jsonl");
    std::fs::write(&log, &records).unwrap();
    let (code, from_file) = replay(&["--policy", other, "--log", log.to_str().unwrap()]);
    assert_eq!(code, Some(1));
    assert_eq!(from_file, report);

    // One session; since the middle of the recording.
    let in_session = calls
        .iter()
        .filter(|c| c["context"]["session"] == "rust-a")
        .count();
    let (_, one) = replay(&["--policy", other, "--session", "rust-a"]);
    assert_eq!(one["calls"], in_session);
    let (_, one) = replay(&[
        "--policy",
        other,
        "--session",
        "rust-a",
        "--log",
        log.to_str().unwrap(),
    ]);
    assert_eq!(one["calls"], in_session);
    let (_, later) = replay(&["--policy", other, "--since", &middle]);
    assert_eq!(later["calls"], calls.len() - calls.len() / 2);

    // Lint against the log: a rule nothing matched; a rule that refuses what a person allowed.
    let o = daemon.client(&["lint", "--isolated", "--policy", other, "--against-log"]);
    let text = stdout(&o);
    assert!(
        text.contains("no call of the log") && text.contains("`no-terraform`"),
        "{text}"
    );
    assert!(
        text.contains("rule `no-push` would deny 3 calls the log shows allowed"),
        "{text}"
    );
    assert!(!text.contains("matched rule `no-push`"), "{text}");
    assert!(
        text.contains(&format!("checked against {} calls of the log", calls.len())),
        "{text}"
    );
    // The log's options need --against-log.
    let o = daemon.client(&["lint", "--isolated", "--policy", other, "--session", "x"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// Now, as the audit log writes times.
fn log_now() -> String {
    humantime::format_rfc3339_micros(std::time::SystemTime::now()).to_string()
}
