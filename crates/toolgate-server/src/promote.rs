//! From a remembered answer to a rule (`toolgate grants promote ID`, and the page's "Make a
//! rule"): the rule that decides the same calls the same way, placed in a policy file — the
//! workspace's for a workspace grant, the user's for a user grant, the project's for a
//! session's — first among the file's rules for a refusal, just before the rule that asked for
//! an allow, with an `examples` entry taken from the call that made the grant. The policy must
//! still load (every example passes) and lint no worse. The caller shows the diff, writes the
//! file ([`replace_file`]) and revokes the grant.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;
use toml_edit::{Array, ArrayOfTables, DocumentMut, InlineTable, Item, Table, value};
use toolgate_policy::{LoadOptions, Policy, PolicySource, Severity};
use toolgate_runtime::{Effect, Grant, GrantScope, GrantTarget, terminal_text};

/// What promoting a grant would write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The policy file.
    pub file: PathBuf,
    /// Its text now (empty when there is no file).
    pub old: String,
    /// Its text with the rule.
    pub new: String,
    /// The rule, as TOML.
    pub rule: String,
    /// The line the rule starts at in the new text (from 1).
    pub at: usize,
    /// The file's ask rules the new allow answers first (lint will say they never apply).
    pub superseded: Vec<String>,
    /// Whether the rule has the call that made the grant as its example.
    pub example: bool,
}

impl Plan {
    /// The change as a unified diff of the rule's lines.
    pub fn diff(&self) -> String {
        let name = self.file.display();
        let added: Vec<&str> = self.rule.lines().collect();
        let mut out = format!(
            "--- {name}\n+++ {name}\n@@ -{0},0 +{0},{1} @@\n",
            self.at,
            added.len()
        );
        for line in added {
            out.push('+');
            out.push_str(line);
            out.push('\n');
        }
        out
    }
}

/// The file a grant's rule goes to, by its scope: the workspace's `.toolgate/policy.toml`, the
/// user's policy, or, for a session's grant, the policy of the project `project` is in.
pub fn file_for(grant: &Grant, project: Option<&Path>) -> Result<PathBuf, String> {
    match &grant.scope {
        GrantScope::Workspace { root } => Ok(root.join(".toolgate").join("policy.toml")),
        GrantScope::User => toolgate_policy::user_policy_path()
            .ok_or_else(|| "no user policy file: set $HOME or $TOOLGATE_CONFIG_DIR".to_owned()),
        GrantScope::Once { .. } | GrantScope::Turn { .. } | GrantScope::Session { .. } => project
            .and_then(toolgate_policy::project_policy_path)
            .ok_or_else(|| "a session's grant names no project: name the policy file".to_owned()),
    }
}

/// The call that made a grant, from its request's `permission_requested` event: `{tool,
/// args}`; `None` when the event holds no call.
pub fn example_from(requested: &Value) -> Option<Value> {
    let request = requested.get("request")?;
    match (request.get("tool")?.as_str(), request.get("arguments")?) {
        (Some(tool), Value::Object(args)) => Some(serde_json::json!({"tool": tool, "args": args})),
        _ => None,
    }
}

