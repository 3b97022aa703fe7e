//! A small HTTP/1.1 client for the daemon's API (`approvals`, `grants`, `tail`): plain HTTP to
//! the daemon's address, the token in the `Authorization` header.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use serde_json::Value;
use toolgate_server::{ConfigFile, DEFAULT_LISTEN};

use crate::Failure;

/// Where the daemon is, and how to prove who we are.
#[derive(Debug, Args)]
pub(crate) struct ClientArgs {
    /// The daemon's data directory, where it keeps its token and writes its address (as given
    /// to `toolgate serve --data-dir`) [default: $TOOLGATE_DATA_DIR, else the settings file's
    /// `data_dir`, else $XDG_DATA_HOME/toolgate, else ~/.local/share/toolgate]
    #[arg(long, value_name = "DIR", global = true)]
    pub(crate) data_dir: Option<PathBuf>,
    /// The daemon's address [default: the one it wrote in its data directory, else the
    /// settings file's `listen`, else http://127.0.0.1:7811].
    #[arg(long, value_name = "URL", env = "TOOLGATE_URL", global = true)]
    pub(crate) url: Option<String>,
    /// The token file [default: the settings file's `token_file`, else the data directory's
    /// `token`]; `$TOOLGATE_TOKEN` gives the token itself.
    #[arg(long, value_name = "FILE", global = true)]
    pub(crate) token_file: Option<PathBuf>,
}

/// How many more a list's `total` says there are than the `shown` it holds (the daemon lists
/// at most 1,000).
pub(crate) fn more_than(body: &Value, shown: usize) -> u64 {
    field(body, "total")
        .as_u64()
        .map_or(0, |total| total.saturating_sub(shown as u64))
}

/// A field of a JSON object (`null` when absent).
pub(crate) fn field<'a>(value: &'a Value, key: &str) -> &'a Value {
    value.get(key).unwrap_or(&Value::Null)
}

/// An HTTP response.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) body: Value,
}

impl Reply {
    /// The failure an error response is: with `json`, the daemon's error body is printed on
    /// stdout as it is first (what a script reading stdout parses), its message said on stderr
    /// either way.
    pub(crate) fn failure(&self, json: bool) -> Failure {
        if json && self.body.get("error").is_some() {
            let mut out = std::io::stdout().lock();
            if writeln!(out, "{}", self.body)
                .and_then(|()| out.flush())
                .is_err()
            {
                return Failure::BrokenPipe;
            }
        }
        Failure::Message(self.error())
    }

    /// The API's error message (safe to print: it may quote what an agent wrote), or the
    /// status.
    pub(crate) fn error(&self) -> String {
        if self.status == 401 {
            // The daemon's words are for browsers and API clients; this client sent a token.
            return "the daemon refused the token (a token from another data directory, or \
                    $TOOLGATE_TOKEN set to an old one? the token is in the daemon's data \
                    directory, `token`)"
                .to_owned();
        }
        field(field(&self.body, "error"), "message")
            .as_str()
            .map_or_else(
                || format!("the daemon answered {}", self.status),
                toolgate_runtime::terminal_text,
            )
    }
}

/// How an event stream ended.
#[derive(Debug)]
pub(crate) enum Streamed {
    /// The daemon ended it (it is stopping), or the connection closed.
    Ended,
    /// The caller stopped reading.
    Stopped,
    /// The daemon refused it: its answer.
    Refused(Reply),
}

/// An argument of a call a person is asked about, as terminal-safe text: text up to 1,000
/// characters whole (a person approves the command they read, all of it), longer text as its
/// start and its end (where a `&& …` would be) and how much lies between; other values as
/// one line of JSON, folded to 300 characters.
pub(crate) fn argument(value: &Value) -> String {
    const WHOLE: usize = 1000;
    const END: usize = 160;
    let Value::String(text) = value else {
        return folded(value, 300);
    };
    let count = text.chars().count();
    if count <= WHOLE {
        return toolgate_runtime::terminal_text(text);
    }
    let start: String = text.chars().take(END).collect();
    let end: String = text.chars().skip(count - END).collect();
    format!(
        "{} … ({} more characters; --json shows them) … {}",
        toolgate_runtime::terminal_text(&start),
        count - 2 * END,
        toolgate_runtime::terminal_text(&end)
    )
}

