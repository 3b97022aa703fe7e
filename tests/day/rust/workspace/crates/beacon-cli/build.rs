use std::process::Command;

fn main() {
    let version = env!("CARGO_PKG_VERSION");
    let sha = Command::new("git")
        .args(["rev-parse", "--short=8", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let full = match sha {
        Some(sha) => format!("{version} ({sha})"),
        None => version.to_string(),
    };
    println!("cargo:rustc-env=BEACON_VERSION={full}");
    println!("cargo:rerun-if-changed=../../.git/HEAD");
}
