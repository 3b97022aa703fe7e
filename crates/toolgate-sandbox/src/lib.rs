//! toolgate's kernel sandbox: this process confines itself to a [`Plan`], then runs the
//! program it confines (`exec`: the program is this process, and what it starts inherits the
//! confinement, which no process can lift).
//!
//! Two kernel mechanisms, each used where the machine offers it (see [`Probe`]):
//!
//! - **A user and a mount namespace** (Linux's unprivileged user namespaces): inside the
//!   writable folders, the protected paths that exist are bound read-only over themselves, and
//!   the folders no read may reach are covered by an empty read-only `tmpfs`. The mounts are
//!   locked: a process inside cannot unmount them, even in a namespace of its own.
//! - **Landlock** (best effort by ABI): reading and running anywhere; writing (creating,
//!   removing, renaming, truncating, linking) only beneath the writable folders; with the
//!   network off, no TCP connect or bind (ABI 4); abstract UNIX sockets and signals scoped to
//!   the sandbox (ABI 6).
//!
//! What cannot be enforced is said, never pretended: [`Probe::summary`] says it in one line.

#![cfg_attr(not(target_os = "linux"), allow(unused))]

use std::fmt;
use std::path::{Path, PathBuf};

/// What this machine's kernel offers the sandbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probe {
    /// The Landlock ABI in effect, or why there is none.
    pub landlock: Result<i32, String>,
    /// Whether an unprivileged user and mount namespace can be made, or why not.
    pub namespaces: Result<(), String>,
}

impl Probe {
    /// What is and is not enforced with these mechanisms, in one line.
    pub fn summary(&self, network: bool) -> String {
        self.summary_of(if network { Network::On } else { Network::Off })
    }

    /// [`Probe::summary`] for a sandbox with `network`.
    pub fn summary_of(&self, network: Network) -> String {
        let mut enforced = Vec::new();
        let mut not = Vec::new();
        match &self.landlock {
            Ok(abi) => {
                enforced.push(format!(
                    "writes only in the writable folders (Landlock ABI {abi})"
                ));
                if network == Network::On {
                    not.push("the network (allowed by the plan)".to_owned());
                } else if network == Network::Proxy {
                    enforced.push(
                        "the network only through the filtering proxy (a network namespace of \
                         its own, TCP to the proxy's port only)"
                            .to_owned(),
                    );
                } else if *abi >= 4 {
                    enforced.push("no TCP connect or bind".to_owned());
                } else {
                    not.push(format!("the network (Landlock ABI {abi} has no TCP rules)"));
                }
                if *abi >= 6 {
                    enforced.push("abstract sockets and signals scoped".to_owned());
                }
            }
            Err(why) => not.push(format!("writes outside the writable folders ({why})")),
        }
        match &self.namespaces {
            Ok(()) => enforced.push(
                "protected paths read-only and denied places hidden (user and mount namespace)"
                    .to_owned(),
            ),
            Err(why) => not.push(format!(
                "protected paths inside the writable folders and denied places ({why})"
            )),
        }
        not.push("protected paths that do not exist yet (they can be created)".to_owned());
        format!(
            "enforced: {}; not enforced: {}",
            if enforced.is_empty() {
                "nothing".to_owned()
            } else {
                enforced.join(", ")
            },
            not.join(", ")
        )
    }

    /// Whether anything at all can be enforced.
    pub fn any(&self) -> bool {
        self.landlock.is_ok() || self.namespaces.is_ok()
    }
}

/// The network a sandboxed program has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Network {
    /// None: no TCP connect or bind.
    Off,
    /// Only through a filtering proxy ([`Plan::proxy`]).
    Proxy,
    /// All of it.
    On,
}

