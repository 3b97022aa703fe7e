//! Any bytes as one `toolgate check` input line: parse, evaluate, explain. Never panics.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use toolgate_policy::{Call, Policy, RunOptions};

fn policy() -> &'static Policy {
    static POLICY: OnceLock<Policy> = OnceLock::new();
    POLICY.get_or_init(|| {
        Policy::from_toml("policy.toml", include_str!("../../examples/policy.toml"))
            .unwrap_or_default()
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(call) = Call::from_json(text) {
        let _ = policy().evaluate(&call);
        let _ = policy().explain(&call, &RunOptions::default()).to_string();
        let _ = policy().decide(&call, &RunOptions::default(), None);
    }
});
