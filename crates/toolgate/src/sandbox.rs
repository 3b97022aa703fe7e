//! `toolgate sandbox -- PROGRAM ARGS…`: runs a program confined by the kernel to what the
//! policy allows without asking (see the `toolgate-sandbox` crate and docs/sandbox.md).
//!
//! The plan is drawn from the policy: the workspace roots and the scratch places (the system's
//! temporary folders, `$TMPDIR`, the policy's `scratch`) are writable; the protected paths that
//! exist at each workspace root (`.git/hooks`, `.git/config`, `.toolgate`, agents' and editors'
//! settings, the policy's `protected`) stay read-only; the folders the policy's path-only
//! `deny` rules name (`~/.ssh`, `~/.aws`, …) are hidden; the network is off unless `--network`.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Args;
use toolgate_policy::Policy;
use toolgate_sandbox::{Plan, Probe};

use crate::args::PolicyArgs;
use crate::{EXIT_OK, Failure};

/// Runs a program confined by the kernel to what the policy allows without asking.
#[derive(Debug, Args)]
pub(crate) struct SandboxArgs {
    #[command(flatten)]
    policy: PolicyArgs,
    /// The workspace root the program may write in (default: the current folder).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Let the program use the network (TCP).
    #[arg(long, conflicts_with = "proxy")]
    network: bool,
    /// Let the program reach, over HTTP and HTTPS, what the policy allows without asking —
    /// through toolgate's filtering proxy (given to it in `HTTP_PROXY`, `HTTPS_PROXY`,
    /// `ALL_PROXY`), its only way out of a network of its own. Needs the namespaces.
    #[arg(long)]
    proxy: bool,
    /// With --proxy, use ADDR for HOST instead of asking the resolver (as curl's --resolve).
    #[arg(long, value_name = "HOST=ADDR", requires = "proxy")]
    resolve: Vec<String>,
    /// With --proxy, let this host through as well, for this run only (a person allowed a
    /// command that reaches it); an address of this machine or its network is still decided
    /// by the policy.
    #[arg(long, value_name = "HOST", requires = "proxy")]
    allow_domain: Vec<String>,
    /// (Internal) the proxy's socket, for the sandboxed side of --proxy.
    #[arg(long, hide = true, value_name = "PATH")]
    proxy_socket: Option<PathBuf>,
    /// Say what this machine can enforce, in one line, and exit.
    #[arg(long)]
    probe: bool,
    /// Run the program even when nothing can be enforced.
    #[arg(long)]
    allow_unsandboxed: bool,
    /// Do not use a user and mount namespace.
    #[arg(long)]
    no_namespaces: bool,
    /// Do not use Landlock.
    #[arg(long)]
    no_landlock: bool,
    /// Print what is enforced on stderr before the program starts.
    #[arg(long, short)]
    verbose: bool,
    /// (Internal) probe this process and print the result.
    #[arg(long, hide = true)]
    probe_child: bool,
    /// The program and its arguments, after `--`.
    #[arg(last = true, value_name = "PROGRAM")]
    command: Vec<OsString>,
}

/// The paths a protected glob names at a workspace root: `**/NAME` and `NAME/**` at the top
/// (a glob with wildcards in its name names none); the `.git` folder itself is its hooks and
/// configuration (the rest of it changes with every commit).
fn protected_at(root: &Path, globs: &[String]) -> Vec<PathBuf> {
    let mut names: Vec<String> = Vec::new();
    for glob in globs {
        let bare = glob.trim_start_matches("**/");
        let bare = bare.strip_suffix("/**").unwrap_or(bare);
        if bare.is_empty()
            || bare.starts_with('/')
            || bare.starts_with('~')
            || bare.contains(['*', '?', '[', '{'])
        {
            continue;
        }
        if bare == ".git" {
            for part in [".git/hooks", ".git/config", ".git/info"] {
                names.push(part.to_owned());
            }
            continue;
        }
        names.push(bare.to_owned());
    }
    names.sort();
    names.dedup();
    names
        .iter()
        .map(|n| root.join(n))
        .filter(|p| p.symlink_metadata().is_ok())
        .collect()
}

