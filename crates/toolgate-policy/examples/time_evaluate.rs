//! Times `Policy::evaluate` the way the toolregistry side of `benches/toolregistry/compare.py`
//! times `PermissionPolicy.evaluate`: for each call, `SAMPLES` samples of `INNER` back-to-back
//! evaluations, reporting the median per call in nanoseconds as one JSON object.
//!
//! ```sh
//! cargo run --release -p toolgate-policy --example time_evaluate -- POLICY.toml CALLS.jsonl
//! ```

#![allow(clippy::indexing_slicing, clippy::expect_used, clippy::unwrap_used)]

use std::hint::black_box;
use std::time::Instant;

use toolgate_policy::{Call, Policy};

const SAMPLES: usize = 201;
const INNER: usize = 2_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(policy_path), Some(calls_path)) = (args.next(), args.next()) else {
        return Err("usage: time_evaluate POLICY.toml CALLS.jsonl".into());
    };
    let policy = Policy::from_toml(&policy_path, &std::fs::read_to_string(&policy_path)?)?;
    let mut out = serde_json::Map::new();
    for line in std::fs::read_to_string(&calls_path)?.lines() {
        let labelled: serde_json::Value = serde_json::from_str(line)?;
        let label = labelled["label"].as_str().unwrap_or("call").to_owned();
        let call = Call::from_value(labelled["call"].clone())?;
        let expected = labelled["expect"].as_str().unwrap_or("");
        let got = policy.evaluate(&call);
        if got.decision.as_str() != expected {
            return Err(format!("{label}: expected {expected}, got {}", got.decision).into());
        }
        for _ in 0..3 {
            for _ in 0..INNER {
                black_box(policy.evaluate(black_box(&call)));
            }
        }
        let mut samples: Vec<f64> = (0..SAMPLES)
            .map(|_| {
                let start = Instant::now();
                for _ in 0..INNER {
                    black_box(policy.evaluate(black_box(&call)));
                }
                start.elapsed().as_nanos() as f64 / INNER as f64
            })
            .collect();
        samples.sort_by(f64::total_cmp);
        out.insert(label, samples[SAMPLES / 2].into());
    }
    println!("{}", serde_json::Value::Object(out));
    Ok(())
}
