//! The sandbox's filtering proxy (`toolgate sandbox --proxy`): the one way out of a sandboxed
//! program's network namespace. It listens on a UNIX socket outside the sandbox (a forwarder
//! inside leads a loopback port to it), takes HTTP proxy requests — `CONNECT host:port` for
//! TLS, absolute-form requests (`GET http://host/…`) for plain HTTP — and lets through only
//! what the policy allows without asking, decided as a fetch of the URL is (`WebFetch`'s
//! profile: the same URL rules, address classes and guards). A name that resolves to a
//! loopback, private or metadata address is decided again by that address, so a public name
//! cannot lead to an internal service the policy refuses.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use toolgate_policy::{Call, Context, Decision, Policy};

/// The most connections through the proxy at once.
const MAX_OPEN: usize = 256;
/// The longest request head read.
const MAX_HEAD: usize = 64 * 1024;
/// How long a request head and a connection to a server may take.
const WAIT: Duration = Duration::from_secs(30);

/// The proxy's state: the policy, the names mapped by hand, what it refused.
pub(crate) struct Proxy {
    policy: Policy,
    workspace: String,
    /// `--resolve HOST=ADDR`: addresses used for names instead of asking the resolver.
    resolve: Vec<(String, IpAddr)>,
    /// `--allow-domain HOST`: names let through for this run (a person allowed them).
    widened: Vec<String>,
    /// What was refused (`host:port — why`, the first 50), said when the program fails.
    pub(crate) refused: Mutex<Vec<String>>,
    open: AtomicUsize,
    /// The sandboxed program's process id, once it runs: only its forwarder is served.
    pub(crate) program: std::sync::OnceLock<u32>,
}

impl Proxy {
    pub(crate) fn new(
        policy: Policy,
        workspace: String,
        resolve: Vec<(String, IpAddr)>,
        widened: Vec<String>,
    ) -> Proxy {
        Proxy {
            policy,
            workspace,
            resolve,
            widened,
            refused: Mutex::new(Vec::new()),
            open: AtomicUsize::new(0),
            program: std::sync::OnceLock::new(),
        }
    }

