//! Where the daemon keeps its data, where it listens, and its access token.

use std::fmt;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

/// The port the daemon listens on unless told otherwise.
pub const DEFAULT_PORT: u16 = 7811;

/// The file in the data directory where `toolgate serve` writes the address it listens on
/// (`http://127.0.0.1:7811`), so that a client given the data directory finds the daemon too.
pub const ADDRESS_FILE: &str = "address";

/// The default address: loopback only.
pub const DEFAULT_LISTEN: SocketAddr =
    SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), DEFAULT_PORT);

/// The largest request body accepted.
pub const MAX_BODY: usize = 1024 * 1024;

/// How long a client may take to send a request's head, and then its body, by default.
pub const DEFAULT_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The shortest `retain` accepted: a requester reads its decision some time after it is made.
pub const MIN_RETAIN: std::time::Duration = std::time::Duration::from_secs(3600);

/// A `retain` span as people write it (`90d`, `12h`, `2weeks`): at least [`MIN_RETAIN`].
pub fn parse_retain(text: &str) -> Result<std::time::Duration, String> {
    let span = humantime::parse_duration(text.trim()).map_err(|e| {
        format!("`{text}` is not a span of time ({e}); write it as `90d`, `12h` or `2weeks`")
    })?;
    long_enough(span, text)
}

/// `span` (written `shown`) when it is at least [`MIN_RETAIN`].
fn long_enough(span: std::time::Duration, shown: &str) -> Result<std::time::Duration, String> {
    if span < MIN_RETAIN {
        return Err(format!(
            "`{shown}` is shorter than the shortest retention, {}",
            humantime::format_duration(MIN_RETAIN)
        ));
    }
    Ok(span)
}

/// A `retain` value of the settings file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retain(pub std::time::Duration);

impl<'de> serde::Deserialize<'de> for Retain {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Retain, D::Error> {
        let text = String::deserialize(deserializer)?;
        parse_retain(&text)
            .map(Retain)
            .map_err(serde::de::Error::custom)
    }
}

/// How many connections without credentials are held at most, by default.
pub const DEFAULT_MAX_ANONYMOUS_CONNECTIONS: usize = 1024;

/// The daemon's settings.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Where the database and the token live.
    pub data_dir: PathBuf,
    /// Where to listen.
    pub listen: SocketAddr,
    /// Listening on a non-loopback address is refused unless this is set.
    pub allow_remote: bool,
    /// Extra `Host` values accepted besides the listening address's loopback names (a name a
    /// reverse proxy forwards, say).
    pub extra_hosts: Vec<String>,
    /// What an acknowledged decision survives (default: the daemon's crash; a power loss costs
    /// at most the last tenth of a second's, see [`toolgate_store::Durability`]). SQLite's
    /// setting: on PostgreSQL the database's own (`synchronous_commit`) decides.
    pub durability: toolgate_store::Durability,
    /// A PostgreSQL database to keep everything in (a `postgres://` connection string, or
    /// libpq's `key=value` pairs) instead of the SQLite file in the data directory, which
    /// still holds the token.
    pub store: Option<String>,
    /// How long a client may take to send a request's head (its line and headers), and then
    /// its body (default: 30 s each). A head that does not arrive closes the connection; a body
    /// that does not is a 408. Keeps half-sent requests from holding connections.
    pub read_timeout: std::time::Duration,
    /// The most connections held that have not shown credentials (default: 1,024, and fewer
    /// when the process may not open that many files). Past it, a new connection takes the
    /// place of the oldest of them: connections anyone can open cannot crowd out callers.
    /// Connections that have shown credentials do not count.
    pub max_anonymous_connections: usize,
    /// How long the audit log's events and the decided decisions are kept (default: for
    /// ever). What was recorded longer ago is removed when the daemon starts and every hour,
    /// after an `audit_pruned` event saying what goes.
    pub retain: Option<std::time::Duration>,
    /// Where the access token is kept (default: `token` in the data directory), made at the
    /// first start, readable only by its owner. Daemons sharing one database name the same
    /// file, so one token reaches them all.
    pub token_file: Option<PathBuf>,
    /// What the daemon takes the time to be when it weighs grants' expiry (default: the
    /// system's clock; a test sets another, to see a grant expire without waiting for it).
    pub clock: Clock,
}

