//! `toolgate install AGENT`, `toolgate uninstall AGENT` and `toolgate doctor`: the hook entry in
//! an agent's settings file, written, removed and checked.
//!
//! The settings files are people's own: they hold other hooks, other settings, their own
//! formatting and (Gemini CLI's) comments. So the file is edited as text through a concrete
//! syntax tree (`jsonc-parser`'s CST), never parsed and re-serialised: installing appends
//! toolgate's entry to the event's list (creating the list, the `hooks` object or the file
//! where they are missing), and uninstalling removes exactly the entries whose command is
//! `toolgate hook AGENT`, then the list and the `hooks` object it leaves empty, then the file if
//! nothing is left in it. What lies outside toolgate's entry comes back byte for byte. A file
//! that is about to change is copied to `FILE.toolgate.bak` first.

use std::io::Write;
use std::net::ToSocketAddrs;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Args;
use jsonc_parser::ast::{Array, Object, ObjectProp, Value as Node};
use jsonc_parser::common::{Range, Ranged};
use jsonc_parser::{CollectOptions, ParseOptions};
use serde_json::{Value, json};
use toolgate_policy::PolicyRole;

use crate::args::PolicyArgs;
use crate::hook::Agent;
use crate::{EXIT_FOUND, EXIT_OK, Failure};

/// Writes toolgate's hook entry into an agent's settings file.
#[derive(Debug, Args)]
pub(crate) struct InstallArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// Print what would change (a diff) and change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Flags for the hook command, after `--` (e.g. `-- --daemon --defer-default`).
    #[arg(last = true, value_name = "HOOK_FLAGS")]
    hook_flags: Vec<String>,
}

/// Removes toolgate's hook entry from an agent's settings file, and nothing else.
#[derive(Debug, Args)]
pub(crate) struct UninstallArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// Print what would change (a diff) and change nothing.
    #[arg(long)]
    dry_run: bool,
}

#[derive(Debug, Args)]
struct TargetArgs {
    /// The agent whose settings to change.
    #[arg(value_enum)]
    agent: Agent,
    /// The project's settings file (the default), in --dir.
    #[arg(long, conflicts_with = "user")]
    project: bool,
    /// The user's settings file (every project).
    #[arg(long)]
    user: bool,
    /// The project folder (default: the current folder).
    #[arg(long, value_name = "DIR", conflicts_with = "user")]
    dir: Option<PathBuf>,
}

/// Says, for each agent on this machine, whether toolgate's hook is installed, and which
/// policy files apply in the current folder.
#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    #[command(flatten)]
    policy: PolicyArgs,
    /// The project folder (default: the current folder).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// Where an agent keeps its hooks, and the entry toolgate puts there.
struct Settings {
    agent: Agent,
    path: PathBuf,
}

impl Settings {
    fn project(agent: Agent, dir: &Path) -> Settings {
        let path = match agent {
            // The local file: the entry holds this machine's path to toolgate, which is not
            // for the repository's shared `.claude/settings.json`.
            Agent::Claude => dir.join(".claude/settings.local.json"),
            Agent::Codex => dir.join(".codex/hooks.json"),
            Agent::Gemini => dir.join(".gemini/settings.json"),
            Agent::Cursor => dir.join(".cursor/hooks.json"),
            Agent::Copilot => dir.join(".github/hooks/toolgate.json"),
        };
        Settings { agent, path }
    }

    fn user(agent: Agent) -> Result<Settings, Failure> {
        // The agent's own variable for its folder, where it has one, else the folder in $HOME.
        let home = |variable: Option<&str>, folder: &str| -> Result<PathBuf, Failure> {
            if let Some(dir) = variable
                .and_then(std::env::var_os)
                .filter(|d| !d.is_empty())
            {
                return Ok(PathBuf::from(dir));
            }
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(folder))
                .ok_or_else(|| {
                    Failure::Message(
                        "error: $HOME is not set: cannot find the user's settings".into(),
                    )
                })
        };
        let path = match agent {
            Agent::Claude => home(Some("CLAUDE_CONFIG_DIR"), ".claude")?.join("settings.json"),
            Agent::Codex => home(Some("CODEX_HOME"), ".codex")?.join("hooks.json"),
            Agent::Gemini => home(None, ".gemini")?.join("settings.json"),
            Agent::Cursor => home(None, ".cursor")?.join("hooks.json"),
            Agent::Copilot => home(Some("COPILOT_HOME"), ".copilot")?.join("hooks/toolgate.json"),
        };
        Ok(Settings { agent, path })
    }

    /// The events toolgate's entry goes under, each with the entry (docs/agents.md shows the
    /// same, and a test holds them together). A hook that asks the daemon also tells it of
    /// results (`PostToolUse`), which may taint the session.
    fn entries(&self, command: &str) -> Vec<(&'static str, Value)> {
        let reports = command.split_whitespace().any(|word| word == "--daemon");
        match self.agent {
            Agent::Claude => std::iter::once("PreToolUse")
                .chain(reports.then_some("PostToolUse"))
                .map(|event| {
                    (
                        event,
                        json!({"matcher": "*", "hooks": [{"type": "command", "command": command}]}),
                    )
                })
                .collect(),
            Agent::Codex => ["PreToolUse", "PermissionRequest"]
                .into_iter()
                .chain(reports.then_some("PostToolUse"))
                .map(|event| {
                    (
                        event,
                        json!({"hooks": [{"type": "command", "command": command}]}),
                    )
                })
                .collect(),
            Agent::Gemini => std::iter::once("BeforeTool")
                .chain(reports.then_some("AfterTool"))
                .map(|event| {
                    (
                        event,
                        json!({"matcher": "*", "hooks": [{"type": "command", "name": "toolgate",
                            "command": command, "timeout": 60000}]}),
                    )
                })
                .collect(),
            Agent::Cursor => [
                "beforeShellExecution",
                "beforeMCPExecution",
                "beforeReadFile",
                "preToolUse",
            ]
            .into_iter()
            .chain(reports.then_some("postToolUse"))
            .map(|event| (event, json!({"command": command, "failClosed": true})))
            .collect(),
            Agent::Copilot => std::iter::once("preToolUse")
                .chain(reports.then_some("postToolUse"))
                .map(|event| {
                    (
                        event,
                        json!({"type": "command", "bash": command, "timeoutSec": 30}),
                    )
                })
                .collect(),
        }
    }

    /// The keys a new file starts with, besides `hooks`.
    fn preamble(&self) -> Option<(&'static str, Value)> {
        match self.agent {
            Agent::Cursor | Agent::Copilot => Some(("version", json!(1))),
            _ => None,
        }
    }
}

