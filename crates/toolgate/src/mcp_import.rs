//! `toolgate mcp import CLIENT`: the MCP servers a client's settings file starts, rewritten to
//! start through `toolgate mcp` — and `--undo`, the way back.
//!
//! Each server entry that starts a program (`command` and `args`) becomes `command` = this
//! toolgate's absolute path, `args` = `mcp --name NAME [FLAGS…] -- COMMAND ARGS…`; its `env`,
//! `cwd` and every other key stay as they are (the client hands them to toolgate, which hands
//! them to the server it starts). Entries already wrapped are left alone; entries that name a
//! remote server (`url`) are skipped and said so. `--undo` unwraps the entries `import` wrapped
//! (whatever flags they carry).
//!
//! JSON settings are edited as text through `jsonc-parser`'s syntax tree, as `toolgate install`
//! edits hooks: only the `command` and `args` values change, the rest of the file comes back
//! byte for byte, comments included. Codex's `config.toml` is edited with `toml_edit`, which
//! keeps its formatting and comments. The file is copied to `FILE.toolgate.bak` first;
//! `--dry-run` prints the change as a diff instead.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use jsonc_parser::ast::Value as Node;
use jsonc_parser::common::Ranged;
use serde_json::Value;

use crate::install::{change, parse, read, splice};
use crate::{EXIT_OK, Failure};

/// Rewrites a client's MCP servers to start through `toolgate mcp` (or back, with --undo).
#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
    /// Whose settings file.
    #[arg(value_enum)]
    client: Client,
    /// The user's settings file (default: the project's, in --dir or the current folder).
    #[arg(long)]
    user: bool,
    /// The project's folder.
    #[arg(long, value_name = "DIR", conflicts_with = "user")]
    dir: Option<PathBuf>,
    /// Print the change as a diff; change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Unwrap the entries `import` wrapped: each starts its server directly again.
    #[arg(long)]
    undo: bool,
    /// Flags for each wrapped server's `toolgate mcp`, after `--` (`-- --daemon`).
    #[arg(last = true, value_name = "GATEWAY_FLAGS")]
    flags: Vec<String>,
}

/// The MCP clients whose settings toolgate rewrites.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Client {
    /// Claude Desktop: `claude_desktop_config.json` (user only).
    ClaudeDesktop,
    /// Claude Code: `.mcp.json` (project), `~/.claude.json` (user).
    Claude,
    /// Codex: `.codex/config.toml` (project), `~/.codex/config.toml` (user), `[mcp_servers]`.
    Codex,
    /// Gemini CLI: `.gemini/settings.json`, `~/.gemini/settings.json`.
    Gemini,
    /// Cursor: `.cursor/mcp.json`, `~/.cursor/mcp.json`.
    Cursor,
    /// VS Code: `.vscode/mcp.json` (its `servers`), the user's `mcp.json`.
    Vscode,
}

impl Client {
    /// The key of the servers' object in the settings file.
    fn key(self) -> &'static str {
        match self {
            Client::Vscode => "servers",
            Client::Codex => "mcp_servers",
            _ => "mcpServers",
        }
    }

    /// The settings file: the user's, or the project's in `dir`.
    fn path(self, user: bool, dir: &Path) -> Result<PathBuf, Failure> {
        let home = || {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from)
                .ok_or_else(|| Failure::Message("error: $HOME is not set".into()))
        };
        // Where desktop applications keep their settings.
        let config = || -> Result<PathBuf, Failure> {
            if cfg!(target_os = "macos") {
                return Ok(home()?.join("Library/Application Support"));
            }
            match std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
                Some(dir) => Ok(PathBuf::from(dir)),
                None => Ok(home()?.join(".config")),
            }
        };
        Ok(match (self, user) {
            (Client::ClaudeDesktop, true) => config()?.join("Claude/claude_desktop_config.json"),
            (Client::ClaudeDesktop, false) => {
                return Err(Failure::Message(
                    "error: Claude Desktop has no project settings: pass --user".into(),
                ));
            }
            (Client::Claude, true) => home()?.join(".claude.json"),
            (Client::Claude, false) => dir.join(".mcp.json"),
            (Client::Codex, true) => match std::env::var_os("CODEX_HOME").filter(|d| !d.is_empty())
            {
                Some(codex) => PathBuf::from(codex).join("config.toml"),
                None => home()?.join(".codex/config.toml"),
            },
            (Client::Codex, false) => dir.join(".codex/config.toml"),
            (Client::Gemini, true) => home()?.join(".gemini/settings.json"),
            (Client::Gemini, false) => dir.join(".gemini/settings.json"),
            (Client::Cursor, true) => home()?.join(".cursor/mcp.json"),
            (Client::Cursor, false) => dir.join(".cursor/mcp.json"),
            (Client::Vscode, true) => config()?.join("Code/User/mcp.json"),
            (Client::Vscode, false) => dir.join(".vscode/mcp.json"),
        })
    }
}