/// Where the daemon reads the time of day.
#[derive(Clone, Default)]
pub struct Clock(Option<std::sync::Arc<dyn Fn() -> std::time::SystemTime + Send + Sync>>);

impl Clock {
    /// A clock that reads `now`.
    pub fn from_fn(now: impl Fn() -> std::time::SystemTime + Send + Sync + 'static) -> Clock {
        Clock(Some(std::sync::Arc::new(now)))
    }

    /// The time.
    pub fn now(&self) -> std::time::SystemTime {
        self.0
            .as_ref()
            .map_or_else(std::time::SystemTime::now, |now| now())
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Clock(given)"
        } else {
            "Clock(system)"
        })
    }
}

impl ServerConfig {
    /// The defaults, with data in `data_dir`.
    pub fn new(data_dir: impl Into<PathBuf>) -> ServerConfig {
        ServerConfig {
            data_dir: data_dir.into(),
            listen: DEFAULT_LISTEN,
            allow_remote: false,
            extra_hosts: Vec::new(),
            durability: toolgate_store::Durability::default(),
            store: None,
            read_timeout: DEFAULT_READ_TIMEOUT,
            max_anonymous_connections: DEFAULT_MAX_ANONYMOUS_CONNECTIONS,
            retain: None,
            token_file: None,
            clock: Clock::default(),
        }
    }

    /// The database file.
    pub fn database(&self) -> PathBuf {
        self.data_dir.join("toolgate.db")
    }

    /// Where the store is, as the daemon says it at start: the SQLite file, or the PostgreSQL
    /// database (no password).
    pub fn store_description(&self) -> String {
        match &self.store {
            Some(url) => toolgate_store::PostgresStore::describe(url)
                .unwrap_or_else(|error| error.to_string()),
            None => self.database().display().to_string(),
        }
    }

    /// The token file: the one given, else `token` in the data directory.
    pub fn token_file(&self) -> PathBuf {
        self.token_file
            .clone()
            .unwrap_or_else(|| self.data_dir.join("token"))
    }

    /// Where the address the daemon listens on is written ([`ADDRESS_FILE`]).
    pub fn address_file(&self) -> PathBuf {
        self.data_dir.join(ADDRESS_FILE)
    }

    /// Checks the settings: a non-loopback address needs `allow_remote`; each extra host is a
    /// name or address with an optional port, as a `Host` header says it.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Some(retain) = self.retain {
            long_enough(retain, &humantime::format_duration(retain).to_string())
                .map_err(|why| ConfigError(format!("`retain`: {why}")))?;
        }
        for host in &self.extra_hosts {
            if let Err(why) = check_host_entry(host) {
                return Err(ConfigError(format!(
                    "`hosts` entry `{host}` is not a host name with an optional port (like \
                     `toolgate.lan:7811`): {why}"
                )));
            }
        }
        if !self.listen.ip().is_loopback() && !self.allow_remote {
            return Err(ConfigError(format!(
                "refusing to listen on {}: it is not a loopback address (pass --allow-remote, or \
                 set `allow_remote = true` in daemon.toml, to expose the approval API beyond this \
                 machine)",
                self.listen
            )));
        }
        Ok(())
    }
}