/// The file's text, or `None` when there is no file.
pub(crate) fn read(path: &Path) -> Result<Option<String>, Failure> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Failure::Message(format!(
            "error: cannot read {}: {e}",
            path.display()
        ))),
    }
}

/// The file's root object (`None`: the file holds no value at all).
pub(crate) fn parse<'t>(path: &Path, text: &'t str) -> Result<Option<Object<'t>>, Failure> {
    let parsed =
        jsonc_parser::parse_to_ast(text, &CollectOptions::default(), &ParseOptions::default())
            .map_err(|e| {
                Failure::Message(format!(
                    "error: {}: {e} (toolgate changes nothing in a file it cannot read; fix it or \
                 move it aside)",
                    path.display()
                ))
            })?;
    match parsed.value {
        None => Ok(None),
        Some(Node::Object(root)) => Ok(Some(root)),
        Some(_) => Err(not_an(path, "the file", "a JSON object")),
    }
}

fn not_an(path: &Path, what: &str, expected: &str) -> Failure {
    Failure::Message(format!(
        "error: {}: {what} is not {expected}, so the agent could not read toolgate's entry \
         there either; toolgate changes nothing",
        path.display()
    ))
}

/// The command that runs this toolgate's hook for `agent`: the binary's absolute path, quoted
/// for the shell where it has to be.
fn hook_command(agent: Agent, flags: &[String]) -> Result<String, Failure> {
    let exe = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map_err(|e| Failure::Message(format!("error: cannot find toolgate's own binary: {e}")))?;
    let mut words = vec![exe.to_string_lossy().into_owned(), "hook".into()];
    words.push(agent.name().into());
    words.extend(flags.iter().cloned());
    Ok(words
        .iter()
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" "))
}

pub(crate) fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,@%".contains(&b));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The first words of a shell command's program and arguments, as the shell reads them
/// (toolgate's own bash analysis: quotes, escapes, wrappers such as `env` or `timeout`), up to
/// the first word whose value only the shell would know.
fn leading_words(command: &str, count: usize) -> Vec<String> {
    toolgate_policy::shell::analyze(command)
        .commands
        .first()
        .map(|c| {
            c.argv
                .iter()
                .map_while(|w| w.value().map(str::to_owned))
                .take(count)
                .collect()
        })
        .unwrap_or_default()
}

/// Whether a hook command runs toolgate's hook for `agent` (whichever toolgate binary, with
/// whatever flags).
fn is_toolgate_hook(command: &str, agent: Agent) -> bool {
    let words = leading_words(command, 3);
    let [program, hook, name] = words.as_slice() else {
        return false;
    };
    let file = Path::new(program)
        .file_name()
        .and_then(|f| f.to_str())
        .unwrap_or_default();
    (file == "toolgate" || file == "toolgate.exe") && hook == "hook" && name == agent.name()
}

/// The command of one hook (`command`, or Copilot's `bash`), when it is one.
fn command_of<'a>(hook: &'a Node<'_>) -> Option<&'a str> {
    let object = hook.as_object()?;
    ["command", "bash"]
        .iter()
        .find_map(|key| object.get_string(key))
        .map(|s| s.value.as_ref())
}

/// The hooks of one event's entry: Claude Code's, Codex's and Gemini CLI's entries hold a
/// `hooks` list (a matcher group); Cursor's and Copilot's entries are the hook itself.
fn inner_hooks<'a, 't>(entry: &'a Node<'t>) -> Option<&'a Array<'t>> {
    entry.as_object()?.get_array("hooks")
}

/// The `hooks` object of a settings file's root, when there is one.
fn hooks_of<'a, 't>(path: &Path, root: &'a Object<'t>) -> Result<Option<&'a Object<'t>>, Failure> {
    let Some(prop) = root.get("hooks") else {
        return Ok(None);
    };
    prop.value
        .as_object()
        .map(Some)
        .ok_or_else(|| not_an(path, "`hooks`", "an object"))
}

/// How a container lays out its items: on one line, or one per line at an indent.
struct Layout {
    /// The items' indent and one level of indent, when each item starts its own line.
    lines: Option<(String, String)>,
}

impl Layout {
    /// The layout of the container opening at `open` whose first item starts at `first`.
    fn of(text: &str, open: usize, first: Option<usize>) -> Layout {
        let indent_before = |at: usize| -> Option<&str> {
            let head = text.get(..at)?;
            let line = &head[head.rfind('\n')? + 1..];
            line.chars().all(|c| c == ' ' || c == '\t').then_some(line)
        };
        let lines = first.and_then(indent_before).map(|indent| {
            let head = text.get(..open).unwrap_or_default();
            let own = head
                .get(head.rfind('\n').map_or(0, |n| n + 1)..)
                .unwrap_or_default();
            let own: String = own
                .chars()
                .take_while(|c| *c == ' ' || *c == '\t')
                .collect();
            let unit = indent
                .strip_prefix(own.as_str())
                .filter(|u| !u.is_empty())
                .unwrap_or("  ");
            (indent.to_owned(), unit.to_owned())
        });
        Layout { lines }
    }

    /// What goes between two items.
    fn separator(&self) -> String {
        match &self.lines {
            Some((indent, _)) => format!(",\n{indent}"),
            None => ", ".into(),
        }
    }

    /// A value written at an item's place.
    fn value(&self, value: &Value) -> String {
        let Some((indent, unit)) = &self.lines else {
            return one_line(value);
        };
        let mut out = Vec::new();
        let mut serializer = serde_json::Serializer::with_formatter(
            &mut out,
            serde_json::ser::PrettyFormatter::with_indent(unit.as_bytes()),
        );
        match serde::Serialize::serialize(value, &mut serializer) {
            Ok(()) => String::from_utf8_lossy(&out).replace('\n', &format!("\n{indent}")),
            Err(_) => one_line(value),
        }
    }
}

