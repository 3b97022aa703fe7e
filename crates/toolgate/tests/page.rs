//! The approval page in a real browser: Debian's Chromium driven by playwright-core
//! (`tests/browser/page.mjs`). `.ci/run` installs both and sets `TOOLGATE_REQUIRE_BROWSER=1`, so
//! the test cannot skip there; elsewhere it says what is missing and passes.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::print_stderr
)]

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{DaemonProcess, root};

#[test]
fn a_person_answers_on_the_page_and_the_waiting_call_proceeds() {
    if let Some(what) = common::browser_missing() {
        assert!(
            std::env::var_os("TOOLGATE_REQUIRE_BROWSER").is_none(),
            "the browser test needs {what}"
        );
        eprintln!("skipped: the browser test needs {what}");
        return;
    }
    let data = tempfile::tempdir().unwrap();
    // The shipped policy, from a file the page test may break (and mend) to see the banner.
    let folder = tempfile::tempdir().unwrap();
    let policy = folder.path().join("policy.toml");
    std::fs::copy(root().join("examples/policy.toml"), &policy).unwrap();
    let daemon = DaemonProcess::start_with_policy(data.path(), policy.to_str().unwrap(), &[]);
    // A workspace whose policy the page's "Make a rule" writes.
    let workspace = tempfile::tempdir().unwrap();
    let mut node = Command::new("node")
        .arg("page.mjs")
        .current_dir(root().join("tests/browser"))
        .env("TOOLGATE_URL", format!("http://{}", daemon.address))
        .env("TOOLGATE_LOGIN", &daemon.login)
        .env("TOOLGATE_TOKEN", daemon.token())
        .env("TOOLGATE_POLICY_FILE", &policy)
        .env(
            "TOOLGATE_WORKSPACE",
            workspace.path().canonicalize().unwrap(),
        )
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while node.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(120) {
            let _ = node.kill();
            panic!("the browser test did not finish in 120 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let output = node.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the page test failed:\n{out}\n{err}"
    );
    assert!(out.starts_with("OK "), "{out}\n{err}");
}
