use std::time::{Duration, Instant};

use beacon_core::{Check, CheckKind, Scheduler};

fn http_check(id: &str, every_secs: u64) -> Check {
    let kind = CheckKind::Http { url: format!("https://{id}.example.test/health"), expect_status: 200 };
    Check::new(id, kind, Duration::from_secs(every_secs))
}

#[test]
fn first_runs_are_spread_within_a_quarter_interval() {
    let now = Instant::now();
    let mut s = Scheduler::new();
    for i in 0..50 {
        s.add(&http_check(&format!("svc-{i}"), 60), now);
    }
    let deadline = s.next_deadline().unwrap();
    assert!(deadline >= now && deadline <= now + Duration::from_secs(15));
}

#[test]
fn due_requeues_one_interval_later() {
    let now = Instant::now();
    let mut s = Scheduler::new();
    s.add(&http_check("api", 10), now);
    let due = s.due(now + Duration::from_secs(10));
    assert_eq!(due.len(), 1);
    assert_eq!(s.len(), 1);
    assert!(s.next_deadline().unwrap() > now + Duration::from_secs(10));
}

#[test]
fn nothing_due_before_first_deadline() {
    let now = Instant::now();
    let mut s = Scheduler::new();
    s.add(&http_check("api", 3600), now + Duration::from_secs(5));
    assert!(s.due(now).is_empty());
}
