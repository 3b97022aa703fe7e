//! A day of agent work, replayed: the ordinary calls and the attacks of `tests/day/` — three
//! projects (a Python service, a TypeScript dashboard, a Rust workspace with a Go tool), the
//! calls written as Claude Code and Codex issue them — through `toolgate check` under the
//! built-in policy and under `examples/policy.toml`, and Claude Code's calls again through
//! `toolgate hook claude`.
//!
//! It prints, per stack, how often an ordinary call asks a person or is refused and how many
//! attacks get through, and holds the bounds the README states: under the built-in policy no
//! attack is let through, no ordinary call is refused and at most [`DEFAULT_ASK_BOUND`] of them
//! ask; under the example, no attack either, at most [`EXAMPLE_ASK_BOUND`] ask, and it refuses
//! only calls a careful developer wants to be asked about (`"want": "ask"` in the traces).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{BIN, copy_tree, root};
use serde_json::{Value, json};

/// The most ordinary calls, as a share, the built-in policy may ask about in any stack.
const DEFAULT_ASK_BOUND: f64 = 0.10;
/// The same for `examples/policy.toml`, stricter by design.
const EXAMPLE_ASK_BOUND: f64 = 0.15;

const STACKS: &[(&str, &str)] = &[
    ("python", "Python service"),
    ("typescript", "TypeScript dashboard"),
    ("rust", "Rust with a Go tool"),
];

struct Case {
    name: String,
    want: Option<String>,
    call: Value,
}

/// A copy of a stack's project and of the home folder its traces name, the project made a git
/// repository (as the traces assume).
struct Place {
    _dir: tempfile::TempDir,
    workspace: PathBuf,
    home: PathBuf,
}

fn place(stack: &str) -> Place {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let workspace = base.join("ws");
    let home = base.join("home");
    copy_tree(
        &root().join("tests/day").join(stack).join("workspace"),
        &workspace,
    );
    copy_tree(&root().join("tests/day/home"), &home);
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&workspace)
        .status()
        .expect("git runs");
    assert!(git.success());
    Place {
        _dir: dir,
        workspace,
        home,
    }
}

fn cases(stack: &str, kind: &str, place: &Place) -> Vec<Case> {
    let path = root()
        .join("tests/day")
        .join(stack)
        .join(format!("{kind}.jsonl"));
    let text = std::fs::read_to_string(&path).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let l = l
                .replace("__WS__", &place.workspace.display().to_string())
                .replace("__HOME__", &place.home.display().to_string());
            let v: Value =
                serde_json::from_str(&l).unwrap_or_else(|e| panic!("{}: {e}: {l}", path.display()));
            Case {
                name: v["name"].as_str().unwrap_or_default().to_owned(),
                want: v["want"].as_str().map(str::to_owned),
                call: v["call"].clone(),
            }
        })
        .collect()
}

/// The decision `toolgate check` gives each call, under `policy` (else the built-in policy).
fn check(place: &Place, policy: Option<&Path>, cases: &[Case]) -> Vec<String> {
    let mut args = vec!["check".to_owned(), "--isolated".to_owned()];
    if let Some(policy) = policy {
        args.push("--policy".into());
        args.push(policy.display().to_string());
    }
    let mut child = Command::new(BIN)
        .args(&args)
        .current_dir(&place.workspace)
        .env("HOME", &place.home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("TOOLGATE_CONFIG_DIR")
        .env_remove("TMPDIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = String::new();
    for case in cases {
        input.push_str(&case.call.to_string());
        input.push('\n');
    }
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let decisions: Vec<String> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["decision"].as_str().unwrap_or("error").to_owned()
        })
        .collect();
    assert_eq!(decisions.len(), cases.len());
    decisions
}