/// What a sandboxed program may do.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// The folders (and files) it may write beneath.
    pub writable: Vec<PathBuf>,
    /// Existing folders bound onto themselves, writable as before, so that they cannot be
    /// renamed or removed (the folders between a workspace root and its protected paths: with
    /// `.git/hooks` read-only, `mv .git .g` would otherwise take the hooks out of the way).
    pub pinned: Vec<PathBuf>,
    /// Existing paths inside them it may not write (bound read-only).
    pub read_only: Vec<PathBuf>,
    /// Existing places it may not read or reach: folders are covered by an empty read-only
    /// `tmpfs`, other files (sockets of services that would run a command outside the
    /// sandbox) by `/dev/null`.
    pub hidden: Vec<PathBuf>,
    /// Whether it may use the network (TCP); without, no connect or bind.
    pub network: bool,
    /// The network only through a filtering proxy listening on this UNIX socket (outside the
    /// sandbox): the program gets a network namespace of its own where only loopback exists,
    /// a forwarder on a loopback port leads to the socket, and TCP connects reach that port
    /// only ([`Confined::proxy_port`]). Needs the namespaces; `network` must be off.
    pub proxy: Option<PathBuf>,
}

/// What [`confine`] made: the mechanisms that hold, and the loopback port the proxy is
/// reached at inside the sandbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Confined {
    /// The mechanisms that hold.
    pub probe: Probe,
    /// With [`Plan::proxy`], the port of the forwarder on 127.0.0.1.
    pub proxy_port: Option<u16>,
}

/// Why the sandbox could not be made.
#[derive(Debug)]
pub struct SandboxError(pub String);

impl fmt::Display for SandboxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SandboxError {}

/// The sockets of services that run what they are asked outside any sandbox: the user's
/// session bus and `systemd --user` (`systemd-run --user sh -c …`), the X server, tmux, the
/// SSH agent, container engines, the system bus. A plan hides them.
pub fn service_sockets() -> Vec<PathBuf> {
    #[cfg(target_os = "linux")]
    let uid = rustix::process::getuid().as_raw();
    #[cfg(not(target_os = "linux"))]
    let uid = 0;
    let mut places: Vec<PathBuf> = [
        format!("/run/user/{uid}"),
        "/tmp/.X11-unix".to_owned(),
        format!("/tmp/tmux-{uid}"),
        "/run/docker.sock".to_owned(),
        "/var/run/docker.sock".to_owned(),
        "/run/podman".to_owned(),
        "/run/containerd".to_owned(),
        "/run/dbus".to_owned(),
        "/var/run/dbus".to_owned(),
        // Name lookups for any name (data out in the questions), a screen session to type in.
        "/run/systemd/resolve".to_owned(),
        "/run/nscd".to_owned(),
        "/var/run/nscd".to_owned(),
        "/run/screen".to_owned(),
    ]
    .into_iter()
    .map(PathBuf::from)
    .collect();
    if let Some(agent) = std::env::var_os("SSH_AUTH_SOCK").filter(|v| !v.is_empty()) {
        places.push(PathBuf::from(agent));
    }
    places
}

/// A connected stream that can be read and written from two threads at once.
pub trait Duplex: std::io::Read + std::io::Write + Send + Sized + 'static {
    /// Another handle on the same stream.
    fn handle(&self) -> std::io::Result<Self>;
    /// Says no more will be written.
    fn end_writing(&self);
}

impl Duplex for std::net::TcpStream {
    fn handle(&self) -> std::io::Result<Self> {
        self.try_clone()
    }
    fn end_writing(&self) {
        let _ = self.shutdown(std::net::Shutdown::Write);
    }
}

impl Duplex for std::os::unix::net::UnixStream {
    fn handle(&self) -> std::io::Result<Self> {
        self.try_clone()
    }
    fn end_writing(&self) {
        let _ = self.shutdown(std::net::Shutdown::Write);
    }
}

/// Copies each side to the other until both end (one way on a thread of its own).
pub fn splice<A: Duplex, B: Duplex>(a: A, b: B) {
    let (Ok(mut a_reader), Ok(mut b_writer)) = (a.handle(), b.handle()) else {
        return;
    };
    let one_way = std::thread::spawn(move || {
        let _ = std::io::copy(&mut a_reader, &mut b_writer);
        b_writer.end_writing();
    });
    let (mut b, mut a) = (b, a);
    let _ = std::io::copy(&mut b, &mut a);
    a.end_writing();
    let _ = one_way.join();
}