/// What became of one server entry.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    /// Rewritten.
    Changed,
    /// Nothing to do (wrapped already, or for `--undo` not wrapped).
    Unchanged(&'static str),
    /// Left alone, for this reason.
    Skipped(String),
}

/// A server entry as its settings name its program.
struct Entry {
    command: String,
    args: Vec<String>,
}

/// The program and arguments an entry starts with `import`, or, for one `import` wrapped, the
/// ones it wrapped (`--undo`).
fn rewritten(name: &str, entry: &Entry, exe: &str, flags: &[String], undo: bool) -> Rewrite {
    let wrapped = wrapped(entry);
    match (undo, wrapped) {
        (false, Some(_)) => Rewrite::Same("runs through toolgate already"),
        (false, None) => {
            let mut args = vec!["mcp".to_owned(), "--name".to_owned(), name.to_owned()];
            args.extend(flags.iter().cloned());
            args.push("--".to_owned());
            args.push(entry.command.clone());
            args.extend(entry.args.iter().cloned());
            Rewrite::New(Entry {
                command: exe.to_owned(),
                args,
            })
        }
        (true, Some(inner)) => Rewrite::New(inner),
        (true, None) => Rewrite::Same("does not run through toolgate"),
    }
}

/// What an entry becomes.
enum Rewrite {
    New(Entry),
    Same(&'static str),
}

/// The entry `toolgate mcp … -- COMMAND ARGS…` wraps, when the entry is one.
fn wrapped(entry: &Entry) -> Option<Entry> {
    let program = Path::new(&entry.command).file_name()?.to_str()?;
    if program != "toolgate" || entry.args.first().map(String::as_str) != Some("mcp") {
        return None;
    }
    let separator = entry.args.iter().position(|a| a == "--")?;
    let (command, args) = entry.args.get(separator + 1..)?.split_first()?;
    Some(Entry {
        command: command.clone(),
        args: args.to_vec(),
    })
}

/// Why an entry is not one toolgate can wrap, if it is not.
fn unwrappable(url: bool, kind: Option<&str>) -> Option<String> {
    if url || kind.is_some_and(|k| k != "stdio") {
        return Some(
            "a remote server (`url`): `toolgate mcp` wraps the servers a client starts".into(),
        );
    }
    None
}

/// The settings text with each server entry rewritten, and what became of each.
fn json_imported(
    path: &Path,
    text: &str,
    key: &str,
    exe: &str,
    flags: &[String],
    undo: bool,
) -> Result<(String, Vec<(String, Outcome)>), Failure> {
    let Some(root) = parse(path, text)? else {
        return Ok((text.to_owned(), Vec::new()));
    };
    let not_an_object = |what: &str| {
        Failure::Message(format!(
            "error: {}: `{what}` is not an object, so the client could not read it either; \
             toolgate changes nothing",
            path.display()
        ))
    };
    // The servers' objects: the file's, and (Claude Code's `~/.claude.json`) each project's,
    // where `claude mcp add` puts a server by default.
    let mut groups = Vec::new();
    if let Some(servers) = root.get(key) {
        let servers = servers
            .value
            .as_object()
            .ok_or_else(|| not_an_object(key))?;
        groups.push((String::new(), servers));
    }
    if let Some(projects) = root.get("projects").and_then(|p| p.value.as_object()) {
        for project in &projects.properties {
            if let Some(servers) = project.value.as_object().and_then(|p| p.get(key)) {
                let what = format!("projects.{}.{key}", project.name.as_str());
                let servers = servers
                    .value
                    .as_object()
                    .ok_or_else(|| not_an_object(&what))?;
                groups.push((format!("{} ", project.name.as_str()), servers));
            }
        }
    }
    let mut edits = Vec::new();
    let mut outcomes = Vec::new();
    for (prop, project) in groups
        .iter()
        .flat_map(|(project, servers)| servers.properties.iter().map(move |p| (p, project)))
    {
        let name = prop.name.as_str().to_owned();
        let name_said = format!("{project}{name}");
        let Some(object) = prop.value.as_object() else {
            outcomes.push((name_said.clone(), Outcome::Skipped("not an object".into())));
            continue;
        };
        let kind = object.get_string("type").map(|t| t.value.as_ref());
        if let Some(why) = unwrappable(object.get("url").is_some(), kind) {
            outcomes.push((name_said.clone(), Outcome::Skipped(why)));
            continue;
        }
        let Some(command) = object.get("command") else {
            outcomes.push((
                name_said.clone(),
                Outcome::Skipped("it names no `command`".into()),
            ));
            continue;
        };
        let Node::StringLit(command_text) = &command.value else {
            outcomes.push((
                name_said.clone(),
                Outcome::Skipped("its `command` is not a string".into()),
            ));
            continue;
        };
        let args_prop = object.get("args");
        let args: Option<Vec<String>> = match args_prop.map(|p| &p.value) {
            None => Some(Vec::new()),
            Some(Node::Array(array)) => array
                .elements
                .iter()
                .map(|e| match e {
                    Node::StringLit(s) => Some(s.value.to_string()),
                    _ => None,
                })
                .collect(),
            Some(_) => None,
        };
        let Some(args) = args else {
            outcomes.push((
                name_said.clone(),
                Outcome::Skipped("its `args` are not a list of strings".into()),
            ));
            continue;
        };
        let entry = Entry {
            command: command_text.value.to_string(),
            args,
        };
        match rewritten(&name, &entry, exe, flags, undo) {
            Rewrite::Same(why) => outcomes.push((name_said.clone(), Outcome::Unchanged(why))),
            Rewrite::New(new) => {
                let quoted = |s: &str| Value::String(s.to_owned()).to_string();
                let array =
                    Value::Array(new.args.iter().map(|a| Value::String(a.clone())).collect())
                        .to_string()
                        .replace("\",\"", "\", \"");
                edits.push((command_text.range(), quoted(&new.command)));
                match args_prop {
                    Some(prop) => edits.push((prop.value.range(), array)),
                    None => {
                        let end = command.range.end;
                        edits.push((
                            jsonc_parser::common::Range { start: end, end },
                            format!(", \"args\": {array}"),
                        ));
                    }
                }
                outcomes.push((name_said.clone(), Outcome::Changed));
            }
        }
    }
    Ok((splice(text, edits), outcomes))
}

/// Codex's `config.toml` with each `[mcp_servers.NAME]` rewritten, and what became of each.
fn toml_imported(
    path: &Path,
    text: &str,
    exe: &str,
    flags: &[String],
    undo: bool,
) -> Result<(String, Vec<(String, Outcome)>), Failure> {
    let mut document: toml_edit::DocumentMut = text.parse().map_err(|e| {
        Failure::Message(format!(
            "error: {}: {e} (toolgate changes nothing in a file it cannot read; fix it or move \
             it aside)",
            path.display()
        ))
    })?;
    let mut outcomes = Vec::new();
    let Some(servers) = document
        .get_mut("mcp_servers")
        .and_then(toml_edit::Item::as_table_like_mut)
    else {
        return Ok((text.to_owned(), outcomes));
    };
    for (name, item) in servers.iter_mut() {
        let name = name.get().to_owned();
        let Some(table) = item.as_table_like_mut() else {
            outcomes.push((name, Outcome::Skipped("not a table".into())));
            continue;
        };
        if let Some(why) = unwrappable(table.get("url").is_some(), None) {
            outcomes.push((name, Outcome::Skipped(why)));
            continue;
        }
        let Some(command) = table.get("command").and_then(toml_edit::Item::as_str) else {
            outcomes.push((name, Outcome::Skipped("it names no `command`".into())));
            continue;
        };
        let args: Option<Vec<String>> = match table.get("args") {
            None => Some(Vec::new()),
            Some(item) => item.as_array().and_then(|array| {
                array
                    .iter()
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect()
            }),
        };
        let Some(args) = args else {
            outcomes.push((
                name,
                Outcome::Skipped("its `args` are not a list of strings".into()),
            ));
            continue;
        };
        let entry = Entry {
            command: command.to_owned(),
            args,
        };
        match rewritten(&name, &entry, exe, flags, undo) {
            Rewrite::Same(why) => outcomes.push((name, Outcome::Unchanged(why))),
            Rewrite::New(new) => {
                if let Some(value) = table
                    .get_mut("command")
                    .and_then(toml_edit::Item::as_value_mut)
                {
                    let decor = value.decor().clone();
                    *value = toml_edit::Value::from(new.command.as_str());
                    *value.decor_mut() = decor;
                }
                let array: toml_edit::Array = new.args.iter().map(String::as_str).collect();
                match table
                    .get_mut("args")
                    .and_then(toml_edit::Item::as_value_mut)
                {
                    Some(value) => {
                        let decor = value.decor().clone();
                        *value = toml_edit::Value::Array(array);
                        *value.decor_mut() = decor;
                    }
                    None => {
                        table.insert("args", toml_edit::value(array));
                    }
                }
                outcomes.push((name, Outcome::Changed));
            }
        }
    }
    Ok((document.to_string(), outcomes))
}

pub(crate) fn run(args: &ImportArgs) -> Result<u8, Failure> {
    let dir = match &args.dir {
        Some(dir) => dir.clone(),
        None => crate::args::current_folder()?,
    };
    let path = args.client.path(args.user, &dir)?;
    let mut out = std::io::stdout().lock();
    let Some(before) = read(&path)? else {
        writeln!(
            out,
            "{} does not exist: no servers to import",
            path.display()
        )?;
        return Ok(EXIT_OK);
    };
    let exe = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map_err(|e| Failure::Message(format!("error: cannot find toolgate's own binary: {e}")))?;
    let exe = exe.to_string_lossy();
    // Gateways that ask the daemon do so with an agent's token of their own.
    let flags = if args.dry_run || args.undo {
        args.flags.clone()
    } else {
        let client = args
            .client
            .to_possible_value()
            .map_or_else(|| "client".to_owned(), |v| v.get_name().to_owned());
        crate::install::with_agent_token(&format!("{client}-mcp"), &args.flags)
    };
    let (after, outcomes) = if args.client == Client::Codex {
        toml_imported(&path, &before, &exe, &flags, args.undo)?
    } else {
        json_imported(&path, &before, args.client.key(), &exe, &flags, args.undo)?
    };
    if outcomes.is_empty() {
        writeln!(out, "{} configures no MCP servers", path.display())?;
        return Ok(EXIT_OK);
    }
    let verb = if args.undo {
        "starts its server directly again"
    } else {
        "now runs through toolgate"
    };
    for (name, outcome) in &outcomes {
        let said = match outcome {
            Outcome::Changed => verb.to_owned(),
            Outcome::Unchanged(why) => format!("unchanged: it {why}"),
            Outcome::Skipped(why) => format!("skipped: {why}"),
        };
        writeln!(
            out,
            "{}: {said}",
            crate::client::folded(&name.as_str().into(), 80)
        )?;
    }
    if after == before {
        writeln!(out, "{}: nothing changed", path.display())?;
        return Ok(EXIT_OK);
    }
    if change(&mut out, &path, Some(&before), Some(&after), args.dry_run)? {
        writeln!(
            out,
            "{} changed (the old file is {}.toolgate.bak); restart the client to use it",
            path.display(),
            path.file_name().unwrap_or_default().to_string_lossy()
        )?;
        if args.undo && !args.dry_run {
            // The agent tokens `import` made for the gateways that went, revoked.
            let kept = agent_tokens(&after);
            for (file, flags) in agent_tokens(&before) {
                if !kept.iter().any(|(k, _)| *k == file) {
                    crate::install::revoke_agent_token(&file, &flags);
                }
            }
        }
    }
    Ok(EXIT_OK)
}

/// The agent tokens (`--token-file DIR/agent-tokens/NAME`) the gateways of a client's settings
/// use, each with the flags of its entry that say where the daemon is (`--url`, `--data-dir`).
/// Read from the settings' string literals in order (JSON and TOML write arguments alike).
fn agent_tokens(text: &str) -> Vec<(PathBuf, Vec<String>)> {
    let words = string_literals(text);
    let mut out: Vec<(PathBuf, Vec<String>)> = Vec::new();
    for (i, word) in words.iter().enumerate() {
        if word != "--token-file" {
            continue;
        }
        let Some(file) = words.get(i + 1).map(PathBuf::from) else {
            continue;
        };
        let made = file
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|dir| dir == "agent-tokens");
        if !made || out.iter().any(|(f, _)| *f == file) {
            continue;
        }
        // The entry's own flags: from its `mcp` to its `--`.
        let start = words
            .get(..i)
            .and_then(|before| before.iter().rposition(|w| w == "mcp"))
            .unwrap_or(i);
        let end = words
            .iter()
            .skip(i)
            .position(|w| w == "--")
            .map_or(words.len(), |n| i + n);
        let flags = words.get(start..end).unwrap_or_default().to_vec();
        out.push((file, flags));
    }
    out
}

