//! What the MCP gateway adds to a tool call: `tools/call` of server-everything's `echo` over
//! stdio, straight to the server and through `toolgate mcp` (a policy that allows it), in turn
//! in the same run; p50 and p99 of each, and what the gateway adds. Then the memory the gateway
//! itself holds (resident set, its servers not counted) in front of one server and of five
//! served as one (`--servers`), idle after listing their tools. Needs the servers of
//! `tests/mcp` (`npm ci --prefix tests/mcp`).

#![allow(clippy::unwrap_used, clippy::indexing_slicing, missing_docs)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const CALLS: usize = 2_000;

struct Peer {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Peer {
    fn start(command: &mut Command) -> Peer {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        let mut peer = Peer {
            child,
            input,
            output,
        };
        peer.request(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "bench", "version": "1"}}}));
        peer.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
        peer
    }

    fn send(&mut self, text: &str) {
        self.input.write_all(text.as_bytes()).unwrap();
        self.input.write_all(b"\n").unwrap();
        self.input.flush().unwrap();
    }

    /// Sends a request and reads lines until its answer.
    fn request(&mut self, request: Value) -> Value {
        let id = request["id"].clone();
        self.send(&request.to_string());
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                self.output.read_line(&mut line).unwrap() > 0,
                "the peer ended"
            );
            let message: Value = serde_json::from_str(&line).unwrap();
            if message.get("method").is_none() && message["id"] == id {
                return message;
            }
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A line of a process's `/proc/PID/status` in kB (`VmRSS`, `RssAnon`, `RssFile`), in MiB.
fn status_mib(pid: u32, key: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

/// A process's resident set (all of it; its private part; the pages of files it maps — the
/// binary's, shared with every process running it), in MiB.
fn resident(pid: u32) -> (f64, f64, f64) {
    (
        status_mib(pid, "VmRSS"),
        status_mib(pid, "RssAnon"),
        status_mib(pid, "RssFile"),
    )
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let at = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[at].as_secs_f64() * 1e6
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let server = root.join("tests/mcp/node_modules/.bin/mcp-server-everything");
    if !server.is_file() {
        println!(
            "skipped: {} is not installed (npm ci --prefix tests/mcp)",
            server.display()
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.toml");
    std::fs::write(
        &policy,
        "version = 1\nextends = \"default\"\n\n[[rule]]\nname = \"echo\"\ndecision = \"allow\"\n\
         server = \"everything\"\ntool = \"echo\"\n",
    )
    .unwrap();
    let mut direct = Peer::start(Command::new(&server).arg("stdio"));
    let mut gateway = Peer::start(
        Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args([
                "mcp",
                "--isolated",
                "--no-pins",
                "--name",
                "everything",
                "--policy",
            ])
            .arg(&policy)
            .arg("--workspace")
            .arg(dir.path())
            .arg("--")
            .arg(&server)
            .arg("stdio"),
    );
    let call = |id: usize| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "echo", "arguments": {"message": "hello"}}})
    };
    // Warm both, and check they answer alike.
    for id in 1..100 {
        let a = direct.request(call(id));
        let b = gateway.request(call(id));
        assert_eq!(a, b);
    }
    let (mut straight, mut through) = (Vec::new(), Vec::new());
    for id in 100..100 + CALLS {
        let start = Instant::now();
        direct.request(call(id));
        straight.push(start.elapsed());
        let start = Instant::now();
        gateway.request(call(id));
        through.push(start.elapsed());
    }
    straight.sort();
    through.sort();
    println!("tools/call echo to server-everything over stdio, {CALLS} calls each, in turn");
    println!("{:<26}{:>10}{:>10}", "", "p50 µs", "p99 µs");
    for (name, samples) in [
        ("straight to the server", &straight),
        ("through toolgate mcp", &through),
    ] {
        println!(
            "{name:<26}{:>10.0}{:>10.0}",
            percentile(samples, 0.5),
            percentile(samples, 0.99)
        );
    }
    println!(
        "{:<26}{:>10.0}{:>10.0}",
        "added by the gateway",
        percentile(&through, 0.5) - percentile(&straight, 0.5),
        percentile(&through, 0.99) - percentile(&straight, 0.99)
    );

    // Memory: the gateway alone, in front of one server and of five, idle after a listing.
    let filesystem = root.join("tests/mcp/node_modules/.bin/mcp-server-filesystem");
    let dir_text = dir.path().display().to_string();
    let mut servers = serde_json::Map::new();
    for n in 0..5 {
        let entry = if n % 2 == 0 {
            json!({"command": server, "args": ["stdio"]})
        } else {
            json!({"command": filesystem, "args": [dir_text]})
        };
        servers.insert(format!("s{n}"), entry);
    }
    let file = dir.path().join("servers.json");
    std::fs::write(&file, json!({"mcpServers": servers}).to_string()).unwrap();
    let mut hub = Peer::start(
        Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(["mcp", "--isolated", "--no-pins", "--policy"])
            .arg(&policy)
            .arg("--workspace")
            .arg(dir.path())
            .arg("--servers")
            .arg(&file),
    );
    let listed = hub.request(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    let tools = listed["result"]["tools"].as_array().map_or(0, Vec::len);
    gateway.request(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    // The floor: the same binary with its policy loaded and its relay up, in front of a
    // "server" that says nothing (what any gateway costs before it serves a tool).
    let mut idle = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["mcp", "--isolated", "--no-pins", "--policy"])
        .arg(&policy)
        .arg("--workspace")
        .arg(dir.path())
        .args(["--", "sleep", "60"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    println!();
    println!("the gateway's own resident memory, idle after tools/list, in MiB");
    println!(
        "{:<26}{:>10}{:>10}{:>10}",
        "", "resident", "private", "binary"
    );
    for (what, pid) in [
        ("floor (no server talking)", idle.id()),
        ("in front of one server", gateway.child.id()),
        ("five servers as one", hub.child.id()),
    ] {
        let (all, private, file) = resident(pid);
        println!("{what:<26}{all:>10.1}{private:>10.1}{file:>10.1}");
    }
    println!("({tools} tools behind the five)");
    let _ = idle.kill();
    let _ = idle.wait();
}
