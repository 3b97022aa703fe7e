//! Evaluation cost for policies of 10, 100, 1,000 and 10,000 rules mixing exact tool names, tool
//! globs, tags and argument predicates: the call that matches the first rule, the one that
//! matches the last rule, and one that matches none. Run with `cargo bench -p toolgate-policy`.
//!
//! `baseline` times looking one tool name up in a hash map, as a yardstick for ratios measured in
//! the same run on a noisy machine.

#![allow(clippy::indexing_slicing, clippy::expect_used, clippy::unwrap_used)]

use std::collections::HashMap;

use divan::{Bencher, black_box};
use toolgate_policy::{Call, Policy};

#[path = "../examples/mix.rs"]
mod mix;

const SIZES: &[usize] = &[10, 100, 1_000, 10_000];

fn main() {
    divan::main();
}

fn setup(rules: usize) -> (Policy, [Call; 3]) {
    let policy = Policy::from_toml("bench.toml", &mix::policy_toml(rules)).expect("the mix loads");
    let calls = mix::calls(rules).map(|json| Call::from_json(&json).expect("a call"));
    (policy, calls)
}

#[divan::bench(args = SIZES, sample_count = 200, sample_size = 500)]
fn first_match(bencher: Bencher, rules: usize) {
    let (policy, [first, _, _]) = setup(rules);
    bencher.bench_local(|| policy.evaluate(black_box(&first)));
}

#[divan::bench(args = SIZES, sample_count = 200, sample_size = 500)]
fn last_match(bencher: Bencher, rules: usize) {
    let (policy, [_, last, _]) = setup(rules);
    bencher.bench_local(|| policy.evaluate(black_box(&last)));
}

#[divan::bench(args = SIZES, sample_count = 200, sample_size = 500)]
fn no_match(bencher: Bencher, rules: usize) {
    let (policy, [_, _, miss]) = setup(rules);
    bencher.bench_local(|| policy.evaluate(black_box(&miss)));
}

#[divan::bench(args = SIZES, sample_count = 10)]
fn load(bencher: Bencher, rules: usize) {
    let text = mix::policy_toml(rules);
    bencher.bench_local(|| Policy::from_toml("bench.toml", black_box(&text)));
}

#[divan::bench(sample_count = 200, sample_size = 500)]
fn baseline(bencher: Bencher) {
    let map: HashMap<String, usize> = (0..1_000).map(|i| (format!("tool_{i}"), i)).collect();
    bencher.bench_local(|| map.get(black_box("tool_500")).copied());
}