/// Checks one `hosts` entry as a `Host` header would carry it: a DNS name (letters, digits and
/// `-` in dot-separated labels), an IPv4 address or a bracketed IPv6 one, then `:PORT` (1–65535,
/// written plainly) or nothing. A loopback name needs its port: without one it would also
/// trust pages served by any other program on this machine's port 80 or 443.
fn check_host_entry(entry: &str) -> Result<(), &'static str> {
    if entry.is_empty() {
        return Err("it is empty");
    }
    if entry.contains(['*', '/', '@', '?', '#']) {
        return Err("patterns and URLs are not accepted");
    }
    let (name, port) = if let Some(rest) = entry.strip_prefix('[') {
        let (address, after) = rest.split_once(']').ok_or("`[` without `]`")?;
        address
            .parse::<std::net::Ipv6Addr>()
            .map_err(|_| "the bracketed part is not an IPv6 address")?;
        match after {
            "" => (entry, None),
            _ => (
                entry.get(..=address.len() + 1).unwrap_or(entry),
                Some(after.strip_prefix(':').ok_or("a port follows `:`")?),
            ),
        }
    } else {
        match entry.split_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (entry, None),
        }
    };
    if let Some(port) = port {
        let plain = !port.is_empty()
            && port.len() <= 5
            && port.bytes().all(|b| b.is_ascii_digit())
            && !port.starts_with('0');
        if !plain || port.parse::<u32>().map_or(true, |p| p == 0 || p > 65535) {
            return Err("the port is not a number from 1 to 65535");
        }
    }
    if !name.starts_with('[') && name.parse::<std::net::Ipv4Addr>().is_err() {
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        };
        if name.len() > 253 || !name.split('.').all(label_ok) {
            return Err("a name is dot-separated labels of letters, digits and inner `-`");
        }
        if name.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            return Err("it is neither a name nor an IPv4 address");
        }
    }
    let lower = name.to_ascii_lowercase();
    let loopback = lower == "localhost"
        || lower.ends_with(".localhost")
        || lower
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|a| a.is_loopback())
        || lower
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::Ipv6Addr>()
            .is_ok_and(|a| a.is_loopback());
    if loopback && port.is_none() {
        return Err(
            "a loopback name needs its port, or pages of other programs on this machine would \
             be trusted",
        );
    }
    Ok(())
}

