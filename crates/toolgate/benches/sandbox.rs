//! What `toolgate sandbox` costs a command: the whole process from start to exit, for `true`
//! run plainly and run in the sandbox (the policy loaded, the namespace and its mounts made,
//! Landlock's rules in force), the two taking turns in the same run; median of each and the
//! difference. Under the built-in policy, in this repository (a git workspace with protected
//! paths to bind read-only). Then ordinary work: `cargo test` of a small crate after an edit
//! (its source touched: the crate compiled again and its tests run), plainly and in the
//! sandbox, in turn; median of each and their ratio.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, missing_docs)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RUNS: usize = 200;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Runs the program once; its wall time, start to exit, and whether it succeeded.
fn once(program: &str, args: &[&str], cwd: &Path, cache: &Path) -> (Duration, bool) {
    let start = Instant::now();
    let status = Command::new(program)
        .args(args)
        .current_dir(cwd)
        .env("XDG_CACHE_HOME", cache)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    (start.elapsed(), status.success())
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap();
    let bin = env!("CARGO_BIN_EXE_toolgate");
    let cache = tempfile::tempdir().unwrap();
    let sandboxed = ["sandbox", "--isolated", "--", "true"];
    // The first run checks the policy's examples and leaves the marker.
    let (_, ran) = once(bin, &sandboxed, &root, cache.path());
    if !ran {
        println!("skipped: the sandbox cannot be made here (toolgate sandbox --probe says why)");
        return;
    }
    let (mut plain, mut inside) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        inside.push(once(bin, &sandboxed, &root, cache.path()).0);
        plain.push(once("true", &[], &root, cache.path()).0);
    }
    let (plain, inside) = (median(plain), median(inside));
    println!("`true`, whole process, median of {RUNS} runs each, in turn");
    println!("{:<40}{:>10.0} µs", "plainly", plain.as_secs_f64() * 1e6);
    println!(
        "{:<40}{:>10.0} µs",
        "in toolgate sandbox",
        inside.as_secs_f64() * 1e6
    );
    println!(
        "{:<40}{:>10.0} µs",
        "added by the sandbox",
        (inside.as_secs_f64() - plain.as_secs_f64()) * 1e6
    );
    cargo_test(bin, cache.path());
}

/// `cargo test` of a small crate after an edit, plainly and in the sandbox, in turn.
fn cargo_test(bin: &str, cache: &Path) {
    const EDITS: usize = 15;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let dir = tempfile::tempdir().unwrap();
    let krate = dir.path().canonicalize().unwrap().join("small");
    std::fs::create_dir_all(krate.join("src")).unwrap();
    std::fs::write(
        krate.join("Cargo.toml"),
        "[package]\nname = \"small\"\nversion = \"0.1.0\"\nedition = \"2024\"\n",
    )
    .unwrap();
    std::fs::write(
        krate.join("src/lib.rs"),
        "pub fn add(a: u64, b: u64) -> u64 {\n    a + b\n}\n\n#[cfg(test)]\nmod tests {\n    \
         use super::*;\n\n    #[test]\n    fn adds() {\n        assert_eq!(add(2, 2), 4);\n    \
         }\n}\n",
    )
    .unwrap();
    let run = |sandboxed: bool| -> (Duration, bool) {
        // An edit: the crate is compiled again.
        let source = krate.join("src/lib.rs");
        let text = std::fs::read_to_string(&source).unwrap();
        std::fs::write(&source, text).unwrap();
        let mut command = if sandboxed {
            let mut command = Command::new(bin);
            command.args(["sandbox", "--isolated", "--", &cargo]);
            command
        } else {
            Command::new(&cargo)
        };
        command
            .args(["test", "--offline", "-q"])
            .current_dir(&krate)
            .env("XDG_CACHE_HOME", cache)
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("CARGO_BUILD_TARGET_DIR")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let start = Instant::now();
        let ok = command.status().is_ok_and(|s| s.success());
        (start.elapsed(), ok)
    };
    if !run(false).1 || !run(true).1 {
        println!("skipped: `cargo test` of a small crate did not run here, plainly or sandboxed");
        return;
    }
    let (mut plain, mut inside) = (Vec::new(), Vec::new());
    for _ in 0..EDITS {
        plain.push(run(false).0);
        inside.push(run(true).0);
    }
    let (plain, inside) = (median(plain), median(inside));
    println!();
    println!("`cargo test` of a small crate after an edit, median of {EDITS} runs each, in turn");
    println!("{:<40}{:>10.0} ms", "plainly", plain.as_secs_f64() * 1e3);
    println!(
        "{:<40}{:>10.0} ms",
        "in toolgate sandbox",
        inside.as_secs_f64() * 1e3
    );
    println!(
        "{:<40}{:>10.2}×",
        "ratio",
        inside.as_secs_f64() / plain.as_secs_f64()
    );
}