/// A JSON value on one line, spaced as people write it.
fn one_line(value: &Value) -> String {
    match value {
        Value::Array(items) => {
            format!(
                "[{}]",
                items.iter().map(one_line).collect::<Vec<_>>().join(", ")
            )
        }
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), one_line(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

/// What to insert where to add items (values, or `"key": value` properties) at the end of a
/// container: right after its last item, so that removing from the end of that item to the end
/// of the last new one gives back the text as it was.
fn append(
    text: &str,
    container: Range,
    items: &[Range],
    new: &[(Option<&str>, Value)],
) -> (usize, String) {
    let layout = Layout::of(text, container.start, items.first().map(|r| r.start));
    let rendered: Vec<String> = new
        .iter()
        .map(|(key, value)| match key {
            Some(key) => format!(
                "{}: {}",
                Value::String((*key).to_owned()),
                layout.value(value)
            ),
            None => layout.value(value),
        })
        .collect();
    match items.last() {
        Some(last) => (
            last.end,
            rendered
                .iter()
                .map(|r| format!("{}{r}", layout.separator()))
                .collect(),
        ),
        None => (container.start + 1, rendered.join(", ")),
    }
}

/// The spans that remove the `gone` items of a container: each run of removed items from the
/// end of the item before it (so the separator goes with it), or, for a run at the start, up to
/// the next item.
fn removal(container: Range, items: &[Range], gone: &[bool]) -> Vec<Range> {
    let mut spans = Vec::new();
    let mut index = 0;
    while index < items.len() {
        if !gone.get(index).copied().unwrap_or(false) {
            index += 1;
            continue;
        }
        let first = index;
        while gone.get(index + 1).copied().unwrap_or(false) {
            index += 1;
        }
        let (Some(start), Some(end)) = (items.get(first), items.get(index)) else {
            break;
        };
        let span = match (
            first.checked_sub(1).and_then(|i| items.get(i)),
            items.get(index + 1),
        ) {
            (Some(before), _) => Range {
                start: before.end,
                end: end.end,
            },
            (None, Some(after)) => Range {
                start: start.start,
                end: after.start,
            },
            (None, None) => Range {
                start: container.start + 1,
                end: end.end,
            },
        };
        spans.push(span);
        index += 1;
    }
    spans
}

/// The text with each span replaced (spans do not overlap).
pub(crate) fn splice(text: &str, mut edits: Vec<(Range, String)>) -> String {
    edits.sort_by_key(|(range, _)| std::cmp::Reverse(range.start));
    let mut out = text.to_owned();
    for (range, with) in edits {
        out.replace_range(range.start..range.end, &with);
    }
    out
}

fn ranges(nodes: &[Node<'_>]) -> Vec<Range> {
    nodes.iter().map(Ranged::range).collect()
}

fn prop_ranges(props: &[ObjectProp<'_>]) -> Vec<Range> {
    props.iter().map(|p| p.range).collect()
}

/// The text of the settings file with toolgate's entry added, and the events it was added to
/// (none when it is there already).
fn installed(
    settings: &Settings,
    text: Option<&str>,
    command: &str,
) -> Result<(String, Vec<&'static str>), Failure> {
    let agent = settings.agent;
    let entries = settings.entries(command);
    let events: Vec<&'static str> = entries.iter().map(|(event, _)| *event).collect();
    let hooks_value = |entries: &[(&str, Value)]| -> Value {
        Value::Object(
            entries
                .iter()
                .map(|(event, entry)| ((*event).to_owned(), json!([entry])))
                .collect(),
        )
    };
    let root = match text {
        Some(text) => parse(&settings.path, text)?,
        None => None,
    };
    let (Some(text), Some(root)) = (text, root) else {
        if text.is_some_and(|t| !t.trim().is_empty()) {
            return Err(not_an(&settings.path, "the file", "a JSON object"));
        }
        // A new file: toolgate's entry is all of it.
        let mut file = serde_json::Map::new();
        if let Some((key, value)) = settings.preamble() {
            file.insert(key.into(), value);
        }
        file.insert("hooks".into(), hooks_value(&entries));
        let text = serde_json::to_string_pretty(&Value::Object(file))
            .map_err(|e| Failure::Message(format!("error: {e}")))?;
        return Ok((text + "\n", events));
    };
    let Some(hooks) = hooks_of(&settings.path, &root)? else {
        let edit = append(
            text,
            root.range,
            &prop_ranges(&root.properties),
            &[(Some("hooks"), hooks_value(&entries))],
        );
        return Ok((
            splice(
                text,
                vec![(
                    Range {
                        start: edit.0,
                        end: edit.0,
                    },
                    edit.1,
                )],
            ),
            events,
        ));
    };
    let mut edits = Vec::new();
    let mut missing = Vec::new();
    let mut added = Vec::new();
    for (event, entry) in entries {
        let Some(prop) = hooks.get(event) else {
            missing.push((Some(event), json!([entry])));
            added.push(event);
            continue;
        };
        let list = prop
            .value
            .as_array()
            .ok_or_else(|| not_an(&settings.path, &format!("`hooks.{event}`"), "a list"))?;
        let ours = |hook: &Node<'_>| command_of(hook).is_some_and(|c| is_toolgate_hook(c, agent));
        let holds = list.elements.iter().any(|entry| {
            ours(entry) || inner_hooks(entry).is_some_and(|inner| inner.elements.iter().any(ours))
        });
        if !holds {
            let (at, with) = append(text, list.range, &ranges(&list.elements), &[(None, entry)]);
            edits.push((Range { start: at, end: at }, with));
            added.push(event);
        }
    }
    if !missing.is_empty() {
        let (at, with) = append(text, hooks.range, &prop_ranges(&hooks.properties), &missing);
        edits.push((Range { start: at, end: at }, with));
    }
    Ok((splice(text, edits), added))
}

/// The text of the settings file without toolgate's hooks for the agent (`None`: nothing is
/// left in it), and how many were removed. An entry, an event's list and the `hooks` object go
/// when toolgate's hooks were all they held.
fn uninstalled(settings: &Settings, text: &str) -> Result<(Option<String>, usize), Failure> {
    let agent = settings.agent;
    let ours = |hook: &Node<'_>| command_of(hook).is_some_and(|c| is_toolgate_hook(c, agent));
    let Some(root) = parse(&settings.path, text)? else {
        return Ok((Some(text.to_owned()), 0));
    };
    let Some(hooks) = hooks_of(&settings.path, &root)? else {
        return Ok((Some(text.to_owned()), 0));
    };
    let mut removed = 0;
    let mut spans = Vec::new();
    let mut events_gone = vec![false; hooks.properties.len()];
    for (prop, event_gone) in hooks.properties.iter().zip(events_gone.iter_mut()) {
        let Some(list) = prop.value.as_array() else {
            continue;
        };
        let mut gone = vec![false; list.elements.len()];
        let mut inner_spans = Vec::new();
        for (entry, entry_gone) in list.elements.iter().zip(gone.iter_mut()) {
            if ours(entry) {
                *entry_gone = true;
                removed += 1;
                continue;
            }
            let Some(inner) = inner_hooks(entry) else {
                continue;
            };
            let inner_gone: Vec<bool> = inner.elements.iter().map(ours).collect();
            let count = inner_gone.iter().filter(|g| **g).count();
            removed += count;
            if count == 0 {
                continue;
            }
            if count == inner_gone.len() {
                *entry_gone = true;
            } else {
                inner_spans.extend(removal(inner.range, &ranges(&inner.elements), &inner_gone));
            }
        }
        if gone.iter().all(|g| *g) && !gone.is_empty() {
            *event_gone = true;
        } else {
            spans.extend(removal(list.range, &ranges(&list.elements), &gone));
            spans.extend(inner_spans);
        }
    }
    if removed == 0 {
        return Ok((Some(text.to_owned()), 0));
    }
    if events_gone.iter().all(|g| *g) {
        // Nothing left under `hooks`: it goes, and the file with it when nothing but what
        // toolgate starts a file with is left.
        let preamble = settings.preamble().map(|(key, _)| key);
        let others = root
            .properties
            .iter()
            .filter(|p| p.name.as_str() != "hooks")
            .all(|p| Some(p.name.as_str()) == preamble);
        if others {
            return Ok((None, removed));
        }
        let gone: Vec<bool> = root
            .properties
            .iter()
            .map(|p| p.name.as_str() == "hooks")
            .collect();
        spans = removal(root.range, &prop_ranges(&root.properties), &gone);
    } else {
        spans.extend(removal(
            hooks.range,
            &prop_ranges(&hooks.properties),
            &events_gone,
        ));
    }
    let edits = spans
        .into_iter()
        .map(|span| (span, String::new()))
        .collect();
    Ok((Some(splice(text, edits)), removed))
}

/// A unified diff of a settings file's change.
fn diff(path: &Path, before: Option<&str>, after: Option<&str>) -> String {
    let name = path.display().to_string();
    similar::TextDiff::from_lines(before.unwrap_or(""), after.unwrap_or(""))
        .unified_diff()
        .header(
            if before.is_some() { &name } else { "/dev/null" },
            if after.is_some() { &name } else { "/dev/null" },
        )
        .to_string()
}

/// Makes the change (see [`replace_file`]), or with `dry_run` prints it as a diff; whether it was made.
pub(crate) fn change(
    out: &mut impl Write,
    path: &Path,
    before: Option<&str>,
    after: Option<&str>,
    dry_run: bool,
) -> Result<bool, Failure> {
    if dry_run {
        write!(out, "{}", diff(path, before, after))?;
        writeln!(out, "(dry run: nothing changed)")?;
        return Ok(false);
    }
    replace_file(path, before, after)?;
    Ok(true)
}

/// Writes the new text (a backup of the old file first, when there was one: `before`), or
/// removes the file (see `toolgate_server::promote::replace_file`).
pub(crate) fn replace_file(
    path: &Path,
    before: Option<&str>,
    after: Option<&str>,
) -> Result<(), Failure> {
    toolgate_server::promote::replace_file(path, before.is_some(), after).map_err(Failure::Message)
}

fn settings_of(target: &TargetArgs) -> Result<Settings, Failure> {
    if target.user {
        return Settings::user(target.agent);
    }
    let dir = match &target.dir {
        Some(dir) => dir.clone(),
        None => crate::args::current_folder()?,
    };
    Ok(Settings::project(target.agent, &dir))
}

/// The value of a hook flag (`--name VALUE` or `--name=VALUE`), when given.
fn flag_value(flags: &[String], name: &str) -> Option<String> {
    let prefix = format!("{name}=");
    flags.iter().enumerate().find_map(|(at, flag)| {
        if flag == name {
            flags.get(at + 1).cloned()
        } else {
            flag.strip_prefix(&prefix).map(str::to_owned)
        }
    })
}

/// `flags` of a command that asks the daemon (`--daemon`), with `--token-file` naming a token
/// of the `agent` role made for it now as `name` (see [`agent_token`]), unless they name one
/// already; when none can be made (no daemon runs), the flags as they are, and why said on
/// stderr.
pub(crate) fn with_agent_token(name: &str, flags: &[String]) -> Vec<String> {
    let mut flags = flags.to_vec();
    let daemon = flags.iter().any(|f| f == "--daemon");
    if !daemon || flag_value(&flags, "--token-file").is_some() {
        return flags;
    }
    match agent_token(name, &flags) {
        Ok(file) => {
            flags.push("--token-file".into());
            flags.push(file.display().to_string());
        }
        Err(e) => eprintln!(
            "toolgate: `{name}` will use the daemon's own token (no agent token could be made: \
             {}); run this again once the daemon runs",
            crate::daemon::failure_text(&e)
        ),
    }
    flags
}

/// How to reach the daemon a command's flags name (`--url`, `--data-dir`, else the default),
/// with its own token.
fn client_args_of(flags: &[String]) -> crate::client::ClientArgs {
    crate::client::ClientArgs {
        data_dir: flag_value(flags, "--data-dir").map(PathBuf::from),
        url: flag_value(flags, "--url").or_else(|| std::env::var("TOOLGATE_URL").ok()),
        token_file: None,
    }
}

/// Revokes the agent token `install` made and kept in `file` (at the daemon the hook's flags
/// name) and removes the file; what cannot be done is said on stderr (the hook is gone already).
pub(crate) fn revoke_agent_token(file: &Path, flags: &[String]) {
    let Some(name) = file.file_name().and_then(|n| n.to_str()) else {
        return;
    };
    let client_args = client_args_of(flags);
    let path = format!("/api/tokens/{}", crate::client::encode(name));
    let revoked = crate::client::Client::new(&client_args)
        .and_then(|client| client.send("DELETE", &path, None))
        .map_err(|e| crate::daemon::failure_text(&e))
        .and_then(|reply| match reply.status {
            204 | 404 => Ok(()),
            _ => Err(reply.error()),
        });
    match revoked {
        Ok(()) => {
            let _ = std::fs::remove_file(file);
        }
        Err(why) => eprintln!(
            "toolgate: the token `{name}` stays known to the daemon ({why}); `toolgate token \
             revoke {name}` revokes it"
        ),
    }
}

/// A token of the `agent` role named `name`, made at the daemon the flags name (`--url`,
/// `--data-dir`, else the default) and kept in `agent-tokens/NAME` of that daemon's data
/// directory (mode 600); a token of that name made before is replaced. Its file.
fn agent_token(name: &str, flags: &[String]) -> Result<PathBuf, Failure> {
    let client_args = client_args_of(flags);
    let data_dir = crate::client::data_dir(&client_args)
        .ok_or_else(|| Failure::Message("no data directory".into()))?;
    let client = crate::client::Client::new(&client_args)?;
    let path = format!("/api/tokens/{}", crate::client::encode(name));
    // Made again: only the daemon keeps a token (as its hash), so one made before is replaced.
    let reply = client.send("DELETE", &path, None)?;
    if !matches!(reply.status, 204 | 404) {
        return Err(Failure::Message(reply.error()));
    }
    let reply = client.send(
        "POST",
        "/api/tokens",
        Some(&json!({"name": name, "role": "agent"})),
    )?;
    let token = match (
        reply.status,
        reply.body.get("token").and_then(Value::as_str),
    ) {
        (201, Some(token)) => token.to_owned(),
        _ => return Err(Failure::Message(reply.error())),
    };
    let dir = data_dir.join("agent-tokens");
    let file = dir.join(name);
    let fail =
        |e: std::io::Error| Failure::Message(format!("cannot write {}: {e}", file.display()));
    std::fs::create_dir_all(&dir).map_err(fail)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).map_err(fail)?;
    }
    crate::serve::write_private(&file, &format!("{token}\n")).map_err(fail)?;
    Ok(file)
}

pub(crate) fn install(args: &InstallArgs) -> Result<u8, Failure> {
    let settings = settings_of(&args.target)?;
    // A hook that asks the daemon does so with an agent's token (it asks, waits and reports,
    // and answers nothing), made now when the daemon runs.
    let flags = if args.dry_run {
        args.hook_flags.clone()
    } else {
        with_agent_token(&format!("{}-hook", settings.agent.name()), &args.hook_flags)
    };
    let command = hook_command(settings.agent, &flags)?;
    let before = read(&settings.path)?;
    let (after, added) = installed(&settings, before.as_deref(), &command)?;
    let mut out = std::io::stdout().lock();
    if added.is_empty() {
        writeln!(
            out,
            "toolgate's hook is already in {} (nothing changed)",
            settings.path.display()
        )?;
        return Ok(EXIT_OK);
    }
    if !change(
        &mut out,
        &settings.path,
        before.as_deref(),
        Some(&after),
        args.dry_run,
    )? {
        return Ok(EXIT_OK);
    }
    writeln!(
        out,
        "installed `{command}` for {} in {} ({}){}",
        settings.agent.name(),
        settings.path.display(),
        added.join(", "),
        if before.is_some() {
            format!(
                "; the file was {}.toolgate.bak before",
                settings.path.display()
            )
        } else {
            String::new()
        }
    )?;
    Ok(EXIT_OK)
}

pub(crate) fn uninstall(args: &UninstallArgs) -> Result<u8, Failure> {
    let settings = settings_of(&args.target)?;
    let mut out = std::io::stdout().lock();
    let Some(before) = read(&settings.path)? else {
        writeln!(
            out,
            "{} does not exist: nothing to remove",
            settings.path.display()
        )?;
        return Ok(EXIT_OK);
    };
    // The agent tokens install made for the hooks that go (revoked once they are gone).
    let tokens: Vec<(String, Vec<String>)> = hook_commands(&settings)
        .unwrap_or_default()
        .iter()
        .filter_map(|command| {
            let flags: Vec<String> = leading_words(command, usize::MAX)
                .into_iter()
                .skip(3)
                .collect();
            let file = PathBuf::from(flag_value(&flags, "--token-file")?);
            let made = file.parent()?.file_name()? == "agent-tokens";
            made.then_some((file.display().to_string(), flags))
        })
        .collect();
    let (after, removed) = uninstalled(&settings, &before)?;
    if removed == 0 {
        writeln!(
            out,
            "{} holds no toolgate hook for {}: nothing changed",
            settings.path.display(),
            settings.agent.name()
        )?;
        return Ok(EXIT_OK);
    }
    if !change(
        &mut out,
        &settings.path,
        Some(&before),
        after.as_deref(),
        args.dry_run,
    )? {
        return Ok(EXIT_OK);
    }
    for (file, flags) in tokens {
        revoke_agent_token(Path::new(&file), &flags);
    }
    writeln!(
        out,
        "removed {removed} toolgate hook{} from {}{}",
        if removed == 1 { "" } else { "s" },
        settings.path.display(),
        if after.is_none() {
            " (nothing else was in it: the file is gone)"
        } else {
            ""
        }
    )?;
    Ok(EXIT_OK)
}

/// The toolgate hook commands a settings file holds for `agent`.
fn hook_commands(settings: &Settings) -> Result<Vec<String>, String> {
    let text = match read(&settings.path) {
        Ok(Some(text)) => text,
        Ok(None) => return Ok(Vec::new()),
        Err(_) => return Err("unreadable".into()),
    };
    let message = |f: Failure| match f {
        Failure::Message(m) => m,
        Failure::BrokenPipe => String::new(),
    };
    let Some(root) = parse(&settings.path, &text).map_err(message)? else {
        return Ok(Vec::new());
    };
    let Some(hooks) = hooks_of(&settings.path, &root).map_err(message)? else {
        return Ok(Vec::new());
    };
    let mut commands = Vec::new();
    for list in hooks.properties.iter().filter_map(|p| p.value.as_array()) {
        for entry in &list.elements {
            let inner = inner_hooks(entry)
                .map(|a| a.elements.iter())
                .into_iter()
                .flatten();
            for hook in std::iter::once(entry).chain(inner) {
                if let Some(command) = command_of(hook)
                    && is_toolgate_hook(command, settings.agent)
                    && !commands.iter().any(|c| c == command)
                {
                    commands.push(command.to_owned());
                }
            }
        }
    }
    Ok(commands)
}

/// Whether a program is on `$PATH`.
fn on_path(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

pub(crate) fn doctor(args: &DoctorArgs) -> Result<u8, Failure> {
    let dir = match &args.dir {
        Some(dir) => dir.clone(),
        None => crate::args::current_folder()?,
    };
    let mut problems = 0;
    let mut out = std::io::stdout().lock();
    let exe = std::env::current_exe().and_then(|p| p.canonicalize()).ok();
    writeln!(
        out,
        "toolgate {} at {}",
        env!("CARGO_PKG_VERSION"),
        exe.as_deref()
            .map_or("(unknown path)".into(), |p| p.display().to_string())
    )?;
    match on_path("toolgate") {
        Some(found) if found.canonicalize().ok() == exe => {
            writeln!(out, "  on $PATH")?;
        }
        Some(found) => writeln!(out, "  $PATH finds another toolgate: {}", found.display())?,
        None => writeln!(
            out,
            "  not on $PATH (installed hooks use the absolute path; `cargo install --path \
             crates/toolgate` puts it in ~/.cargo/bin)"
        )?,
    }

    writeln!(out, "\npolicy in {}:", dir.display())?;
    let files = args.policy.files_from(&dir);
    if files.is_empty() {
        writeln!(
            out,
            "  no policy file: the built-in policy applies (`toolgate policy show-default`)"
        )?;
    }
    for (role, path) in &files {
        let role = match role {
            PolicyRole::User => "user",
            PolicyRole::Project => "project",
            PolicyRole::Given => "given",
            PolicyRole::BuiltIn => "built-in",
        };
        writeln!(out, "  {role:<8} {}", path.display())?;
    }
    match PolicyArgs::load_files(&files, toolgate_policy::LoadOptions::default()) {
        Ok(policy) => writeln!(
            out,
            "  loads: {} rules from {}",
            policy.rules().count(),
            policy
                .files()
                .map(|(name, _)| name)
                .collect::<Vec<_>>()
                .join(", ")
        )?,
        Err(Failure::Message(message)) => {
            problems += 1;
            writeln!(out, "  DOES NOT LOAD (every hook refuses every call):")?;
            for line in message.lines() {
                writeln!(out, "    {line}")?;
            }
        }
        Err(Failure::BrokenPipe) => return Err(Failure::BrokenPipe),
    }

    problems += daemon_report(&mut out)?;

    writeln!(out, "\nagents:")?;
    let mut absent = Vec::new();
    for agent in Agent::ALL {
        let program = on_path(agent.program());
        let user = Settings::user(agent).ok();
        let config_dir = user
            .as_ref()
            .and_then(|s| s.path.parent().map(Path::to_path_buf))
            .filter(|d| d.is_dir());
        // A project in the home folder has the user's file as its own: said once.
        let project = Some(Settings::project(agent, &dir))
            .filter(|p| user.as_ref().is_none_or(|u| u.path != p.path));
        let user_hooks = user.as_ref().map(hook_commands);
        let project_hooks = project.as_ref().map(hook_commands);
        let any_hook = [user_hooks.as_ref(), project_hooks.as_ref()]
            .into_iter()
            .flatten()
            .any(|r| r.as_ref().is_ok_and(|c| !c.is_empty()));
        if program.is_none() && config_dir.is_none() && !any_hook {
            absent.push(agent.name());
            continue;
        }
        let found = match (&program, &config_dir) {
            (Some(p), _) => format!("{} on $PATH", p.display()),
            (None, Some(d)) => format!("settings in {}", d.display()),
            (None, None) => "hook configured".into(),
        };
        writeln!(out, "  {} ({found})", agent.name())?;
        let places = user
            .as_ref()
            .map(|s| ("user", s, user_hooks.clone().unwrap_or(Ok(Vec::new()))))
            .into_iter()
            .chain(project.as_ref().map(|s| {
                (
                    "project",
                    s,
                    project_hooks.clone().unwrap_or(Ok(Vec::new())),
                )
            }));
        for (scope, settings, hooks) in places {
            match hooks {
                Err(e) => {
                    problems += 1;
                    writeln!(
                        out,
                        "    {scope:<8} {}: cannot be read: {e}",
                        settings.path.display()
                    )?;
                }
                Ok(commands) if commands.is_empty() => writeln!(
                    out,
                    "    {scope:<8} no toolgate hook ({}; `toolgate install {}{}`)",
                    settings.path.display(),
                    agent.name(),
                    if scope == "user" { " --user" } else { "" }
                )?,
                Ok(commands) => {
                    for command in commands {
                        let words = leading_words(&command, 1);
                        let binary = words.first().map(PathBuf::from).unwrap_or_default();
                        let runs = if binary.is_absolute() {
                            binary.is_file()
                        } else {
                            on_path(&binary.to_string_lossy()).is_some()
                        };
                        if !runs {
                            problems += 1;
                        }
                        writeln!(
                            out,
                            "    {scope:<8} installed in {}: `{command}`{}",
                            settings.path.display(),
                            if runs {
                                ""
                            } else {
                                " — THAT BINARY IS NOT THERE: the agent's hook fails"
                            }
                        )?;
                    }
                }
            }
        }
    }
    if !absent.is_empty() {
        writeln!(out, "  not found on this machine: {}", absent.join(", "))?;
    }
    // What `toolgate sandbox` (and `hook claude --sandbox`) can enforce here.
    let probe = std::env::current_exe()
        .and_then(|exe| Command::new(exe).args(["sandbox", "--probe"]).output())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|e| format!("cannot probe: {e}"));
    writeln!(
        out,
        "
sandbox:
  {probe}"
    )?;
    if problems > 0 {
        writeln!(
            out,
            "\n{problems} problem{} found",
            if problems == 1 { "" } else { "s" }
        )?;
        return Ok(EXIT_FOUND);
    }
    Ok(EXIT_OK)
}

/// The daemon's part of `doctor`: where its settings put the store (a PostgreSQL database by
/// name, never its password; or the SQLite file, its size, and a journal of an earlier version
/// that the next start applies), and whether a daemon of that data directory is running.
/// Returns how many problems it found.
fn daemon_report(out: &mut impl Write) -> Result<usize, Failure> {
    writeln!(out, "\ndaemon:")?;
    let file = match toolgate_server::ConfigFile::load_default() {
        Ok(file) => file,
        Err(error) => {
            writeln!(out, "  its settings do not load: {error}")?;
            return Ok(1);
        }
    };
    let mut problems = 0;
    let data = file.resolved_data_dir();
    let store = std::env::var("TOOLGATE_STORE")
        .ok()
        .filter(|url| !url.is_empty())
        .or(file.store.clone());
    match (&store, &data) {
        (Some(url), _) => match toolgate_store::PostgresStore::describe(url) {
            Ok(described) => writeln!(out, "  store: {described}")?,
            Err(error) => {
                problems += 1;
                writeln!(out, "  store: NOT A CONNECTION STRING: {error}")?;
            }
        },
        (None, Some(dir)) => {
            let database = dir.join("toolgate.db");
            match std::fs::metadata(&database) {
                Ok(meta) => writeln!(
                    out,
                    "  store: SQLite {} ({} KiB)",
                    database.display(),
                    meta.len() >> 10
                )?,
                Err(_) => writeln!(
                    out,
                    "  store: SQLite {} (not made yet: `toolgate serve` makes it)",
                    database.display()
                )?,
            }
            let journal = dir.join("toolgate.db.journal");
            if journal.exists() {
                writeln!(
                    out,
                    "  {} (toolgate 0.1's commit journal): the next start applies what it holds \
                     and removes it",
                    journal.display()
                )?;
            }
        }
        (None, None) => writeln!(
            out,
            "  no data directory: set $TOOLGATE_DATA_DIR or $HOME, or `data_dir` in daemon.toml"
        )?,
    }
    let written = data.as_ref().and_then(|dir| {
        std::fs::read_to_string(dir.join(toolgate_server::ADDRESS_FILE))
            .ok()
            .map(|text| text.trim().to_owned())
    });
    let reachable = |url: &str| {
        url.strip_prefix("http://")
            .and_then(|host| host.trim_end_matches('/').to_socket_addrs().ok())
            .into_iter()
            .flatten()
            .any(|address| {
                std::net::TcpStream::connect_timeout(&address, std::time::Duration::from_secs(1))
                    .is_ok()
            })
    };
    match written {
        Some(url) if reachable(&url) => {
            writeln!(out, "  running: listening on {url}")?;
            problems += running_policy(out, data.clone(), &url)?;
        }
        Some(url) => writeln!(
            out,
            "  not running (the last one listened on {url} and did not stop cleanly, or is \
             starting)"
        )?,
        None => writeln!(
            out,
            "  not running from this data directory (`toolgate serve`)"
        )?,
    }
    Ok(problems)
}

/// What the running daemon at `url` says of its policy: the files in force, and a reload that
/// failed (one problem: the files on disk are not what it enforces). Nothing when it cannot be
/// asked (no token here).
fn running_policy(
    out: &mut impl Write,
    data_dir: Option<PathBuf>,
    url: &str,
) -> Result<usize, Failure> {
    let args = crate::client::ClientArgs {
        data_dir,
        url: Some(url.to_owned()),
        token_file: None,
    };
    let Ok(reply) =
        crate::client::Client::new(&args).and_then(|c| c.send("GET", "/api/policy", None))
    else {
        return Ok(0);
    };
    if reply.status != 200 {
        return Ok(0);
    }
    let field = |key: &str| crate::client::field(&reply.body, key);
    let files: Vec<String> = field("files")
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f.as_str().map(toolgate_runtime::terminal_text))
        .collect();
    writeln!(
        out,
        "  its policy: {} (loaded {})",
        if files.is_empty() {
            "the built-in policy".to_owned()
        } else {
            files.join(", ")
        },
        crate::client::folded(field("loaded_at"), 40)
    )?;
    let failed = field("reload_failed");
    if failed.is_object() {
        writeln!(
            out,
            "  ITS POLICY DID NOT RELOAD at {} (the one loaded before stays in force):",
            crate::client::folded(crate::client::field(failed, "at"), 40)
        )?;
        let reason = crate::client::field(failed, "reason")
            .as_str()
            .unwrap_or_default();
        for line in reason.lines() {
            writeln!(out, "    {}", toolgate_runtime::terminal_text(line))?;
        }
        return Ok(1);
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_settings_file_that_is_a_link_stays_one() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("dotfiles-settings.json");
        let link = dir.path().join("settings.json");
        std::fs::write(&real, "{}").unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        replace_file(&link, Some("{}"), Some("{\"hooks\": {}}")).unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "{\"hooks\": {}}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("dotfiles-settings.json.toolgate.bak"))
                .unwrap(),
            "{}"
        );
    }

    fn settings(agent: Agent) -> Settings {
        Settings {
            agent,
            path: PathBuf::from("settings.json"),
        }
    }

    #[test]
    fn the_leading_words_are_unquoted_as_a_shell_would() {
        assert_eq!(
            leading_words("'/opt/my tools/toolgate' hook claude --daemon", 3),
            ["/opt/my tools/toolgate", "hook", "claude"]
        );
        assert_eq!(
            leading_words(r#"  "/a b/toolgate"  hook\ x"#, 3),
            ["/a b/toolgate", "hook x"]
        );
        assert_eq!(leading_words("", 3), Vec::<String>::new());
    }

    #[test]
    fn only_toolgates_hook_for_that_agent_is_toolgates() {
        for (command, ours) in [
            ("/usr/local/bin/toolgate hook claude", true),
            ("toolgate hook claude --daemon", true),
            ("'/x y/toolgate' hook claude", true),
            ("/usr/local/bin/toolgate hook codex", false),
            ("/usr/local/bin/toolgate check", false),
            ("/usr/bin/not-toolgate hook claude", false),
            ("echo toolgate hook claude", false),
        ] {
            assert_eq!(is_toolgate_hook(command, Agent::Claude), ours, "{command}");
        }
    }

    #[test]
    fn a_path_with_spaces_or_quotes_is_quoted_and_reads_back() {
        for word in ["/usr/bin/toolgate", "/a b/toolgate", "/it's/toolgate", ""] {
            let quoted = shell_quote(word);
            assert_eq!(
                leading_words(&quoted, 1)
                    .first()
                    .map(String::as_str)
                    .unwrap_or(""),
                word
            );
        }
    }

    #[test]
    fn install_then_uninstall_gives_back_every_byte() {
        let texts = [
            "{\n  \"hooks\": {\n    \"PreToolUse\": [\n      {\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", \"command\": \"./check.sh\"}]}\n    ]\n  },\n  \"model\": \"opus\"\n}\n",
            "{\n\t\"model\": \"opus\" // mine\n}",
            "{\"hooks\":{\"PostToolUse\":[{\"hooks\":[{\"type\":\"command\",\"command\":\"fmt\"}]}]}}",
            "{\r\n  \"permissions\": {\"allow\": [\"Bash(ls)\"]},\r\n  \"env\": {}\r\n}\r\n",
        ];
        for agent in Agent::ALL {
            let settings = settings(agent);
            let command = format!("/bin/toolgate hook {}", agent.name());
            for text in texts {
                let (after, added) = installed(&settings, Some(text), &command).unwrap();
                assert_eq!(added.len(), settings.entries("").len(), "{after}");
                let reread: Value = serde_json::from_str(&strip(&after)).unwrap();
                assert!(reread["hooks"].is_object(), "{after}");
                // Installing twice adds nothing.
                let (again, added) = installed(&settings, Some(&after), &command).unwrap();
                assert_eq!((again.as_str(), added.len()), (after.as_str(), 0));
                let (back, removed) = uninstalled(&settings, &after).unwrap();
                assert_eq!(removed, settings.entries("").len(), "{after}");
                assert_eq!(back.as_deref(), Some(text), "{agent:?}: {after}");
            }
        }
    }

    #[test]
    fn a_file_toolgate_created_is_removed_with_its_entry() {
        for agent in Agent::ALL {
            let settings = settings(agent);
            let command = format!("/bin/toolgate hook {}", agent.name());
            let (after, _) = installed(&settings, None, &command).unwrap();
            assert_eq!(
                uninstalled(&settings, &after).unwrap(),
                (None, settings.entries("").len())
            );
        }
    }

    #[test]
    fn another_hook_in_toolgates_entry_stays() {
        let settings = settings(Agent::Claude);
        let text = r#"{"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
            {"type": "command", "command": "/bin/toolgate hook claude"},
            {"type": "command", "command": "./audit.sh"}]}]}}"#;
        let (after, removed) = uninstalled(&settings, text).unwrap();
        assert_eq!(removed, 1);
        let after: Value = serde_json::from_str(&after.unwrap()).unwrap();
        assert_eq!(
            after["hooks"]["PreToolUse"][0]["hooks"],
            json!([{"type": "command", "command": "./audit.sh"}])
        );
    }

    #[test]
    fn a_file_the_agent_could_not_read_is_left_alone() {
        let settings = settings(Agent::Claude);
        for text in [
            "[1, 2]",
            "{\"hooks\": []}",
            "{\"hooks\": {\"PreToolUse\": {}}}",
            "{\"hooks\": ",
        ] {
            assert!(
                installed(&settings, Some(text), "/bin/toolgate hook claude").is_err(),
                "{text}"
            );
        }
    }

    fn entry() -> impl Strategy<Value = Value> {
        let command = prop_oneof![
            Just("./fmt.sh".to_owned()),
            Just("toolgate check".to_owned()),
            "[a-z ./-]{1,12}",
        ];
        (command, any::<bool>()).prop_map(|(command, nested)| {
            if nested {
                json!({"matcher": "*", "hooks": [{"type": "command", "command": command}]})
            } else {
                json!({"command": command, "bash": command})
            }
        })
    }

    /// A settings file: other keys, and a `hooks` object whose lists are not empty (an empty
    /// list of toolgate's events is the one thing uninstall does not give back).
    fn settings_file() -> impl Strategy<Value = Value> {
        let events = prop::sample::select(vec![
            "PreToolUse",
            "PermissionRequest",
            "BeforeTool",
            "preToolUse",
            "beforeReadFile",
            "Stop",
        ]);
        let hooks = prop::collection::btree_map(events, prop::collection::vec(entry(), 1..3), 0..4);
        let others = prop::collection::btree_map("[a-z]{1,8}", any::<i32>(), 0..3);
        (hooks, others, any::<bool>()).prop_map(|(hooks, others, with_hooks)| {
            let mut file = serde_json::Map::new();
            for (key, value) in others {
                file.insert(key, json!(value));
            }
            if with_hooks && !hooks.is_empty() {
                file.insert("hooks".into(), json!(hooks));
            }
            Value::Object(file)
        })
    }

    proptest! {
        #[test]
        fn any_settings_file_round_trips(file in settings_file(), pretty: bool, agent in 0..5usize) {
            let agent = Agent::ALL[agent];
            let settings = settings(agent);
            let text = if pretty {
                serde_json::to_string_pretty(&file).unwrap() + "\n"
            } else {
                file.to_string()
            };
            let command = format!("'/opt/tool gate/toolgate' hook {}", agent.name());
            let (after, _) = installed(&settings, Some(&text), &command).unwrap();
            let reread: Value = serde_json::from_str(&after).unwrap();
            for (event, _) in settings.entries(&command) {
                prop_assert!(reread["hooks"][event].to_string().contains("hook"), "{}", after);
            }
            let (back, _) = uninstalled(&settings, &after).unwrap();
            let expected = if file.as_object().is_some_and(|f| f.is_empty()) { None } else { Some(text) };
            prop_assert_eq!(back, expected);
        }

        #[test]
        fn no_text_makes_install_or_uninstall_panic(text in "[{}\\[\\]\",: a-zA-Z0-9/\n]{0,60}") {
            let settings = settings(Agent::Cursor);
            let _ = installed(&settings, Some(&text), "/bin/toolgate hook cursor");
            let _ = uninstalled(&settings, &text);
        }
    }

    /// JSON with `//` comments, as a JSON parser takes it (for the tests' own reading).
    fn strip(text: &str) -> String {
        text.lines()
            .map(|l| l.split(" //").next().unwrap_or(l))
            .collect::<Vec<_>>()
            .join("\n")
    }
}
