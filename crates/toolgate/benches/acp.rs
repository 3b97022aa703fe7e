//! What the ACP proxy adds: a small agent (Python, reading one line and writing its answer)
//! driven straight and through `toolgate acp` (a policy that allows the read), in turn in the
//! same run, p50 and p99 of each:
//!
//! - a relayed `session/update`: the editor's request `_bench/update`, which the agent answers
//!   with a `session/update` notification — the time until that notification arrives (two frames
//!   relayed, neither judged);
//! - a judged `fs/read_text_file`: the editor's request `_bench/read`, for which the agent asks
//!   the editor to read a file, the editor answers, and the agent answers the request — the
//!   whole round trip (four frames relayed, the read judged and its answer renumbered).
//!
//! A third column is the floor any relay process pays: the same agent behind a plain relay that
//! copies lines both ways on two blocking threads and judges nothing (this bench's own program,
//! started again with `TOOLGATE_BENCH_PLAIN_RELAY=1`).

#![allow(clippy::unwrap_used, clippy::indexing_slicing, missing_docs)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const ROUNDS: usize = 2_000;

/// The agent: `session/new` answered with a session in the folder asked for; `_bench/update`
/// with a `session/update`; `_bench/read` by reading the file named, through the editor.
const AGENT: &str = r#"
import json, sys
out = sys.stdout
pending = {}
n = 0
for line in sys.stdin:
    m = json.loads(line)
    method = m.get("method")
    if method == "session/new":
        out.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {"sessionId": "s"}}) + "\n")
    elif method == "_bench/update":
        out.write(json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s",
            "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}}}) + "\n")
        out.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {}}) + "\n")
    elif method == "_bench/read":
        n += 1
        pending[n] = m["id"]
        out.write(json.dumps({"jsonrpc": "2.0", "id": n, "method": "fs/read_text_file",
            "params": {"sessionId": "s", "path": m["params"]["path"]}}) + "\n")
    elif method is None and m.get("id") in pending:
        out.write(json.dumps({"jsonrpc": "2.0", "id": pending.pop(m["id"]), "result": m.get("result")}) + "\n")
    out.flush()
"#;

struct Editor {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Editor {
    fn start(command: &mut Command) -> Editor {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        Editor {
            child,
            input,
            output,
        }
    }

    fn send(&mut self, message: &Value) {
        let mut text = message.to_string();
        text.push('\n');
        self.input.write_all(text.as_bytes()).unwrap();
        self.input.flush().unwrap();
    }

    fn next(&mut self) -> Value {
        let mut line = String::new();
        assert!(
            self.output.read_line(&mut line).unwrap() > 0,
            "the agent ended"
        );
        serde_json::from_str(&line).unwrap()
    }

    /// Reads until the answer to request `id`, serving the agent's file reads on the way.
    fn answer(&mut self, id: usize) -> Value {
        loop {
            let message = self.next();
            if message.get("method").and_then(Value::as_str) == Some("fs/read_text_file") {
                self.send(&json!({"jsonrpc": "2.0", "id": message["id"],
                                  "result": {"content": "hello"}}));
            } else if message.get("method").is_none() && message["id"] == json!(id) {
                return message;
            }
        }
    }

    /// Sends `_bench/update` and reads until the `session/update` it brings.
    fn update(&mut self, id: usize) -> Duration {
        let start = Instant::now();
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "_bench/update", "params": {}}));
        loop {
            let message = self.next();
            if message.get("method").and_then(Value::as_str) == Some("session/update") {
                let took = start.elapsed();
                self.answer(id);
                return took;
            }
        }
    }

    fn read(&mut self, id: usize, path: &str) -> Duration {
        let start = Instant::now();
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "_bench/read",
                          "params": {"path": path}}));
        let answer = self.answer(id);
        let took = start.elapsed();
        assert_eq!(answer["result"]["content"], json!("hello"), "{answer}");
        took
    }
}

impl Drop for Editor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let at = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[at].as_secs_f64() * 1e6
}

