//! A `toolgate serve` process for the end-to-end tests, and a minimal HTTP client for it.

#![allow(
    dead_code,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_toolgate");

/// The repository's root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Copies a folder tree (a fixture) into `to`, keeping symbolic links as links.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        let kind = entry.file_type().unwrap();
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path()).unwrap(), &target).unwrap();
        } else if kind.is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Reads a process's stdout until a line starts with `prefix` (at most 60 s); the rest of the
/// output keeps being drained so the process never blocks on it.
pub fn wait_for_line(stdout: ChildStdout, prefix: &str) -> (String, Vec<String>) {
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let _ = send.send(line);
        }
    });
    let mut seen = Vec::new();
    loop {
        let line = receive
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no line starting with {prefix:?}; got {seen:?}"));
        seen.push(line.clone());
        if line.starts_with(prefix) {
            return (line, seen);
        }
    }
}

/// Kills a child process however the test ends.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A daemon process on a free loopback port, with its data in `data`.
pub struct DaemonProcess {
    child: Killed,
    pub data: PathBuf,
    pub address: String,
    /// The one-time code of the page address it printed.
    pub login: String,
    /// Its token file (`--token-file`, else the data directory's).
    pub token_file: PathBuf,
}

impl DaemonProcess {
    /// Starts `toolgate serve` with the shipped policy.
    pub fn start(data: &Path) -> DaemonProcess {
        DaemonProcess::start_with(data, &[])
    }

    /// Starts `toolgate serve` with the shipped policy and more arguments.
    pub fn start_with(data: &Path, more: &[&str]) -> DaemonProcess {
        DaemonProcess::start_with_policy(data, "examples/policy.toml", more)
    }

    /// Starts `toolgate serve` with `policy` alone (a path from the repository's root) and more
    /// arguments.
    pub fn start_with_policy(data: &Path, policy: &str, more: &[&str]) -> DaemonProcess {
        DaemonProcess::start_writing(data, policy, more, Stdio::null())
    }

    /// Starts `toolgate serve` with the repository's example policy, its standard error written
    /// to `log`.
    pub fn start_logged(data: &Path, more: &[&str], log: &Path) -> DaemonProcess {
        let log = std::fs::File::create(log).unwrap();
        DaemonProcess::start_writing(data, "examples/policy.toml", more, Stdio::from(log))
    }

    /// Starts `toolgate serve` with the repository's example policy, its standard error written
    /// to `log`, able to write files of at most `blocks` of the shell's `ulimit -f` units (a disk
    /// that fills: a write past it fails with `EFBIG`, `SIGXFSZ` ignored).
    #[allow(dead_code)]
    pub fn start_with_file_limit(data: &Path, blocks: u64, log: &Path) -> DaemonProcess {
        let log = std::fs::File::create(log).unwrap();
        let limit = blocks.to_string();
        let launcher = [
            "sh",
            "-c",
            "trap '' XFSZ; ulimit -f \"$0\" && exec \"$@\"",
            &limit,
            BIN,
        ];
        DaemonProcess::launch(
            &launcher,
            data,
            "examples/policy.toml",
            &[],
            Stdio::from(log),
        )
    }

    fn start_writing(data: &Path, policy: &str, more: &[&str], stderr: Stdio) -> DaemonProcess {
        DaemonProcess::launch(&[BIN], data, policy, more, stderr)
    }

    /// Starts `launcher` (the binary, or a program and its arguments that run it) with `serve`.
    fn launch(
        launcher: &[&str],
        data: &Path,
        policy: &str,
        more: &[&str],
        stderr: Stdio,
    ) -> DaemonProcess {
        let child = Command::new(launcher[0])
            .args(&launcher[1..])
            .args(["serve", "--isolated", "--policy", policy])
            .args(more)
            .current_dir(root())
            .env("TOOLGATE_DATA_DIR", data)
            .env("TOOLGATE_LISTEN", "127.0.0.1:0")
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let mut child = Killed(child);
        let output = child.0.stdout.take().unwrap();
        let (page, seen) = wait_for_line(output, "  open the approval page: http://");
        let address = seen
            .iter()
            .find_map(|l| l.strip_prefix("toolgate is listening on http://"))
            .unwrap()
            .to_owned();
        let login = page.split("#login=").nth(1).unwrap().trim().to_owned();
        let token_file = more
            .iter()
            .position(|arg| *arg == "--token-file")
            .and_then(|at| more.get(at + 1))
            .map_or_else(|| data.join("token"), PathBuf::from);
        DaemonProcess {
            child,
            data: data.to_owned(),
            address,
            login,
            token_file,
        }
    }

