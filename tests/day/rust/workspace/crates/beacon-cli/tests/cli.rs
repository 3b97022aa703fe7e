use std::process::Command;

fn beacon() -> Command {
    Command::new(env!("CARGO_BIN_EXE_beacon"))
}

#[test]
fn validate_accepts_basic_config() {
    let out = beacon()
        .args(["--config", "tests/fixtures/basic.toml", "validate"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok: 2 checks");
}

#[test]
fn validate_rejects_duplicate_ids() {
    let out = beacon()
        .args(["--config", "tests/fixtures/duplicate.toml", "validate"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("defined twice"));
}

#[test]
fn version_includes_crate_version() {
    let out = beacon().arg("--version").output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains(env!("CARGO_PKG_VERSION")));
}
