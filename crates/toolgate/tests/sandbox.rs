//! `toolgate sandbox` running real programs: what the policy allows without asking runs, and
//! writes outside the workspace, into protected paths, by grandchildren and after `unshare`,
//! reads of denied places and TCP connections all fail. `.ci/run` sets
//! `TOOLGATE_REQUIRE_SANDBOX=1`: there, Landlock (ABI 6 or later) and unprivileged user
//! namespaces must be there; elsewhere a test says what is missing and passes.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{BIN, sandbox_available};

/// A workspace (a git repository) and a folder beside it, outside the system's temporary
/// folders (which the sandbox lets programs write), and a home with secrets.
struct Place {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    outside: PathBuf,
    home: PathBuf,
}

fn place() -> Place {
    let dir = common::outside_scratch();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let ws = base.join("ws");
    let outside = base.join("outside");
    let home = base.join("home");
    for folder in [
        ws.join("src"),
        ws.join(".toolgate"),
        outside.clone(),
        home.join(".ssh"),
    ] {
        std::fs::create_dir_all(folder).unwrap();
    }
    std::fs::write(home.join(".ssh/id_rsa"), "PRIVATE KEY\n").unwrap();
    std::fs::write(
        home.join(".netrc"),
        "machine example.org password HUNTER2\n",
    )
    .unwrap();
    std::fs::write(outside.join("target.txt"), "outside\n").unwrap();
    let status = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&ws)
        .status()
        .unwrap();
    assert!(status.success());
    Place {
        _dir: dir,
        ws,
        outside,
        home,
    }
}

/// Runs `script` with `sh` in the sandbox, in the workspace, under the built-in policy.
fn sandboxed(place: &Place, flags: &[&str], script: &str) -> Output {
    sandboxed_with(place, flags, script, &[])
}

/// Runs `script` as [`sandboxed`] does, with more environment variables.
fn sandboxed_with(place: &Place, flags: &[&str], script: &str, env: &[(&str, &OsStr)]) -> Output {
    Command::new("timeout")
        .args(["60", BIN, "sandbox", "--isolated"])
        .args(flags)
        .args(["--", "sh", "-c", script])
        .current_dir(&place.ws)
        .env("HOME", &place.home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("XDG_DATA_HOME")
        .env_remove("TOOLGATE_DATA_DIR")
        .envs(env.iter().map(|(k, v)| (*k, *v)))
        .output()
        .unwrap()
}

fn said(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn exists(path: &Path) -> bool {
    path.symlink_metadata().is_ok()
}

#[test]
fn ordinary_work_runs_and_escapes_fail() {
    if !sandbox_available() {
        return;
    }
    let place = place();
    let outside = place.outside.display().to_string();
    std::os::unix::fs::symlink(place.outside.join("target.txt"), place.ws.join("link.txt"))
        .unwrap();
    let script = format!(
        "set -u
         echo inside > src/a.txt && echo OK-inside
         echo tmp > /tmp/toolgate-sandbox-$$ && rm /tmp/toolgate-sandbox-$$ && echo OK-tmp
         git -c user.email=t@example.com -c user.name=t commit -q --allow-empty -m x && echo OK-commit
         echo x > {outside}/new.txt || echo REFUSED-outside
         echo x > .git/hooks/pre-commit || echo REFUSED-hook
         echo x >> .git/config || echo REFUSED-config
         echo x > .toolgate/policy.toml || echo REFUSED-toolgate
         echo x > link.txt || echo REFUSED-symlink
         ln {outside}/target.txt hard.txt || echo REFUSED-hardlink
         sh -c 'sh -c \"echo x > {outside}/grandchild.txt\"' || echo REFUSED-grandchild
         unshare -r sh -c 'echo x > {outside}/unshared.txt' || echo REFUSED-unshare
         chroot / sh -c 'echo x > {outside}/chroot.txt' || echo REFUSED-chroot
         umount .git/hooks 2>/dev/null || echo REFUSED-umount
         echo x > .git/hooks/pre-push || echo REFUSED-after-umount
         cat \"$HOME/.ssh/id_rsa\" || echo REFUSED-secret
         cat \"$HOME/.netrc\"; echo READ-netrc
         python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 9), 2)' 2>/dev/null || echo REFUSED-connect
         true"
    );
    let output = sandboxed(&place, &[], &script);
    let text = said(&output);
    for expected in [
        "OK-inside",
        "OK-tmp",
        "OK-commit",
        "REFUSED-outside",
        "REFUSED-hook",
        "REFUSED-config",
        "REFUSED-toolgate",
        "REFUSED-symlink",
        "REFUSED-hardlink",
        "REFUSED-grandchild",
        "REFUSED-unshare",
        "REFUSED-chroot",
        "REFUSED-secret",
        "REFUSED-connect",
    ] {
        assert!(text.contains(expected), "{expected} missing:\n{text}");
    }
    assert!(!text.contains("PRIVATE KEY"), "{text}");
    // A denied file (`~/.netrc`) reads as empty: `/dev/null` is bound over it.
    assert!(text.contains("READ-netrc"), "{text}");
    assert!(!text.contains("HUNTER2"), "{text}");
    for written in ["new.txt", "grandchild.txt", "unshared.txt", "chroot.txt"] {
        assert!(
            !exists(&place.outside.join(written)),
            "{written} was written"
        );
    }
    assert_eq!(
        std::fs::read_to_string(place.outside.join("target.txt")).unwrap(),
        "outside\n"
    );
    assert!(!exists(&place.ws.join(".git/hooks/pre-commit")));
    assert!(!exists(&place.ws.join(".toolgate/policy.toml")));
    assert!(!exists(&place.ws.join("hard.txt")));
    assert_eq!(
        std::fs::read_to_string(place.ws.join("src/a.txt")).unwrap(),
        "inside\n"
    );
}

