//! What `toolgate sandbox` costs a command: the whole process from start to exit, for `true`
//! run plainly and run in the sandbox (the policy loaded, the namespace and its mounts made,
//! Landlock's rules in force), the two taking turns in the same run; median of each and the
//! difference. Under the built-in policy, in this repository (a git workspace with protected
//! paths to bind read-only).

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
}
