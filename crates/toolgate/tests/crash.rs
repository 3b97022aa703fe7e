//! `kill -9` the daemon while requests are pending and decisions are being written; after a
//! restart nothing acknowledged is lost, the audit log has no gap, and the requests whose
//! waiter died are refused with an event.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

mod common;
#[path = "../../toolgate-store/tests/common/postgres.rs"]
mod postgres;

use common::{DaemonProcess, http};

fn call(command: &str) -> Value {
    common::bash_call(command, "crash")
}

/// With the default durability (`process`): what SQLite's write-ahead log holds when the
/// process dies is there when it starts again.
#[test]
fn nothing_acknowledged_is_lost_when_the_daemon_is_killed() {
    killed_while_writing(&[]);
}

/// The same with every commit flushed to the disk before it is acknowledged.
#[test]
fn nothing_acknowledged_is_lost_when_the_daemon_is_killed_with_full_durability() {
    killed_while_writing(&["--durability", "full"]);
}

/// The same with the store on PostgreSQL: what the database acknowledged is there after a
/// restart, and the requests the killed daemon left waiting are refused.
#[test]
fn nothing_acknowledged_is_lost_when_the_daemon_on_postgresql_is_killed() {
    let Some((_cluster, url)) = postgres::Cluster::with_database("crash") else {
        return;
    };
    killed_while_writing(&["--store", &url]);
}