#[test]
fn the_network_is_the_plans_to_allow_and_the_exit_code_is_the_programs() {
    if !sandbox_available() {
        return;
    }
    let place = place();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!(
        "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 5)' && echo CONNECTED"
    );
    let refused = sandboxed(&place, &[], &connect);
    assert!(!said(&refused).contains("CONNECTED"), "{}", said(&refused));
    let allowed = sandboxed(&place, &["--network"], &connect);
    assert!(said(&allowed).contains("CONNECTED"), "{}", said(&allowed));
    let exit = sandboxed(&place, &[], "exit 7");
    assert_eq!(exit.status.code(), Some(7));
}

#[test]
fn the_probe_says_what_each_mechanism_enforces_and_nothing_is_pretended() {
    let probe = |flags: &[&str]| {
        let output = Command::new(BIN)
            .args(["sandbox", "--probe"])
            .args(flags)
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
        )
    };
    let (code, none) = probe(&["--no-landlock", "--no-namespaces"]);
    assert_eq!(code, Some(1));
    assert!(
        none.starts_with("enforced: nothing; not enforced: writes outside"),
        "{none}"
    );
    if !sandbox_available() {
        return;
    }
    let (code, landlock) = probe(&["--no-namespaces"]);
    assert_eq!(code, Some(0));
    assert!(
        landlock.contains("writes only in the writable folders (Landlock ABI"),
        "{landlock}"
    );
    assert!(
        landlock.contains("not enforced: protected paths inside the writable folders"),
        "{landlock}"
    );
    let (_, namespaces) = probe(&["--no-landlock"]);
    assert!(
        namespaces.contains("(user and mount namespace)"),
        "{namespaces}"
    );
    assert!(
        namespaces.contains("not enforced: writes outside"),
        "{namespaces}"
    );
    // Each alone still holds what it holds.
    let place = place();
    let outside = place.outside.display().to_string();
    let only_landlock = sandboxed(
        &place,
        &["--no-namespaces"],
        &format!("echo x > {outside}/a.txt || echo REFUSED"),
    );
    assert!(said(&only_landlock).contains("REFUSED"));
    let only_mounts = sandboxed(
        &place,
        &["--no-landlock"],
        "echo x > .git/hooks/pre-commit || echo REFUSED",
    );
    assert!(
        said(&only_mounts).contains("REFUSED"),
        "{}",
        said(&only_mounts)
    );
    // Nothing to enforce: refused unless asked for.
    let nothing = sandboxed(&place, &["--no-landlock", "--no-namespaces"], "echo RAN");
    assert_eq!(nothing.status.code(), Some(2));
    assert!(!said(&nothing).contains("RAN"), "{}", said(&nothing));
    let anyway = sandboxed(
        &place,
        &["--no-landlock", "--no-namespaces", "--allow-unsandboxed"],
        "echo RAN",
    );
    assert!(said(&anyway).contains("RAN"));
    assert!(said(&anyway).contains("running unsandboxed"));
}

