//! Network destinations: URLs parsed by the WHATWG rules (the `url` crate), hosts normalised,
//! IP literals in every spelling reduced to one, and the address classes a policy can refuse.
//!
//! toolgate does not resolve names: a hostname that resolves to a private address (DNS
//! rebinding) is beyond what the policy can see; the gateway that makes the request must check
//! the address it connects to.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::Serialize;

use crate::decision::string_enum;

/// A URL checked and normalised.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CheckedUrl {
    /// The URL as the call gave it.
    pub given: String,
    /// The URL as parsed (WHATWG serialisation).
    pub url: String,
    /// The scheme, lowercase.
    pub scheme: String,
    /// The host: lowercase, IDNA (punycode), no trailing dot; IP literals in canonical form.
    pub host: String,
    /// The port, or the scheme's default.
    pub port: Option<u16>,
    /// The host as an IP address, when it is one (IPv4-mapped IPv6 is reduced to IPv4).
    pub ip: Option<IpAddr>,
}

/// Why a URL is never allowed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "problem", content = "detail", rename_all = "kebab-case")]
pub enum UrlProblem {
    /// Not a URL.
    Unparseable(String),
    /// Contains a control character (the parser would silently drop tabs and newlines).
    ControlCharacter,
    /// Carries a user name or password (`https://docs.rs@evil.example/`).
    Userinfo,
    /// Has no host.
    NoHost,
    /// Contains a backslash: browsers (and toolgate) read it as `/`, other parsers as text, so
    /// `https://docs.rs\@evil.example/` goes to `docs.rs` for some and `evil.example` for others.
    Backslash,
}

impl fmt::Display for UrlProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UrlProblem::Unparseable(e) => write!(f, "not a URL: {e}"),
            UrlProblem::ControlCharacter => f.write_str("the URL contains a control character"),
            UrlProblem::Userinfo => f.write_str(
                "the URL carries a user name or password, which hides where it really goes",
            ),
            UrlProblem::NoHost => f.write_str("the URL has no host"),
            UrlProblem::Backslash => f.write_str(
                "the URL contains a backslash, which parsers disagree on (write it as %5C)",
            ),
        }
    }
}

/// Parses and normalises a URL.
///
/// ```rust,standalone_crate
/// use toolgate_policy::url::check;
/// let u = check("HTTPS://Docs.RS./serde")?;
/// assert_eq!((u.host.as_str(), u.port), ("docs.rs", Some(443)));
/// assert_eq!(check("http://0x7f.1/")?.host, "127.0.0.1");
/// assert!(check("https://docs.rs@evil.example/").is_err());
/// # Ok::<(), toolgate_policy::url::UrlProblem>(())
/// ```
pub fn check(given: &str) -> Result<CheckedUrl, UrlProblem> {
    if given.chars().any(|c| c.is_control()) {
        return Err(UrlProblem::ControlCharacter);
    }
    if given.contains('\\') {
        return Err(UrlProblem::Backslash);
    }
    let parsed =
        ::url::Url::parse(given.trim()).map_err(|e| UrlProblem::Unparseable(e.to_string()))?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(UrlProblem::Userinfo);
    }
    let (host, ip) = match parsed.host() {
        // A scheme browsers do not know (`gopher:`) keeps its host as written, even an IPv4
        // address in any of its spellings; what would connect to it reads it as an address.
        Some(::url::Host::Domain(d)) => match ipv4_spelled(parsed.scheme(), d) {
            Some(v4) => (v4.to_string(), Some(IpAddr::V4(v4))),
            None => (d.trim_end_matches('.').to_ascii_lowercase(), None),
        },
        Some(::url::Host::Ipv4(a)) => (a.to_string(), Some(IpAddr::V4(a))),
        Some(::url::Host::Ipv6(a)) => match a.to_ipv4_mapped() {
            Some(v4) => (v4.to_string(), Some(IpAddr::V4(v4))),
            None => (a.to_string(), Some(IpAddr::V6(a))),
        },
        None if parsed.scheme() == "file" => (String::new(), None),
        None => return Err(UrlProblem::NoHost),
    };
    if host.is_empty() && parsed.scheme() != "file" {
        return Err(UrlProblem::NoHost);
    }
    Ok(CheckedUrl {
        given: given.to_owned(),
        url: parsed.as_str().to_owned(),
        scheme: parsed.scheme().to_owned(),
        port: parsed.port_or_known_default(),
        ip,
        host,
    })
}