fn killed_while_writing(arguments: &[&str]) {
    let data = tempfile::tempdir().unwrap();
    let mut daemon = DaemonProcess::start_with(data.path(), arguments);
    let (address, token) = (daemon.address.clone(), daemon.token());

    // Pending requests: some answered (acknowledged), some left waiting.
    let mut pending = Vec::new();
    for i in 0..6 {
        let (status, body) = http(
            &address,
            &token,
            "POST",
            "/api/decisions",
            Some(&call(&format!("./release.sh {i}"))),
        )
        .unwrap();
        assert_eq!(status, 202);
        pending.push(body["id"].as_str().unwrap().to_owned());
    }
    let mut answered = Vec::new();
    for (i, id) in pending.iter().take(3).enumerate() {
        let decision = if i == 0 {
            "allow-always"
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
        assert_eq!(status, 200);
        answered.push((id.clone(), decision));
    }

    // A burst of decisions being written while the daemon is killed.
    let acknowledged = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (address, token) = (address.clone(), token.clone());
            let (acknowledged, stop) = (Arc::clone(&acknowledged), Arc::clone(&stop));
            std::thread::spawn(move || {
                for i in 0..10_000 {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    // `cat` is allowed, `rm` is asked: both kinds of write are in flight.
                    let command = if i % 5 == 0 {
                        format!("rm w{w}-{i}")
                    } else {
                        format!("cat w{w}-{i}")
                    };
                    match http(
                        &address,
                        &token,
                        "POST",
                        "/api/decisions",
                        Some(&call(&command)),
                    ) {
                        Some((status, body)) if status == 200 || status == 202 => {
                            acknowledged.lock().unwrap().push((
                                body["id"].as_str().unwrap().to_owned(),
                                body["decision"].as_str().unwrap().to_owned(),
                            ));
                        }
                        _ => break,
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(700));
    daemon.kill(); // SIGKILL
    stop.store(true, Ordering::Relaxed);
    for writer in writers {
        writer.join().unwrap();
    }
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(
        acknowledged.len() > 20,
        "the burst was running: {}",
        acknowledged.len()
    );

    let mut daemon = DaemonProcess::start_with(data.path(), arguments);
    let address = daemon.address.clone();
    if arguments.contains(&"--store") {
        // On a shared store a daemon is taken for stopped once its lock has been missing for
        // 10 s (not at once: its connection may only be being made again), and its requests are
        // refused at the next look after that (every 5 s).
        let started = std::time::Instant::now();
        loop {
            let (_, pending) = http(&address, &token, "GET", "/api/pending", None).unwrap();
            if pending["total"] == 0 {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the killed daemon's requests are refused: {pending}"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
    let get = |id: &str| {
        http(
            &address,
            &token,
            "GET",
            &format!("/api/decisions/{id}"),
            None,
        )
        .unwrap()
    };

    // Every acknowledged decision is there, as acknowledged (asks are now refused).
    for (id, decision) in &acknowledged {
        let (status, body) = get(id);
        assert_eq!(status, 200, "acknowledged decision {id} was lost");
        if decision == "ask" {
            assert_eq!(body["decision"], "deny");
        } else {
            assert_eq!(body["decision"].as_str(), Some(decision.as_str()));
        }
    }
    // Answers given before the crash stand; the grant made by "allow-always" too.
    for (id, decision) in &answered {
        let (_, body) = get(id);
        let expected = if decision.starts_with("allow") {
            "allow"
        } else {
            "deny"
        };
        assert_eq!(body["decision"], expected, "{id}");
        assert_eq!(body["layer"], "handler");
    }
    let (_, grants) = http(&address, &token, "GET", "/api/grants", None).unwrap();
    assert_eq!(grants["grants"].as_array().unwrap().len(), 1);
    // Requests whose waiter died are refused, with an event.
    for id in pending.iter().skip(3) {
        let (_, body) = get(id);
        assert_eq!(
            (body["decision"].as_str(), body["layer"].as_str()),
            (Some("deny"), Some("timeout")),
            "{id}"
        );
        let reason = if arguments.contains(&"--store") {
            "The daemon that held this request stopped before it was answered; it is refused \
             (reject-once)."
        } else {
            "The daemon restarted before this request was answered; it is refused (reject-once)."
        };
        assert_eq!(body["reason"], reason);
        let (_, audit) = http(
            &address,
            &token,
            "GET",
            &format!("/api/audit?request_id={id}"),
            None,
        )
        .unwrap();
        let kinds: Vec<&str> = audit["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["type"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["permission_requested", "permission_resolved"]);
    }
    let (_, pending_now) = http(&address, &token, "GET", "/api/pending", None).unwrap();
    assert!(pending_now["pending"].as_array().unwrap().is_empty());

    // The audit log has no gap.
    let mut expected = 1;
    let mut after = 0;
    loop {
        let (_, page) = http(
            &address,
            &token,
            "GET",
            &format!("/api/audit?after={after}&limit=1000"),
            None,
        )
        .unwrap();
        let events = page["events"].as_array().unwrap();
        if events.is_empty() {
            break;
        }
        for event in events {
            assert_eq!(
                event["seq"].as_i64(),
                Some(expected),
                "a gap in the audit log"
            );
            expected += 1;
        }
        after = page["next"].as_i64().unwrap();
    }
    assert!(expected > i64::try_from(acknowledged.len()).unwrap());
    daemon.kill();
}

/// A second daemon on the same data directory (another port) refuses to start, saying why,
/// instead of refusing the first one's live requests as abandoned.
#[test]
fn a_second_daemon_on_the_same_data_directory_refuses_to_start() {
    let data = tempfile::tempdir().unwrap();
    let first = DaemonProcess::start(data.path());
    let (status, body) = first
        .http("POST", "/api/decisions", Some(&call("./release.sh all")))
        .unwrap();
    assert_eq!(status, 202);
    let id = body["id"].as_str().unwrap().to_owned();

    let second = std::process::Command::new(common::BIN)
        .args(["serve", "--isolated", "--policy", "examples/policy.toml"])
        .current_dir(common::root())
        .env("TOOLGATE_DATA_DIR", data.path())
        .env("TOOLGATE_LISTEN", "127.0.0.1:0")
        .output()
        .unwrap();
    assert_eq!(second.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(stderr.contains("in use by another toolgate"), "{stderr}");

    let (status, body) = first.http("GET", "/api/pending", None).unwrap();
    assert_eq!(status, 200);
    let ids: Vec<&str> = body["pending"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["id"].as_str())
        .collect();
    assert_eq!(
        ids,
        [id.as_str()],
        "the first daemon's request is still waiting"
    );
}

/// The database file replaced under the running daemon (a backup restored over it): the next
/// write is refused (`503`, nothing recorded, the call not allowed), the client is told the kind
/// of failure and a number, and the daemon's log says under that number what happened, path
/// and all — which the client's answer does not.
#[test]
fn a_database_replaced_under_the_daemon_refuses_writes_and_says_why_in_its_log() {
    let data = tempfile::tempdir().unwrap();
    let log = tempfile::NamedTempFile::new().unwrap();
    let daemon = DaemonProcess::start_logged(data.path(), &[], log.path());
    let (address, token) = (daemon.address.clone(), daemon.token());
    let (status, _) = http(
        &address,
        &token,
        "POST",
        "/api/decisions",
        Some(&call("cat README.md")),
    )
    .unwrap();
    assert_eq!(status, 200);

    let database = data.path().join("toolgate.db");
    let copy = data.path().join("restored.db");
    std::fs::copy(&database, &copy).unwrap();
    std::fs::rename(&copy, &database).unwrap();

    for command in ["cat README.md", "rm -rf build"] {
        let (status, body) = http(
            &address,
            &token,
            "POST",
            "/api/decisions",
            Some(&call(command)),
        )
        .unwrap();
        assert_eq!(status, 503, "{command}: {body}");
        assert_eq!(body["error"]["code"], "store_unavailable", "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("store failure"), "{message}");
        assert!(
            !message.contains(&data.path().display().to_string()),
            "no path reaches the client: {message}"
        );
    }
    let logged = std::fs::read_to_string(log.path()).unwrap();
    assert!(
        logged.contains("store failure") && logged.contains("was replaced by another file"),
        "{logged}"
    );
    assert!(logged.contains(&database.display().to_string()), "{logged}");
}

/// A disk that fills while calls wait (the daemon may write files of ~1 MiB at most): the
/// call that cannot be recorded is refused (503) and so is the answer that cannot be; the
/// caller waiting on that answer keeps waiting (nothing was released as allowed), the daemon
/// keeps running and says why in its log, and what was acknowledged before stands.
#[test]
fn a_full_disk_refuses_what_it_cannot_record_and_releases_nothing() {
    let data = tempfile::tempdir().unwrap();
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut daemon = DaemonProcess::start_with_file_limit(data.path(), 2048, log.path());
    let (address, token) = (daemon.address.clone(), daemon.token());
    // Calls that ask, until one cannot be recorded (bounded).
    let mut waiting = Vec::new();
    let mut refused = None;
    for n in 0..2000 {
        let (status, body) = http(
            &address,
            &token,
            "POST",
            "/api/decisions",
            Some(&call(&format!("git push origin branch-{n}"))),
        )
        .unwrap();
        match status {
            202 => waiting.push(body["id"].as_str().unwrap().to_owned()),
            _ => {
                refused = Some((status, body));
                break;
            }
        }
    }
    let (status, body) = refused.expect("the disk never filled");
    assert_eq!(status, 503, "{body}");
    assert!(!waiting.is_empty(), "some calls were recorded before");
    // An answer that cannot be recorded is refused; its caller still waits.
    let first = &waiting[0];
    let (status, body) = http(
        &address,
        &token,
        "POST",
        &format!("/api/approvals/{first}"),
        Some(&json!({"decision": "allow-once"})),
    )
    .unwrap();
    assert_eq!(status, 503, "{body}");
    assert!(
        !body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains(&data.path().display().to_string()),
        "{body}"
    );
    let (status, polled) = http(
        &address,
        &token,
        "GET",
        &format!("/api/decisions/{first}?wait=0.5"),
        None,
    )
    .unwrap();
    assert_eq!(
        (status, &polled["status"]),
        (200, &json!("pending")),
        "{polled}"
    );
    // The daemon runs on, and says why.
    assert_eq!(
        http(&address, &token, "GET", "/api/health", None)
            .unwrap()
            .0,
        200
    );
    assert!(daemon.wait_exit(Duration::from_millis(100)).is_none());
    let logged = std::fs::read_to_string(log.path()).unwrap();
    assert!(logged.contains("store failure"), "{logged}");
}

/// `toolgate doctor` says where the daemon's store is and that the daemon runs, and after a
/// `kill -9`, that it did not stop cleanly.
#[test]
fn doctor_says_where_the_store_is_and_whether_the_daemon_runs() {
    let data = tempfile::tempdir().unwrap();
    let mut daemon = DaemonProcess::start_with(data.path(), &[]);
    let doctor = || {
        let output = std::process::Command::new(common::BIN)
            .arg("doctor")
            .env("TOOLGATE_DATA_DIR", data.path())
            .current_dir(data.path())
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let said = doctor();
    let database = data.path().join("toolgate.db");
    assert!(
        said.contains(&format!("store: SQLite {} (", database.display())),
        "{said}"
    );
    assert!(
        said.contains(&format!("running: listening on http://{}", daemon.address)),
        "{said}"
    );
    daemon.kill();
    let said = doctor();
    assert!(
        said.contains("not running (the last one listened on"),
        "{said}"
    );
}