    /// Serves the connections `listener` takes, each on a thread of its own, until it fails.
    pub(crate) fn serve(self: Arc<Self>, listener: UnixListener) {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            if self.open.fetch_add(1, Ordering::AcqRel) >= MAX_OPEN {
                self.open.fetch_sub(1, Ordering::AcqRel);
                let mut stream = stream;
                let _ = answer(&mut stream, 503, "toolgate: too many connections at once");
                continue;
            }
            let proxy = Arc::clone(&self);
            std::thread::spawn(move || {
                proxy.connection(stream);
                proxy.open.fetch_sub(1, Ordering::AcqRel);
            });
        }
    }

    /// Whether the policy allows fetching `url` without asking: `Ok`, or why not.
    fn decide(&self, url: &str) -> Result<(), String> {
        let call = Call::new("WebFetch")
            .with_args(
                serde_json::json!({"url": url, "prompt": "(a sandboxed program's connection)"}),
            )
            .with_context(Context {
                workspace: Some(self.workspace.clone()),
                ..Context::default()
            });
        let evaluation = self.policy.evaluate(&call);
        match evaluation.decision {
            Decision::Allow => Ok(()),
            decision => Err(format!(
                "{} ({}{})",
                evaluation.reason,
                match decision {
                    Decision::Ask => "the policy asks: a sandboxed program is not let through",
                    _ => "refused",
                },
                evaluation
                    .rule
                    .as_ref()
                    .map(|r| format!(", rule {}", r.name))
                    .unwrap_or_default()
            )),
        }
    }

    /// The addresses of `host` (the mapped one, else the resolver's).
    fn addresses(&self, host: &str, port: u16) -> Vec<SocketAddr> {
        if let Some((_, ip)) = self
            .resolve
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(host))
        {
            return vec![SocketAddr::new(*ip, port)];
        }
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        (bare, port)
            .to_socket_addrs()
            .map(Iterator::collect)
            .unwrap_or_default()
    }

    /// Connects to `host:port` for a request of `url` (decided by the policy): each address
    /// an internal one (loopback, private, link-local, metadata) is allowed by its own URL too
    /// — and never for a tunnel (`CONNECT`), which would be a raw socket to a service of this
    /// machine or its network (a SOCKS port, a database).
    fn reach(&self, url: &str, host: &str, port: u16, tunnel: bool) -> Result<TcpStream, String> {
        if !self.widened.iter().any(|h| h.eq_ignore_ascii_case(host)) {
            self.decide(url)?;
        }
        let addresses = self.addresses(host, port);
        if addresses.is_empty() {
            return Err(format!("{host} has no address"));
        }
        let mut last = String::new();
        for address in addresses {
            if internal(address.ip()) {
                if tunnel {
                    last = format!(
                        "{host} is {}, an address of this machine or its network: the proxy \
                         tunnels to none (plain http:// to it is decided by the policy)",
                        address.ip()
                    );
                    continue;
                }
                let by_address = format!("http://{}:{port}/", bracketed(&address.ip().to_string()));
                if let Err(why) = self.decide(&by_address) {
                    last = format!("{host} is {}: {why}", address.ip());
                    continue;
                }
            }
            match TcpStream::connect_timeout(&address, WAIT) {
                Ok(stream) => return Ok(stream),
                Err(e) => last = format!("cannot connect to {address}: {e}"),
            }
        }
        Err(last)
    }

    /// Whether the peer of `stream` is this sandbox's forwarder (a child of the sandboxed
    /// program): another sandbox's program that found this socket is not served.
    fn ours(&self, stream: &UnixStream) -> bool {
        self.program
            .get()
            .is_some_and(|program| toolgate_sandbox::peer_parent(stream) == Some(*program))
    }

    /// One client connection: its request, decided, then relayed.
    fn connection(&self, stream: UnixStream) {
        let mut client = stream;
        if !self.ours(&client) {
            let _ = answer(&mut client, 403, "toolgate: not this sandbox's proxy");
            return;
        }
        let _ = client.set_read_timeout(Some(WAIT));
        let Ok(mut reader) = client.try_clone().map(BufReader::new) else {
            return;
        };
        let Some(head) = read_head(&mut reader) else {
            let _ = answer(&mut client, 400, "toolgate: not an HTTP proxy request");
            return;
        };
        let mut lines = head.split("\r\n");
        let first = lines.next().unwrap_or_default();
        let mut words = first.split(' ');
        let (method, target) = (
            words.next().unwrap_or_default(),
            words.next().unwrap_or_default(),
        );
        let tunnel = method.eq_ignore_ascii_case("CONNECT");
        let (url, host, port, path) = match request_target(method, target) {
            Ok(parts) => parts,
            Err(why) => {
                let _ = answer(&mut client, 400, &format!("toolgate: {why}"));
                return;
            }
        };
        let _ = client.set_read_timeout(None);
        let mut server = match self.reach(&url, &host, port, tunnel) {
            Ok(server) => server,
            Err(why) => {
                let said = format!("{host}:{port} — {why}");
                eprintln!("toolgate: the sandbox's proxy refused {said}");
                if let Ok(mut refused) = self.refused.lock()
                    && refused.len() < 50
                {
                    refused.push(said);
                }
                let _ = answer(&mut client, 403, &format!("toolgate: {host}:{port}: {why}"));
                return;
            }
        };
        if tunnel {
            if client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .is_err()
            {
                return;
            }
        } else {
            // The request as the server takes it: its path, without the proxy's own headers,
            // and the connection closed after its answer (a second request on it would not be
            // decided).
            let version = words.next().unwrap_or("HTTP/1.1");
            let mut forwarded = format!("{method} {path} {version}\r\n");
            for line in lines.filter(|l| !l.is_empty()) {
                let name = line.split(':').next().unwrap_or_default().trim();
                if [
                    "proxy-connection",
                    "proxy-authorization",
                    "connection",
                    "keep-alive",
                ]
                .iter()
                .any(|n| name.eq_ignore_ascii_case(n))
                {
                    continue;
                }
                forwarded.push_str(line);
                forwarded.push_str("\r\n");
            }
            forwarded.push_str("Connection: close\r\n\r\n");
            if server.write_all(forwarded.as_bytes()).is_err() {
                return;
            }
            // A fetch has no body: nothing more of the client's goes to the server.
            let _ = server.shutdown(std::net::Shutdown::Write);
            let mut server = server;
            let _ = std::io::copy(&mut server, &mut client);
            return;
        }
        // What the client sent past the head is already read into the buffer: it goes first.
        let buffered = reader.buffer().to_vec();
        if !buffered.is_empty() && server.write_all(&buffered).is_err() {
            return;
        }
        toolgate_sandbox::splice(client, server);
    }
}