/// What grants cover, in words: `commands starting with `npm install` in this session`
/// (`targets` and `scope` as the API writes them; JSON when they are not what this client
/// knows).
pub(crate) fn covers(targets: &Value, scope: &Value) -> String {
    let words: Option<Vec<String>> = targets.as_array().and_then(|targets| {
        targets
            .iter()
            .map(|t| {
                serde_json::from_value::<toolgate_runtime::GrantTarget>(t.clone())
                    .ok()
                    .map(|t| t.to_string())
            })
            .collect()
    });
    let Some(words) = words else {
        return folded(targets, 300);
    };
    let place = match scope.as_str() {
        Some("once") => " for the next call only",
        Some("turn") => " for the rest of this turn",
        Some("session") => " in this session",
        Some("workspace") => " in this workspace",
        Some("user") => " everywhere",
        _ => "",
    };
    toolgate_runtime::terminal_text(&format!("{}{place}", words.join("; ")))
}

/// A grant in words: `allow commands starting with `npm install` of `bash` in session `s1``,
/// and the answerer's reason when they gave one.
pub(crate) fn grant_line(grant: &Value) -> String {
    let target = Value::Array(vec![field(grant, "target").clone()]);
    let name = |key: &str| folded(field(grant, key), 100);
    let within = match field(grant, "scope").as_str() {
        Some("once") => format!("for the next call in session `{}`", name("session")),
        Some("turn") => format!(
            "for turn {} of branch `{}` in session `{}`",
            field(grant, "turn"),
            name("branch"),
            name("session")
        ),
        Some("session") => format!("in session `{}`", name("session")),
        Some("workspace") => format!("in the workspace `{}`", name("root")),
        Some("user") => "everywhere".to_owned(),
        _ => folded(field(grant, "scope"), 100),
    };
    let reason = match field(grant, "reason").as_str() {
        Some(reason) => format!(" — \"{}\"", folded(&reason.into(), 300)),
        None => String::new(),
    };
    let within = match field(grant, "expires_at").as_str() {
        Some(until) => format!("{within} until {}", folded(&until.into(), 100)),
        None => within,
    };
    format!(
        "{} {} of `{}` {within}{reason}",
        name("effect"),
        covers(&target, &Value::Null),
        name("tool")
    )
}

/// A value as one line of terminal-safe text, folded to `width` characters (what the agent
/// wrote can neither fake nor hide a line, nor flood the terminal).
pub(crate) fn folded(value: &Value, width: usize) -> String {
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    let count = text.chars().count();
    if count <= width {
        return toolgate_runtime::terminal_text(&text);
    }
    let kept: String = text.chars().take(width).collect();
    format!(
        "{}… ({} more characters)",
        toolgate_runtime::terminal_text(&kept),
        count - width
    )
}

pub(crate) struct Client {
    host: String,
    token: String,
    /// Where `host` comes from.
    whence: &'static str,
}

/// The daemon's data directory as the client arguments find it: `--data-dir`, else the
/// settings file's.
pub(crate) fn data_dir(args: &ClientArgs) -> Option<PathBuf> {
    args.data_dir.clone().or_else(|| {
        ConfigFile::load_default()
            .ok()
            .and_then(|file| file.resolved_data_dir())
    })
}

impl Client {
    pub(crate) fn new(args: &ClientArgs) -> Result<Client, Failure> {
        // The daemon's own settings say where it listens and keeps its token.
        let file =
            ConfigFile::load_default().map_err(|e| Failure::Message(format!("error: {e}")))?;
        let data_dir = args.data_dir.clone().or_else(|| file.resolved_data_dir());
        // The address the daemon of that data directory wrote when it started (it may have
        // been given another --listen than the settings say).
        let written = data_dir.as_ref().and_then(|dir| {
            std::fs::read_to_string(dir.join(toolgate_server::ADDRESS_FILE))
                .ok()
                .map(|text| text.trim().to_owned())
                .filter(|url| url.starts_with("http://"))
        });
        // Where the address comes from, said when the daemon cannot be reached there.
        let (url, whence) = match (args.url.clone(), written) {
            (Some(url), _) => (url, "given with --url"),
            (None, Some(url)) => (url, "written by the daemon in its data directory"),
            (None, None) => {
                let listen = toolgate_server::reachable(file.listen.unwrap_or(DEFAULT_LISTEN));
                (
                    format!("http://{listen}"),
                    "the default: no daemon has written its address in the data directory",
                )
            }
        };
        let host = url
            .strip_prefix("http://")
            .ok_or_else(|| {
                Failure::Message(format!(
                    "`{url}` is not an http:// address (the daemon speaks plain HTTP on loopback)"
                ))
            })?
            .trim_end_matches('/')
            .to_owned();
        let token = match std::env::var("TOOLGATE_TOKEN")
            .ok()
            .filter(|t| !t.is_empty())
        {
            Some(token) => token,
            None => {
                let file = args
                    .token_file
                    .clone()
                    .or_else(|| file.token_file.clone())
                    .or_else(|| data_dir.map(|d| d.join("token")))
                    .ok_or_else(|| {
                        Failure::Message(
                            "no token: pass --data-dir or --token-file, or set $TOOLGATE_TOKEN"
                                .into(),
                        )
                    })?;
                // Refused as the daemon refuses it (a missing file is said below).
                if file.exists() {
                    toolgate_server::check_private(&file)
                        .map_err(|e| Failure::Message(e.to_string()))?;
                }
                std::fs::read_to_string(&file)
                    .map_err(|e| {
                        Failure::Message(format!(
                            "cannot read the token file {}: {e} (is the daemon started, with \
                             this data directory? a daemon started with `--data-dir DIR` is \
                             reached with `--data-dir DIR` here too)",
                            file.display()
                        ))
                    })?
                    .trim()
                    .to_owned()
            }
        };
        Ok(Client {
            host,
            token,
            whence,
        })
    }

