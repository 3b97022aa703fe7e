//! Several `toolgate serve` on one PostgreSQL database share one approval queue: a request
//! pending on one is listed and answered on another, its caller released where it waits;
//! answers raced across daemons are recorded once each; the requests of a daemon killed with
//! `kill -9` are refused by the others, and its callers hear so from them by id.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::time::Duration;

use serde_json::{Value, json};

mod common;
#[path = "../../toolgate-store/tests/common/postgres.rs"]
mod postgres;

use common::{DaemonProcess, http};

fn call(command: &str) -> Value {
    common::bash_call(command, "replicas")
}

/// Daemons on database `url`, each with a data directory of its own, all naming one token file
/// (`--token-file`: made by the first, read by the others).
fn replicas(url: &str, count: usize) -> (Vec<tempfile::TempDir>, Vec<DaemonProcess>) {
    let shared = tempfile::tempdir().unwrap();
    let token = shared.path().join("token");
    let token = token.to_str().unwrap();
    let mut dirs = Vec::new();
    let mut daemons: Vec<DaemonProcess> = Vec::new();
    for _ in 0..count {
        let dir = tempfile::tempdir().unwrap();
        daemons.push(DaemonProcess::start_with(
            dir.path(),
            &["--store", url, "--token-file", token],
        ));
        dirs.push(dir);
    }
    assert!(
        dirs.iter().all(|dir| !dir.path().join("token").exists()),
        "no data directory holds a token of its own"
    );
    let tokens: Vec<String> = daemons.iter().map(DaemonProcess::token).collect();
    assert!(tokens.windows(2).all(|pair| pair[0] == pair[1]));
    dirs.push(shared);
    (dirs, daemons)
}

fn ask(daemon: &DaemonProcess, command: &str) -> String {
    let (status, body) = daemon
        .http("POST", "/api/decisions", Some(&call(command)))
        .unwrap();
    assert_eq!(status, 202, "{body}");
    body["id"].as_str().unwrap().to_owned()
}

fn pending_ids(daemon: &DaemonProcess) -> Vec<String> {
    let (status, body) = daemon.http("GET", "/api/pending", None).unwrap();
    assert_eq!(status, 200);
    body["pending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_owned())
        .collect()
}

/// A long poll on `daemon` for `id`, in a thread (at most `seconds`).
fn poll(daemon: &DaemonProcess, id: &str, seconds: u32) -> std::thread::JoinHandle<Value> {
    let (address, token) = (daemon.address.clone(), daemon.token());
    let path = format!("/api/decisions/{id}?wait={seconds}");
    std::thread::spawn(move || {
        let (status, body) = http(&address, &token, "GET", &path, None).unwrap();
        assert_eq!(status, 200, "{body}");
        body
    })
}

#[test]
fn a_request_pending_on_one_daemon_is_answered_on_another() {
    let Some((_cluster, url)) = postgres::Cluster::with_database("queue") else {
        return;
    };
    let (_dirs, daemons) = replicas(&url, 3);
    let [a, b, c] = daemons.as_slice() else {
        unreachable!()
    };

    // Asked on A: listed on all three.
    let id = ask(a, "./release.sh one");
    for daemon in [a, b, c] {
        assert_eq!(pending_ids(daemon), std::slice::from_ref(&id));
    }
    // A's caller waits on A, a poll on C waits too; answered on B: both released.
    let on_a = poll(a, &id, 30);
    let on_c = poll(c, &id, 30);
    std::thread::sleep(Duration::from_millis(200));
    let (status, body) = b
        .http(
            "POST",
            &format!("/api/approvals/{id}"),
            Some(&json!({"decision": "allow-once", "by": "bob"})),
        )
        .unwrap();
    assert_eq!(status, 200, "{body}");
    for (poll, on) in [(on_a, "A"), (on_c, "C")] {
        let decided = poll.join().unwrap();
        assert_eq!(decided["decision"], "allow", "on {on}: {decided}");
        assert_eq!(decided["layer"], "handler", "on {on}: {decided}");
    }
    for daemon in [a, b, c] {
        assert!(pending_ids(daemon).is_empty());
    }
    // The audit log, one for all: one request, one resolution, by bob.
    let (_, audit) = c
        .http("GET", &format!("/api/audit?request_id={id}"), None)
        .unwrap();
    let events = audit["events"].as_array().unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["permission_requested", "permission_resolved"]);
    assert_eq!(events[1]["actor"], "bob");

    // An answer the request was not offered is refused on another daemon as on its own.
    let other = ask(c, "./release.sh two");
    let (status, body) = a
        .http(
            "POST",
            &format!("/api/approvals/{other}"),
            Some(&json!({"decision": "maybe"})),
        )
        .unwrap();
    assert_eq!(status, 400, "{body}");
    // And a refusal given on A reaches the caller waiting on C, with its reason.
    let on_c = poll(c, &other, 30);
    std::thread::sleep(Duration::from_millis(200));
    let (status, body) = a
        .http(
            "POST",
            &format!("/api/approvals/{other}"),
            Some(&json!({"decision": "reject-once", "reason": "not today"})),
        )
        .unwrap();
    assert_eq!(status, 200, "{body}");
    let decided = on_c.join().unwrap();
    assert_eq!(decided["decision"], "deny", "{decided}");
    assert_eq!(decided["reason"], "not today", "{decided}");
}