    /// Sends the process a signal by name (`INT`, `TERM`).
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args(["-s", name, &self.child.0.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -s {name}");
    }

    /// Its exit status, waited for at most `within`; `None` if it is still running.
    pub fn wait_exit(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let started = std::time::Instant::now();
        while started.elapsed() < within {
            if let Some(status) = self.child.0.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// `kill -9`, and reap.
    pub fn kill(&mut self) {
        let _ = self.child.0.kill();
        let _ = self.child.0.wait();
    }

    /// The API token.
    pub fn token(&self) -> String {
        std::fs::read_to_string(&self.token_file)
            .unwrap()
            .trim()
            .to_owned()
    }

    /// Runs a client command against this daemon.
    pub fn client(&self, args: &[&str]) -> Output {
        Command::new(BIN)
            .args(args)
            .env("TOOLGATE_DATA_DIR", &self.data)
            .env("TOOLGATE_URL", format!("http://{}", self.address))
            .env_remove("TOOLGATE_TOKEN")
            .output()
            .unwrap()
    }

    /// One HTTP request with the token; `None` when the connection failed or broke.
    pub fn http(&self, method: &str, path: &str, body: Option<&Value>) -> Option<(u16, Value)> {
        http(&self.address, &self.token(), method, path, body)
    }

    /// The names of the tokens the daemon knows.
    #[allow(dead_code)]
    pub fn token_names(&self) -> Vec<String> {
        let (_, tokens) = self.http("GET", "/api/tokens", None).unwrap();
        tokens["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    }
}

/// A `bash` call sent to the daemon: `command` in `/tmp`, in `session`.
pub fn bash_call(command: &str, session: &str) -> Value {
    serde_json::json!({"tool": "bash", "args": {"command": command},
                       "context": {"workspace": "/tmp", "session": session}})
}

/// One HTTP request; `None` when the connection failed or broke (nothing acknowledged).
pub fn http(
    address: &str,
    token: &str,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> Option<(u16, Value)> {
    let mut stream = TcpStream::connect(address).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .ok()?;
    let payload = body.map(Value::to_string).unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{payload}",
        payload.len()
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    let status: u16 = head.split(' ').nth(1)?.parse().ok()?;
    let body = if body.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(body).ok()?
    };
    Some((status, body))
}

/// `GET path` with this `Host`, on a fresh connection; the whole response, headers included.
pub fn raw_get(address: &str, host: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

/// What the browser tests need and this machine lacks (playwright-core in `tests/browser`,
/// Chromium, node), or `None`.
pub fn browser_missing() -> Option<String> {
    let browser = root().join("tests/browser");
    if !browser.join("node_modules/playwright-core").exists() {
        return Some("tests/browser/node_modules (run `npm ci --prefix tests/browser`)".into());
    }
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    if !std::path::Path::new(&chromium).exists() {
        return Some(format!("{chromium} (apt-get install chromium)"));
    }
    if Command::new("node").arg("--version").output().is_err() {
        return Some("node".into());
    }
    None
}

/// Whether this machine offers the whole kernel sandbox (Landlock and user namespaces), as
/// `toolgate sandbox --probe` says; where it does not, the caller's test skips saying so —
/// unless `TOOLGATE_REQUIRE_SANDBOX` is set (`.ci/run`), where it fails.
pub fn sandbox_available() -> bool {
    let output = Command::new(BIN)
        .args(["sandbox", "--probe"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&output.stdout).into_owned();
    let full = said.contains("Landlock ABI") && said.contains("(user and mount namespace)");
    if !full {
        assert!(
            std::env::var_os("TOOLGATE_REQUIRE_SANDBOX").is_none(),
            "this machine must offer Landlock and user namespaces: {said}"
        );
        eprintln!("skipped: the sandbox is not fully available here: {said}");
    }
    full
}

/// A folder for a sandbox test's workspace and the places beside it: not under the system's
/// temporary folders, which the sandbox lets every program write (so a write "outside" there
/// would not be one). The build's scratch folder, the repository, or the home folder — the
/// first not under `/tmp`, `/var/tmp`, `/dev/shm` or `$TMPDIR`.
pub fn outside_scratch() -> tempfile::TempDir {
    let scratch: Vec<PathBuf> = ["/tmp", "/var/tmp", "/dev/shm"]
        .iter()
        .map(PathBuf::from)
        .chain(std::env::var_os("TMPDIR").map(PathBuf::from))
        .chain(Some(std::env::temp_dir()))
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect();
    let candidates = [
        Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR"))),
        Some(root()),
        std::env::var_os("HOME").map(PathBuf::from),
    ];
    let base = candidates
        .into_iter()
        .flatten()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .find(|p| !scratch.iter().any(|s| p.starts_with(s)))
        .expect("a folder outside the temporary folders");
    tempfile::Builder::new()
        .prefix(".toolgate-sandbox-test-")
        .tempdir_in(base)
        .unwrap()
}

/// The ACP peers' folder (`tests/acp`), or `None` (the caller's test skips, saying so) where they
/// are not installed and `TOOLGATE_REQUIRE_ACP` is not set (`.ci/run` sets it: there they may not
/// be missing).
pub fn acp_peers() -> Option<PathBuf> {
    let folder = root().join("tests/acp");
    if folder
        .join("node_modules/@agentclientprotocol/sdk")
        .is_dir()
    {
        return Some(folder);
    }
    assert!(
        std::env::var_os("TOOLGATE_REQUIRE_ACP").is_none(),
        "the ACP peers are not installed (`npm ci --prefix tests/acp`)"
    );
    eprintln!("skipped: the ACP peers are not installed (`npm ci --prefix tests/acp`)");
    None
}

/// A folder for an ACP test: `work/` (the session's workspace) holding `notes.txt` with `notes`,
/// and `policy.toml` (`version = 1` and `rules`) beside it. Returns the guard, the resolved
/// folder, the workspace and the policy's path.
pub fn acp_workspace(notes: &str, rules: &str) -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let work = base.join("work");
    std::fs::create_dir(&work).unwrap();
    std::fs::write(work.join("notes.txt"), notes).unwrap();
    let policy = base.join("policy.toml");
    std::fs::write(&policy, format!("version = 1\n{rules}")).unwrap();
    (dir, base, work, policy)
}

/// The daemon's pending requests, once there are `count` (bounded: 30 s).
pub fn pending(daemon: &DaemonProcess, count: usize) -> Vec<Value> {
    for _ in 0..300 {
        let (_, body) = daemon.http("GET", "/api/pending", None).unwrap();
        let pending = body["pending"].as_array().cloned().unwrap_or_default();
        if pending.len() == count {
            return pending;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("{count} requests did not come to wait on the page");
}

/// The options `opt-KIND` of these kinds, as an ACP agent offers them.
pub fn acp_options(kinds: &[&str]) -> Value {
    Value::Array(
        kinds
            .iter()
            .map(|k| serde_json::json!({"optionId": format!("opt-{k}"), "name": k, "kind": k}))
            .collect(),
    )
}

/// A scripted agent's permission request step (`tests/acp/agent.mjs`): tool call `id` of `kind`
/// at `path`, offering the options of `kinds`.
pub fn acp_permission(id: &str, kind: &str, path: &str, kinds: &[&str]) -> Value {
    serde_json::json!({"permission": {
        "toolCall": {"toolCallId": id, "title": id, "kind": kind, "locations": [{"path": path}]},
        "options": acp_options(kinds),
    }})
}

/// What the scripted editor saw, once it ended well.
pub fn editor_saw(output: &Output, what: &str) -> Value {
    assert!(
        output.status.success(),
        "{what}: the editor failed: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}
