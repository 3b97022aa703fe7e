//! Reading one policy file: TOML syntax, then every key checked against the policy language with
//! a diagnostic (file, line, column, caret, hint) for each problem found.
//!
//! The walker keeps going after an error so one run reports every problem in the file.

use std::ops::Range;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Number, Value};
use toml::Spanned;
use toml::de::{DeString, DeTable, DeValue};

use crate::call::{Call, Tag};
use crate::decision::{
    Access, AlwaysScope, Choice, Decision, GrantKind, Mode, Origin, UnknownVariant,
};
use crate::diagnostic::{Diagnostic, SourceFile};
use crate::duration;
use crate::matcher::{ArgCondition, ArgTest, CmpOp, NamePattern, NameSet, compile_glob};
use crate::profile::{Pointer, Profile, ProfileInfo};
use crate::resource::matchers::{
    CommandPattern, CommandSet, PathGlob, PathMatcher, PathSet, Resource, UrlConditions,
};
use crate::resource::url::{AddressClass, DomainPattern};
use crate::rule::{Builtin, Conditions, Example, ExampleInput, Rule, RuleInfo};
use crate::suggest;
use crate::taint::Restriction;

type Item<'i> = Spanned<DeValue<'i>>;
type Key<'i> = Spanned<DeString<'i>>;

/// The one policy-language version this build reads.
pub(crate) const VERSION: i64 = 1;

const TOP_KEYS: &[&str] = &[
    "version",
    "extends",
    "mode",
    "fallback",
    "custom_tags",
    "workspace",
    "approval",
    "network_turns",
    "taint",
    "tool",
    "rule",
];
const TOP_ALIASES: &[(&str, &str)] = &[
    ("rules", "rule"),
    ("tools", "tool"),
    ("profile", "tool"),
    ("profiles", "tool"),
    ("default", "fallback"),
    ("tags", "custom_tags"),
];
const WORKSPACE_KEYS: &[&str] = &["roots", "protected", "read", "scratch"];
const APPROVAL_KEYS: &[&str] = &["timeout", "choices", "scopes"];
const TAINT_KEYS: &[&str] = &[
    "enabled",
    "trusted_domains",
    "untrusted_paths",
    "read_outside",
    "restrict",
];
const PROFILE_KEYS: &[&str] = &[
    "match",
    "access",
    "paths",
    "patterns",
    "searched",
    "patches",
    "command",
    "command_args",
    "command_env",
    "cwd",
    "url",
    "options_guard",
    "optional",
];
const NETWORK_TURN_KEYS: &[&str] = &["commands"];
const RULE_KEYS: &[&str] = &[
    "name",
    "decision",
    "reason",
    "builtin",
    "tool",
    "tags",
    "annotations",
    "access",
    "args",
    "origin",
    "agent",
    "server",
    "examples",
    "choices",
    "timeout",
    "grant",
    "scopes",
    "sandbox",
    "path",
    "command",
    "domain",
    "scheme",
    "port",
    "address",
];
const RULE_ALIASES: &[(&str, &str)] = &[
    ("result", "decision"),
    ("action", "decision"),
    ("effect", "decision"),
    ("permission", "decision"),
    ("message", "reason"),
    ("description", "reason"),
    ("tools", "tool"),
    ("tool_name", "tool"),
    ("match", "tool"),
    ("tag", "tags"),
    ("arguments", "args"),
    ("params", "args"),
    ("parameters", "args"),
    ("example", "examples"),
    ("origins", "origin"),
    ("agents", "agent"),
    ("servers", "server"),
    ("paths", "path"),
    ("commands", "command"),
    ("domains", "domain"),
    ("host", "domain"),
    ("hosts", "domain"),
    ("url", "domain"),
    ("schemes", "scheme"),
    ("ports", "port"),
    ("addresses", "address"),
];
const EXAMPLE_KEYS: &[&str] = &["match", "not_match"];
const ARG_TEST_KEYS: &[&str] = &[
    "exists", "equals", "one_of", "glob", "regex", "lt", "le", "gt", "ge",
];
const ARG_TEST_ALIASES: &[(&str, &str)] = &[
    ("eq", "equals"),
    ("in", "one_of"),
    ("any_of", "one_of"),
    ("pattern", "regex"),
    ("matches", "regex"),
];

/// One parsed policy file, before it is merged with others.
#[derive(Debug)]
pub(crate) struct ParsedFile {
    pub(crate) source: SourceFile,
    pub(crate) mode: Option<Mode>,
    pub(crate) fallback: Option<Decision>,
    pub(crate) roots: Vec<String>,
    pub(crate) protected: Vec<String>,
    pub(crate) read_places: Vec<String>,
    pub(crate) scratch_places: Vec<String>,
    pub(crate) approval_timeout: Option<Duration>,
    pub(crate) approval_choices: Option<Vec<Choice>>,
    pub(crate) approval_scopes: Option<Vec<AlwaysScope>>,
    pub(crate) custom_tags: Vec<String>,
    pub(crate) network_commands: Vec<CommandPattern>,
    pub(crate) taint: crate::taint::TaintFile,
    pub(crate) profiles: Vec<Profile>,
    pub(crate) rules: Vec<Rule>,
    /// `extends = "default"`: the built-in policy is a layer under this file's.
    pub(crate) extends_default: bool,
}

/// Parses one policy file; every problem found is returned. With `compile_now`, its path globs
/// are compiled too (else on first use).
pub(crate) fn parse(source: SourceFile, compile_now: bool) -> Result<ParsedFile, Vec<Diagnostic>> {
    let text = source.text.clone();
    let root = match DeTable::parse(&text) {
        Ok(root) => root,
        Err(e) => {
            let span = e.span().unwrap_or(0..0);
            let message = e.message().trim_end_matches('.').to_owned();
            let message = lowercase_first(&message);
            return Err(vec![
                Diagnostic::error(&source, span, format!("invalid TOML: {message}"))
                    .with_hint(syntax_hint(&message)),
            ]);
        }
    };
    let mut walker = Walker {
        src: &source,
        diags: Vec::new(),
        compile_now,
    };
    let mut file = ParsedFile {
        source: source.clone(),
        mode: None,
        fallback: None,
        roots: Vec::new(),
        protected: Vec::new(),
        read_places: Vec::new(),
        scratch_places: Vec::new(),
        approval_timeout: None,
        approval_choices: None,
        approval_scopes: None,
        custom_tags: Vec::new(),
        network_commands: Vec::new(),
        taint: crate::taint::TaintFile::default(),
        profiles: Vec::new(),
        rules: Vec::new(),
        extends_default: false,
    };
    walker.top(root.get_ref(), &mut file);
    if walker.diags.is_empty() {
        Ok(file)
    } else {
        walker
            .diags
            .sort_by_key(|d| d.location.as_ref().map(|l| l.span.start));
        Err(walker.diags)
    }
}

fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn syntax_hint(message: &str) -> Option<String> {
    if message.contains("duplicate key") {
        Some(
            "each key may appear once per table; for several rules write one `[[rule]]` each"
                .into(),
        )
    } else if message.contains("must be quoted") || message.contains("invalid string") {
        Some("strings are written in double quotes: `decision = \"allow\"`".into())
    } else {
        None
    }
}

fn toml_type(value: &DeValue<'_>) -> &'static str {
    match value {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a date-time",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

/// A string with where it was written.
type Located = (String, Range<usize>);

/// Fields of a rule as read, before validation.
#[derive(Default)]
struct RawRule {
    name: Option<String>,
    decision: Option<Decision>,
    reason: Option<String>,
    builtin: Option<(Builtin, Range<usize>)>,
    when: Conditions,
    examples: Vec<(bool, ExampleInput, Range<usize>)>,
    paths: Option<PathSet>,
    commands: Option<CommandSet>,
    url: UrlConditions,
    url_keys: Vec<Range<usize>>,
    resource_keys: Vec<(String, Range<usize>)>,
    choices: Option<Vec<Choice>>,
    timeout: Option<Duration>,
    grant: Option<GrantKind>,
    scopes: Option<Vec<AlwaysScope>>,
    /// `sandbox = false`: the commands it allows run outside the kernel sandbox; with where
    /// it was written.
    sandbox: Option<(bool, Range<usize>)>,
    /// Keys other than `builtin` and `examples`, with their spans (for the builtin check).
    plain_keys: Vec<(String, Range<usize>)>,
}

struct Walker<'s> {
    src: &'s SourceFile,
    diags: Vec<Diagnostic>,
    /// Compile path globs now (their errors reported at their place), not on first use.
    compile_now: bool,
}

impl Walker<'_> {
    fn error(&mut self, span: Range<usize>, message: impl Into<String>) {
        self.diags
            .push(Diagnostic::error(self.src, span, message.into()));
    }

    fn error_hint(
        &mut self,
        span: Range<usize>,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) {
        self.diags
            .push(Diagnostic::error(self.src, span, message.into()).with_hint(Some(hint.into())));
    }

    fn unknown_key(
        &mut self,
        key: &Key<'_>,
        known: &[&str],
        aliases: &[(&str, &str)],
        place: &str,
    ) {
        let name = key.get_ref().as_ref();
        let suggestion = aliases
            .iter()
            .find(|(alias, _)| *alias == name)
            .map(|(_, to)| *to)
            .or_else(|| suggest::closest(name, known));
        let top_level = place != "the policy" && TOP_KEYS.contains(&name);
        let hint = match suggestion {
            _ if top_level => format!(
                "`{name}` is a top-level key, but TOML puts every key after a `[header]` into that table: move it above the first header"
            ),
            Some(s) => format!("did you mean `{s}`?"),
            None => {
                let mut list = String::from("expected ");
                let _ = crate::decision::write_alternatives(&mut list, known);
                list
            }
        };
        self.error_hint(key.span(), format!("unknown key `{name}` in {place}"), hint);
    }

    fn type_error(&mut self, item: &Item<'_>, key: &str, expected: &str) {
        self.error(
            item.span(),
            format!(
                "`{key}` must be {expected}, got {}",
                toml_type(item.get_ref())
            ),
        );
    }

    fn string<'a>(&mut self, item: &'a Item<'_>, key: &str) -> Option<&'a str> {
        match item.get_ref() {
            DeValue::String(s) => Some(s.as_ref()),
            _ => {
                self.type_error(item, key, "a string");
                None
            }
        }
    }

    fn nonempty_string(&mut self, item: &Item<'_>, key: &str) -> Option<String> {
        let text = self.string(item, key)?;
        if text.trim().is_empty() {
            self.error(item.span(), format!("`{key}` cannot be empty"));
            return None;
        }
        Some(text.to_owned())
    }

    fn boolean(&mut self, item: &Item<'_>, key: &str) -> Option<bool> {
        match item.get_ref() {
            DeValue::Boolean(b) => Some(*b),
            _ => {
                self.type_error(item, key, "a boolean");
                None
            }
        }
    }

    fn table<'a, 'i>(&mut self, item: &'a Item<'i>, key: &str) -> Option<&'a DeTable<'i>> {
        match item.get_ref() {
            DeValue::Table(t) => Some(t),
            _ => {
                self.type_error(item, key, "a table");
                None
            }
        }
    }

    /// A string or an array of strings; never empty.
    fn strings(&mut self, item: &Item<'_>, key: &str) -> Option<Vec<Located>> {
        match item.get_ref() {
            DeValue::String(s) => Some(vec![(s.to_string(), item.span())]),
            DeValue::Array(items) => {
                if items.is_empty() {
                    self.error_hint(
                        item.span(),
                        format!("`{key}` cannot be an empty list"),
                        "an empty list matches nothing; remove the key or add a value",
                    );
                    return None;
                }
                let mut out = Vec::with_capacity(items.len());
                let mut ok = true;
                for element in items {
                    match element.get_ref() {
                        DeValue::String(s) => out.push((s.to_string(), element.span())),
                        other => {
                            self.error(
                                element.span(),
                                format!(
                                    "`{key}` entries must be strings, got {}",
                                    toml_type(other)
                                ),
                            );
                            ok = false;
                        }
                    }
                }
                ok.then_some(out)
            }
            _ => {
                self.type_error(item, key, "a string or an array of strings");
                None
            }
        }
    }

    fn parse_enum<T: FromStr<Err = UnknownVariant>>(
        &mut self,
        text: &str,
        span: Range<usize>,
    ) -> Option<T> {
        match text.parse::<T>() {
            Ok(v) => Some(v),
            Err(e) => {
                let hint =
                    suggest::closest(text, e.expected).map(|s| format!("did you mean `{s}`?"));
                self.diags
                    .push(Diagnostic::error(self.src, span, e.to_string()).with_hint(hint));
                None
            }
        }
    }

    fn one_enum<T: FromStr<Err = UnknownVariant>>(
        &mut self,
        item: &Item<'_>,
        key: &str,
    ) -> Option<T> {
        let text = self.string(item, key)?;
        self.parse_enum(text, item.span())
    }

    fn enums<T: FromStr<Err = UnknownVariant> + PartialEq>(
        &mut self,
        item: &Item<'_>,
        key: &str,
    ) -> Option<Vec<T>> {
        let texts = self.strings(item, key)?;
        let mut out = Vec::with_capacity(texts.len());
        let mut ok = true;
        for (text, span) in texts {
            match self.parse_enum::<T>(&text, span.clone()) {
                Some(v) if out.contains(&v) => {
                    self.error(span, format!("`{text}` is listed twice in `{key}`"));
                    ok = false;
                }
                Some(v) => out.push(v),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    fn name_set(&mut self, item: &Item<'_>, key: &str) -> Option<NameSet> {
        let texts = self.strings(item, key)?;
        let mut patterns = Vec::with_capacity(texts.len());
        let mut ok = true;
        for (text, span) in texts {
            match NamePattern::new(&text) {
                Ok(p) => patterns.push(p),
                Err(e) => {
                    self.error(span, format!("`{key}` pattern `{text}`: {e}"));
                    ok = false;
                }
            }
        }
        ok.then_some(NameSet { patterns })
    }

    fn duration(&mut self, item: &Item<'_>, key: &str) -> Option<Duration> {
        let text = self.string(item, key)?;
        match duration::parse(text) {
            Ok(d) => Some(d),
            Err(e) => {
                self.error_hint(
                    item.span(),
                    format!("invalid `{key}`: {e}"),
                    "write e.g. `\"30s\"`, `\"5m\"` or `\"1h\"`",
                );
                None
            }
        }
    }

    fn choices(&mut self, item: &Item<'_>, key: &str) -> Option<Vec<Choice>> {
        let choices = self.enums::<Choice>(item, key)?;
        if !choices.iter().any(|c| c.allows()) {
            self.error_hint(
                item.span(),
                format!("`{key}` offers no way to allow the call"),
                "add `allow-once`; a rule that never allows should say `decision = \"deny\"`",
            );
            return None;
        }
        if choices.iter().all(|c| c.allows()) {
            self.error_hint(
                item.span(),
                format!("`{key}` offers no way to refuse the call"),
                "add `reject-once`: a person must always be able to say no",
            );
            return None;
        }
        Some(choices)
    }

    /// A TOML value as JSON (dates and non-finite floats have no JSON form).
    fn json(&mut self, item: &Item<'_>) -> Option<Value> {
        match item.get_ref() {
            DeValue::String(s) => Some(Value::String(s.to_string())),
            DeValue::Integer(i) => match i64::from_str_radix(i.as_str(), i.radix()) {
                Ok(n) => Some(Value::Number(n.into())),
                Err(_) => {
                    self.error(item.span(), "integer out of range");
                    None
                }
            },
            DeValue::Float(f) => match f.as_str().parse::<f64>().ok().and_then(Number::from_f64) {
                Some(n) => Some(Value::Number(n)),
                None => {
                    self.error(item.span(), "`inf` and `nan` have no JSON form");
                    None
                }
            },
            DeValue::Boolean(b) => Some(Value::Bool(*b)),
            DeValue::Datetime(_) => {
                self.error_hint(
                    item.span(),
                    "date-times have no JSON form",
                    "write the date as a string",
                );
                None
            }
            DeValue::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                let mut ok = true;
                for element in items {
                    match self.json(element) {
                        Some(v) => out.push(v),
                        None => ok = false,
                    }
                }
                ok.then_some(Value::Array(out))
            }
            DeValue::Table(table) => {
                let mut out = Map::new();
                let mut ok = true;
                for (k, v) in table.iter() {
                    match self.json(v) {
                        Some(v) => {
                            out.insert(k.get_ref().to_string(), v);
                        }
                        None => ok = false,
                    }
                }
                ok.then_some(Value::Object(out))
            }
        }
    }

    fn top(&mut self, root: &DeTable<'_>, file: &mut ParsedFile) {
        for (key, item) in root.iter() {
            match key.get_ref().as_ref() {
                "version" => self.version(item),
                "mode" => {
                    if let Some(text) = self.string(item, "mode") {
                        match Mode::parse(text) {
                            Ok(mode) => file.mode = Some(mode),
                            Err(e) => {
                                let hint = suggest::closest(text, e.expected)
                                    .map(|s| format!("did you mean `{s}`?"));
                                self.diags.push(
                                    Diagnostic::error(self.src, item.span(), e.to_string())
                                        .with_hint(hint),
                                );
                            }
                        }
                    }
                }
                "fallback" => file.fallback = self.one_enum(item, "fallback"),
                "extends" => {
                    if let Some(text) = self.string(item, "extends") {
                        if text == "default" {
                            file.extends_default = true;
                        } else {
                            self.error_hint(
                                item.span(),
                                format!("`extends = \"{text}\"`: a policy extends only the built-in one"),
                                "write `extends = \"default\"` (see `toolgate policy show-default`), or leave it out to replace it",
                            );
                        }
                    }
                }
                "custom_tags" => self.custom_tags(item, file),
                "workspace" => self.workspace(item, file),
                "approval" => self.approval(item, file),
                "network_turns" => self.network_turns(item, file),
                "taint" => self.taint(item, file),
                "tool" => {
                    for entry in self.array_of_tables(key, item, "tool") {
                        if let Some(profile) = self.profile(entry) {
                            file.profiles.push(profile);
                        }
                    }
                }
                "rule" => {
                    for entry in self.array_of_tables(key, item, "rule") {
                        if let Some(rule) = self.rule(entry) {
                            file.rules.push(rule);
                        }
                    }
                }
                _ => self.unknown_key(key, TOP_KEYS, TOP_ALIASES, "the policy"),
            }
        }
    }

    fn version(&mut self, item: &Item<'_>) {
        match item.get_ref() {
            DeValue::Integer(i) => {
                if i64::from_str_radix(i.as_str(), i.radix()) != Ok(VERSION) {
                    self.error_hint(
                        item.span(),
                        format!("unsupported policy version `{}`", i.as_str()),
                        format!("this toolgate reads `version = {VERSION}`"),
                    );
                }
            }
            _ => self.type_error(item, "version", "an integer"),
        }
    }

    fn custom_tags(&mut self, item: &Item<'_>, file: &mut ParsedFile) {
        let Some(tags) = self.strings(item, "custom_tags") else {
            return;
        };
        for (tag, span) in tags {
            if Tag::parse(&tag).is_builtin() {
                self.error_hint(
                    span,
                    format!("`{tag}` is a built-in tag"),
                    "list only your own tags in `custom_tags`",
                );
            } else if tag.is_empty() {
                self.error(span, "a tag cannot be empty");
            } else {
                file.custom_tags.push(tag);
            }
        }
    }

    fn workspace(&mut self, item: &Item<'_>, file: &mut ParsedFile) {
        let Some(table) = self.table(item, "workspace") else {
            return;
        };
        for (key, item) in table.iter() {
            match key.get_ref().as_ref() {
                "roots" => {
                    for (root, span) in self.strings(item, "roots").unwrap_or_default() {
                        if root.trim().is_empty() || root.contains('\0') {
                            self.error(span, "a workspace root cannot be empty or contain NUL");
                        } else {
                            file.roots.push(root);
                        }
                    }
                }
                "protected" => {
                    for (glob, span) in self.strings(item, "protected").unwrap_or_default() {
                        match compile_glob(&glob) {
                            Ok(_) => file.protected.push(glob),
                            Err(e) => {
                                self.error(span, format!("`protected` pattern `{glob}`: {e}"))
                            }
                        }
                    }
                }
                which @ ("read" | "scratch") => {
                    for (place, span) in self.strings(item, which).unwrap_or_default() {
                        let absolute = place.starts_with('/')
                            || place.starts_with("~/")
                            || place.starts_with("$TMPDIR");
                        if !absolute {
                            self.error(
                                span,
                                format!(
                                    "`{which}` place `{place}` is not absolute: write it from `/` or `~/`"
                                ),
                            );
                            continue;
                        }
                        match compile_glob(&place) {
                            Ok(_) if which == "read" => file.read_places.push(place),
                            Ok(_) => file.scratch_places.push(place),
                            Err(e) => self.error(span, format!("`{which}` place `{place}`: {e}")),
                        }
                    }
                }
                _ => self.unknown_key(
                    key,
                    WORKSPACE_KEYS,
                    &[("root", "roots"), ("readonly", "read"), ("tmp", "scratch")],
                    "`[workspace]`",
                ),
            }
        }
    }

    fn network_turns(&mut self, item: &Item<'_>, file: &mut ParsedFile) {
        let Some(table) = self.table(item, "network_turns") else {
            return;
        };
        for (key, item) in table.iter() {
            match key.get_ref().as_ref() {
                "commands" => {
                    if let Some(set) = self.command_set(item, "commands") {
                        file.network_commands.extend(set.patterns);
                    }
                }
                _ => self.unknown_key(
                    key,
                    NETWORK_TURN_KEYS,
                    &[("command", "commands")],
                    "`[network_turns]`",
                ),
            }
        }
    }

    fn taint(&mut self, item: &Item<'_>, file: &mut ParsedFile) {
        let Some(table) = self.table(item, "taint") else {
            return;
        };
        for (key, item) in table.iter() {
            match key.get_ref().as_ref() {
                "enabled" => file.taint.enabled = self.boolean(item, "enabled"),
                "read_outside" => file.taint.read_outside = self.boolean(item, "read_outside"),
                "restrict" => file.taint.restrict = self.enums::<Restriction>(item, "restrict"),
                "trusted_domains" => {
                    for (text, span) in self.strings(item, "trusted_domains").unwrap_or_default() {
                        match DomainPattern::new(&text) {
                            Ok(_) => file.taint.trusted_domains.push(text),
                            Err(e) => self.error(span, format!("`trusted_domains`: {e}")),
                        }
                    }
                }
                "untrusted_paths" => {
                    for (glob, span) in self.strings(item, "untrusted_paths").unwrap_or_default() {
                        let placed = glob.starts_with('/')
                            || glob.starts_with("~/")
                            || glob.starts_with("**/");
                        if !placed {
                            self.error_hint(
                                span,
                                format!("`untrusted_paths` pattern `{glob}` says no place"),
                                "write it from `/` or `~/`, or from `**/` for a folder anywhere (`**/node_modules/**`)",
                            );
                            continue;
                        }
                        match compile_glob(&glob) {
                            Ok(_) => file.taint.untrusted_paths.push(glob),
                            Err(e) => {
                                self.error(span, format!("`untrusted_paths` pattern `{glob}`: {e}"))
                            }
                        }
                    }
                }
                _ => self.unknown_key(
                    key,
                    TAINT_KEYS,
                    &[
                        ("trusted", "trusted_domains"),
                        ("domains", "trusted_domains"),
                        ("untrusted", "untrusted_paths"),
                        ("restricts", "restrict"),
                        ("enable", "enabled"),
                    ],
                    "`[taint]`",
                ),
            }
        }
    }

    /// `command = [...]`: strings are whole patterns (`"git status"`), arrays are words whose
    /// items may be arrays of alternatives (`["git", ["log", "show"]]`).
    fn command_set(&mut self, item: &Item<'_>, key: &str) -> Option<CommandSet> {
        let entries: Vec<&Item<'_>> = match item.get_ref() {
            DeValue::String(_) => vec![item],
            DeValue::Array(items) if !items.is_empty() => items.iter().collect(),
            DeValue::Array(_) => {
                self.error_hint(
                    item.span(),
                    format!("`{key}` cannot be an empty list"),
                    "an empty list matches nothing; remove the key or add a pattern",
                );
                return None;
            }
            other => {
                self.error(
                    item.span(),
                    format!(
                        "`{key}` must be a string or an array, got {}",
                        toml_type(other)
                    ),
                );
                return None;
            }
        };
        let mut patterns = Vec::new();
        let mut ok = true;
        for entry in entries {
            let parsed = match entry.get_ref() {
                DeValue::String(text) => CommandPattern::parse(text),
                DeValue::Array(words) => {
                    let mut tokens = Vec::new();
                    for word in words {
                        match word.get_ref() {
                            DeValue::String(w) => tokens.push(vec![w.to_string()]),
                            DeValue::Array(alts) => {
                                let options: Option<Vec<String>> = alts
                                    .iter()
                                    .map(|a| match a.get_ref() {
                                        DeValue::String(t) => Some(t.to_string()),
                                        _ => None,
                                    })
                                    .collect();
                                match options {
                                    Some(o) if !o.is_empty() => tokens.push(o),
                                    _ => {
                                        self.error(
                                            word.span(),
                                            "alternatives must be a non-empty array of strings",
                                        );
                                        ok = false;
                                    }
                                }
                            }
                            other => {
                                self.error(word.span(), format!("a command word must be a string or an array of strings, got {}", toml_type(other)));
                                ok = false;
                            }
                        }
                    }
                    CommandPattern::from_tokens(tokens)
                }
                other => Err(format!(
                    "a command pattern must be a string or an array of words, got {}",
                    toml_type(other)
                )),
            };
            match parsed {
                Ok(p) => patterns.push(p),
                Err(e) => {
                    self.error(entry.span(), format!("`{key}` pattern: {e}"));
                    ok = false;
                }
            }
        }
        ok.then_some(CommandSet { patterns })
    }

    fn path_set(&mut self, item: &Item<'_>) -> Option<PathSet> {
        let texts = self.strings(item, "path")?;
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        let mut globs = Vec::new();
        let mut ok = true;
        for (text, span) in texts {
            let glob = if self.compile_now {
                PathGlob::new(&text, home.as_deref())
            } else {
                PathGlob::unchecked(&text, home.as_deref())
            };
            match glob {
                Ok(g) => globs.push(g),
                Err(e) => {
                    self.error(span, format!("`path` pattern `{text}`: {e}"));
                    ok = false;
                }
            }
        }
        if !ok {
            return None;
        }
        let matcher = PathMatcher::new(globs);
        if self.compile_now
            && let Err(e) = matcher.compile()
        {
            self.error(item.span(), format!("`path`: {e}"));
            return None;
        }
        Some(PathSet { matcher })
    }

    fn domains(&mut self, item: &Item<'_>) -> Option<Vec<DomainPattern>> {
        let texts = self.strings(item, "domain")?;
        let mut out = Vec::new();
        let mut ok = true;
        for (text, span) in texts {
            match DomainPattern::new(&text) {
                Ok(d) => out.push(d),
                Err(e) => {
                    self.error(span, e);
                    ok = false;
                }
            }
        }
        ok.then_some(out)
    }

    fn schemes(&mut self, item: &Item<'_>) -> Option<Vec<String>> {
        let texts = self.strings(item, "scheme")?;
        let mut out = Vec::new();
        let mut ok = true;
        for (text, span) in texts {
            let valid = text.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && text
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
            if valid {
                out.push(text.to_ascii_lowercase());
            } else {
                self.error_hint(
                    span,
                    format!("`{text}` is not a URL scheme"),
                    "write it without `://`, e.g. `\"https\"`",
                );
                ok = false;
            }
        }
        ok.then_some(out)
    }

    fn ports(&mut self, item: &Item<'_>) -> Option<Vec<u16>> {
        let items: Vec<&Item<'_>> = match item.get_ref() {
            DeValue::Integer(_) => vec![item],
            DeValue::Array(list) if !list.is_empty() => list.iter().collect(),
            _ => {
                self.type_error(item, "port", "a port number or a non-empty array of them");
                return None;
            }
        };
        let mut out = Vec::new();
        let mut ok = true;
        for entry in items {
            let port = match entry.get_ref() {
                DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix())
                    .ok()
                    .and_then(|n| u16::try_from(n).ok()),
                _ => None,
            };
            match port {
                Some(p) => out.push(p),
                None => {
                    self.error(entry.span(), "a port is a number from 0 to 65535");
                    ok = false;
                }
            }
        }
        ok.then_some(out)
    }

    fn pointers(&mut self, item: &Item<'_>, key: &str) -> Option<Vec<Pointer>> {
        let texts = self.strings(item, key)?;
        let mut out = Vec::new();
        let mut ok = true;
        for (text, span) in texts {
            match Pointer::new(&text) {
                Ok(p) => out.push(p),
                Err(e) => {
                    self.error(span, format!("`{key}`: {e}"));
                    ok = false;
                }
            }
        }
        ok.then_some(out)
    }

    fn approval(&mut self, item: &Item<'_>, file: &mut ParsedFile) {
        let Some(table) = self.table(item, "approval") else {
            return;
        };
        for (key, item) in table.iter() {
            match key.get_ref().as_ref() {
                "timeout" => file.approval_timeout = self.duration(item, "timeout"),
                "choices" => file.approval_choices = self.choices(item, "choices"),
                "scopes" => file.approval_scopes = self.enums::<AlwaysScope>(item, "scopes"),
                _ => self.unknown_key(
                    key,
                    APPROVAL_KEYS,
                    &[("options", "choices")],
                    "`[approval]`",
                ),
            }
        }
    }

    /// The entries of an array of tables, reporting a plain table or any other value.
    fn array_of_tables<'a, 'i>(
        &mut self,
        key: &Key<'_>,
        item: &'a Item<'i>,
        name: &str,
    ) -> Vec<&'a Item<'i>> {
        match item.get_ref() {
            DeValue::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for entry in items {
                    if matches!(entry.get_ref(), DeValue::Table(_)) {
                        out.push(entry);
                    } else {
                        self.error_hint(
                            entry.span(),
                            format!(
                                "each `{name}` must be a table, got {}",
                                toml_type(entry.get_ref())
                            ),
                            format!("write each one under its own `[[{name}]]` header"),
                        );
                    }
                }
                out
            }
            DeValue::Table(_) => {
                self.error_hint(
                    key.span(),
                    format!("`{name}` must be an array of tables"),
                    format!("write `[[{name}]]` instead of `[{name}]`"),
                );
                Vec::new()
            }
            other => {
                self.error_hint(
                    item.span(),
                    format!(
                        "`{name}` must be an array of tables, got {}",
                        toml_type(other)
                    ),
                    format!("write each one under its own `[[{name}]]` header"),
                );
                Vec::new()
            }
        }
    }

    fn profile(&mut self, entry: &Item<'_>) -> Option<Profile> {
        let table = self.table(entry, "tool")?;
        let before = self.diags.len();
        let mut matcher = None;
        let mut match_texts = Vec::new();
        let mut access = None;
        let (mut paths, mut patterns, mut searched, mut cwd, mut urls) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut patches = Vec::new();
        let (mut command, mut command_args, mut command_env, mut options_guard) =
            (None, None, None, false);
        let mut optional = false;
        let single = |w: &mut Self, item: &Item<'_>, key: &str| -> Option<Pointer> {
            let text = w.string(item, key)?;
            match Pointer::new(text) {
                Ok(p) => Some(p),
                Err(e) => {
                    w.error(item.span(), format!("`{key}`: {e}"));
                    None
                }
            }
        };
        for (key, item) in table.iter() {
            match key.get_ref().as_ref() {
                "match" => {
                    matcher = self.name_set(item, "match");
                    if let Some(set) = &matcher {
                        match_texts = set.patterns.iter().map(|p| p.text().to_owned()).collect();
                    }
                }
                "access" => access = self.one_enum::<Access>(item, "access"),
                "paths" => paths = self.pointers(item, "paths").unwrap_or_default(),
                "patterns" => patterns = self.pointers(item, "patterns").unwrap_or_default(),
                "searched" => searched = self.pointers(item, "searched").unwrap_or_default(),
                "patches" => patches = self.pointers(item, "patches").unwrap_or_default(),
                "cwd" => cwd = self.pointers(item, "cwd").unwrap_or_default(),
                "url" => urls = self.pointers(item, "url").unwrap_or_default(),
                "command" => command = single(self, item, "command"),
                "command_args" => command_args = single(self, item, "command_args"),
                "command_env" => command_env = single(self, item, "command_env"),
                "options_guard" => {
                    options_guard = self.boolean(item, "options_guard").unwrap_or(false)
                }
                "optional" => optional = self.boolean(item, "optional").unwrap_or(false),
                _ => self.unknown_key(
                    key,
                    PROFILE_KEYS,
                    &[
                        ("tool", "match"),
                        ("name", "match"),
                        ("path", "paths"),
                        ("urls", "url"),
                        ("args", "command_args"),
                        ("env", "command_env"),
                    ],
                    "a tool profile",
                ),
            }
        }
        if matcher.is_none() && self.diags.len() == before {
            self.error_hint(
                entry.span(),
                "a tool profile needs `match`",
                "add `match = \"tool_name\"` (a glob over tool names)",
            );
        }
        if access.is_none() && self.diags.len() == before {
            self.error_hint(
                entry.span(),
                "a tool profile needs `access`",
                "add `access = \"read\"`, `\"write\"`, `\"execute\"` or `\"network\"`",
            );
        }
        if command_args.is_some() && command.is_none() && self.diags.len() == before {
            self.error_hint(
                entry.span(),
                "`command_args` needs `command`",
                "`command` names the program, `command_args` the rest of the argv",
            );
        }
        if command_env.is_some() && command.is_none() && self.diags.len() == before {
            self.error_hint(
                entry.span(),
                "`command_env` needs `command`",
                "`command` names the program, `command_env` the variables it runs with",
            );
        }
        if self.diags.len() > before {
            return None;
        }
        let location = self.src.location(entry.span());
        Some(Profile {
            info: Arc::new(ProfileInfo {
                matches: match_texts,
                file: Some(self.src.name.clone()),
                line: Some(location.line),
                family: None,
            }),
            matcher: matcher?,
            access,
            paths,
            patterns,
            searched,
            patches,
            command,
            command_args,
            command_env,
            cwd,
            urls,
            url_texts: Vec::new(),
            revisions: Vec::new(),
            options_guard,
            optional,
        })
    }

    fn rule(&mut self, entry: &Item<'_>) -> Option<Rule> {
        let table = self.table(entry, "rule")?;
        let before = self.diags.len();
        let mut raw = RawRule::default();
        for (key, item) in table.iter() {
            let name = key.get_ref().as_ref();
            if name != "builtin" && name != "examples" {
                raw.plain_keys.push((name.to_owned(), key.span()));
            }
            match name {
                "name" => raw.name = self.nonempty_string(item, "name"),
                "decision" => raw.decision = self.one_enum(item, "decision"),
                "reason" => raw.reason = self.string(item, "reason").map(str::to_owned),
                "builtin" => {
                    raw.builtin = self.one_enum(item, "builtin").map(|b| (b, item.span()));
                }
                "tool" => raw.when.tool = self.name_set(item, "tool"),
                "tags" => {
                    raw.when.tags = self
                        .strings(item, "tags")
                        .map(|tags| tags.iter().map(|(t, _)| Tag::parse(t)).collect());
                }
                "annotations" => raw.when.annotations = self.annotations(item),
                "access" => raw.when.access = self.enums::<Access>(item, "access"),
                "args" => raw.when.args = self.args(item).unwrap_or_default(),
                "origin" => raw.when.origin = self.enums::<Origin>(item, "origin"),
                "agent" => raw.when.agent = self.name_set(item, "agent"),
                "server" => raw.when.server = self.name_set(item, "server"),
                "examples" => self.examples(item, &mut raw),
                "choices" => raw.choices = self.choices(item, "choices"),
                "timeout" => raw.timeout = self.duration(item, "timeout"),
                "grant" => raw.grant = self.one_enum(item, "grant"),
                "scopes" => raw.scopes = self.enums::<AlwaysScope>(item, "scopes"),
                "sandbox" => {
                    raw.sandbox = self.boolean(item, "sandbox").map(|b| (b, item.span()));
                }
                "path" => {
                    raw.resource_keys.push(("path".into(), key.span()));
                    raw.paths = self.path_set(item);
                }
                "command" => {
                    raw.resource_keys.push(("command".into(), key.span()));
                    raw.commands = self.command_set(item, "command");
                }
                "domain" => {
                    raw.url_keys.push(key.span());
                    raw.url.domains = self.domains(item);
                }
                "scheme" => {
                    raw.url_keys.push(key.span());
                    raw.url.schemes = self.schemes(item);
                }
                "port" => {
                    raw.url_keys.push(key.span());
                    raw.url.ports = self.ports(item);
                }
                "address" => {
                    raw.url_keys.push(key.span());
                    raw.url.addresses = self.enums::<AddressClass>(item, "address");
                }
                _ => self.unknown_key(key, RULE_KEYS, RULE_ALIASES, "a rule"),
            }
        }
        let location = self.src.location(entry.span());
        if let Some(first) = raw.url_keys.first() {
            raw.resource_keys
                .push(("domain, scheme, port or address".into(), first.clone()));
        }
        if let Some((_, span)) = raw.resource_keys.get(1) {
            let kinds: Vec<String> = raw
                .resource_keys
                .iter()
                .map(|(k, _)| format!("`{k}`"))
                .collect();
            self.error_hint(
                span.clone(),
                format!(
                    "a rule holds one kind of resource condition, this one has {}",
                    kinds.join(" and ")
                ),
                "a subject is one path, one command or one URL: split it into one rule per kind",
            );
        }
        raw.when.resource = match (raw.paths.take(), raw.commands.take()) {
            (Some(p), _) => Some(Resource::Path(p)),
            (None, Some(c)) => Some(Resource::Command(c)),
            (None, None) if !raw.url_keys.is_empty() => {
                Some(Resource::Url(std::mem::take(&mut raw.url)))
            }
            (None, None) => None,
        };
        if raw.when.resource.is_none() {
            for (_, input, span) in &raw.examples {
                if matches!(input, ExampleInput::Text(_)) {
                    self.error_hint(
                        span.clone(),
                        "a string example needs a `path`, `command` or `domain` condition in its rule",
                        "write the example as a call: `{ tool = \"name\", args = { … } }`",
                    );
                }
            }
        }
        if let Some((builtin, _)) = raw.builtin {
            for (key, span) in &raw.plain_keys {
                if !matches!(key.as_str(), "choices" | "timeout" | "grant" | "scopes") {
                    self.error_hint(
                        span.clone(),
                        format!("a `builtin` rule cannot set `{key}`"),
                        format!(
                            "`{}` has a fixed name, decision, reason and condition; write a rule of your own to change them",
                            builtin.as_str()
                        ),
                    );
                }
            }
        } else if raw.decision.is_none() && self.diags.len() == before {
            self.error_hint(
                entry.span(),
                "a rule needs a `decision`",
                "add `decision = \"allow\"`, `\"ask\"` or `\"deny\"`, or `builtin = \"…\"`",
            );
        }
        if self.diags.len() > before {
            return None;
        }
        let file = self.src.name.clone();
        let mut rule = match raw.builtin {
            Some((builtin, _)) => Rule::builtin(builtin),
            None => {
                let name = raw
                    .name
                    .unwrap_or_else(|| format!("{file}:{}", location.line));
                let reason = raw
                    .reason
                    .unwrap_or_else(|| format!("matched rule `{name}`"));
                Rule {
                    info: Arc::new(RuleInfo {
                        name,
                        file: None,
                        line: None,
                        builtin: false,
                        unsandboxed: false,
                    }),
                    decision: raw.decision?,
                    reason: reason.into(),
                    when: raw.when,
                    choices: None,
                    timeout: None,
                    grant: None,
                    scopes: None,
                    examples: Vec::new(),
                    location: None,
                }
            }
        };
        let mut info = (*rule.info).clone();
        info.file = Some(file);
        info.line = Some(location.line);
        if let Some((sandboxed, span)) = raw.sandbox {
            if !sandboxed && rule.decision != Decision::Allow {
                self.error_hint(
                    span,
                    "`sandbox = false` is for a rule that allows",
                    "only what a rule allows runs, inside the sandbox or not: drop the key, or \
                     make the rule `decision = \"allow\"`",
                );
            }
            info.unsandboxed = !sandboxed;
        }
        rule.info = Arc::new(info);
        rule.choices = raw.choices.map(Into::into);
        rule.timeout = raw.timeout;
        rule.grant = raw.grant;
        rule.scopes = raw.scopes.map(Into::into);
        rule.examples = raw
            .examples
            .into_iter()
            .map(|(should_match, input, span)| Example {
                should_match,
                input,
                location: Some(self.src.location(span)),
            })
            .collect();
        rule.location = Some(location);
        Some(rule)
    }

    fn annotations(&mut self, item: &Item<'_>) -> Option<Vec<(String, Value)>> {
        let table = self.table(item, "annotations")?;
        if table.is_empty() {
            self.error(item.span(), "`annotations` cannot be empty");
            return None;
        }
        let mut out = Vec::with_capacity(table.len());
        for (key, value) in table.iter() {
            out.push((key.get_ref().to_string(), self.json(value)?));
        }
        Some(out)
    }

    fn args(&mut self, item: &Item<'_>) -> Option<Vec<ArgCondition>> {
        let table = self.table(item, "args")?;
        if table.is_empty() {
            self.error(item.span(), "`args` cannot be empty");
            return None;
        }
        let mut out = Vec::with_capacity(table.len());
        let mut ok = true;
        for (key, tests) in table.iter() {
            let pointer = key.get_ref().as_ref();
            if let Err((message, hint)) = check_pointer(pointer) {
                self.error_hint(key.span(), message, hint);
                ok = false;
                continue;
            }
            let Some(tests) = self.arg_tests(pointer, tests) else {
                ok = false;
                continue;
            };
            out.push(ArgCondition {
                pointer: pointer.to_owned(),
                tests,
            });
        }
        ok.then_some(out)
    }

    fn arg_tests(&mut self, pointer: &str, item: &Item<'_>) -> Option<Vec<ArgTest>> {
        let DeValue::Table(table) = item.get_ref() else {
            self.error_hint(
                item.span(),
                format!(
                    "argument `{pointer}` needs a table of tests, got {}",
                    toml_type(item.get_ref())
                ),
                "write e.g. `{ equals = \"main\" }`, `{ lt = 100 }` or `{ glob = \"*.rs\" }`",
            );
            return None;
        };
        if table.is_empty() {
            self.error_hint(
                item.span(),
                format!("argument `{pointer}` has no tests"),
                "write e.g. `{ exists = true }`",
            );
            return None;
        }
        let mut tests = Vec::with_capacity(table.len());
        let mut ok = true;
        for (key, value) in table.iter() {
            let name = key.get_ref().as_ref();
            let test = match name {
                "exists" => self.boolean(value, "exists").map(ArgTest::Exists),
                "equals" => self.json(value).map(ArgTest::Equals),
                "one_of" => match value.get_ref() {
                    DeValue::Array(items) if !items.is_empty() => {
                        self.json(value).and_then(|v| match v {
                            Value::Array(values) => Some(ArgTest::OneOf(values)),
                            _ => None,
                        })
                    }
                    DeValue::Array(_) => {
                        self.error(value.span(), "`one_of` cannot be an empty list");
                        None
                    }
                    _ => {
                        self.type_error(value, "one_of", "an array");
                        None
                    }
                },
                "glob" => self
                    .string(value, "glob")
                    .and_then(|g| match ArgTest::glob(g) {
                        Ok(t) => Some(t),
                        Err(e) => {
                            self.error(value.span(), e);
                            None
                        }
                    }),
                "regex" => self
                    .string(value, "regex")
                    .and_then(|r| match ArgTest::regex(r) {
                        Ok(t) => Some(t),
                        Err(e) => {
                            self.error(value.span(), e);
                            None
                        }
                    }),
                "lt" | "le" | "gt" | "ge" => {
                    let op = match name {
                        "lt" => CmpOp::Lt,
                        "le" => CmpOp::Le,
                        "gt" => CmpOp::Gt,
                        _ => CmpOp::Ge,
                    };
                    match value.get_ref() {
                        DeValue::Integer(_) | DeValue::Float(_) => match self.json(value) {
                            Some(Value::Number(n)) => Some(ArgTest::Compare(op, n)),
                            _ => None,
                        },
                        _ => {
                            self.type_error(value, name, "a number");
                            None
                        }
                    }
                }
                _ => {
                    self.unknown_key(key, ARG_TEST_KEYS, ARG_TEST_ALIASES, "an argument test");
                    None
                }
            };
            match test {
                Some(t) => tests.push(t),
                None => ok = false,
            }
        }
        ok.then_some(tests)
    }

    fn examples(&mut self, item: &Item<'_>, raw: &mut RawRule) {
        let Some(table) = self.table(item, "examples") else {
            return;
        };
        for (key, list) in table.iter() {
            let should_match = match key.get_ref().as_ref() {
                "match" => true,
                "not_match" => false,
                _ => {
                    self.unknown_key(
                        key,
                        EXAMPLE_KEYS,
                        &[("no_match", "not_match"), ("matches", "match")],
                        "`examples`",
                    );
                    continue;
                }
            };
            let DeValue::Array(items) = list.get_ref() else {
                self.type_error(list, key.get_ref(), "an array");
                continue;
            };
            for element in items {
                match element.get_ref() {
                    DeValue::Table(_) => {
                        let Some(value) = self.json(element) else {
                            continue;
                        };
                        match Call::from_value(value) {
                            Ok(call) => raw.examples.push((should_match, ExampleInput::Call(Box::new(call)), element.span())),
                            Err(e) => self.error_hint(
                                element.span(),
                                format!("invalid example: {}", e.message),
                                "an example is a call: `{ tool = \"name\", args = { … }, tags = [ … ] }`",
                            ),
                        }
                    }
                    DeValue::String(text) => {
                        raw.examples.push((
                            should_match,
                            ExampleInput::Text(text.to_string()),
                            element.span(),
                        ));
                    }
                    other => self.error(
                        element.span(),
                        format!(
                            "an example must be a table or a string, got {}",
                            toml_type(other)
                        ),
                    ),
                }
            }
        }
    }
}

/// Checks a JSON pointer (RFC 6901) as written in `args`.
fn check_pointer(pointer: &str) -> Result<(), (String, String)> {
    if pointer.is_empty() {
        return Ok(());
    }
    if !pointer.starts_with('/') {
        return Err((
            format!("argument pointer `{pointer}` must start with `/`"),
            format!("argument keys are JSON pointers: write `/{pointer}`"),
        ));
    }
    for segment in pointer.split('/').skip(1) {
        if segment == "*" {
            return Err((
                format!("argument pointer `{pointer}` uses `*`"),
                "argument conditions name one value; write the array index, e.g. `/paths/0`".into(),
            ));
        }
        let mut chars = segment.chars();
        while let Some(c) = chars.next() {
            if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
                return Err((
                    format!("argument pointer `{pointer}` has an invalid `~` escape"),
                    "in JSON pointers `~0` is `~` and `~1` is `/`".into(),
                ));
            }
        }
    }
    Ok(())
}
