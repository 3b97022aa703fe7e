//! Runs the shell analysis in a loop, for profilers.
fn main() {
    let cmd = "git status && cargo test --workspace 2>&1 | tail -n 200; ls -la src | grep -v targets > out.txt; pwd";
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000);
    for _ in 0..n {
        std::hint::black_box(toolgate_policy::shell::analyze(std::hint::black_box(cmd)));
    }
}