/// The parent process of the peer of a UNIX socket (by `SO_PEERCRED`), or `None`.
pub fn peer_parent(stream: &std::os::unix::net::UnixStream) -> Option<u32> {
    #[cfg(target_os = "linux")]
    {
        let peer = rustix::net::sockopt::socket_peercred(stream).ok()?;
        let pid = peer.pid.as_raw_nonzero().get();
        // `/proc/PID/stat`: the parent is the second field after the name (which may hold
        // spaces and parentheses: the last `)` ends it).
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let after = stat.rsplit_once(')')?.1;
        after.split_whitespace().nth(1)?.parse().ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = stream;
        None
    }
}

/// Makes the process `command` starts end when this one does (`PR_SET_PDEATHSIG`): a
/// sandboxed program does not outlive the proxy it reaches the network through.
pub fn die_with_parent(command: &mut std::process::Command) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        let parent = rustix::process::getpid();
        // SAFETY: between fork and exec, only async-signal-safe system calls are made.
        #[allow(unsafe_code)]
        unsafe {
            command.pre_exec(move || {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                // The parent may have ended before the line above: then end at once.
                if rustix::process::getppid() != Some(parent) {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = command;
}

/// The process [`forward_signals`] passes signals on to.
#[cfg(target_os = "linux")]
static FORWARD_TO: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

#[cfg(target_os = "linux")]
extern "C" fn forward(signal: libc::c_int) {
    let pid = FORWARD_TO.load(std::sync::atomic::Ordering::Relaxed);
    if pid > 0 {
        // SAFETY: `kill` is async-signal-safe, and so is the atomic load above.
        #[allow(unsafe_code)]
        unsafe {
            libc::kill(pid, signal);
        }
    }
}

/// Passes SIGINT, SIGTERM and SIGHUP this process gets on to process `pid` (the sandboxed
/// program, which ends, and then this process, its proxy, does, tidily) instead of ending here.
pub fn forward_signals(pid: u32) {
    #[cfg(target_os = "linux")]
    {
        let Ok(pid) = i32::try_from(pid) else { return };
        FORWARD_TO.store(pid, std::sync::atomic::Ordering::Relaxed);
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: the handler only makes async-signal-safe calls.
            #[allow(unsafe_code)]
            unsafe {
                libc::signal(
                    signal,
                    forward as extern "C" fn(libc::c_int) as libc::sighandler_t,
                );
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = pid;
}

/// Where the kernel still lets a process type into its terminal (`TIOCSTI`: Linux before
/// 6.2, or `dev.tty.legacy_tiocsti` on), this process leaves the terminal it shares with the
/// shell outside (a session of its own), so what it runs cannot type commands there.
pub fn leave_the_terminal_if_it_types() {
    #[cfg(target_os = "linux")]
    {
        let typing = std::fs::read_to_string("/proc/sys/dev/tty/legacy_tiocsti")
            .map_or(true, |v| v.trim() != "0");
        if typing {
            let _ = rustix::process::setsid();
        }
    }
}

/// The paths of `plan` that exist, resolved (the kernel's rules and mounts name real files).
fn existing(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = paths
        .iter()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(target_os = "linux")]
mod linux {
    use super::*;
    use landlock::{
        ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, LandlockStatus, Ruleset,
        RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
    };
    use rustix::mount::{MountFlags, MountPropagationFlags};

    /// The newest ABI whose rules toolgate asks for (the kernel grants what it has).
    const WANTED: ABI = ABI::V6;

    fn failed(what: &str, e: impl fmt::Display) -> SandboxError {
        SandboxError(format!("{what}: {e}"))
    }

    /// Enters a new network namespace (the user namespace entered before owns it), with its
    /// loopback interface up and nothing else.
    pub(super) fn enter_network() -> Result<(), SandboxError> {
        // SAFETY: as in `enter_namespaces`; a network namespace has no effect on memory.
        #[allow(unsafe_code)]
        unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWNET) }
            .map_err(|e| failed("cannot make a network namespace", e))?;
        loopback_up()
    }

    /// Brings the namespace's loopback interface up (`SIOCSIFFLAGS` on `lo`).
    fn loopback_up() -> Result<(), SandboxError> {
        // SAFETY: plain system calls on a socket this function owns, with an `ifreq` that
        // lives across them.
        #[allow(unsafe_code)]
        unsafe {
            let socket = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
            if socket < 0 {
                return Err(failed(
                    "cannot open a socket",
                    std::io::Error::last_os_error(),
                ));
            }
            let mut request: libc::ifreq = std::mem::zeroed();
            for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
                *slot = *byte as libc::c_char;
            }
            request.ifr_ifru.ifru_flags = (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
            let done = libc::ioctl(socket, libc::SIOCSIFFLAGS, &request);
            let error = std::io::Error::last_os_error();
            libc::close(socket);
            if done < 0 {
                return Err(failed("cannot bring the loopback interface up", error));
            }
        }
        Ok(())
    }

    /// Starts the forwarder of the sandbox's loopback port to the proxy's socket: a process of
    /// its own (confined as this one is, ended with it) that takes each connection to
    /// `listener` and relays it to `socket`, both ways.
    pub(super) fn forward(
        listener: std::net::TcpListener,
        socket: &Path,
    ) -> Result<(), SandboxError> {
        // SAFETY: this process has one thread (the sandbox is made before anything starts
        // one); the child only runs the forwarder below and exits.
        #[allow(unsafe_code)]
        let child = unsafe { libc::fork() };
        if child < 0 {
            return Err(failed(
                "cannot start the proxy's forwarder",
                std::io::Error::last_os_error(),
            ));
        }
        if child > 0 {
            // The program's side: its copy of the listener closes when it runs (close on exec).
            std::mem::forget(listener);
            return Ok(());
        }
        // SAFETY: asks the kernel to end this process when its parent (the program) ends.
        #[allow(unsafe_code)]
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        }
        let _ = rustix::process::setsid();
        for stream in listener.incoming() {
            let Ok(inside) = stream else { continue };
            let socket = socket.to_path_buf();
            std::thread::spawn(move || {
                let Ok(outside) = std::os::unix::net::UnixStream::connect(&socket) else {
                    return;
                };
                crate::splice(inside, outside);
            });
        }
        std::process::exit(0);
    }

    /// Enters a new user and mount namespace, mapped to the same user and group.
    pub(super) fn enter_namespaces() -> Result<(), Entered> {
        let uid = rustix::process::getuid().as_raw();
        let gid = rustix::process::getgid().as_raw();
        // SAFETY: `FILES` is not among the flags, so no file descriptor table is unshared;
        // the process is single-threaded here (the kernel refuses a new user namespace to a
        // multi-threaded one, which is then reported as an error).
        #[allow(unsafe_code)]
        unsafe {
            rustix::thread::unshare_unsafe(
                rustix::thread::UnshareFlags::NEWUSER | rustix::thread::UnshareFlags::NEWNS,
            )
        }
        .map_err(|e| Entered::Not(format!("cannot make a user and mount namespace: {e}")))?;
        let write = |file: &str, text: String| {
            std::fs::write(file, text)
                .map_err(|e| Entered::Unmapped(format!("cannot write {file}: {e}")))
        };
        write("/proc/self/setgroups", "deny".into())?;
        write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
        write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
        // Nothing mounted here reaches the namespace the program came from.
        rustix::mount::mount_change(
            "/",
            MountPropagationFlags::REC | MountPropagationFlags::PRIVATE,
        )
        .map_err(|e| Entered::Unmapped(format!("cannot make the mounts private: {e}")))?;
        Ok(())
    }

    /// The flags a read-only bind of `path` must keep: a mount's `nosuid`, `nodev` and
    /// `noexec` are locked in a user namespace, and a remount that drops one is refused.
    fn kept_flags(path: &Path) -> MountFlags {
        let mut flags = MountFlags::empty();
        if let Ok(stat) = rustix::fs::statvfs(path) {
            let have = stat.f_flag;
            if have.contains(rustix::fs::StatVfsMountFlags::NOSUID) {
                flags |= MountFlags::NOSUID;
            }
            if have.contains(rustix::fs::StatVfsMountFlags::NODEV) {
                flags |= MountFlags::NODEV;
            }
            if have.contains(rustix::fs::StatVfsMountFlags::NOEXEC) {
                flags |= MountFlags::NOEXEC;
            }
        }
        flags
    }

    /// Binds each path read-only over itself, and covers each hidden folder with an empty
    /// read-only `tmpfs`.
    pub(super) fn mount_plan(plan: &Plan) -> Result<(), SandboxError> {
        // Outermost first: a later bind inside one is not hidden by it.
        let mut pinned = existing(&plan.pinned);
        pinned.sort_by_key(|p| p.components().count());
        for path in pinned {
            rustix::mount::mount_bind(&path, &path)
                .map_err(|e| failed(&format!("cannot bind {}", path.display()), e))?;
        }
        for path in existing(&plan.read_only) {
            rustix::mount::mount_bind(&path, &path)
                .map_err(|e| failed(&format!("cannot bind {}", path.display()), e))?;
            let flags = MountFlags::BIND | MountFlags::RDONLY | kept_flags(&path);
            rustix::mount::mount_remount(&path, flags, "")
                .map_err(|e| failed(&format!("cannot make {} read-only", path.display()), e))?;
        }
        for path in existing(&plan.hidden) {
            if !path.is_dir() {
                rustix::mount::mount_bind("/dev/null", &path)
                    .map_err(|e| failed(&format!("cannot hide {}", path.display()), e))?;
                continue;
            }
            rustix::mount::mount(
                "tmpfs",
                &path,
                "tmpfs",
                MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
                Some(c"size=4k,mode=000"),
            )
            .map_err(|e| failed(&format!("cannot hide {}", path.display()), e))?;
        }
        Ok(())
    }

    /// Restricts this process (and what it starts) with Landlock: reads anywhere, writes
    /// beneath the writable paths, no TCP unless the plan allows the network, abstract
    /// sockets and signals scoped. The ABI whose rules hold.
    pub(super) fn landlock(plan: &Plan, proxy_port: Option<u16>) -> Result<i32, SandboxError> {
        let fail = |e: landlock::RulesetError| failed("cannot make the Landlock rules", e);
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(WANTED))
            .map_err(fail)?;
        if !plan.network {
            ruleset = ruleset
                .handle_access(AccessNet::from_all(WANTED))
                .map_err(fail)?;
        }
        ruleset = ruleset.scope(Scope::from_all(WANTED)).map_err(fail)?;
        let mut created = ruleset
            .create()
            .map_err(fail)?
            .add_rules(path_beneath_rules(["/"], AccessFs::from_read(WANTED)))
            .map_err(fail)?
            .add_rules(path_beneath_rules(
                existing(&plan.writable),
                AccessFs::from_all(WANTED),
            ))
            .map_err(fail)?;
        if let Some(port) = proxy_port {
            // The proxy's forwarder is the one TCP port it may connect to.
            created = created
                .add_rule(landlock::NetPort::new(port, AccessNet::ConnectTcp))
                .map_err(fail)?;
        }
        let status = created.restrict_self().map_err(fail)?;
        match (status.ruleset, status.landlock) {
            (RulesetStatus::NotEnforced, _)
            | (_, LandlockStatus::NotEnabled)
            | (_, LandlockStatus::NotImplemented) => Err(SandboxError(
                "Landlock is not enabled in this kernel".into(),
            )),
            (_, LandlockStatus::Available { effective_abi, .. }) => Ok(effective_abi as i32),
        }
    }
}

/// Confines this process to `plan` with each mechanism asked for that the kernel offers,
/// namespaces first (mounts are denied once Landlock holds), and reports what holds — a
/// [`Probe`] of this very process. A mechanism the kernel refuses is left out (and said so);
/// the only error is a namespace entered but not mapped, after which nothing is safe to run.
/// Must run while the process has one thread.
///
/// With [`Plan::proxy`], the network namespace is not optional: without it (or without
/// Landlock, which holds TCP to the forwarder's port) the sandbox is refused, since the
/// program would reach the network past the proxy.
#[cfg(target_os = "linux")]
pub fn confine(plan: &Plan, namespaces: bool, landlock: bool) -> Result<Confined, SandboxError> {
    let namespaces = if namespaces {
        match linux::enter_namespaces() {
            Ok(()) => linux::mount_plan(plan).map_err(|e| e.0),
            Err(Entered::Not(why)) => Err(why),
            Err(Entered::Unmapped(why)) => return Err(SandboxError(why)),
        }
    } else {
        Err("turned off".to_owned())
    };
    let mut proxy_port = None;
    let mut forwarder = None;
    if let Some(socket) = &plan.proxy {
        if let Err(why) = &namespaces {
            return Err(SandboxError(format!(
                "the network through the proxy needs a network namespace ({why})"
            )));
        }
        linux::enter_network()?;
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))
            .map_err(|e| SandboxError(format!("cannot listen for the proxy's forwarder: {e}")))?;
        proxy_port = Some(
            listener
                .local_addr()
                .map_err(|e| SandboxError(e.to_string()))?
                .port(),
        );
        forwarder = Some((listener, socket.clone()));
    }
    let landlock = if landlock {
        linux::landlock(plan, proxy_port).map_err(|e| e.0)
    } else {
        Err("turned off".to_owned())
    };
    if let Some((listener, socket)) = forwarder {
        match &landlock {
            Err(why) => {
                return Err(SandboxError(format!(
                    "the network through the proxy needs Landlock's TCP rules ({why})"
                )));
            }
            Ok(abi) if *abi < 4 => {
                return Err(SandboxError(format!(
                    "the network through the proxy needs Landlock's TCP rules (ABI 4; this \
                     kernel has {abi})"
                )));
            }
            Ok(_) => {}
        }
        // Started once confined: it is held as the program is.
        linux::forward(listener, &socket)?;
    }
    Ok(Confined {
        probe: Probe {
            landlock,
            namespaces,
        },
        proxy_port,
    })
}