/// Where a client on this machine reaches a daemon bound to `address`: loopback when it is
/// bound to every address (whose Host it takes; `0.0.0.0:PORT` is no Host it accepts).
pub fn reachable(address: SocketAddr) -> SocketAddr {
    let mut reached = address;
    if reached.ip().is_unspecified() {
        reached.set_ip(match reached {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    reached
}

/// The default data directory: `$TOOLGATE_DATA_DIR`, else `$XDG_DATA_HOME/toolgate`, else
/// `~/.local/share/toolgate` (a settings file's `data_dir` comes between the first two: see
/// [`ConfigFile::resolved_data_dir`]).
pub fn default_data_dir() -> Option<PathBuf> {
    ConfigFile::default().resolved_data_dir()
}

/// The daemon's settings file, `daemon.toml`: what the command line does not say. Every key is
/// optional; flags and environment variables win over it; unknown keys are errors.
///
/// ```toml
/// listen = "127.0.0.1:7811"
/// data_dir = "/var/lib/toolgate"   # relative paths are relative to this file's folder
/// allow_remote = false
/// hosts = ["toolgate.lan:7811"]    # more `Host` values accepted (a reverse proxy's name)
/// durability = "full"              # or "process"
/// store = "postgres://toolgate@db.lan/toolgate"  # PostgreSQL instead of SQLite
/// token_file = "/srv/toolgate/token"  # one token for the daemons sharing a database
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// Where to listen (`localhost:PORT` is 127.0.0.1:PORT, as on the command line).
    #[serde(default, deserialize_with = "listen_in_file")]
    pub listen: Option<SocketAddr>,
    /// Where the database and the token live.
    pub data_dir: Option<PathBuf>,
    /// Allow a non-loopback `listen`.
    pub allow_remote: Option<bool>,
    /// Extra `Host` values accepted.
    #[serde(default)]
    pub hosts: Vec<String>,
    /// What an acknowledged decision survives.
    pub durability: Option<toolgate_store::Durability>,
    /// A PostgreSQL database instead of SQLite (see [`ServerConfig::store`]).
    pub store: Option<String>,
    /// The most connections held without credentials (see
    /// [`ServerConfig::max_anonymous_connections`]).
    pub max_anonymous_connections: Option<usize>,
    /// How long events and decided decisions are kept (see [`ServerConfig::retain`]).
    pub retain: Option<Retain>,
    /// Where the access token is kept (see [`ServerConfig::token_file`]); clients read it too.
    pub token_file: Option<PathBuf>,
}

/// `listen`: an IP address and port; `localhost:PORT` is taken as 127.0.0.1:PORT (a name is
/// not looked up: what it resolves to could change under the Host checks).
pub fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    if let Some(port) = text.strip_prefix("localhost:") {
        return port
            .parse::<u16>()
            .map(|port| SocketAddr::from(([127, 0, 0, 1], port)))
            .map_err(|_| format!("`{port}` is not a port (0 to 65535)"));
    }
    text.parse().map_err(|_| {
        format!("`{text}` is not an IP address and port, like 127.0.0.1:7811 or [::1]:7811")
    })
}

/// `:LINE:COLUMN` of the byte `offset` in `text`, both from 1 (columns in characters).
fn line_and_column(text: &str, offset: usize) -> String {
    let before = text.get(..offset).unwrap_or("");
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!(":{line}:{column}")
}

fn listen_in_file<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<SocketAddr>, D::Error> {
    let text = <String as serde::Deserialize>::deserialize(deserializer)?;
    parse_listen(&text)
        .map(Some)
        .map_err(serde::de::Error::custom)
}

impl ConfigFile {
    /// Reads and checks a settings file; errors name the file, line and column.
    pub fn load(path: &Path) -> Result<ConfigFile, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError(format!("cannot read {}: {e}", path.display())))?;
        let mut file: ConfigFile = toml::from_str(&text).map_err(|e| {
            let at = e
                .span()
                .map(|span| line_and_column(&text, span.start))
                .unwrap_or_default();
            ConfigError(format!("{}{at}: {}", path.display(), e.message()))
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        for place in [&mut file.data_dir, &mut file.token_file] {
            if let Some(relative) = place.as_ref().filter(|place| place.is_relative()) {
                *place = Some(base.join(relative));
            }
        }
        if file.max_anonymous_connections == Some(0) {
            return Err(ConfigError(format!(
                "{}: `max_anonymous_connections` is at least 1",
                path.display()
            )));
        }
        for host in &file.hosts {
            let why = if host.is_empty() || host.contains(['/', ' ', '@']) {
                Some("it is not a host[:port] value".to_owned())
            } else {
                check_host_entry(host).err().map(str::to_owned)
            };
            if let Some(why) = why {
                // Where it is written, for the message (the first place the text appears).
                let at = text
                    .find(&format!("\"{host}\""))
                    .or_else(|| text.find(&format!("'{host}'")))
                    .map(|start| line_and_column(&text, start))
                    .unwrap_or_default();
                return Err(ConfigError(format!(
                    "{}{at}: `hosts` entry `{host}` is not a host name with an optional port \
                     (like `toolgate.lan:7811`): {why}",
                    path.display()
                )));
            }
        }
        Ok(file)
    }

    /// The default settings file when it exists, else no settings.
    pub fn load_default() -> Result<ConfigFile, ConfigError> {
        match ConfigFile::default_path().filter(|p| p.exists()) {
            Some(path) => ConfigFile::load(&path),
            None => Ok(ConfigFile::default()),
        }
    }

    /// The data directory these settings give: `$TOOLGATE_DATA_DIR`, else the file's
    /// `data_dir`, else `$XDG_DATA_HOME/toolgate`, else `~/.local/share/toolgate`. The daemon
    /// and its command-line clients find it the same way.
    pub fn resolved_data_dir(&self) -> Option<PathBuf> {
        if let Some(dir) = std::env::var_os("TOOLGATE_DATA_DIR").filter(|d| !d.is_empty()) {
            return Some(PathBuf::from(dir));
        }
        if let Some(dir) = &self.data_dir {
            return Some(dir.clone());
        }
        if let Some(dir) = std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
            return Some(PathBuf::from(dir).join("toolgate"));
        }
        std::env::var_os("HOME")
            .filter(|d| !d.is_empty())
            .map(|home| PathBuf::from(home).join(".local/share/toolgate"))
    }

    /// Where the settings file is looked for when none is named: `$XDG_CONFIG_HOME/toolgate/`
    /// or `~/.config/toolgate/`, file `daemon.toml`.
    pub fn default_path() -> Option<PathBuf> {
        if let Some(dir) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
            return Some(PathBuf::from(dir).join("toolgate/daemon.toml"));
        }
        std::env::var_os("HOME")
            .filter(|d| !d.is_empty())
            .map(|home| PathBuf::from(home).join(".config/toolgate/daemon.toml"))
    }
}