string_enum! {
    /// Classes of addresses a policy can refuse (`address = ["private"]`).
    pub enum AddressClass ("address class") {
        /// 127.0.0.0/8, ::1, 0.0.0.0, ::, and the names `localhost` and `*.localhost`.
        Loopback = "loopback",
        /// 10/8, 172.16/12, 192.168/16, 100.64/10 (shared), fc00::/7 (unique local).
        Private = "private",
        /// 169.254/16 and fe80::/10.
        LinkLocal = "link-local",
        /// Cloud metadata endpoints: 169.254.169.254, 169.254.170.2, 100.100.100.200,
        /// fd00:ec2::254, and `metadata.google.internal`-style names.
        Metadata = "metadata",
        /// Any IP literal.
        Ip = "ip",
    }
}

/// An IPv4 address however it is spelled (`127.1`, `0x7f.0.0.1`, `2130706433`), read as a
/// browser (and `inet_aton`) reads it.
fn ipv4_spelled(scheme: &str, host: &str) -> Option<Ipv4Addr> {
    // Special schemes' hosts were read as addresses already.
    if matches!(scheme, "http" | "https" | "ws" | "wss" | "ftp" | "file") {
        return None;
    }
    let last = host
        .trim_end_matches('.')
        .rsplit('.')
        .next()
        .unwrap_or_default();
    let numeric = last.bytes().all(|b| b.is_ascii_digit())
        || last.get(..2).is_some_and(|p| p.eq_ignore_ascii_case("0x"));
    if last.is_empty() || !numeric || !host.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.')
    {
        return None;
    }
    match ::url::Url::parse(&format!("http://{host}/")).ok()?.host()? {
        ::url::Host::Ipv4(v4) => Some(v4),
        _ => None,
    }
}

/// The IPv4 address an IPv6 address carries and is routed to: IPv4-compatible (`::a.b.c.d`),
/// NAT64 (`64:ff9b::/96`, `64:ff9b:1::/48`), 6to4 (`2002::/16`) and Teredo (`2001::/32`).
/// (IPv4-mapped addresses are read as IPv4 when the URL is checked.)
fn embedded_ipv4(a: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = a.segments();
    let o = a.octets();
    let last = Ipv4Addr::new(o[12], o[13], o[14], o[15]);
    match s {
        [0, 0, 0, 0, 0, 0, _, _] if !a.is_loopback() && !a.is_unspecified() => Some(last),
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] | [0x64, 0xff9b, 1, ..] => Some(last),
        [0x2002, ..] => Some(Ipv4Addr::new(o[2], o[3], o[4], o[5])),
        [0x2001, 0, ..] => Some(Ipv4Addr::new(!o[12], !o[13], !o[14], !o[15])),
        _ => None,
    }
}

/// Whether the URL's host belongs to a class.
pub fn in_class(url: &CheckedUrl, class: AddressClass) -> bool {
    if let Some(IpAddr::V6(a)) = url.ip
        && let Some(v4) = embedded_ipv4(a)
        && class != AddressClass::Ip
    {
        let carried = CheckedUrl {
            ip: Some(IpAddr::V4(v4)),
            ..url.clone()
        };
        if in_class(&carried, class) {
            return true;
        }
    }
    match (class, url.ip) {
        (AddressClass::Ip, ip) => ip.is_some(),
        (AddressClass::Loopback, None) => {
            url.host == "localhost" || url.host.ends_with(".localhost")
        }
        (AddressClass::Metadata, None) => {
            matches!(
                url.host.as_str(),
                "metadata.google.internal"
                    | "metadata"
                    | "metadata.azure.com"
                    | "instance-data"
                    | "instance-data.ec2.internal"
            )
        }
        (AddressClass::Private | AddressClass::LinkLocal, None) => false,
        (AddressClass::Loopback, Some(IpAddr::V4(a))) => a.is_loopback() || a.is_unspecified(),
        (AddressClass::Loopback, Some(IpAddr::V6(a))) => a.is_loopback() || a.is_unspecified(),
        (AddressClass::Private, Some(IpAddr::V4(a))) => {
            a.is_private() || (a.octets()[0] == 100 && (a.octets()[1] & 0xc0) == 64)
        }
        (AddressClass::Private, Some(IpAddr::V6(a))) => (a.segments()[0] & 0xfe00) == 0xfc00,
        (AddressClass::LinkLocal, Some(IpAddr::V4(a))) => a.is_link_local(),
        (AddressClass::LinkLocal, Some(IpAddr::V6(a))) => (a.segments()[0] & 0xffc0) == 0xfe80,
        (AddressClass::Metadata, Some(IpAddr::V4(a))) => [
            Ipv4Addr::new(169, 254, 169, 254),
            Ipv4Addr::new(169, 254, 170, 2),
            Ipv4Addr::new(100, 100, 100, 200),
            Ipv4Addr::new(192, 0, 0, 192),
        ]
        .contains(&a),
        (AddressClass::Metadata, Some(IpAddr::V6(a))) => {
            a == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)
        }
    }
}

