use std::time::{Duration, Instant};

use beacon_core::{Config, Scheduler};
use criterion::{black_box, criterion_group, criterion_main, Criterion};

fn scheduler_due(c: &mut Criterion) {
    let text = include_str!("data/checks-1000.toml");
    let config = Config::from_toml(text).expect("bench data parses");
    let start = Instant::now();

    c.bench_function("scheduler_due_1000", |b| {
        b.iter(|| {
            let mut s = Scheduler::new();
            for check in &config.checks {
                s.add(check, start);
            }
            black_box(s.due(start + Duration::from_secs(3600)))
        })
    });
}

criterion_group!(benches, scheduler_due);
criterion_main!(benches);