fn report(what: &str, samples: &mut [Vec<Duration>; 3]) {
    for s in samples.iter_mut() {
        s.sort();
    }
    let [straight, plain, through] = &*samples;
    println!("{what}, {ROUNDS} rounds each, in turn");
    println!("{:<34}{:>10}{:>10}", "", "p50 µs", "p99 µs");
    for (name, samples) in [
        ("straight to the agent", straight),
        ("through a plain relay", plain),
        ("through toolgate acp", through),
    ] {
        println!(
            "{name:<34}{:>10.0}{:>10.0}",
            percentile(samples, 0.5),
            percentile(samples, 0.99)
        );
    }
    for (name, base) in [
        ("added by the proxy", straight),
        ("added over the plain relay", plain),
    ] {
        println!(
            "{name:<34}{:>10.0}{:>10.0}",
            percentile(through, 0.5) - percentile(base, 0.5),
            percentile(through, 0.99) - percentile(base, 0.99)
        );
    }
    println!();
}

/// The plain relay: the command after this program's arguments as the agent, lines copied
/// both ways on two blocking threads, nothing read into.
fn plain_relay() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut child = Command::new(&args[0])
        .args(&args[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut to_agent = child.stdin.take().unwrap();
    let from_agent = BufReader::new(child.stdout.take().unwrap());
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            let Ok(line) = line else { break };
            if writeln!(to_agent, "{line}")
                .and_then(|()| to_agent.flush())
                .is_err()
            {
                break;
            }
        }
    });
    let mut out = std::io::stdout().lock();
    for line in from_agent.lines() {
        let Ok(line) = line else { break };
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn main() {
    if std::env::var_os("TOOLGATE_BENCH_PLAIN_RELAY").is_some() {
        plain_relay();
        return;
    }
    let python = ["python3", "python"]
        .into_iter()
        .find(|p| Command::new(p).arg("--version").output().is_ok());
    let Some(python) = python else {
        println!("skipped: no python3 to run the bench's agent");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let work = std::fs::canonicalize(dir.path()).unwrap();
    let file = work.join("a.txt");
    std::fs::write(&file, "hello").unwrap();
    let file = file.to_string_lossy().into_owned();
    let policy = work.join("policy.toml");
    std::fs::write(&policy, "version = 1\nmode = \"approve-reads\"\n").unwrap();
    let mut direct = Editor::start(Command::new(python).args(["-u", "-c", AGENT]));
    let mut plain = Editor::start(
        Command::new(std::env::current_exe().unwrap())
            .env("TOOLGATE_BENCH_PLAIN_RELAY", "1")
            .args([python, "-u", "-c", AGENT]),
    );
    let mut proxy = Editor::start(
        Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(["acp", "--isolated", "--policy"])
            .arg(&policy)
            .arg("--")
            .args([python, "-u", "-c", AGENT]),
    );
    for editor in [&mut direct, &mut plain, &mut proxy] {
        editor.send(&json!({"jsonrpc": "2.0", "id": 0, "method": "session/new",
                            "params": {"cwd": work, "mcpServers": []}}));
        editor.answer(0);
    }
    // Warm all three.
    for id in 1..200 {
        for editor in [&mut direct, &mut plain, &mut proxy] {
            editor.update(id);
            editor.read(id + 10_000, &file);
        }
    }
    let mut samples: [Vec<Duration>; 3] = Default::default();
    for id in 0..ROUNDS {
        for (i, editor) in [&mut direct, &mut plain, &mut proxy]
            .into_iter()
            .enumerate()
        {
            samples[i].push(editor.update(20_000 + id));
        }
    }
    report("a relayed session/update", &mut samples);
    let mut samples: [Vec<Duration>; 3] = Default::default();
    for id in 0..ROUNDS {
        for (i, editor) in [&mut direct, &mut plain, &mut proxy]
            .into_iter()
            .enumerate()
        {
            samples[i].push(editor.read(40_000 + id, &file));
        }
    }
    report("a judged fs/read_text_file (its round trip)", &mut samples);
}