/// The red-team's escapes that write or run something, re-run as real programs in the
/// sandbox: each payload runs (it leaves a mark inside the workspace) and its write outside
/// fails. They stay useful after the policy engine learns each one.
#[test]
fn the_red_teams_escapes_are_contained() {
    if !sandbox_available() {
        return;
    }
    let place = place();
    let ws = &place.ws;
    let out = |name: &str| place.outside.join(name).display().to_string();
    // An archive with a member at an absolute path (`tar -P` keeps it).
    let archive = ws.join("evil.tar");
    let status = Command::new("python3")
        .arg("-c")
        .arg(format!(
            "import tarfile, io\n\
             t = tarfile.open({archive:?}, 'w')\n\
             for name, data in [({abs:?}, b'x'), ('tar-ran.txt', b'ran')]:\n\
             \x20   i = tarfile.TarInfo(name); i.size = len(data); t.addfile(i, io.BytesIO(data))\n\
             t.close()",
            archive = archive.display().to_string(),
            abs = out("tar-escape.txt"),
        ))
        .status()
        .unwrap();
    assert!(status.success());
    // A script `npm test --node-options=--require=…` loads into node.
    std::fs::write(
        ws.join("package.json"),
        r#"{"name": "t", "version": "1.0.0", "scripts": {"test": "node -e 0"}}"#,
    )
    .unwrap();
    std::fs::write(
        ws.join("evil.js"),
        format!(
            "const fs = require('fs');\n\
             fs.writeFileSync('npm-ran.txt', 'ran');\n\
             try {{ fs.writeFileSync({:?}, 'x'); }} catch (e) {{ fs.writeFileSync('npm-refused.txt', e.code); }}\n",
            out("npm-escape.txt")
        ),
    )
    .unwrap();
    let script = format!(
        "tar -xPf evil.tar 2>/dev/null; \
         make -f /dev/null --eval='$(shell echo ran > make-ran.txt; echo x > {make})' 2>/dev/null; \
         npm_config_cache=/tmp/toolgate-npm-$$ npm test --node-options=--require=./evil.js >/dev/null 2>&1; \
         git init -q nested && git -C nested config core.fsmonitor \"sh -c 'echo ran > ../git-ran.txt; echo x > {git}'\" && \
         git -C nested status >/dev/null 2>&1; \
         rm -rf /tmp/toolgate-npm-$$; true",
        make = out("make-escape.txt"),
        git = out("git-escape.txt"),
    );
    let output = sandboxed(&place, &[], &script);
    for ran in ["tar-ran.txt", "make-ran.txt", "npm-ran.txt", "git-ran.txt"] {
        assert!(
            ws.join(ran).exists(),
            "the payload {ran} did not run: {}",
            said(&output)
        );
    }
    assert_eq!(
        std::fs::read_to_string(ws.join("npm-refused.txt")).unwrap(),
        "EACCES"
    );
    for escaped in [
        "tar-escape.txt",
        "make-escape.txt",
        "npm-escape.txt",
        "git-escape.txt",
    ] {
        assert!(
            !exists(&place.outside.join(escaped)),
            "{escaped} was written"
        );
    }
}

/// What review found: renaming the folder above a protected path, toolgate's own data and
/// token, a policy file that widens the scratch places to the home folder, and the sockets of
/// services that run commands outside the sandbox.
#[test]
fn the_ways_around_the_sandbox_review_found_are_closed() {
    if !sandbox_available() {
        return;
    }
    let place = place();
    let data = place.home.join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("token"), "SECRET-TOKEN\n").unwrap();
    // A service listening on a socket (as ssh-agent, a session bus or tmux do).
    let socket = place.outside.join("agent.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    let policy = place.outside.join("wide.toml");
    std::fs::write(
        &policy,
        "version = 1\n[workspace]\nscratch = [\"~/\", \"/\"]\n",
    )
    .unwrap();
    let script = "mv .git .moved 2>/dev/null || echo REFUSED-rename
         echo x > .git/hooks/pre-commit 2>/dev/null || echo REFUSED-hook
         cat \"$TOOLGATE_DATA_DIR/token\" 2>/dev/null || echo REFUSED-token
         echo \"token:${TOOLGATE_TOKEN:-unset}\"
         echo x > \"$HOME/home.txt\" 2>/dev/null || echo REFUSED-home
         python3 -c 'import os, socket; socket.socket(socket.AF_UNIX).connect(os.environ[\"SSH_AUTH_SOCK\"])' 2>/dev/null || echo REFUSED-socket";
    let policy_flag = policy.display().to_string();
    let output = sandboxed_with(
        &place,
        &["--policy", &policy_flag],
        script,
        &[
            ("TOOLGATE_DATA_DIR", data.as_os_str()),
            ("TOOLGATE_TOKEN", OsStr::new("SECRET-TOKEN")),
            ("SSH_AUTH_SOCK", socket.as_os_str()),
        ],
    );
    let text = said(&output);
    for expected in [
        "REFUSED-rename",
        "REFUSED-hook",
        "REFUSED-token",
        "token:unset",
        "REFUSED-home",
        "REFUSED-socket",
    ] {
        assert!(text.contains(expected), "{expected} missing:\n{text}");
    }
    assert!(!text.contains("SECRET-TOKEN"), "{text}");
    assert!(exists(&place.ws.join(".git/HEAD")), "the repository moved");
    assert!(!exists(&place.home.join("home.txt")));
    assert!(listener.accept().is_err(), "the socket was reached");
}