/// Why the daemon cannot start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// A fresh secret: 256 random bits as hex.
pub(crate) fn secret() -> String {
    let a = uuid::Uuid::new_v4().simple().to_string();
    let b = uuid::Uuid::new_v4().simple().to_string();
    format!("{a}{b}")
}

/// Whether `c` may be in a token (before its `=` padding): what RFC 6750 lets a bearer
/// credential hold, so the token is sent as written and is the same text in a header, a JSON
/// string and the redaction of error bodies (a quote or backslash would be escaped there).
fn bearer_character(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~' | '+' | '/')
}

/// Reads the token, creating it (mode 0600) at first start. A token file readable by others
/// is refused, and so is a token a bearer header cannot carry.
pub(crate) fn load_or_create_token(path: &Path) -> Result<String, ConfigError> {
    let fail = |what: &str, e: std::io::Error| {
        ConfigError(format!(
            "cannot {what} the token file {}: {e}",
            path.display()
        ))
    };
    match std::fs::metadata(path) {
        // A FIFO would hang the start, a device never end the read.
        Ok(meta) if !meta.is_file() => Err(ConfigError(format!(
            "the token file {} is not a regular file",
            path.display()
        ))),
        Ok(_) => {
            check_private(path)?;
            let mut text = String::new();
            std::fs::File::open(path)
                .and_then(|file| {
                    std::io::Read::read_to_string(&mut std::io::Read::take(file, 4096), &mut text)
                })
                .map_err(|e| fail("read", e))?;
            let token = text.trim().to_owned();
            if token.len() < 32 {
                return Err(ConfigError(format!(
                    "the token in {} is too short (at least 32 characters)",
                    path.display()
                )));
            }
            // RFC 6750's b64token: padding (`=`) only at its end.
            if let Some(odd) = token
                .trim_end_matches('=')
                .chars()
                .find(|&c| !bearer_character(c))
            {
                return Err(ConfigError(format!(
                    "the token in {} holds {odd:?}, which a bearer token cannot (RFC 6750): use \
                     letters, digits and `-._~+/` (a new one is made when the file is removed)",
                    path.display()
                )));
            }
            Ok(token)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(|e| fail("create the folder of", e))?;
            }
            let token = secret();
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                options.mode(0o600);
            }
            let mut file = options.open(path).map_err(|e| fail("create", e))?;
            file.write_all(format!("{token}\n").as_bytes())
                .and_then(|()| file.sync_all())
                .map_err(|e| fail("write", e))?;
            Ok(token)
        }
        Err(e) => Err(fail("read", e)),
    }
}

/// Refuses a token file others can read (whoever reads it can answer every request); the
/// daemon and its command-line clients check it alike.
#[cfg(unix)]
pub fn check_private(path: &Path) -> Result<(), ConfigError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)
        .map_err(|e| ConfigError(format!("cannot read {}: {e}", path.display())))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        return Err(ConfigError(format!(
            "the token file {} can be read by others (mode {:o}): run `chmod 600 {}`",
            path.display(),
            mode & 0o777,
            path.display()
        )));
    }
    Ok(())
}

