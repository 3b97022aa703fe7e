//! The API against its own OpenAPI document: Schemathesis (pinned in
//! `tests/python/requirements.txt`, configured by `tests/api/schemathesis.toml`) reads the document
//! a `toolgate serve` process serves, and sends every route requests made from it — valid ones,
//! invalid ones (a wrong type, a missing field, a value out of range or not matching a
//! pattern), and chains that follow the document's links (a call asked, then its answer; a
//! session, then its branch and HPD's route in it). Every response is checked: no server error;
//! a status, a content type, headers and a body the document describes; what the document
//! calls valid accepted and what it calls invalid refused.
//!
//! `.ci/run` installs Schemathesis in `tests/python/.venv` and sets
//! `TOOLGATE_REQUIRE_SCHEMATHESIS=1`, so the test cannot skip there; elsewhere it says what is
//! missing and passes. `TOOLGATE_SCHEMATHESIS_EXAMPLES` sets the examples per route (default 25).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::print_stderr
)]

mod common;

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{DaemonProcess, root};

fn schemathesis() -> PathBuf {
    std::env::var_os("SCHEMATHESIS")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("tests/python/.venv/bin/st"))
}

#[test]
fn the_api_keeps_every_promise_its_openapi_document_makes() {
    let st = schemathesis();
    if !st.exists() {
        let what = format!(
            "{} (python3 -m venv tests/python/.venv && tests/python/.venv/bin/pip install \
             --require-hashes -r tests/python/requirements.txt)",
            st.display()
        );
        assert!(
            std::env::var_os("TOOLGATE_REQUIRE_SCHEMATHESIS").is_none(),
            "the API property test needs {what}"
        );
        eprintln!("skipped: the API property test needs {what}");
        return;
    }
    let examples =
        std::env::var("TOOLGATE_SCHEMATHESIS_EXAMPLES").unwrap_or_else(|_| "25".to_owned());
    let data = tempfile::tempdir().unwrap();
    let daemon = DaemonProcess::start_with_policy(data.path(), "tests/api/policy.toml", &[]);
    // Schemathesis keeps its caches in the folder it runs in.
    let scratch = tempfile::tempdir().unwrap();
    let mut run = Command::new(&st)
        .arg("--config-file")
        .arg(root().join("tests/api/schemathesis.toml"))
        .arg("run")
        .arg(format!("http://{}/api/openapi.json", daemon.address))
        .args([
            "--header",
            &format!("Authorization: Bearer {}", daemon.token()),
        ])
        .args([
            "--checks",
            "all",
            "--workers",
            "1",
            "--max-examples",
            &examples,
        ])
        // A long poll waits at most for the request's timeout (1 s in the test's policy).
        .args(["--request-timeout", "15", "--max-failures", "20"])
        .current_dir(scratch.path())
        .env("NO_COLOR", "1")
        .env("COLUMNS", "120")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read as it comes (a full pipe would stall the run).
    let mut stdout = run.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let mut stderr = run.stderr.take().unwrap();
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = run.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > Duration::from_secs(600) {
            let _ = run.kill();
            let _ = run.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let (out, err) = (reader.join().unwrap(), errors.join().unwrap());
    let status = status.unwrap_or_else(|| panic!("Schemathesis ran over 600 s:\n{out}\n{err}"));
    assert!(
        status.success(),
        "Schemathesis found failures:\n{out}\n{err}"
    );
    // It ran every route but the document's own address (which it leaves out), and no phase
    // failed or errored.
    let routes = toolgate_server::ROUTES.len() - 1;
    assert!(
        out.contains(&format!("Selected: {routes}/{routes}"))
            && out.contains(&format!("Tested: {routes}")),
        "not every route was tested:\n{out}"
    );
    assert!(!out.contains("❌") && !out.contains("🚫"), "{out}");
    let summary = out.lines().rev().find(|l| l.contains(" in ")).unwrap_or("");
    eprintln!(
        "Schemathesis: {}",
        summary.trim_matches(|c| c == '=' || c == ' ')
    );
}
