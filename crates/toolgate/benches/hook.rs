//! What `toolgate hook` costs an agent per tool call: the whole process, from its start to its
//! exit, as the agent runs it (a new process with the call on stdin), next to `true` given the
//! same input in the same run, the two taking turns so that the ratio holds when the machine's
//! speed drifts. Under the built-in policy and `examples/policy.toml`, for a shell command, a
//! file edit and an MCP tool; and the first call after the policy's text changed (its examples
//! checked, every glob compiled) beside the calls after it.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, missing_docs)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RUNS: usize = 200;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Runs the program once with `input` on stdin; its wall time, start to exit.
fn once(program: &str, args: &[&str], input: &[u8], env: &[(&str, &Path)]) -> Duration {
    let start = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, *v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // `true` may exit before reading: a closed pipe is its answer.
    let _ = child.stdin.take().unwrap().write_all(input);
    assert!(child.wait().unwrap().code().is_some());
    start.elapsed()
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let example = root.join("examples/policy.toml");
    let example = example.to_str().unwrap();
    let bin = env!("CARGO_BIN_EXE_toolgate");
    let workspace = root.canonicalize().unwrap();
    let ws = workspace.to_str().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let env = [("XDG_CACHE_HOME", cache.path())];
    let calls = [
        (
            "shell `git status && cargo test … | tail`",
            serde_json::json!({"hook_event_name": "PreToolUse", "cwd": ws, "tool_name": "Bash",
                "tool_input": {"command": "git status && cargo test -p toolgate 2>&1 | tail -5"}}),
        ),
        (
            "edit src/lib.rs",
            serde_json::json!({"hook_event_name": "PreToolUse", "cwd": ws, "tool_name": "Edit",
                "tool_input": {"file_path": format!("{ws}/src/lib.rs"), "old_string": "a",
                               "new_string": "b"}}),
        ),
        (
            "MCP read_text_file",
            serde_json::json!({"hook_event_name": "PreToolUse", "cwd": ws,
                "tool_name": "mcp__fs__read_text_file",
                "tool_input": {"path": format!("{ws}/README.md")}}),
        ),
    ];
    println!("toolgate hook claude, whole process, median of {RUNS} runs, beside `true` in turn");
    println!(
        "{:<12} {:<40} {:>10} {:>10} {:>7}",
        "policy", "call", "hook µs", "true µs", "ratio"
    );
    for (policy, flags) in [
        ("built-in", vec!["hook", "claude", "--isolated"]),
        (
            "example",
            vec!["hook", "claude", "--isolated", "--policy", example],
        ),
    ] {
        for (name, call) in &calls {
            let input = call.to_string().into_bytes();
            // The first call checks the examples and leaves the marker.
            once(bin, &flags, &input, &env);
            let (mut hook, mut baseline, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..RUNS {
                let h = once(bin, &flags, &input, &env);
                let t = once("true", &[], &input, &env);
                ratios.push(h.as_secs_f64() / t.as_secs_f64());
                hook.push(h);
                baseline.push(t);
            }
            ratios.sort_by(f64::total_cmp);
            println!(
                "{policy:<12} {name:<40} {:>10.0} {:>10.0} {:>6.1}×",
                median(hook).as_secs_f64() * 1e6,
                median(baseline).as_secs_f64() * 1e6,
                ratios[ratios.len() / 2]
            );
        }
    }
    // The first call after the text changed: every time, a fresh cache folder.
    let input = calls[0].1.to_string().into_bytes();
    let flags = ["hook", "claude", "--isolated", "--policy", example];
    let (mut first, mut later) = (Vec::new(), Vec::new());
    for _ in 0..RUNS / 4 {
        let fresh = tempfile::tempdir().unwrap();
        let env = [("XDG_CACHE_HOME", fresh.path())];
        first.push(once(bin, &flags, &input, &env));
        later.push(once(bin, &flags, &input, &env));
    }
    println!(
        "example: first call after a change (examples checked) {:.0} µs, the next {:.0} µs",
        median(first).as_secs_f64() * 1e6,
        median(later).as_secs_f64() * 1e6
    );
}