/// Refuses a token file others can read (no such modes here: nothing to refuse).
#[cfg(not(unix))]
pub fn check_private(_path: &Path) -> Result<(), ConfigError> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Paths in the settings file are relative to its folder: the data directory's and the
    /// token file's.
    #[test]
    fn relative_paths_in_the_settings_file_are_its_folders() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("daemon.toml");
        std::fs::write(&path, "data_dir = \"state\"\ntoken_file = \"keys/token\"\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let file = ConfigFile::load(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(file.data_dir, Some(dir.path().join("state")));
        assert_eq!(file.token_file, Some(dir.path().join("keys/token")));
        std::fs::write(&path, "token_file = \"/srv/token\"\n").unwrap_or_else(|e| panic!("{e}"));
        let file = ConfigFile::load(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(file.token_file, Some(PathBuf::from("/srv/token")));
    }

    #[test]
    fn the_token_is_created_private_and_read_back() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("sub/token");
        let token = load_or_create_token(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(token.len(), 64);
        assert_eq!(load_or_create_token(&path), Ok(token));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).map(|m| m.permissions().mode() & 0o777);
            assert_eq!(mode.ok(), Some(0o600));
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(
                load_or_create_token(&path).is_err(),
                "a readable token is refused"
            );
            // Not a file: a FIFO would hang the start, a device never end the read.
            std::fs::remove_file(&path).unwrap_or_else(|e| panic!("{e}"));
            let made = std::process::Command::new("mkfifo").arg(&path).status();
            assert!(made.is_ok_and(|s| s.success()));
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                .unwrap_or_else(|e| panic!("{e}"));
            let error = load_or_create_token(&path).map_err(|e| e.to_string());
            assert!(
                error
                    .as_ref()
                    .is_err_and(|e| e.contains("not a regular file")),
                "{error:?}"
            );
            std::fs::remove_file(&path).unwrap_or_else(|e| panic!("{e}"));
            std::os::unix::fs::symlink("/dev/zero", &path).unwrap_or_else(|e| panic!("{e}"));
            assert!(load_or_create_token(&path).is_err());
        }
    }

    #[test]
    fn a_token_a_bearer_header_cannot_carry_is_refused() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("token");
        let write = |text: &str| {
            std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                    .unwrap_or_else(|e| panic!("{e}"));
            }
        };
        let good = "Abc-._~+/0123456789abcdefghijklmnopqrstuvwxyz";
        write(&format!("{good}\n"));
        assert_eq!(load_or_create_token(&path), Ok(good.to_owned()));
        // Base64 with its padding (`openssl rand -base64 32`).
        let padded = "q1Yk0fN3m+/Zt9wE2bV7cR4sA8uH6jL5pXoIyTgKdMe=";
        write(&format!("{padded}\n"));
        assert_eq!(load_or_create_token(&path), Ok(padded.to_owned()));
        for odd in ['"', '\\', ' ', '=', 'é', '\u{7}'] {
            write(&format!("{good}{odd}{good}\n"));
            let error = load_or_create_token(&path).map_err(|e| e.to_string());
            assert!(
                error.as_ref().is_err_and(
                    |e| e.contains("bearer token cannot") && e.contains(&format!("{odd:?}"))
                ),
                "{odd:?}: {error:?}"
            );
        }
    }

    #[test]
    fn hosts_entries_are_names_or_addresses_with_a_plain_port() {
        for good in [
            "toolgate.lan",
            "toolgate.lan:7811",
            "Proxy.LAN:8443",
            "10.0.0.2:80",
            "[fd00::1]:7811",
            "[fd00::1]",
            "localhost:7812",
            "127.0.0.2:9000",
            "xn--bcher-kva.example",
        ] {
            assert_eq!(check_host_entry(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "*",
            "*.lan",
            "x:",
            "x:abc",
            "x:99999",
            "x:0",
            ":+80",
            ":80",
            "x:080",
            "x:+80",
            "a..b",
            "-a.lan",
            "a-.lan",
            "proxy_lan",
            ".lan",
            "lan.",
            "localhost",
            "app.localhost",
            "127.0.0.1",
            "[::1]",
            "1.2.3",
            "[fd00::1",
            "[fd00::1]x",
            "[zz]:80",
            "x:80:81",
            "https://x",
            "x/y",
            "u@x",
            "x y",
        ] {
            assert!(check_host_entry(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_non_loopback_address_needs_an_explicit_flag() {
        let mut config = ServerConfig::new("/tmp/x");
        assert!(config.validate().is_ok());
        config.listen = "0.0.0.0:7811".parse().unwrap_or(DEFAULT_LISTEN);
        assert!(config.validate().is_err());
        config.allow_remote = true;
        assert!(config.validate().is_ok());
    }
}