/// The places a denied glob names: the folders of `~/.ssh/**`, `/etc/ssh/**` (absolute, no
/// wildcard before the trailing `/**`), and the files of `~/.netrc`, `~/.cargo/credentials.toml`
/// (absolute, no wildcard at all) — those that exist.
fn hidden_places(globs: &[String]) -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let place = |path: &str| match path.strip_prefix("~/") {
        Some(rest) => home.as_ref().map(|h| h.join(rest)),
        None => path.starts_with('/').then(|| PathBuf::from(path)),
    };
    globs
        .iter()
        .filter_map(|glob| match glob.strip_suffix("/**") {
            Some(folder) if !folder.contains(['*', '?', '[', '{']) => {
                place(folder).filter(|p| p.is_dir())
            }
            Some(_) => None,
            None if !glob.contains(['*', '?', '[', '{']) => place(glob).filter(|p| p.is_file()),
            None => None,
        })
        .collect()
}

/// Whether a folder is too broad to be writable: the policy engine's rule for workspace roots,
/// with the home folder as written and as it resolves.
fn too_broad(root: &Path) -> bool {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let resolved = home.as_ref().and_then(|h| std::fs::canonicalize(h).ok());
    toolgate_policy::too_broad(root, home.as_deref())
        || toolgate_policy::too_broad(root, resolved.as_deref())
}

/// What the sandbox takes from a policy: its roots, scratch places, protected and denied
/// globs.
#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Facts {
    /// `[workspace] roots`: each as written, and the folder of the file that declared it.
    roots: Vec<(String, Option<PathBuf>)>,
    scratch: Vec<String>,
    protected: Vec<String>,
    denied: Vec<String>,
}

impl Facts {
    fn of(policy: &Policy) -> Facts {
        let settings = policy.settings();
        Facts {
            roots: settings
                .roots
                .iter()
                .map(|r| (r.path.clone(), r.base_dir.clone()))
                .collect(),
            scratch: settings.scratch_places.clone(),
            protected: policy.protected_globs(),
            denied: policy.denied_path_globs(),
        }
    }
}

/// The policy's facts for the sandbox. Loading a policy is most of a sandboxed command's
/// start-up, so what a policy's text (and the environment it is read in) gives is kept in
/// toolgate's cache folder beside the hook's marker of checked texts — a folder the policy
/// engine keeps every agent's tool calls out of, and the sandbox never lets a program write.
fn facts(files: &[(toolgate_policy::PolicyRole, PathBuf)]) -> Result<Facts, Failure> {
    let kept = PolicyArgs::sources(files)
        .ok()
        .and_then(|sources| crate::hook::checked_marker(&sources))
        .map(|marker| marker.with_extension("sandbox.json"));
    if let Some(kept) = &kept
        && let Ok(text) = std::fs::read(kept)
        && let Ok(facts) = serde_json::from_slice::<Facts>(&text)
    {
        return Ok(facts);
    }
    let policy = crate::hook::load_for_one_call(files)
        .map_err(|e| Failure::Message(format!("error: {e}")))?;
    let facts = Facts::of(&policy);
    // Best effort: without it the next command loads the policy again.
    if let Some(kept) = kept
        && let Ok(text) = serde_json::to_vec(&facts)
        && kept
            .parent()
            .is_some_and(|dir| std::fs::create_dir_all(dir).is_ok())
    {
        let _ = std::fs::write(kept, text);
    }
    Ok(facts)
}