/// A proxy request's target: the URL the policy decides, the host and port to reach, and for
/// plain HTTP the path to ask for. `CONNECT` takes `host:port` with a plain host name or an IP
/// literal, to port 443 only (a tunnel elsewhere is a raw socket); a plain request takes an
/// `http://` URL, `GET` or `HEAD` only (what a fetch does: the policy decided a fetch).
fn request_target(method: &str, target: &str) -> Result<(String, String, u16, String), String> {
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = split_authority(target, 443).ok_or("CONNECT names host:port")?;
        let plain = host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':'));
        if !plain {
            return Err(format!(
                "CONNECT to {target:?}: not a host name or an address"
            ));
        }
        if port != 443 {
            return Err(format!(
                "CONNECT to port {port}: the proxy tunnels to port 443 (HTTPS) only"
            ));
        }
        let url = format!("https://{}:{port}/", bracketed(&host));
        // The host resolved is the one the URL parser read (the one the policy decides).
        let parsed = url::Url::parse(&url).map_err(|e| format!("CONNECT to {target:?}: {e}"))?;
        let host = parsed
            .host_str()
            .map(|h| h.trim_start_matches('[').trim_end_matches(']').to_owned())
            .ok_or("CONNECT names no host")?;
        return Ok((url, host, port, String::new()));
    }
    if !(method.eq_ignore_ascii_case("GET") || method.eq_ignore_ascii_case("HEAD")) {
        return Err(format!(
            "{method} through the proxy: plain http:// takes GET and HEAD only (use HTTPS)"
        ));
    }
    let parsed = url::Url::parse(target)
        .ok()
        .filter(|u| u.scheme() == "http" && u.host_str().is_some())
        .ok_or("the proxy takes CONNECT, or a GET or HEAD of an http:// URL")?;
    let host = parsed
        .host_str()
        .map(|h| h.trim_start_matches('[').trim_end_matches(']').to_owned())
        .unwrap_or_default();
    let port = parsed.port_or_known_default().unwrap_or(80);
    let mut path = parsed.path().to_owned();
    if let Some(query) = parsed.query() {
        path = format!("{path}?{query}");
    }
    // The whole URL is decided (a rule may name its path).
    Ok((parsed.to_string(), host, port, path))
}

/// Whether an address is one a public name should not lead to without the policy's say:
/// loopback, private, link-local or metadata, by the policy's own address classes (which read
/// IPv4 addresses carried in IPv6 ones: NAT64, 6to4, Teredo, mapped and compatible forms).
fn internal(ip: IpAddr) -> bool {
    use toolgate_policy::url::{AddressClass, check, in_class};
    let Ok(url) = check(&format!("http://{}/", bracketed(&ip.to_string()))) else {
        return true;
    };
    [
        AddressClass::Loopback,
        AddressClass::Private,
        AddressClass::LinkLocal,
        AddressClass::Metadata,
    ]
    .into_iter()
    .any(|class| in_class(&url, class))
}

