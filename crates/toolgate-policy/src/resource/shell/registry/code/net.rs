//! Network clients: the URLs they fetch as they read them (curl's globs, HTTPie's shorthand,
//! rsync's `host:path`) and the files they save them to.

use super::super::{Reading, UseKind};
use crate::resource::shell::placed_in;

/// What rules call sending a file's content to another machine (`curl -T`, `curl -d @FILE`,
/// `wget --post-file`, HTTPie's `field@FILE`): `command = ["curl upload"]` matches it.
pub(crate) const UPLOAD: &str = "upload";

/// Whether a URL's host is this machine (`localhost`, `127.0.0.1`, `[::1]`, `0.0.0.0`).
fn on_this_machine(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if host.starts_with('[') {
        host.split_once(']')
            .map_or(host, |(h, _)| h)
            .trim_start_matches('[')
    } else {
        host.split(':').next().unwrap_or(host)
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    host == "localhost"
        || host.ends_with(".localhost")
        || host.starts_with("127.")
        || host == "::1"
        || host == "0.0.0.0"
}

/// Marks the reading as an upload when a file's content goes to a URL off this machine.
fn upload_if_remote(r: &mut Reading<'_>, sends_a_file: bool) {
    let remote = r
        .uses
        .iter()
        .any(|u| u.kind == UseKind::Url && !on_this_machine(&u.text));
    if sends_a_file && remote && !r.acts.contains(&UPLOAD) {
        r.acts.push(UPLOAD);
    }
}

/// The most URLs one glob of curl's may stand for before toolgate stops expanding it.
const MAX_GLOB_URLS: usize = 64;

/// curl: `{a,b}` in a URL stands for each alternative (unless `-g`); a `file://` URL is a path
/// it reads; `-O` saves each URL under its last name, in `--output-dir` or here; `-w
/// '%output{FILE}'` writes FILE.
pub(crate) fn curl(r: &mut Reading<'_>) {
    let globbing = !r.has("--globoff");
    let mut uses = std::mem::take(&mut r.uses);
    let mut expanded = Vec::new();
    uses.retain(|u| {
        if u.kind != UseKind::Url {
            return true;
        }
        if let Some(path) = file_url_path(&u.text) {
            expanded.push((path.to_owned(), UseKind::Read, u.origin.clone()));
            return false;
        }
        if globbing && u.text.contains('{') {
            match expand_braces(&u.text, MAX_GLOB_URLS) {
                Some(urls) => {
                    expanded.extend(
                        urls.into_iter()
                            .map(|url| (url, UseKind::Url, u.origin.clone())),
                    );
                    return false;
                }
                None => return true,
            }
        }
        true
    });
    r.uses = uses;
    for (text, kind, origin) in expanded {
        r.push(text, kind, origin);
    }
    if r.has("--remote-name") || r.has("--remote-name-all") {
        let folder = r.values("--output-dir").last().map(|d| (*d).to_owned());
        for name in url_names(r) {
            if !name.is_empty() {
                r.push(
                    placed_in(folder.as_deref(), &name),
                    UseKind::Write,
                    "the file `-O` saves",
                );
            }
        }
    }
    let sends = r.has("--upload-file")
        || r.uses
            .iter()
            .any(|u| u.kind == UseKind::Read && u.origin.ends_with("(`@FILE`)"));
    upload_if_remote(r, sends);
    for format in r.values("--write-out") {
        if let Some(file) = format.strip_prefix('@') {
            if file != "-" {
                r.push(file, UseKind::Read, "`--write-out`'s `@FILE`");
            }
            continue;
        }
        let mut rest = format;
        while let Some(at) = rest.find("%output{") {
            let after = rest.get(at + 8..).unwrap_or_default();
            let Some(end) = after.find('}') else { break };
            let file = after.get(..end).unwrap_or_default();
            let file = file.strip_prefix(">>").unwrap_or(file);
            if !file.is_empty() {
                r.push(file, UseKind::Write, "`--write-out`'s `%output{}`");
            }
            rest = after.get(end..).unwrap_or_default();
        }
    }
}

/// wget: saves each URL under its last name (or `index.html`) in `-P`'s folder or here, unless
/// `-O` names the file; with `-r`, `-m`, `-x` or `-p` it makes a tree of folders there.
pub(crate) fn wget(r: &mut Reading<'_>) {
    let sends = r.has("--post-file") || r.has("--body-file");
    upload_if_remote(r, sends);
    if !r.values("--output-document").is_empty() {
        return;
    }
    let folder = r
        .values("--directory-prefix")
        .last()
        .map_or_else(|| ".".to_owned(), |d| (*d).to_owned());
    if r.recursive {
        r.push(folder, UseKind::Write, "the folder it mirrors into");
        return;
    }
    for name in url_names(r) {
        let name = if name.is_empty() { "index.html" } else { &name };
        r.push(
            format!("{}/{name}", folder.trim_end_matches('/')),
            UseKind::Write,
            "the file it saves",
        );
    }
}

/// The last name of each URL the command fetches, under which a download saves it (empty where
/// the URL has none).
fn url_names(r: &Reading<'_>) -> Vec<String> {
    r.uses
        .iter()
        .filter(|u| u.kind == UseKind::Url)
        .map(|u| url_file_name(&u.text).to_owned())
        .collect()
}

/// HTTPie and xh: `[METHOD] URL [ITEM…]`. The URL takes `http://` (or `https://` for `https`
/// and `xhs`) when it has no scheme, and `:PORT/PATH` is localhost; an item with `@` sends a
/// file (`field@FILE`, `field=@FILE`, `field:=@FILE`, `@FILE` for the body).
pub(crate) fn httpie(r: &mut Reading<'_>) {
    const METHODS: &[&str] = &[
        "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "get", "post", "put", "patch",
        "delete", "head", "options",
    ];
    let secure = matches!(r.name, "https" | "xhs");
    let mut operands = r.operand_texts().into_iter().peekable();
    if operands.peek().is_some_and(|m| METHODS.contains(m)) {
        operands.next();
    }
    if let Some(url) = operands.next() {
        let full = if url.contains("://") {
            url.to_owned()
        } else if let Some(rest) = url.strip_prefix(':') {
            let rest = if rest.starts_with('/') || rest.is_empty() {
                rest.to_owned()
            } else {
                format!(":{rest}")
            };
            format!("http://localhost{rest}")
        } else if secure {
            format!("https://{url}")
        } else {
            format!("http://{url}")
        };
        r.push(full, UseKind::Url, "its URL");
    }
    let mut sends = false;
    for (i, item) in operands.enumerate() {
        let file = item
            .strip_prefix('@')
            .or_else(|| item.split_once(":=@").map(|(_, f)| f))
            .or_else(|| item.split_once("=@").map(|(_, f)| f))
            .or_else(|| {
                item.split_once('@')
                    .filter(|(name, _)| !name.contains(['=', ':', '/']))
                    .map(|(_, f)| f)
            });
        if let Some(file) = file.filter(|f| !f.is_empty()) {
            r.push(file, UseKind::Read, format!("item {}", i + 1));
            sends = true;
        }
    }
    upload_if_remote(r, sends);
    if r.has("--download")
        && let Some(url) = r
            .uses
            .iter()
            .find(|u| u.kind == UseKind::Url)
            .map(|u| u.text.clone())
    {
        let name = url_file_name(&url);
        let name = if name.is_empty() { "index.html" } else { name }.to_owned();
        r.push(name, UseKind::Write, "the file `--download` saves");
    }
    r.net = !r.has("--offline") && r.uses.iter().any(|u| u.kind == UseKind::Url);
}

/// rsync: an operand `HOST:PATH`, `USER@HOST:PATH` or `rsync://…` is on another machine.
pub(crate) fn rsync(r: &mut Reading<'_>) {
    for u in &mut r.uses {
        if !u.origin.starts_with("operand") {
            continue;
        }
        let remote = if u.text.starts_with("rsync://") {
            Some(u.text.clone())
        } else {
            u.text
                .split_once(':')
                .filter(|(host, _)| !host.is_empty() && !host.contains('/'))
                .map(|(host, path)| format!("ssh://{host}/{}", path.trim_start_matches('/')))
        };
        if let Some(url) = remote {
            u.text = url;
            u.kind = UseKind::Url;
        }
    }
    r.net = r.uses.iter().any(|u| u.kind == UseKind::Url);
}

/// The path of a `file://` URL (`file:///etc/passwd`, `file://localhost/etc/passwd`).
pub(crate) fn file_url_path(arg: &str) -> Option<&str> {
    let rest = arg
        .get(..7)
        .filter(|p| p.eq_ignore_ascii_case("file://"))
        .and_then(|_| arg.get(7..))?;
    if rest.starts_with('/') {
        Some(rest)
    } else {
        rest.find('/').and_then(|i| rest.get(i..))
    }
}

/// The last name of a URL's path, as `curl -O` and `wget` save it (empty when it ends in `/`).
fn url_file_name(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let path = rest.split(['?', '#']).next().unwrap_or(rest);
    match path.split_once('/') {
        Some((_, path)) => path.rsplit('/').next().unwrap_or(""),
        None => "",
    }
}

/// Every text `{a,b}` sets stand for, as curl expands them (no nesting), or `None` past `max`
/// or for a set that does not close.
pub(crate) fn expand_braces(text: &str, max: usize) -> Option<Vec<String>> {
    let mut out = vec![String::new()];
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let before = rest.get(..open).unwrap_or_default();
        let after = rest.get(open + 1..).unwrap_or_default();
        let close = after.find('}')?;
        let inner = after.get(..close).unwrap_or_default();
        let choices: Vec<&str> = inner.split(',').collect();
        if out.len().saturating_mul(choices.len()) > max {
            return None;
        }
        out = out
            .iter()
            .flat_map(|prefix| {
                choices
                    .iter()
                    .map(move |choice| format!("{prefix}{before}{choice}"))
            })
            .collect();
        rest = after.get(close + 1..).unwrap_or_default();
    }
    for item in &mut out {
        item.push_str(rest);
    }
    Some(out)
}
