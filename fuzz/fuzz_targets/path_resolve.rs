//! Any bytes as a path argument of a file tool, evaluated in a small workspace with symlinks:
//! never panics, and a path that resolves outside the workspace is never allowed unless it lies
//! in a scratch place (the system's temporary folders, which the fixture itself lives in).
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use toolgate_policy::{Call, Decision, OutsidePlace, Policy, Subject};

struct Fixture {
    _dir: std::path::PathBuf,
    workspace: String,
    policy: Policy,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        // One fixed folder, rebuilt by every run, so runs leave nothing behind but it.
        let dir = std::env::temp_dir().join("toolgate-fuzz-path-resolve");
        let _ = std::fs::remove_dir_all(&dir);
        let ws = dir.join("ws");
        let _ = std::fs::create_dir_all(ws.join("src"));
        let _ = std::fs::create_dir_all(dir.join("outside"));
        let _ = std::os::unix::fs::symlink(dir.join("outside"), ws.join("out"));
        let _ = std::os::unix::fs::symlink(ws.join("src"), ws.join("in"));
        let _ = std::os::unix::fs::symlink(ws.join("nowhere"), ws.join("dangling"));
        let policy = Policy::from_toml("fuzz.toml", "mode = \"approve-all\"\n").unwrap_or_default();
        Fixture {
            workspace: ws.display().to_string(),
            _dir: dir,
            policy,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(path) = std::str::from_utf8(data) else {
        return;
    };
    let f = fixture();
    let mut call = Call::new("write_file").with_args(serde_json_args(path));
    call.context.workspace = Some(f.workspace.clone());
    let evaluation = f.policy.evaluate(&call);
    if evaluation.decision == Decision::Allow {
        for outcome in &evaluation.subjects {
            if let Subject::Path(p) = &outcome.subject {
                let r = p.resolved.as_ref().expect("an allowed path was resolved");
                let scratch = p.place == Some(OutsidePlace::Scratch)
                    && ["/tmp", "/var/tmp", "/dev/shm"]
                        .iter()
                        .any(|t| r.resolved.starts_with(t));
                assert!(
                    r.resolved.starts_with(&f.workspace) || scratch,
                    "{path:?} → {:?}",
                    r.resolved
                );
            }
        }
    }
});

fn serde_json_args(path: &str) -> serde_json::Value {
    serde_json::json!({ "path": path, "content": "" })
}