/// A `domain` pattern: an exact host, or `*.suffix` for any subdomain of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum DomainPattern {
    Exact(String),
    Subdomains(String),
    Any,
}

impl DomainPattern {
    /// Parses and normalises a pattern as a host is normalised.
    pub(crate) fn new(text: &str) -> Result<DomainPattern, String> {
        let text = text.trim();
        if text == "*" {
            return Ok(DomainPattern::Any);
        }
        let (wild, rest) = match text.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        if rest.is_empty()
            || rest.contains(['*', '/', '@', ':', '?', '#']) && !rest.starts_with('[')
        {
            return Err(format!(
                "`{text}` is not a domain: write a host (`docs.rs`), or `*.` and a host for its subdomains"
            ));
        }
        let host = check(&format!("http://{rest}/"))
            .map_err(|e| format!("`{text}` is not a domain ({e})"))?
            .host;
        Ok(if wild {
            DomainPattern::Subdomains(host)
        } else {
            DomainPattern::Exact(host)
        })
    }

    /// Whether `host` is below the pattern's own domain (`www.pastebin.com` for `pastebin.com`):
    /// what a deny or ask rule about a domain covers too. Never for an IP address.
    pub(crate) fn covers_subdomain(&self, host: &str) -> bool {
        match self {
            DomainPattern::Exact(h)
                if !h.starts_with('[') && !h.chars().all(|c| c.is_ascii_digit() || c == '.') =>
            {
                host.strip_suffix(h.as_str())
                    .is_some_and(|rest| rest.ends_with('.') && rest.len() > 1)
            }
            _ => false,
        }
    }