/// What promoting `grant` into `file` would write, with `example` (the call that made it) as
/// the rule's example; why not, when it cannot be (a rule of another reach, a file the rule
/// cannot be placed in, a policy that would not load or would lint worse).
pub fn plan(grant: &Grant, file: &Path, example: Option<&Value>) -> Result<Plan, String> {
    let rule = rule_for(grant, example)?;
    let old = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("cannot read {}: {e}", file.display())),
    };
    // The file as a policy of its own, before and after: read once each.
    let name = file.display().to_string();
    let loaded = |text: &str| {
        let source = PolicySource {
            base_dir: file.parent().map(Path::to_owned),
            ..PolicySource::given(name.as_str(), text)
        };
        Policy::load(vec![source], LoadOptions::default())
    };
    let current = (!old.is_empty()).then(|| loaded(&old).ok()).flatten();
    let (new, at) = place(&old, &rule, grant, example, current.as_ref(), file)?;
    // The policy still loads (every example of the file passes) and lints no worse.
    // (Compared without their line numbers, which the rule moves.)
    let errors = |policy: &Policy| -> Vec<String> {
        policy
            .lint()
            .into_iter()
            .filter(|d| d.severity == Severity::Error)
            .map(|d| without_lines(&d.message))
            .collect()
    };
    let before = current.as_ref().map(errors).unwrap_or_default();
    let after = loaded(&new)
        .map_err(|e| format!("not written: with the rule, the policy would not load:\n{e}"))?;
    // What lint finds anew: an ask the promoted allow now answers first is what promoting it
    // means (said, not refused); anything else (a deny it would take back, …) refuses.
    let promoted = format!("promoted-{}", grant.id.chars().take(8).collect::<String>());
    let mut superseded = Vec::new();
    let mut refused = Vec::new();
    for message in errors(&after) {
        if before.contains(&message) {
            continue;
        }
        let shadowed = message
            .strip_prefix("rule `")
            .and_then(|rest| rest.split_once("` never applies: rule `"))
            .filter(|(_, rest)| rest.starts_with(&format!("{promoted}`")))
            .map(|(name, _)| name.to_owned());
        match shadowed {
            Some(name)
                if after.rules().any(|r| {
                    r.name() == name && r.decision() == toolgate_policy::Decision::Ask
                }) =>
            {
                superseded.push(name);
            }
            _ => refused.push(message),
        }
    }
    if !refused.is_empty() {
        return Err(format!(
            "not written: with the rule first, lint finds:\n{}",
            refused.join("\n")
        ));
    }
    Ok(Plan {
        file: file.to_owned(),
        old,
        new,
        rule,
        at,
        superseded,
        example: example.is_some(),
    })
}

/// Writes a file's new text (a backup of the old file beside it first, `NAME.toolgate.bak`,
/// when `backup`), or removes the file (`None`), with its folder when the file was all it
/// held. A file that is a link is written where it leads (the link stays a link); the text is
/// written beside, flushed, then renamed over the file (nobody reads half a file), keeping
/// the file's permissions.
pub fn replace_file(path: &Path, backup: bool, after: Option<&str>) -> Result<(), String> {
    let resolved;
    let path = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            resolved = std::fs::canonicalize(path)
                .map_err(|e| format!("error: cannot follow {}: {e}", path.display()))?;
            resolved.as_path()
        }
        _ => path,
    };
    let fail =
        |what: &str, e: std::io::Error| format!("error: cannot {what} {}: {e}", path.display());
    let Some(text) = after else {
        std::fs::remove_file(path).map_err(|e| fail("remove", e))?;
        if let Some(dir) = path.parent() {
            let _ = std::fs::remove_dir(dir);
        }
        return Ok(());
    };
    if backup {
        let copy = path.with_file_name(format!(
            "{}.toolgate.bak",
            path.file_name().unwrap_or_default().to_string_lossy()
        ));
        std::fs::copy(path, &copy).map_err(|e| fail("back up", e))?;
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| fail("create the folder of", e))?;
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(|e| fail("write", e))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.as_file().sync_all())
        .map_err(|e| fail("write", e))?;
    if let Ok(meta) = std::fs::metadata(path) {
        std::fs::set_permissions(file.path(), meta.permissions())
            .map_err(|e| fail("keep the permissions of", e))?;
    }
    file.persist(path).map_err(|e| fail("write", e.error))?;
    Ok(())
}

/// A lint message without its ` (line N)`s.
fn without_lines(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find(" (line ") {
        let after = &rest[at + " (line ".len()..];
        let digits = after.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 && after[digits..].starts_with(')') {
            out.push_str(&rest[..at]);
            rest = &after[digits + 1..];
        } else {
            out.push_str(&rest[..at + 1]);
            rest = &rest[at + 1..];
        }
    }
    out.push_str(rest);
    out
}

/// Words a rule's pattern would read as more than themselves.
fn plain(word: &str) -> bool {
    !word.is_empty() && !word.contains(['*', '?', '[', ']', '{', '}', ','])
}