/// 1,000 requests, each answered on both daemons at once: one answer wins each, the other
/// hears 409, both daemons read the winner, and the log holds exactly one resolution each.
#[test]
fn answers_raced_across_daemons_are_recorded_once_each() {
    const REQUESTS: usize = 1_000;
    let Some((_cluster, url)) = postgres::Cluster::with_database("race") else {
        return;
    };
    let (_dirs, daemons) = replicas(&url, 2);
    // Opened on both daemons, from two threads.
    let asking: Vec<_> = [0, 1]
        .into_iter()
        .map(|side| {
            let (address, token) = (daemons[side].address.clone(), daemons[side].token());
            std::thread::spawn(move || {
                (0..REQUESTS / 2)
                    .map(|i| {
                        let body = call(&format!("./release.sh race-{side}-{i}"));
                        let (status, body) =
                            http(&address, &token, "POST", "/api/decisions", Some(&body)).unwrap();
                        assert_eq!(status, 202, "{body}");
                        body["id"].as_str().unwrap().to_owned()
                    })
                    .collect::<Vec<String>>()
            })
        })
        .collect();
    let ids: Vec<String> = asking.into_iter().flat_map(|t| t.join().unwrap()).collect();
    // Each answered on both, in opposite orders, so answers meet all along.
    let answering: Vec<_> = [0, 1]
        .into_iter()
        .map(|side| {
            let (address, token) = (daemons[side].address.clone(), daemons[side].token());
            let mut ids = ids.clone();
            if side == 1 {
                ids.reverse();
            }
            std::thread::spawn(move || {
                ids.into_iter()
                    .map(|id| {
                        let decision = if side == 0 {
                            "allow-once"
                        } else {
                            "reject-once"
                        };
                        let (status, _) = http(
                            &address,
                            &token,
                            "POST",
                            &format!("/api/approvals/{id}"),
                            Some(&json!({"decision": decision})),
                        )
                        .unwrap();
                        (id, status)
                    })
                    .collect::<std::collections::HashMap<String, u16>>()
            })
        })
        .collect();
    let statuses: Vec<std::collections::HashMap<String, u16>> =
        answering.into_iter().map(|t| t.join().unwrap()).collect();
    let mut winners = std::collections::HashMap::new();
    for id in &ids {
        let pair = (statuses[0][id], statuses[1][id]);
        assert!(
            pair == (200, 409) || pair == (409, 200),
            "{id}: one answer wins, the other hears 409: {pair:?}"
        );
        winners.insert(id.clone(), if pair.0 == 200 { "allow" } else { "deny" });
    }
    // Both daemons read each winner (a sample: every tenth, on each).
    for id in ids.iter().step_by(10) {
        for daemon in &daemons {
            let (_, body) = daemon
                .http("GET", &format!("/api/decisions/{id}"), None)
                .unwrap();
            assert_eq!(body["decision"], winners[id], "{id}: {body}");
        }
    }
    // The log: exactly one resolution per request, read a page at a time.
    let mut resolved: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut after = 0;
    for _ in 0..100 {
        let (_, page) = daemons[0]
            .http(
                "GET",
                &format!("/api/audit?after={after}&type=permission_resolved&limit=1000"),
                None,
            )
            .unwrap();
        let events = page["events"].as_array().unwrap();
        if events.is_empty() {
            break;
        }
        for event in events {
            *resolved
                .entry(event["request_id"].as_str().unwrap().to_owned())
                .or_default() += 1;
            after = event["seq"].as_i64().unwrap();
        }
    }
    assert_eq!(resolved.len(), REQUESTS);
    assert!(
        resolved.values().all(|&count| count == 1),
        "one resolution each"
    );
    assert!(pending_ids(&daemons[0]).is_empty());
}

#[test]
fn the_requests_of_a_killed_daemon_are_refused_by_the_others() {
    let Some((_cluster, url)) = postgres::Cluster::with_database("killed") else {
        return;
    };
    let (_dirs, mut daemons) = replicas(&url, 2);
    let id = ask(&daemons[0], "./release.sh orphan");
    let survivor_sees = ask(&daemons[1], "./release.sh stays");
    daemons[0].kill();
    // Its caller comes back by id to the other daemon, which refuses the request once it sees
    // its daemon gone (its lock missing for 10 s; looked at every 5 s).
    let decided = poll(&daemons[1], &id, 60).join().unwrap();
    assert_eq!(decided["decision"], "deny", "{decided}");
    assert_eq!(decided["layer"], "timeout", "{decided}");
    assert_eq!(
        decided["reason"],
        "The daemon that held this request stopped before it was answered; it is refused \
         (reject-once)."
    );
    // The survivor's own request still waits.
    assert_eq!(pending_ids(&daemons[1]), [survivor_sees]);
}