/// A host for a URL: an IPv6 address in brackets.
fn bracketed(host: &str) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_owned()
    }
}

/// `host:port` (`[v6]:port`), the port defaulting to `default`.
fn split_authority(authority: &str, default: u16) -> Option<(String, u16)> {
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => (host, port.parse().ok()?),
        _ => (authority, default),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    (!host.is_empty()).then(|| (host.to_owned(), port))
}

/// Reads a request head (up to its blank line), at most [`MAX_HEAD`] bytes.
fn read_head(reader: &mut BufReader<UnixStream>) -> Option<String> {
    let mut head = String::new();
    // The whole head within [`WAIT`], however slowly it comes.
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        if std::time::Instant::now() > deadline {
            return None;
        }
        let mut line = String::new();
        let read = reader
            .by_ref()
            .take(MAX_HEAD as u64)
            .read_line(&mut line)
            .ok()?;
        if read == 0 || head.len() + line.len() > MAX_HEAD {
            return None;
        }
        if line == "\r\n" || line == "\n" {
            return Some(head);
        }
        head.push_str(line.trim_end_matches(['\r', '\n']));
        head.push_str("\r\n");
    }
}

/// Answers a request with `status` and a text body, and closes.
fn answer(stream: &mut UnixStream, status: u16, text: &str) -> std::io::Result<()> {
    let reason = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        _ => "Service Unavailable",
    };
    write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{text}\n",
        text.len() + 1
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorities_split_into_host_and_port() {
        assert_eq!(
            split_authority("example.com:8443", 443),
            Some(("example.com".into(), 8443))
        );
        assert_eq!(
            split_authority("example.com", 443),
            Some(("example.com".into(), 443))
        );
        assert_eq!(split_authority("[::1]:9", 443), Some(("::1".into(), 9)));
        assert_eq!(split_authority("[::1]", 443), Some(("::1".into(), 443)));
        assert_eq!(split_authority(":80", 443), None);
        assert_eq!(split_authority("host:x", 443), None);
    }

    #[test]
    fn a_request_names_what_the_policy_decides_and_nothing_else() {
        let target =
            |m: &str, t: &str| request_target(m, t).map(|(url, host, port, _)| (url, host, port));
        assert_eq!(
            target("CONNECT", "pypi.org:443"),
            Ok(("https://pypi.org:443/".into(), "pypi.org".into(), 443))
        );
        assert_eq!(
            target("CONNECT", "[2606:4700::1]:443").map(|t| t.1),
            Ok("2606:4700::1".into())
        );
        // A name the resolver would read otherwise than the URL parser, another port, a
        // method that is not a fetch.
        for (method, t) in [
            ("CONNECT", "github.com?x.evil.example:443"),
            ("CONNECT", "github.com#x:443"),
            ("CONNECT", "pypi.org:22"),
            ("POST", "http://pypi.org/"),
            ("GET", "https://pypi.org/"),
            ("GET", "/relative"),
        ] {
            assert!(target(method, t).is_err(), "{method} {t}");
        }
        assert_eq!(
            target("GET", "http://user:pw@localhost:8000/a?b=1").map(|t| (t.1, t.2)),
            Ok(("localhost".into(), 8000))
        );
    }

    #[test]
    fn internal_addresses_are_told_apart() {
        for internal_one in [
            "127.0.0.1",
            "10.1.2.3",
            "192.168.0.1",
            "169.254.169.254",
            "100.100.100.200",
            "::1",
            "fd00::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(
                internal(internal_one.parse().unwrap_or_else(|e| panic!("{e}"))),
                "{internal_one}"
            );
        }
        for public in ["93.184.216.34", "2606:4700::1"] {
            assert!(
                !internal(public.parse().unwrap_or_else(|e| panic!("{e}"))),
                "{public}"
            );
        }
    }
}