/// The double-quoted string literals of a JSON or TOML text, unescaped (`\"`, `\\`), in order.
fn string_literals(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '"' {
            continue;
        }
        let mut literal = String::new();
        while let Some(c) = chars.next() {
            match c {
                '"' => break,
                '\\' => {
                    if let Some(escaped) = chars.next() {
                        literal.push(match escaped {
                            'n' => '\n',
                            't' => '\t',
                            other => other,
                        });
                    }
                }
                other => literal.push(other),
            }
        }
        out.push(literal);
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_agent_tokens_a_clients_gateways_use_are_found_with_their_daemon() {
        let json = r#"{"mcpServers": {"fs": {"command": "/bin/toolgate", "args": ["mcp",
            "--name", "fs", "--daemon", "--url", "http://127.0.0.1:9", "--token-file",
            "/d/agent-tokens/claude-mcp", "--", "npx", "--token-file", "x"]},
            "own": {"command": "/bin/toolgate", "args": ["mcp", "--token-file", "/t/mine", "--", "s"]}}}"#;
        assert_eq!(
            agent_tokens(json),
            vec![(
                PathBuf::from("/d/agent-tokens/claude-mcp"),
                [
                    "mcp",
                    "--name",
                    "fs",
                    "--daemon",
                    "--url",
                    "http://127.0.0.1:9",
                    "--token-file",
                    "/d/agent-tokens/claude-mcp"
                ]
                .map(String::from)
                .to_vec()
            )]
        );
        let toml = "[mcp_servers.fs]\nargs = [\"mcp\", \"--token-file\", \"/d/agent-tokens/codex-mcp\", \"--\", \"s\"]\n";
        assert_eq!(
            agent_tokens(toml)[0].0,
            PathBuf::from("/d/agent-tokens/codex-mcp")
        );
        assert_eq!(string_literals(r#"["a\"b", "c\\d"]"#), ["a\"b", "c\\d"]);
    }

    const EXE: &str = "/opt/tg/bin/toolgate";

    fn import_json(
        text: &str,
        key: &str,
        flags: &[&str],
        undo: bool,
    ) -> (String, Vec<(String, Outcome)>) {
        let flags: Vec<String> = flags.iter().map(|f| (*f).to_owned()).collect();
        json_imported(Path::new("s.json"), text, key, EXE, &flags, undo).unwrap()
    }

    const DESKTOP: &str = r#"{
  // the user's own comment
  "mcpServers": {
    "fs": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/app"],
      "env": {"DEBUG": "1"}
    },
    "time": { "command": "uvx", "cwd": "/tmp" },
    "remote": { "url": "https://mcp.example.com/mcp" }
  },
  "globalShortcut": "Ctrl+Space"
}
"#;

    #[test]
    fn a_json_clients_servers_are_wrapped_and_unwrapped_byte_for_byte() {
        let (wrapped, outcomes) = import_json(DESKTOP, "mcpServers", &["--daemon"], false);
        assert_eq!(
            outcomes,
            [
                ("fs".to_owned(), Outcome::Changed),
                ("time".to_owned(), Outcome::Changed),
                (
                    "remote".to_owned(),
                    Outcome::Skipped(
                        "a remote server (`url`): `toolgate mcp` wraps the servers a client starts"
                            .into()
                    )
                ),
            ]
        );
        let value: Value =
            serde_json::from_str(&wrapped.replace("// the user's own comment", "")).unwrap();
        assert_eq!(value["mcpServers"]["fs"]["command"], EXE);
        assert_eq!(
            value["mcpServers"]["fs"]["args"],
            serde_json::json!([
                "mcp",
                "--name",
                "fs",
                "--daemon",
                "--",
                "npx",
                "-y",
                "@modelcontextprotocol/server-filesystem",
                "/home/me/app"
            ])
        );
        assert_eq!(value["mcpServers"]["fs"]["env"]["DEBUG"], "1");
        assert_eq!(
            value["mcpServers"]["time"]["args"],
            serde_json::json!(["mcp", "--name", "time", "--daemon", "--", "uvx"])
        );
        assert!(wrapped.contains("// the user's own comment"));
        assert!(wrapped.contains("\"globalShortcut\": \"Ctrl+Space\""));
        // Again: nothing to do.
        let (again, outcomes) = import_json(&wrapped, "mcpServers", &[], false);
        assert_eq!(again, wrapped);
        assert_eq!(
            outcomes[0].1,
            Outcome::Unchanged("runs through toolgate already")
        );
        // Undone: the entries that had args come back as they were.
        let (undone, _) = import_json(&wrapped, "mcpServers", &[], true);
        assert_eq!(
            undone,
            DESKTOP.replace(
                r#""time": { "command": "uvx", "cwd": "/tmp" }"#,
                r#""time": { "command": "uvx", "args": [], "cwd": "/tmp" }"#
            )
        );
    }

    #[test]
    fn claude_codes_project_servers_in_its_user_file_are_wrapped_too() {
        let text = r#"{"mcpServers": {"a": {"command": "x"}},
  "projects": {"/home/me/app": {"allowedTools": [], "mcpServers": {"fs": {"type": "stdio", "command": "npx", "args": ["fs"]}}},
               "/home/me/other": {"history": []}}}"#;
        let (wrapped, outcomes) = import_json(text, "mcpServers", &[], false);
        assert_eq!(outcomes.len(), 2, "{outcomes:?}");
        assert_eq!(
            outcomes[1],
            ("/home/me/app fs".to_owned(), Outcome::Changed)
        );
        let value: Value = serde_json::from_str(&wrapped).unwrap();
        assert_eq!(
            value["projects"]["/home/me/app"]["mcpServers"]["fs"]["args"],
            serde_json::json!(["mcp", "--name", "fs", "--", "npx", "fs"])
        );
        let (undone, _) = import_json(&wrapped, "mcpServers", &[], true);
        assert_eq!(
            undone,
            text.replace(r#"{"command": "x"}"#, r#"{"command": "x", "args": []}"#)
        );
    }

    #[test]
    fn vs_codes_servers_and_a_broken_file() {
        let vscode = r#"{"servers": {"git": {"type": "stdio", "command": "uvx", "args": ["mcp-server-git"]},
                          "web": {"type": "http", "url": "http://localhost:3000/mcp"}}}"#;
        let (wrapped, outcomes) = import_json(vscode, "servers", &[], false);
        assert_eq!(outcomes[0].1, Outcome::Changed);
        assert!(matches!(outcomes[1].1, Outcome::Skipped(_)));
        assert!(
            wrapped.contains(r#""args": ["mcp", "--name", "git", "--", "uvx", "mcp-server-git"]"#),
            "{wrapped}"
        );
        let broken = json_imported(
            Path::new("s.json"),
            "{\"servers\": [",
            "servers",
            EXE,
            &[],
            false,
        );
        assert!(broken.is_err());
        let odd = json_imported(
            Path::new("s.json"),
            "{\"servers\": []}",
            "servers",
            EXE,
            &[],
            false,
        );
        assert!(odd.is_err());
    }

    #[test]
    fn codexs_toml_keeps_its_comments() {
        let toml = "# my codex\nmodel = \"o4\"\n\n[mcp_servers.fs]\ncommand = \"npx\" # the runner\nargs = [\"-y\", \"server-filesystem\", \"/w\"]\nenv = { A = \"1\" }\n\n[mcp_servers.web]\nurl = \"https://x/mcp\"\n";
        let (wrapped, outcomes) =
            toml_imported(Path::new("c.toml"), toml, EXE, &[], false).unwrap();
        assert_eq!(outcomes[0], ("fs".to_owned(), Outcome::Changed));
        assert!(matches!(outcomes[1].1, Outcome::Skipped(_)));
        assert!(
            wrapped.starts_with("# my codex\nmodel = \"o4\"\n"),
            "{wrapped}"
        );
        assert!(
            wrapped.contains("command = \"/opt/tg/bin/toolgate\" # the runner"),
            "{wrapped}"
        );
        let parsed: toml_edit::DocumentMut = wrapped.parse().unwrap();
        let fs = &parsed["mcp_servers"]["fs"];
        assert_eq!(
            fs["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect::<Vec<_>>(),
            [
                "mcp",
                "--name",
                "fs",
                "--",
                "npx",
                "-y",
                "server-filesystem",
                "/w"
            ]
        );
        let (undone, _) = toml_imported(Path::new("c.toml"), &wrapped, EXE, &[], true).unwrap();
        assert_eq!(undone, toml);
    }
}
