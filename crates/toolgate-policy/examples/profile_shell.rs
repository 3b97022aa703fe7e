//! Runs the shell analysis, or whole evaluations, in a loop, for profilers:
//! `profile_shell [analyze|shell|file] [N]`.
fn main() {
    let cmd = "git status && cargo test --workspace 2>&1 | tail -n 200; ls -la src | grep -v targets > out.txt; pwd";
    let mut args = std::env::args().skip(1);
    let what = args.next().unwrap_or_else(|| "analyze".into());
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let policy = toolgate_policy::Policy::from_toml(
        "examples/policy.toml",
        include_str!("../../../examples/policy.toml"),
    )
    .unwrap_or_default();
    let shell = toolgate_policy::Call::new("bash").with_args(serde_json::json!({ "command": cmd }));
    let file = toolgate_policy::Call::new("read_text_file")
        .with_args(serde_json::json!({ "path": "README.md" }));
    for _ in 0..n {
        match what.as_str() {
            "shell" => {
                std::hint::black_box(policy.evaluate(std::hint::black_box(&shell)));
            }
            "file" => {
                std::hint::black_box(policy.evaluate(std::hint::black_box(&file)));
            }
            _ => {
                std::hint::black_box(toolgate_policy::shell::analyze(std::hint::black_box(cmd)));
            }
        }
    }
}