/// The rule (as TOML text) that decides what the grant answers, the same way.
fn rule_for(grant: &Grant, example: Option<&Value>) -> Result<String, String> {
    let refuse = |why: String| format!("not promoted: {why}");
    if !plain(&grant.tool) {
        return Err(refuse(format!(
            "the tool's name `{}` reads as a pattern in a rule",
            terminal_text(&grant.tool)
        )));
    }
    let short: String = grant.id.chars().take(8).collect();
    let mut rule = Table::new();
    rule.insert("name", value(format!("promoted-{short}")));
    let allows = grant.effect == Effect::Allow;
    rule.insert("decision", value(if allows { "allow" } else { "deny" }));
    let reason = grant.reason.clone().unwrap_or_else(|| {
        format!(
            "an \"always\" answer of {} on {}, made a rule",
            grant.created_by,
            humantime::format_rfc3339_seconds(grant.created_at)
        )
    });
    rule.insert("reason", value(reason));
    rule.insert("tool", value(grant.tool.as_str()));
    match &grant.target {
        GrantTarget::Tool => {}
        GrantTarget::Command { prefix, exact } => {
            if *exact && allows {
                return Err(refuse(format!(
                    "it allows exactly `{}`, and a command rule allows every command that starts \
                     with its words: write the rule you mean by hand",
                    terminal_text(&prefix.join(" "))
                )));
            }
            if !prefix.iter().all(|word| plain(word)) {
                return Err(refuse(format!(
                    "a word of `{}` reads as a pattern in a rule",
                    terminal_text(&prefix.join(" "))
                )));
            }
            let mut words = Array::new();
            for word in prefix {
                words.push(word.as_str());
            }
            let mut patterns = Array::new();
            patterns.push(words);
            rule.insert("command", value(patterns));
        }
        GrantTarget::Path { path } => {
            let text = path.to_str().filter(|text| plain(text)).ok_or_else(|| {
                refuse(format!(
                    "the path `{}` reads as a glob in a rule",
                    terminal_text(&path.display().to_string())
                ))
            })?;
            rule.insert("path", value(text));
        }
        GrantTarget::Domain { host } => {
            rule.insert("domain", value(host.as_str()));
        }
    }
    if let Some(example) = example.and_then(toml_value) {
        let mut matching = Array::new();
        matching.push(example);
        let mut examples = InlineTable::new();
        examples.insert("match", toml_edit::Value::Array(matching));
        rule.insert("examples", value(examples));
    }
    let mut rules = ArrayOfTables::new();
    rules.push(rule);
    let mut document = DocumentMut::new();
    document.insert("rule", Item::ArrayOfTables(rules));
    Ok(document.to_string())
}

/// A JSON value in TOML (`null` has no TOML form: a key holding it is left out).
fn toml_value(json: &Value) -> Option<toml_edit::Value> {
    Some(match json {
        Value::Null => return None,
        Value::Bool(b) => (*b).into(),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.into(),
            (None, Some(f)) => f.into(),
            (None, None) => return None,
        },
        Value::String(s) => s.as_str().into(),
        Value::Array(items) => {
            let mut array = Array::new();
            for item in items.iter().filter_map(toml_value) {
                array.push(item);
            }
            toml_edit::Value::Array(array)
        }
        Value::Object(map) => {
            let mut table = InlineTable::new();
            for (key, item) in map {
                if let Some(item) = toml_value(item) {
                    table.insert(key, item);
                }
            }
            toml_edit::Value::InlineTable(table)
        }
    })
}

