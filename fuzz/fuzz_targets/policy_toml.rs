//! Any bytes as a policy file: load, lint, check examples, evaluate and explain. Never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolgate_policy::{Call, LoadOptions, Policy, PolicySource, RunOptions};

const CALLS: &[&str] = &[
    r#"{"tool":"bash","args":{"command":"cargo test"},"tags":["network"]}"#,
    r#"{"tool":"pay","args":{"amount":5,"currency":"EUR"},"context":{"origin":"network"}}"#,
];

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let loaded = Policy::load(
        vec![PolicySource::given("fuzz.toml", text)],
        LoadOptions {
            check_examples: false,
            compile_at_load: false,
        },
    );
    match loaded {
        Ok(policy) => {
            let _ = policy.lint();
            let _ = policy.example_failures();
            for json in CALLS {
                if let Ok(call) = Call::from_json(json) {
                    let _ = policy.evaluate(&call);
                    let _ = policy.explain(&call, &RunOptions::default()).to_string();
                }
            }
        }
        Err(error) => {
            let _ = error.to_string();
        }
    }
});