/// Elsewhere than Linux, nothing can be enforced.
#[cfg(not(target_os = "linux"))]
pub fn confine(plan: &Plan, _: bool, _: bool) -> Result<Confined, SandboxError> {
    if plan.proxy.is_some() {
        return Err(SandboxError(
            "the network through the proxy needs Linux".into(),
        ));
    }
    Ok(Confined {
        probe: Probe {
            landlock: Err("not Linux".into()),
            namespaces: Err("not Linux".into()),
        },
        proxy_port: None,
    })
}

/// Why a namespace was not entered.
#[derive(Debug)]
enum Entered {
    /// Nothing changed: the process is as it was.
    Not(String),
    /// The namespace was made but the process's user is not mapped in it.
    Unmapped(String),
}

/// Probes this process's own kernel: makes the namespace and the Landlock rules of an empty
/// plan, and reports what held. It confines the process that calls it: call it in a process
/// made for it (`toolgate sandbox --probe` runs it in a child of its own).
pub fn probe_here(namespaces: bool, landlock: bool) -> Probe {
    #[cfg(target_os = "linux")]
    {
        let plan = Plan::default();
        let namespaces = if namespaces {
            linux::enter_namespaces().map_err(|e| match e {
                Entered::Not(why) | Entered::Unmapped(why) => why,
            })
        } else {
            Err("turned off".to_owned())
        };
        let landlock = if landlock {
            linux::landlock(&plan, None).map_err(|e| e.0)
        } else {
            Err("turned off".to_owned())
        };
        Probe {
            landlock,
            namespaces,
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (namespaces, landlock);
        Probe {
            landlock: Err("not Linux".into()),
            namespaces: Err("not Linux".into()),
        }
    }
}