/// Where the rule goes, and the text with it there (and the line it starts at, from 1).
///
/// A refusal goes first among the file's rules (first match wins: stricter is always safe).
/// An allow goes just before the file's rule that asks for the call that made the grant (so it
/// answers what the grant answered, and every rule above — a deny among them — still decides
/// first), or at the end when no rule of the file asks for it (the mode did). Below it, a deny
/// rule that could meet what it allows would lose calls to it that the grant never answered (a
/// grant answers asks, never denials): refused.
fn place(
    text: &str,
    rule: &str,
    grant: &Grant,
    example: Option<&Value>,
    current: Option<&Policy>,
    file: &Path,
) -> Result<(String, usize), String> {
    if text.trim().is_empty() {
        return Ok((format!("version = 1\n\n{rule}"), 3));
    }
    let document: DocumentMut = text
        .parse()
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let rules: Vec<&Table> = document
        .get("rule")
        .and_then(Item::as_array_of_tables)
        .map(|rules| rules.iter().collect())
        .unwrap_or_default();
    // Where each `[[rule]]` header starts: (byte offset, line from 1).
    let mut headers = Vec::new();
    let mut offset = 0;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        if line.trim_start().starts_with("[[rule]]") {
            headers.push((offset, index + 1));
        }
        offset += line.len();
    }
    if headers.len() != rules.len() {
        return Err(format!(
            "not promoted: {} writes its rules otherwise than as `[[rule]]` tables: write the \
             rule by hand",
            file.display()
        ));
    }
    let index = if grant.effect == Effect::Deny {
        0
    } else {
        let deciding = example.and_then(|example| {
            let policy = current?;
            let call = toolgate_policy::Call::from_value(example.clone()).ok()?;
            policy.evaluate(&call).rule_name().map(str::to_owned)
        });
        let index = deciding
            .and_then(|name| {
                rules
                    .iter()
                    .position(|r| r.get("name").and_then(Item::as_str) == Some(name.as_str()))
            })
            .unwrap_or(rules.len());
        if let Some(deny) = rules
            .iter()
            .skip(index)
            .find(|r| could_meet(r, &grant.target))
        {
            let name = deny.get("name").and_then(Item::as_str).unwrap_or("?");
            return Err(format!(
                "not promoted: the deny rule `{}` below where the rule would go could meet what \
                 it allows, and would lose those calls to it: write the rule by hand",
                terminal_text(name)
            ));
        }
        index
    };
    let mut out = String::with_capacity(text.len() + rule.len() + 2);
    match headers.get(index) {
        Some(&(offset, line)) => {
            out.push_str(&text[..offset]);
            out.push_str(rule);
            out.push('\n');
            out.push_str(&text[offset..]);
            Ok((out, line))
        }
        None => {
            out.push_str(text);
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push('\n');
            let at = out.lines().count() + 1;
            out.push_str(rule);
            Ok((out, at))
        }
    }
}

/// Whether a rule of the file denies, and could meet a call an allow of `target` allows
/// (cautiously: a `builtin` deny, a deny on every subject, one on the same kind of resource —
/// for commands, one whose pattern may start with the same word).
fn could_meet(rule: &Table, target: &GrantTarget) -> bool {
    let decision = rule.get("decision").and_then(Item::as_str);
    let builtin = rule.get("builtin").and_then(Item::as_str);
    if decision != Some("deny") && builtin != Some("deny_privileged") {
        return false;
    }
    let kinds = ["command", "path", "domain", "scheme", "port", "address"];
    let resource = kinds.iter().find(|k| rule.contains_key(k));
    let Some(kind) = resource else {
        return true;
    };
    match target {
        GrantTarget::Tool => true,
        GrantTarget::Path { .. } => *kind == "path",
        GrantTarget::Domain { .. } => matches!(*kind, "domain" | "scheme" | "port" | "address"),
        GrantTarget::Command { prefix, .. } => {
            if *kind != "command" {
                return false;
            }
            let first = prefix.first().map(String::as_str).unwrap_or_default();
            let program = Path::new(first)
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or(first);
            // Every pattern's first word: a string's, or an array's (itself a word or a list
            // of alternatives).
            let mut firsts: Vec<String> = Vec::new();
            let item = rule.get("command");
            let values: Vec<&toml_edit::Value> = match item.and_then(Item::as_value) {
                Some(toml_edit::Value::Array(list)) => list.iter().collect(),
                Some(one) => vec![one],
                None => Vec::new(),
            };
            for pattern in values {
                match pattern {
                    toml_edit::Value::String(s) => {
                        firsts.push(s.value().split_whitespace().next().unwrap_or("").to_owned());
                    }
                    toml_edit::Value::Array(words) => match words.get(0) {
                        Some(toml_edit::Value::String(w)) => firsts.push(w.value().clone()),
                        Some(toml_edit::Value::Array(options)) => firsts
                            .extend(options.iter().filter_map(|o| o.as_str().map(str::to_owned))),
                        _ => firsts.push("*".to_owned()),
                    },
                    _ => firsts.push("*".to_owned()),
                }
            }
            firsts
                .iter()
                .any(|word| word == program || word == first || !plain(word) || word.is_empty())
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn lint_messages_are_compared_without_their_lines() {
        assert_eq!(
            without_lines("rule `a` never applies: rule `b` (line 21) matches (line x) first"),
            "rule `a` never applies: rule `b` matches (line x) first"
        );
    }

    #[test]
    fn json_becomes_toml_without_its_nulls() {
        let json = serde_json::json!({"a": 1, "b": null, "c": [true, null, "x"], "d": {"e": 1.5}});
        assert_eq!(
            toml_value(&json).unwrap().to_string(),
            "{ a = 1, c = [true, \"x\"], d = { e = 1.5 } }"
        );
    }
}