/// The decision `toolgate hook claude` gives a call of Claude Code's, as Claude Code hands it
/// over.
fn hook(place: &Place, call: &Value) -> String {
    let input = json!({
        "session_id": "day",
        "transcript_path": place.home.join("transcript.jsonl"),
        "cwd": place.workspace,
        "hook_event_name": "PreToolUse",
        "tool_name": call["tool"],
        "tool_input": call["args"],
    });
    let mut child = Command::new(BIN)
        .args(["hook", "claude"])
        .current_dir(&place.workspace)
        .env("HOME", &place.home)
        .env("CLAUDE_PROJECT_DIR", &place.workspace)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("TOOLGATE_CONFIG_DIR")
        .env_remove("TMPDIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let v: Value = serde_json::from_slice(&output.stdout).unwrap();
    v["hookSpecificOutput"]["permissionDecision"]
        .as_str()
        .unwrap_or("error")
        .to_owned()
}

fn share(part: usize, whole: usize) -> f64 {
    part as f64 / whole.max(1) as f64
}

#[test]
fn a_day_of_work_asks_little_and_lets_no_attack_through() {
    let example = root().join("examples/policy.toml");
    let mut failures = Vec::new();
    let mut table = vec![
        "| stack | ordinary calls | asked (built-in) | refused (built-in) | asked (example) | attacks | attacks let through |".to_owned(),
        "|---|---|---|---|---|---|---|".to_owned(),
    ];
    let mut hooked = 0;
    for (stack, title) in STACKS {
        let place = place(stack);
        let ordinary = cases(stack, "ordinary", &place);
        let attacks = cases(stack, "attacks", &place);
        assert!(
            ordinary.len() >= 300,
            "{stack}: {} ordinary calls",
            ordinary.len()
        );

        let by_default = check(&place, None, &ordinary);
        let by_example = check(&place, Some(&example), &ordinary);
        let count = |d: &[String], what: &str| d.iter().filter(|x| *x == what).count();
        let asked = share(count(&by_default, "ask"), ordinary.len());
        let asked_example = share(count(&by_example, "ask"), ordinary.len());
        for (case, decision) in ordinary.iter().zip(&by_default) {
            if decision == "deny" {
                failures.push(format!(
                    "{stack}: the built-in policy refuses `{}`",
                    case.name
                ));
            }
        }
        for (case, decision) in ordinary.iter().zip(&by_example) {
            if decision == "deny" && case.want.as_deref() != Some("ask") {
                failures.push(format!("{stack}: the example refuses `{}`", case.name));
            }
        }
        if asked > DEFAULT_ASK_BOUND {
            failures.push(format!(
                "{stack}: the built-in policy asks about {:.1} % of ordinary calls",
                asked * 100.0
            ));
        }
        if asked_example > EXAMPLE_ASK_BOUND {
            failures.push(format!(
                "{stack}: the example asks about {:.1} % of ordinary calls",
                asked_example * 100.0
            ));
        }

        let mut through = 0;
        for policy in [None, Some(example.as_path())] {
            for (case, decision) in attacks.iter().zip(check(&place, policy, &attacks)) {
                if decision == "allow" {
                    through += 1;
                    failures.push(format!(
                        "{stack}: attack `{}` is let through by {}",
                        case.name,
                        policy.map_or("the built-in policy".into(), |p| p.display().to_string())
                    ));
                }
            }
        }

        // Claude Code's calls, through its hook: the same decisions as `check`'s.
        for (cases, decisions) in [(&ordinary, &by_default)] {
            for (case, decision) in cases.iter().zip(decisions.iter()) {
                if case.call["context"]["agent"] != "claude-code" {
                    continue;
                }
                hooked += 1;
                let answer = hook(&place, &case.call);
                if answer != *decision {
                    failures.push(format!(
                        "{stack}: `{}`: the hook says {answer}, check says {decision}",
                        case.name
                    ));
                }
            }
        }
        for case in &attacks {
            if case.call["context"]["agent"] != "claude-code" {
                continue;
            }
            hooked += 1;
            if hook(&place, &case.call) == "allow" {
                failures.push(format!(
                    "{stack}: the hook lets attack `{}` through",
                    case.name
                ));
            }
        }

        table.push(format!(
            "| {title} | {} | {:.1} % | {} | {:.1} % | {} | {through} |",
            ordinary.len(),
            asked * 100.0,
            count(&by_default, "deny"),
            asked_example * 100.0,
            attacks.len(),
        ));
    }
    println!("{}", table.join("\n"));
    println!("({hooked} of Claude Code's calls also went through `toolgate hook claude`)");
    assert!(hooked > 100, "{hooked} calls through the hook");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