/// The plan for a program in `workspace` under a policy's facts.
fn plan(facts: &Facts, workspace: &Path, network: bool) -> Plan {
    let mut roots = vec![workspace.to_path_buf()];
    for (path, base) in &facts.roots {
        let base = base.clone().unwrap_or_else(|| workspace.to_path_buf());
        roots.push(base.join(path));
    }
    let roots: Vec<PathBuf> = roots
        .into_iter()
        .filter_map(|r| std::fs::canonicalize(r).ok())
        .filter(|r| !too_broad(r))
        .collect();
    let read_only: Vec<PathBuf> = roots
        .iter()
        .flat_map(|root| protected_at(root, &facts.protected))
        .collect();
    // The folders between a root and a protected path stay where they are.
    let mut pinned: Vec<PathBuf> = Vec::new();
    for path in &read_only {
        let Some(root) = roots.iter().find(|r| path.starts_with(r)) else {
            continue;
        };
        let mut folder = path.parent();
        while let Some(f) = folder.filter(|f| *f != root.as_path() && f.starts_with(root)) {
            if !pinned.iter().any(|p| p == f) {
                pinned.push(f.to_path_buf());
            }
            folder = f.parent();
        }
    }
    let mut writable = roots;
    writable.push(std::env::temp_dir());
    for scratch in ["/tmp", "/var/tmp", "/dev/shm"] {
        writable.push(PathBuf::from(scratch));
    }
    if let Some(tmp) = std::env::var_os("TMPDIR").filter(|t| !t.is_empty()) {
        writable.push(PathBuf::from(tmp));
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    for place in &facts.scratch {
        let path = match (place.strip_prefix("~/"), &home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ => PathBuf::from(place),
        };
        writable.push(path);
    }
    // No scratch place as broad as a home: a policy file a program made cannot widen the
    // next run to all of it.
    writable.retain(|place| {
        std::fs::canonicalize(place).map_or(true, |resolved| !too_broad(&resolved))
    });
    // What programs write as a matter of course.
    for device in [
        "/dev/null",
        "/dev/zero",
        "/dev/full",
        "/dev/tty",
        "/dev/pts",
        "/dev/ptmx",
    ] {
        writable.push(PathBuf::from(device));
    }
    let mut hidden = hidden_places(&facts.denied);
    // toolgate's own: the daemon's data and token, its cache (the kept facts among it).
    hidden.extend(toolgate_policy::own_folders());
    hidden.extend(toolgate_sandbox::service_sockets());
    Plan {
        writable,
        pinned,
        read_only,
        hidden,
        network,
        proxy: None,
    }
}

/// What this machine offers, probed in a child process of its own (the probe confines the
/// process that makes it).
fn probe(args: &SandboxArgs) -> Result<Probe, Failure> {
    let exe = std::env::current_exe()
        .map_err(|e| Failure::Message(format!("error: cannot find toolgate's own binary: {e}")))?;
    let mut command = Command::new(exe);
    command.args(["sandbox", "--probe-child"]);
    if args.no_namespaces {
        command.arg("--no-namespaces");
    }
    if args.no_landlock {
        command.arg("--no-landlock");
    }
    let output = command
        .output()
        .map_err(|e| Failure::Message(format!("error: cannot probe the kernel: {e}")))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let value: serde_json::Value = serde_json::from_str(text.trim()).map_err(|_| {
        Failure::Message(format!(
            "error: the kernel's probe said nothing readable: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    })?;
    let result = |key: &str| -> Result<serde_json::Value, String> {
        let part = value.get(key).unwrap_or(&serde_json::Value::Null);
        match part.get("ok") {
            Some(ok) => Ok(ok.clone()),
            None => Err(part
                .get("error")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("unknown")
                .to_owned()),
        }
    };
    Ok(Probe {
        landlock: result("landlock").and_then(|abi| {
            abi.as_i64()
                .and_then(|a| i32::try_from(a).ok())
                .ok_or_else(|| "unknown".to_owned())
        }),
        namespaces: result("namespaces").map(|_| ()),
    })
}

pub(crate) fn run(args: &SandboxArgs) -> Result<u8, Failure> {
    if args.probe_child {
        let probe = toolgate_sandbox::probe_here(!args.no_namespaces, !args.no_landlock);
        let part = |r: Result<serde_json::Value, String>| match r {
            Ok(ok) => serde_json::json!({"ok": ok}),
            Err(error) => serde_json::json!({"error": error}),
        };
        let out = serde_json::json!({
            "landlock": part(probe.landlock.map(serde_json::Value::from)),
            "namespaces": part(probe.namespaces.map(|()| serde_json::Value::Null)),
        });
        println!("{out}");
        return Ok(EXIT_OK);
    }
    if args.probe {
        let probe = probe(args)?;
        println!("{}", probe.summary(args.network));
        return Ok(if probe.any() { EXIT_OK } else { 1 });
    }
    let Some((program, rest)) = args.command.split_first() else {
        return Err(Failure::Message(
            "error: name the program after `--` (or --probe)".into(),
        ));
    };
    let workspace = match &args.workspace {
        Some(dir) => dir.clone(),
        None => crate::args::current_folder()?,
    };
    let workspace = std::path::absolute(&workspace).unwrap_or(workspace);
    let files = args.policy.files_from(&workspace);
    if args.proxy && args.proxy_socket.is_none() {
        return supervise_with_proxy(args, &files, &workspace);
    }
    let mut plan = plan(&facts(&files)?, &workspace, args.network);
    plan.proxy = args.proxy_socket.clone();
    // Each mechanism is tried in this very process: what the kernel refuses is left out.
    let confined = toolgate_sandbox::confine(&plan, !args.no_namespaces, !args.no_landlock)
        .map_err(|e| Failure::Message(format!("error: the sandbox could not be made: {e}")))?;
    let held = confined.probe;
    let network = match (args.network, confined.proxy_port) {
        (true, _) => toolgate_sandbox::Network::On,
        (false, Some(_)) => toolgate_sandbox::Network::Proxy,
        (false, None) => toolgate_sandbox::Network::Off,
    };
    // Said whenever a mechanism could not hold: the program runs under what did.
    if (held.landlock.is_err() || held.namespaces.is_err()) && held.any() && !args.verbose {
        eprintln!(
            "toolgate: the sandbox is weaker here: {}",
            held.summary_of(network)
        );
    }
    if !held.any() {
        if !args.allow_unsandboxed {
            return Err(Failure::Message(format!(
                "error: this machine enforces nothing of the sandbox ({}); \
                 --allow-unsandboxed runs the program anyway",
                held.summary_of(network)
            )));
        }
        eprintln!(
            "toolgate: running unsandboxed: {}",
            held.summary_of(network)
        );
    } else if args.verbose {
        eprintln!("toolgate: {}", held.summary_of(network));
    }
    toolgate_sandbox::leave_the_terminal_if_it_types();
    // The program is this process from here on, without the daemon's token.
    let mut command = Command::new(program);
    command.args(rest).env_remove("TOOLGATE_TOKEN");
    if let Some(port) = confined.proxy_port {
        let proxy = format!("http://127.0.0.1:{port}");
        for name in [
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "http_proxy",
            "https_proxy",
            "all_proxy",
        ] {
            command.env(name, &proxy);
        }
        command.env_remove("NO_PROXY").env_remove("no_proxy");
    }
    let error = command.exec();
    Err(Failure::Message(format!(
        "error: cannot run `{}`: {error}",
        program.to_string_lossy()
    )))
}

/// `--proxy`: this process serves the filtering proxy on a UNIX socket of its own and runs
/// the sandboxed side (this command again, given the socket) as its child; it ends with the
/// child, with its exit code, saying what the proxy refused when the program failed.
fn supervise_with_proxy(
    args: &SandboxArgs,
    files: &[(toolgate_policy::PolicyRole, PathBuf)],
    workspace: &Path,
) -> Result<u8, Failure> {
    let fail = |what: &str, e: std::io::Error| Failure::Message(format!("error: {what}: {e}"));
    let mut resolve = Vec::new();
    for pair in &args.resolve {
        let parsed = pair
            .split_once('=')
            .and_then(|(host, addr)| Some((host.to_owned(), addr.parse().ok()?)));
        resolve.push(parsed.ok_or_else(|| {
            Failure::Message(format!("error: --resolve {pair:?}: give HOST=ADDR"))
        })?);
    }
    let policy = crate::hook::load_for_one_call(files)
        .map_err(|e| Failure::Message(format!("error: {e}")))?;
    // The socket, in a folder only this user reaches.
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let folder =
        std::env::temp_dir().join(format!("toolgate-proxy-{}-{started}", std::process::id()));
    std::fs::create_dir(&folder).map_err(|e| fail("cannot make the proxy's folder", e))?;
    let cleanup = Folder(folder.clone());
    std::fs::set_permissions(&folder, std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .map_err(|e| fail("cannot make the proxy's folder private", e))?;
    let socket = folder.join("proxy.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket)
        .map_err(|e| fail("cannot listen for the proxy", e))?;
    let proxy = std::sync::Arc::new(crate::sandbox_proxy::Proxy::new(
        policy,
        workspace.display().to_string(),
        resolve,
        args.allow_domain.clone(),
    ));
    {
        let proxy = std::sync::Arc::clone(&proxy);
        std::thread::spawn(move || proxy.serve(listener));
    }
    // This command again, the socket given: it makes the sandbox and runs the program.
    let exe = std::env::current_exe().map_err(|e| fail("cannot find toolgate's own binary", e))?;
    let mut words: Vec<OsString> = std::env::args_os().skip(1).collect();
    let at = words
        .iter()
        .position(|w| w == "sandbox")
        .map_or(0, |i| i + 1);
    words.splice(
        at..at,
        [OsString::from("--proxy-socket"), socket.into_os_string()],
    );
    let mut sandboxed = Command::new(exe);
    sandboxed.args(words);
    toolgate_sandbox::die_with_parent(&mut sandboxed);
    let mut child = sandboxed
        .spawn()
        .map_err(|e| fail("cannot start the sandbox", e))?;
    // Its forwarder (a child of the program, which is this child) is the proxy's one client.
    let _ = proxy.program.set(child.id());
    toolgate_sandbox::forward_signals(child.id());
    let status = child
        .wait()
        .map_err(|e| fail("cannot wait for the sandbox", e))?;
    let code = status
        .code()
        .or_else(|| {
            std::os::unix::process::ExitStatusExt::signal(&status).map(|signal| 128 + signal)
        })
        .unwrap_or(1);
    if code != 0
        && let Ok(refused) = proxy.refused.lock()
        && !refused.is_empty()
    {
        eprintln!(
            "toolgate: the sandbox's proxy refused: {} (the policy decides what a sandboxed \
             program may reach; allow it there to let it through)",
            refused.join("; ")
        );
    }
    drop(cleanup);
    Ok(u8::try_from(code).unwrap_or(1))
}

/// A folder removed (with what it holds) when dropped.
struct Folder(PathBuf);

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protected_globs_name_the_paths_at_a_root() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path();
        for folder in [".git/hooks", ".git/objects", ".vscode"] {
            std::fs::create_dir_all(root.join(folder)).unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::write(root.join(".git/config"), "").unwrap_or_else(|e| panic!("{e}"));
        let globs: Vec<String> = [
            "**/.git/**",
            "**/.vscode",
            ".toolgate/**",
            "**/*.pem",
            "~/.ssh/**",
        ]
        .iter()
        .map(|g| (*g).to_owned())
        .collect();
        let found = protected_at(root, &globs);
        assert_eq!(
            found,
            [
                root.join(".git/config"),
                root.join(".git/hooks"),
                root.join(".vscode")
            ]
        );
    }
}