#[test]
fn through_the_proxy_only_what_the_policy_allows_is_reached() {
    if !sandbox_available() {
        return;
    }
    let place = place();
    // A server on this machine's loopback, outside the sandbox: it counts what reaches it.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let served = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    {
        let served = std::sync::Arc::clone(&served);
        std::thread::spawn(move || {
            for stream in listener.incoming().take(20) {
                let Ok(mut stream) = stream else { continue };
                served.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let mut request = [0u8; 4096];
                let _ = std::io::Read::read(&mut stream, &mut request);
                let body = "hello from the allowed server\n";
                let _ = std::io::Write::write_all(
                    &mut stream,
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    )
                    .as_bytes(),
                );
            }
        });
    }
    let policy = place.outside.join("proxy-policy.toml");
    std::fs::write(
        &policy,
        "version = 1\nextends = \"default\"\n\n[[rule]]\nname = \"test-hosts\"\n\
         decision = \"allow\"\ndomain = [\"allowed.test\", \"sneaky.test\"]\n\
         scheme = [\"http\", \"https\"]\n",
    )
    .unwrap();
    let policy = policy.display().to_string();
    // The test's names map to addresses by hand (`--resolve`, as curl's).
    let flags = [
        "--policy",
        &policy,
        "--proxy",
        "--resolve",
        "allowed.test=127.0.0.1",
        "--resolve",
        "denied.test=127.0.0.1",
        "--resolve",
        "sneaky.test=10.0.0.5",
    ];
    let curl = |url: &str, extra: &str| {
        format!("curl -sS -f --max-time 10 {extra} {url}; echo \" rc=$?\"")
    };
    let allowed = sandboxed(
        &place,
        &flags,
        &curl(&format!("http://allowed.test:{port}/"), ""),
    );
    assert!(
        said(&allowed).contains("hello from the allowed server\n rc=0"),
        "{}",
        said(&allowed)
    );
    assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 1);
    // Refused: a name the policy does not allow (plain HTTP and CONNECT), a name it allows
    // that leads to a private address, the metadata service, and the server straight past
    // the proxy. None of them reaches it.
    for (url, extra) in [
        (format!("http://denied.test:{port}/"), ""),
        (format!("https://denied.test:{port}/"), "-k"),
        // A tunnel to an address of this machine (a raw socket to its services), even for an
        // allowed name; a tunnel to another port than HTTPS's; a plain request that is not a
        // fetch.
        ("https://allowed.test/".to_owned(), "-k"),
        (format!("https://allowed.test:{port}/"), "-k"),
        (format!("http://allowed.test:{port}/"), "-X POST -d x"),
        ("http://sneaky.test/".to_owned(), ""),
        ("http://169.254.169.254/latest/meta-data/".to_owned(), ""),
        (format!("http://127.0.0.1:{port}/"), "--noproxy '*'"),
    ] {
        let refused = sandboxed(&place, &flags, &format!("{}; exit 1", curl(&url, extra)));
        let text = said(&refused);
        assert!(!text.contains("rc=0"), "{url}: {text}");
        assert!(!text.contains("hello from"), "{url}: {text}");
        if extra.is_empty() {
            // The program failed: what the proxy refused is said at exit.
            assert!(
                text.contains("the sandbox's proxy refused:"),
                "{url}: {text}"
            );
        }
    }
    assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 1);
    // A run widened by one host (a person allowed a command that reaches it): that host, and
    // only it, goes through.
    let mut widened = flags.to_vec();
    widened.extend(["--allow-domain", "denied.test"]);
    let through = sandboxed(
        &place,
        &widened,
        &curl(&format!("http://denied.test:{port}/"), ""),
    );
    assert!(
        said(&through).contains("hello from the allowed server\n rc=0"),
        "{}",
        said(&through)
    );
    assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 2);
    // Without the namespaces, the proxy is refused, not run past.
    let weak = sandboxed(&place, &["--proxy", "--no-namespaces"], "echo RAN");
    assert!(!said(&weak).contains("RAN"), "{}", said(&weak));
    assert!(
        said(&weak).contains("needs a network namespace"),
        "{}",
        said(&weak)
    );
}