    /// The daemon's address, as given.
    pub(crate) fn host(&self) -> &str {
        &self.host
    }

    fn connect(&self) -> Result<TcpStream, Failure> {
        let unreachable = |e: std::io::Error| {
            Failure::Message(format!(
                "cannot reach the daemon at http://{} ({}): {e} (start it with `toolgate \
                 serve`)",
                self.host, self.whence
            ))
        };
        let address = self
            .host
            .to_socket_addrs()
            .map_err(unreachable)?
            .next()
            .ok_or_else(|| Failure::Message(format!("`{}` names no address", self.host)))?;
        let stream =
            TcpStream::connect_timeout(&address, Duration::from_secs(10)).map_err(unreachable)?;
        Ok(stream)
    }

    fn head(&self, method: &str, path: &str, extra: &str) -> String {
        format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nConnection: close\r\n{extra}",
            self.host, self.token
        )
    }

    /// Sends a request and reads the whole response.
    pub(crate) fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Reply, Failure> {
        let mut stream = self.connect()?;
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .map_err(|e| Failure::Message(e.to_string()))?;
        let payload = body.map(Value::to_string).unwrap_or_default();
        let extra = if body.is_some() {
            format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                payload.len()
            )
        } else {
            "\r\n".to_owned()
        };
        let request = self.head(method, path, &extra) + &payload;
        let io = |e: std::io::Error| Failure::Message(format!("talking to the daemon failed: {e}"));
        stream.write_all(request.as_bytes()).map_err(io)?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).map_err(io)?;
        let text = String::from_utf8_lossy(&raw);
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| Failure::Message("the daemon's answer is not HTTP".into()))?;
        let chunked = head.lines().any(|l| {
            l.to_ascii_lowercase()
                .starts_with("transfer-encoding: chunked")
        });
        let body = if chunked {
            dechunk(body)
        } else {
            body.to_owned()
        };
        let body = if body.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&body).map_err(|e| {
                Failure::Message(format!(
                    "http://{} answered {status} with something that is not JSON ({e}): is \
                     it a toolgate daemon? (--url, or the address its data directory names)",
                    self.host
                ))
            })?
        };
        Ok(Reply { status, body })
    }

    /// `GET path`, which answers an object holding the array `key`: the whole body, and the
    /// array.
    /// A list the daemon answers with, its items under `key` (with `json`, an error body is
    /// printed as it is).
    pub(crate) fn list(
        &self,
        path: &str,
        key: &str,
        json: bool,
    ) -> Result<(Value, Vec<Value>), Failure> {
        let reply = self.send("GET", path, None)?;
        if reply.status != 200 {
            return Err(reply.failure(json));
        }
        let items = field(&reply.body, key)
            .as_array()
            .cloned()
            .unwrap_or_default();
        Ok((reply.body, items))
    }

    /// Streams server-sent events: calls `each` with every event's data until the stream ends
    /// or `each` returns false. `Ok(Streamed::Refused)` when the daemon answered with an error
    /// instead of a stream; `Err` when it could not be reached or the connection broke.
    pub(crate) fn events(
        &self,
        path: &str,
        mut each: impl FnMut(&Value) -> bool,
    ) -> Result<Streamed, Failure> {
        let mut stream = self.connect()?;
        // The daemon sends a comment at least every 15 s: a silence four times as long is a
        // connection that is gone without a word (a machine asleep, a cable pulled).
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .map_err(|e| Failure::Message(e.to_string()))?;
        let io = |e: std::io::Error| Failure::Message(format!("talking to the daemon failed: {e}"));
        stream
            .write_all(
                self.head("GET", path, "Accept: text/event-stream\r\n\r\n")
                    .as_bytes(),
            )
            .map_err(io)?;
        let mut reader = BufReader::new(stream);
        let mut status = String::new();
        reader.read_line(&mut status).map_err(io)?;
        if status.is_empty() {
            // Accepted and closed without a word: a daemon stopping or starting. The
            // connection was lost; it is no answer.
            return Err(Failure::Message(
                "the daemon closed the connection without answering".into(),
            ));
        }
        if !status.starts_with("HTTP/1.1 200") {
            let mut rest = String::new();
            let _ = reader.read_to_string(&mut rest);
            let body = rest.split_once("\r\n\r\n").map_or("", |(_, b)| b);
            let code = status
                .split(' ')
                .nth(1)
                .and_then(|code| code.parse().ok())
                .unwrap_or(0);
            let body = serde_json::from_str::<Value>(body.trim()).unwrap_or(Value::Null);
            return Ok(Streamed::Refused(Reply { status: code, body }));
        }
        // Headers, then the event stream, chunked.
        let mut line = String::new();
        let mut chunked = false;
        loop {
            line.clear();
            if reader.read_line(&mut line).map_err(io)? == 0 || line == "\r\n" {
                break;
            }
            chunked |= line
                .to_ascii_lowercase()
                .starts_with("transfer-encoding: chunked");
        }
        let mut pending = Vec::new();
        loop {
            let piece = if chunked {
                line.clear();
                if reader.read_line(&mut line).map_err(io)? == 0 {
                    return Ok(Streamed::Ended);
                }
                let size = usize::from_str_radix(line.trim(), 16)
                    .map_err(|_| Failure::Message("the event stream is garbled".into()))?;
                if size == 0 {
                    return Ok(Streamed::Ended);
                }
                let mut chunk = vec![0; size + 2];
                reader.read_exact(&mut chunk).map_err(io)?;
                chunk.truncate(size);
                chunk
            } else {
                let mut chunk = Vec::new();
                if reader.read_until(b'\n', &mut chunk).map_err(io)? == 0 {
                    return Ok(Streamed::Ended);
                }
                chunk
            };
            pending.extend_from_slice(&piece);
            while let Some(end) = pending.iter().position(|b| *b == b'\n') {
                let text: Vec<u8> = pending.drain(..=end).collect();
                let text = String::from_utf8_lossy(&text);
                if let Some(data) = text.trim_end().strip_prefix("data:")
                    && let Ok(value) = serde_json::from_str::<Value>(data.trim())
                    && !each(&value)
                {
                    return Ok(Streamed::Stopped);
                }
            }
        }
    }
}

