//! Resource checks: analysing a 100-character compound command, checking a path against the
//! workspace (next to a bare `std::fs::canonicalize` of the same path, the baseline), checking a
//! URL, and whole evaluations of a shell call (under the shipped policy, and under one with
//! command rules only) and a file call.
//! Run with `cargo bench -p toolgate-policy --bench resources`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::OnceLock;

use divan::{Bencher, black_box};
use toolgate_policy::{Call, Policy, path, shell, url};

fn main() {
    divan::main();
}

/// 100 characters, six simple commands, a redirection and a pipe.
const COMMAND: &str = "git status && cargo test --workspace 2>&1 | tail -n 200; ls -la src | grep -v targets > out.txt; pwd";

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    file: PathBuf,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let deep = root.join("a/b/c/d/e");
        std::fs::create_dir_all(&deep).unwrap();
        let file = deep.join("file.rs");
        std::fs::write(&file, "").unwrap();
        Fixture {
            _dir: dir,
            root,
            file,
        }
    })
}

#[divan::bench(sample_count = 200, sample_size = 200)]
fn shell_analyze_100_chars(bencher: Bencher) {
    assert_eq!(COMMAND.len(), 100);
    bencher.bench_local(|| shell::analyze(black_box(COMMAND)));
}

/// The floor under the analysis: the bash grammar alone parsing the same line (a parser made
/// once, as the analysis keeps one per thread), and walking its tree once, node by node.
#[divan::bench(sample_count = 200, sample_size = 200)]
fn shell_parse_only_baseline(bencher: Bencher) {
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .unwrap();
    bencher.bench_local(|| {
        let tree = parser.parse(black_box(COMMAND), None).unwrap();
        let mut cursor = tree.walk();
        let mut nodes = 0usize;
        loop {
            nodes += 1;
            if cursor.goto_first_child() || cursor.goto_next_sibling() {
                continue;
            }
            loop {
                if !cursor.goto_parent() {
                    return black_box(nodes);
                }
                if cursor.goto_next_sibling() {
                    break;
                }
            }
        }
    });
}

/// The same line with an unquoted glob, expanded in a folder of 200 files (glob expansion reads
/// the folder, so it is measured apart from the analysis itself).
#[divan::bench(sample_count = 100, sample_size = 20)]
fn shell_analyze_with_a_glob(bencher: Bencher) {
    static FOLDER: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, root) = FOLDER.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        for i in 0..200 {
            std::fs::write(root.join(format!("src/m{i}.rs")), "").unwrap();
        }
        (dir, root)
    });
    let line =
        "git status && wc -l src/*.rs | tail -n 1; ls -la src | grep -v targets > out.txt; pwd";
    bencher.bench_local(|| shell::analyze_in(black_box(line), root, None));
}

#[divan::bench(sample_count = 200, sample_size = 100)]
fn canonicalize_baseline(bencher: Bencher) {
    let f = fixture();
    bencher.bench_local(|| std::fs::canonicalize(black_box(&f.file)));
}

#[divan::bench(sample_count = 200, sample_size = 100)]
fn path_check(bencher: Bencher) {
    let f = fixture();
    let roots = vec![f.root.clone()];
    let given = f.file.display().to_string();
    bencher.bench_local(|| path::resolve_in(black_box(&given), &roots, &f.root));
}

#[divan::bench(sample_count = 200, sample_size = 200)]
fn url_check(bencher: Bencher) {
    bencher.bench_local(|| {
        url::check(black_box(
            "https://Docs.RS./serde/latest/serde/?search=x#top",
        ))
    });
}

fn policy() -> &'static Policy {
    static POLICY: OnceLock<Policy> = OnceLock::new();
    POLICY.get_or_init(|| {
        Policy::from_toml(
            "examples/policy.toml",
            include_str!("../../../examples/policy.toml"),
        )
        .unwrap()
    })
}

#[divan::bench(sample_count = 200, sample_size = 50)]
fn evaluate_shell_call(bencher: Bencher) {
    let f = fixture();
    let call = Call::from_value(serde_json::json!({
        "tool": "bash", "args": {"command": COMMAND}, "context": {"workspace": f.root.display().to_string()}
    }))
    .unwrap();
    bencher.bench_local(|| policy().evaluate(black_box(&call)));
}

/// The same call under a policy with command rules only (no path rule to read its mentioned
/// paths for, but the guard on toolgate's own data reads them).
#[divan::bench(sample_count = 200, sample_size = 50)]
fn evaluate_shell_call_without_path_rules(bencher: Bencher) {
    let f = fixture();
    let policy = Policy::from_toml(
        "commands.toml",
        "[[rule]]\nname = \"reads\"\ndecision = \"allow\"\ncommand = [\"git status\", \"ls\", \"tail\", \"grep\", \"pwd\"]\n",
    )
    .unwrap();
    let call = Call::from_value(serde_json::json!({
        "tool": "bash", "args": {"command": COMMAND}, "context": {"workspace": f.root.display().to_string()}
    }))
    .unwrap();
    bencher.bench_local(|| policy.evaluate(black_box(&call)));
}

#[divan::bench(sample_count = 200, sample_size = 50)]
fn evaluate_file_call(bencher: Bencher) {
    let f = fixture();
    let call = Call::from_value(serde_json::json!({
        "tool": "read_text_file", "args": {"path": "a/b/c/d/e/file.rs"},
        "context": {"workspace": f.root.display().to_string()}
    }))
    .unwrap();
    bencher.bench_local(|| policy().evaluate(black_box(&call)));
}

#[divan::bench(sample_count = 200, sample_size = 100)]
fn evaluate_fetch_call(bencher: Bencher) {
    let call = Call::from_value(
        serde_json::json!({"tool": "fetch", "args": {"url": "https://docs.rs/serde"}}),
    )
    .unwrap();
    bencher.bench_local(|| policy().evaluate(black_box(&call)));
}