    /// Label-boundary matching: `*.example.com` matches `a.example.com` and `a.b.example.com`,
    /// never `example.com`, `evilexample.com` or `example.com.evil.com`.
    pub(crate) fn is_match(&self, host: &str) -> bool {
        match self {
            DomainPattern::Any => !host.is_empty(),
            DomainPattern::Exact(h) => host == h,
            DomainPattern::Subdomains(suffix) => host
                .strip_suffix(suffix.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
        }
    }

    pub(crate) fn text(&self) -> String {
        match self {
            DomainPattern::Any => "*".into(),
            DomainPattern::Exact(h) => h.clone(),
            DomainPattern::Subdomains(s) => format!("*.{s}"),
        }
    }

    /// Whether every host `other` matches, `self` matches too.
    pub(crate) fn covers(&self, other: &DomainPattern) -> bool {
        match (self, other) {
            (DomainPattern::Any, _) => true,
            (_, DomainPattern::Any) => false,
            (DomainPattern::Exact(a), DomainPattern::Exact(b)) => a == b,
            (DomainPattern::Exact(_), DomainPattern::Subdomains(_)) => false,
            (DomainPattern::Subdomains(_), DomainPattern::Exact(b)) => self.is_match(b),
            (DomainPattern::Subdomains(a), DomainPattern::Subdomains(b)) => {
                a == b || DomainPattern::Subdomains(a.clone()).is_match(b)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_normalised() {
        assert_eq!(check("https://DOCS.rs./x").unwrap().host, "docs.rs");
        assert_eq!(
            check("https://bücher.example/").unwrap().host,
            "xn--bcher-kva.example"
        );
        assert_eq!(check("https://docs%2Ers/").unwrap().host, "docs.rs");
        // Read as a path by browsers and as user info by others: refused, either way round.
        for url in [
            "http://evil.example\\@docs.rs/",
            "https://docs.rs\\@evil.example/",
            "https://docs.rs\\x",
        ] {
            assert_eq!(check(url), Err(UrlProblem::Backslash), "{url}");
        }
    }

    #[test]
    fn addresses_behind_other_schemes_and_inside_ipv6_are_classified() {
        for (url, class) in [
            ("gopher://127.0.0.1/", AddressClass::Loopback),
            ("gopher://0x7f.1:6379/_INFO", AddressClass::Loopback),
            ("gopher://169.254.169.254/", AddressClass::Metadata),
            ("dict://10.0.0.1:11211/", AddressClass::Private),
            ("http://[::127.0.0.1]/", AddressClass::Loopback),
            ("http://[64:ff9b::127.0.0.1]/", AddressClass::Loopback),
            ("http://[64:ff9b::a9fe:a9fe]/", AddressClass::Metadata),
            ("http://[64:ff9b:1::a00:1]/", AddressClass::Private),
            ("http://[2002:7f00:1::]/", AddressClass::Loopback),
            ("http://[2002:a9fe:a9fe::1]/", AddressClass::Metadata),
            // Teredo: the client's IPv4 address is stored inverted.
            (
                "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",
                AddressClass::Loopback,
            ),
            ("http://[::1]/", AddressClass::Loopback),
        ] {
            let u = check(url).unwrap();
            assert!(in_class(&u, class), "{url} is {class:?}");
            assert!(in_class(&u, AddressClass::Ip), "{url} is an address");
        }
        for url in [
            "gopher://example.com/",
            "gopher://1.example/",
            "http://[2606:4700:4700::1111]/",
            "http://[2002:808:808::]/",
        ] {
            let u = check(url).unwrap();
            for class in [
                AddressClass::Loopback,
                AddressClass::Private,
                AddressClass::LinkLocal,
                AddressClass::Metadata,
            ] {
                assert!(!in_class(&u, class), "{url} is not {class:?}");
            }
        }
    }

    #[test]
    fn ip_literals_in_every_spelling() {
        for spelling in [
            "http://127.0.0.1/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0177.0.0.1/",
            "http://127.1/",
            "http://0x7f.1/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:7f00:1]/",
        ] {
            let u = check(spelling).unwrap();
            assert_eq!(u.host, "127.0.0.1", "{spelling}");
            assert!(in_class(&u, AddressClass::Loopback));
        }
        let meta = check("http://169.254.169.254/latest/meta-data/").unwrap();
        assert!(
            in_class(&meta, AddressClass::Metadata) && in_class(&meta, AddressClass::LinkLocal)
        );
        assert!(in_class(
            &check("http://[fd00:ec2::254]/").unwrap(),
            AddressClass::Metadata
        ));
        assert!(in_class(
            &check("http://10.1.2.3/").unwrap(),
            AddressClass::Private
        ));
        assert!(in_class(
            &check("http://100.64.0.1/").unwrap(),
            AddressClass::Private
        ));
        assert!(in_class(
            &check("http://[fc00::1]/").unwrap(),
            AddressClass::Private
        ));
        assert!(in_class(
            &check("http://0.0.0.0:8080/").unwrap(),
            AddressClass::Loopback
        ));
        assert!(in_class(
            &check("http://api.localhost/").unwrap(),
            AddressClass::Loopback
        ));
        assert!(!in_class(
            &check("http://8.8.8.8/").unwrap(),
            AddressClass::Private
        ));
    }

    #[test]
    fn tricks_are_refused() {
        assert_eq!(
            check("https://docs.rs@evil.example/"),
            Err(UrlProblem::Userinfo)
        );
        assert_eq!(check("https://user:pw@docs.rs/"), Err(UrlProblem::Userinfo));
        assert_eq!(
            check("https://docs.rs\n.evil.example/"),
            Err(UrlProblem::ControlCharacter)
        );
        assert_eq!(
            check("https://evil.example\0.docs.rs/"),
            Err(UrlProblem::ControlCharacter)
        );
        assert!(matches!(
            check("not a url"),
            Err(UrlProblem::Unparseable(_))
        ));
        assert!(matches!(
            check("https:///"),
            Err(UrlProblem::Unparseable(_) | UrlProblem::NoHost)
        ));
    }

    #[test]
    fn domains_match_on_label_boundaries() {
        let sub = DomainPattern::new("*.Example.com.").unwrap();
        assert!(sub.is_match("a.example.com"));
        assert!(sub.is_match("a.b.example.com"));
        assert!(!sub.is_match("example.com"));
        assert!(!sub.is_match("evilexample.com"));
        assert!(!sub.is_match("example.com.evil.com"));
        let exact = DomainPattern::new("docs.rs").unwrap();
        assert!(exact.is_match("docs.rs"));
        assert!(!exact.is_match("docs.rs.evil.example"));
        assert!(!exact.is_match("modelcontextprotocol.io.example.com"));
        assert_eq!(
            DomainPattern::new("bücher.example").unwrap(),
            DomainPattern::Exact("xn--bcher-kva.example".into())
        );
        assert!(DomainPattern::new("https://docs.rs").is_err());
        assert!(DomainPattern::new("a*.b").is_err());
    }
}