/// Undoes chunked transfer encoding.
fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 {
            break;
        }
        let Some(chunk) = after.get(..size) else {
            out.push_str(after);
            break;
        };
        out.push_str(chunk);
        rest = after.get(size..).unwrap_or("").trim_start_matches("\r\n");
    }
    out
}

/// The fewest characters of an id that name a request or a grant by its start.
pub(crate) const SHORT_ID: usize = 4;

/// The one of `ids` that starts with `short` (at least [`SHORT_ID`] characters, as a short
/// commit id names a commit): `None` when none does or `short` is shorter; an error naming some
/// when several do (`what`: "waiting requests'", "grants'").
pub(crate) fn one_starting_with<'a>(
    ids: impl IntoIterator<Item = &'a str>,
    short: &str,
    what: &str,
) -> Result<Option<String>, Failure> {
    if short.chars().count() < SHORT_ID {
        return Ok(None);
    }
    let named: Vec<&str> = ids.into_iter().filter(|id| id.starts_with(short)).collect();
    match named.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some((*one).to_owned())),
        several => Err(Failure::Message(format!(
            "`{}` starts {} {what} ids ({}); give more of it",
            toolgate_runtime::terminal_text(short),
            several.len(),
            several
                .iter()
                .take(5)
                .map(|s| toolgate_runtime::terminal_text(s))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// `text` as one path segment or query value: everything but letters, digits and `-._~`
/// percent-encoded (so a session named `a/b` or `x&y` stays one value).
pub(crate) fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::encode;

    #[test]
    fn segments_are_percent_encoded() {
        assert_eq!(encode("s-1_a.b~"), "s-1_a.b~");
        assert_eq!(encode("a/b&c d"), "a%2Fb%26c%20d");
        assert_eq!(encode("é"), "%C3%A9");
    }
}
