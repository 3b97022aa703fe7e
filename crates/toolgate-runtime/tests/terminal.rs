//! The terminal approver, driven through tmux: the example agent prompts, a "person" answers.
//!
//! tmux is installed by `.ci/run`, which sets `TOOLGATE_REQUIRE_TMUX=1` so the test cannot be
//! skipped there; on a machine without tmux the test says so and passes.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::print_stderr
)]

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// The example binary, built by `cargo test` next to the test binaries.
fn example() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap();
    dir.join("examples")
        .join(format!("coding_agent{}", std::env::consts::EXE_SUFFIX))
}

fn tmux(args: &[&str]) -> String {
    let output = Command::new("tmux").args(args).output().expect("tmux runs");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Kills the tmux session however the test ends.
struct Session(String);

impl Drop for Session {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.0])
            .output();
    }
}

impl Session {
    fn screen(&self) -> String {
        tmux(&["capture-pane", "-p", "-J", "-S", "-200", "-t", &self.0])
    }

    /// Waits (at most 30 s) until the screen contains `text` `count` times.
    fn wait_for(&self, text: &str, count: usize) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if screen.matches(text).count() >= count {
                return screen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "timed out waiting for {text:?} ×{count}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn type_line(&self, keys: &str) {
        tmux(&["send-keys", "-t", &self.0, keys, "Enter"]);
    }
}

#[test]
fn a_person_answers_the_terminal_prompts_of_the_example_agent() {
    if Command::new("tmux").arg("-V").output().is_err() {
        assert!(
            std::env::var_os("TOOLGATE_REQUIRE_TMUX").is_none(),
            "tmux is required here but not installed"
        );
        eprintln!("skipped: tmux is not installed");
        return;
    }
    let binary = example();
    assert!(
        binary.exists(),
        "{} is built by cargo test",
        binary.display()
    );
    let workspace = tempfile::tempdir().unwrap();
    let name = format!("toolgate-test-{}", std::process::id());
    let command = format!(
        "{} --workspace {}; echo EXITED $?; sleep 30",
        binary.display(),
        workspace.path().display()
    );
    let status = Command::new("tmux")
        .args([
            "new-session",
            "-d",
            "-s",
            &name,
            "-x",
            "220",
            "-y",
            "60",
            &command,
        ])
        .status()
        .unwrap();
    assert!(status.success());
    let session = Session(name);

    // First prompt: a write no rule allows. Allow always, and see what that covers.
    let screen = session.wait_for("answer [1-4]:", 1);
    let root = std::fs::canonicalize(workspace.path()).unwrap();
    for expected in [
        "── toolgate: permission needed ──",
        "tool    write_file  (call call_3)",
        r##"args    {"path":"build.sh","content":"#!/bin/sh\ncargo build\n"}"##,
        "reason  this file says what builds, installs, test runs and scripts execute",
        "rule    build-manifests (rule)",
        "[1] allow once",
        &format!(
            "[2] allow always — covers `write_file` for the path `{}/build.sh`, for this session",
            root.display()
        ),
        "[3] reject once",
        "[4] reject always",
    ] {
        assert!(
            screen.contains(expected),
            "missing {expected:?} in:\n{screen}"
        );
    }
    session.type_line("2");

    // Second prompt: running the script it wrote. Reject always.
    let screen = session.wait_for("answer [1-4]:", 2);
    assert!(
        screen.contains("tool    run_command  (call call_5)"),
        "{screen}"
    );
    assert!(
        screen.contains(
            "[4] reject always — covers `run_command` for exactly the command `./build.sh`, for this session"
        ),
        "{screen}"
    );
    session.type_line("4");

    let screen = session.wait_for("EXITED", 1);
    for expected in [
        "→ read_file [completed] # demo",
        "→ write_file [completed] wrote 22 bytes to build.sh",
        "→ run_command [completed] 2 README.md",
        "→ run_command [denied] Permission denied by user.",
        "→ read_file [denied] secrets stay on this machine",
        "remembered: Allow write_file on the path",
        "remembered: Deny run_command on exactly the command `./build.sh`",
        "done",
        "EXITED 0",
    ] {
        assert!(
            screen.contains(expected),
            "missing {expected:?} in:\n{screen}"
        );
    }
    assert!(workspace.path().join("build.sh").exists());
    assert!(
        !workspace.path().join("target").exists(),
        "the script was not run"
    );
}
