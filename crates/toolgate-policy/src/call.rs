//! The call an agent wants to make and the context it is made in (DESIGN §2).
//!
//! The JSON form is the public contract of `toolgate check`:
//!
//! ```rust,standalone_crate
//! use toolgate_policy::{Call, Origin};
//! let call = Call::from_json(r#"{"tool": "write_file",
//!     "args": {"path": "src/a.rs", "content": "..."},
//!     "tags": ["file_system"],
//!     "context": {"session": "s1", "origin": "user", "mode": "approve-reads"}}"#)?;
//! assert_eq!(call.tool, "write_file");
//! assert_eq!(call.context.origin, Some(Origin::User));
//! # Ok::<(), toolgate_policy::CallError>(())
//! ```

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::decision::{Mode, Origin};

/// One tool call: the tool's name, its arguments and what is known about it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Call {
    /// The tool's name, exactly as the agent sent it (case-sensitive).
    pub tool: String,
    /// The arguments. Must be a JSON object; anything else is rejected before any rule runs.
    #[serde(default = "empty_object")]
    pub args: Value,
    /// The tool's tags: the built-in set, or custom strings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<Tag>,
    /// MCP tool hints (`readOnlyHint`, `destructiveHint`, …). Untrusted unless the server is
    /// marked trusted in the context.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub annotations: Map<String, Value>,
    /// Where and on whose behalf the call is made.
    #[serde(default, deserialize_with = "object_only")]
    pub context: Context,
}

/// A call's context, from an object and nothing else: serde would take an array's items as the
/// fields in order (`["s1", "main"]` would name a session).
fn object_only<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Context, D::Error> {
    struct ObjectOnly;
    impl<'de> serde::de::Visitor<'de> for ObjectOnly {
        type Value = Context;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Context, A::Error> {
            Context::deserialize(serde::de::value::MapAccessDeserializer::new(map))
        }
    }
    deserializer.deserialize_map(ObjectOnly)
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

impl Call {
    /// The argument that says most of what the call does, for a line about it: its command, its
    /// path, its URL, its pattern or its query, when it has one.
    pub fn telling_argument(&self) -> Option<&Value> {
        const TELLING: &[&str] = &[
            "command",
            "cmd",
            "file_path",
            "path",
            "url",
            "pattern",
            "query",
        ];
        TELLING.iter().find_map(|key| self.args.get(*key))
    }

    /// A call of `tool` with no arguments and an empty context.
    pub fn new(tool: impl Into<String>) -> Call {
        Call {
            tool: tool.into(),
            args: empty_object(),
            tags: Vec::new(),
            annotations: Map::new(),
            context: Context::default(),
        }
    }

    /// Replaces the arguments.
    #[must_use]
    pub fn with_args(mut self, args: Value) -> Call {
        self.args = args;
        self
    }

    /// Adds a tag.
    #[must_use]
    pub fn with_tag(mut self, tag: Tag) -> Call {
        self.tags.push(tag);
        self
    }

    /// Replaces the context.
    #[must_use]
    pub fn with_context(mut self, context: Context) -> Call {
        self.context = context;
        self
    }

    /// Parses the JSON form of a call.
    ///
    /// A syntax error is [`CallErrorKind::InvalidJson`]; a well-formed value that is not a call
    /// (a missing `tool`, an unknown key, a wrong type) is [`CallErrorKind::InvalidCall`].
    /// Arguments that are not an object parse, and are rejected by evaluation, so the result can
    /// name the tool.
    pub fn from_json(text: &str) -> Result<Call, CallError> {
        let value: Value = serde_json::from_str(text).map_err(|e| CallError {
            kind: CallErrorKind::InvalidJson,
            message: e.to_string(),
        })?;
        Call::from_value(value)
    }

    /// Converts a JSON value into a call; see [`Call::from_json`].
    pub fn from_value(value: Value) -> Result<Call, CallError> {
        if !value.is_object() {
            return Err(CallError {
                kind: CallErrorKind::InvalidCall,
                message: format!("a call is a JSON object, got {}", json_type(&value)),
            });
        }
        serde_path_to_error::deserialize(value).map_err(|e| CallError {
            kind: CallErrorKind::InvalidCall,
            message: field_error(&e),
        })
    }

    /// The arguments as an object, or the error evaluation reports when they are not one.
    pub fn args_object(&self) -> Result<&Map<String, Value>, CallError> {
        match &self.args {
            Value::Object(map) => Ok(map),
            other => Err(CallError {
                kind: CallErrorKind::InvalidArguments,
                message: format!("arguments must be a JSON object, got {}", json_type(other)),
            }),
        }
    }

    /// Whether the call carries the built-in tag `tag`.
    pub fn has_tag(&self, tag: &Tag) -> bool {
        self.tags.iter().any(|t| t == tag)
    }
}

/// What is wrong with a call, naming the field (`context.session: invalid type: integer `5`,
/// expected a string`), in JSON's words rather than Rust's.
fn field_error(error: &serde_path_to_error::Error<serde_json::Error>) -> String {
    let mut message = error.inner().to_string();
    // serde names the Rust type it wanted: `expected struct Context` is an object to a caller.
    if let Some(at) = message.find("expected struct ") {
        message.truncate(at);
        message.push_str("expected an object");
    }
    let message = message
        .replace("invalid type: sequence", "invalid type: array")
        .replace("invalid type: map", "invalid type: object")
        .replace("expected a sequence", "expected an array")
        .replace("expected a map", "expected an object");
    let mut path = error.path().to_string();
    // An unknown field is named by the message; the path says where it is.
    if message.starts_with("unknown field") {
        path = match path.rfind('.') {
            Some(at) => path.get(..at).unwrap_or_default().to_owned(),
            None => String::new(),
        };
    }
    if path.is_empty() || path == "." {
        message
    } else {
        format!("`{path}`: {message}")
    }
}

/// The name of a JSON value's type, for messages.
pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Where and on whose behalf a call is made. Every field is optional.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Context {
    /// The session the call belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The branch of the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The agent making the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Who started the turn. A missing origin satisfies no `origin` condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
    /// The session's workspace root (absolute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// Where relative paths and commands resolve; defaults to the workspace root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Overrides the policy's mode for this call. `""` means approve-reads.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "deserialize_mode"
    )]
    pub mode: Option<Mode>,
    /// The MCP server the tool belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// Whether that server's annotations are trusted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trusted_server: bool,
    /// The answers the caller can carry out (an ACP agent's permission options): a person is
    /// not offered an "always" answer the caller cannot (the "once" answers always stay).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choices: Option<Vec<crate::Choice>>,
}

fn deserialize_mode<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Mode>, D::Error> {
    let text = Option::<String>::deserialize(deserializer)?;
    match text {
        None => Ok(None),
        Some(text) => Mode::parse(&text)
            .map(Some)
            .map_err(serde::de::Error::custom),
    }
}

/// A tool tag: one of the built-in set, or a custom string.
///
/// A custom tag never satisfies a built-in one: `Tag::parse("read-only")` is custom and is not
/// [`Tag::ReadOnly`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tag {
    /// `read_only`: the tool only reads.
    ReadOnly,
    /// `destructive`: the tool may destroy data.
    Destructive,
    /// `network`: the tool talks to the network.
    Network,
    /// `file_system`: the tool touches the file system.
    FileSystem,
    /// `slow`: the tool takes a long time.
    Slow,
    /// `privileged`: the tool needs elevated permissions.
    Privileged,
    /// Any other string.
    Custom(String),
}

impl Tag {
    /// The built-in tags' names.
    pub const BUILTIN_NAMES: &'static [&'static str] = &[
        "read_only",
        "destructive",
        "network",
        "file_system",
        "slow",
        "privileged",
    ];

    /// A built-in tag for its exact name, or a custom tag.
    pub fn parse(text: &str) -> Tag {
        match text {
            "read_only" => Tag::ReadOnly,
            "destructive" => Tag::Destructive,
            "network" => Tag::Network,
            "file_system" => Tag::FileSystem,
            "slow" => Tag::Slow,
            "privileged" => Tag::Privileged,
            other => Tag::Custom(other.to_owned()),
        }
    }

    /// The tag's string form.
    pub fn as_str(&self) -> &str {
        match self {
            Tag::ReadOnly => "read_only",
            Tag::Destructive => "destructive",
            Tag::Network => "network",
            Tag::FileSystem => "file_system",
            Tag::Slow => "slow",
            Tag::Privileged => "privileged",
            Tag::Custom(text) => text,
        }
    }

    /// Whether this is one of the built-in tags.
    pub fn is_builtin(&self) -> bool {
        !matches!(self, Tag::Custom(_))
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Tag {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Tag {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        Ok(Tag::parse(&text))
    }
}

/// Why a call could not be evaluated.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CallError {
    /// What kind of problem.
    pub kind: CallErrorKind,
    /// A message for people.
    pub message: String,
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.as_str(), self.message)
    }
}

impl std::error::Error for CallError {}

/// The kinds of [`CallError`]; the strings are part of `toolgate check`'s output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallErrorKind {
    /// The input is not valid JSON (or not UTF-8, or too long).
    InvalidJson,
    /// The input is JSON but not a call.
    InvalidCall,
    /// The call's arguments are not a JSON object.
    InvalidArguments,
}

impl CallErrorKind {
    /// The string form used in JSON output.
    pub const fn as_str(self) -> &'static str {
        match self {
            CallErrorKind::InvalidJson => "invalid_json",
            CallErrorKind::InvalidCall => "invalid_call",
            CallErrorKind::InvalidArguments => "invalid_arguments",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_malformed_call_names_the_field_in_json_words() {
        for (call, message) in [
            (
                json!({"tool": "t", "context": {"session": 5}}),
                "`context.session`: invalid type: integer `5`, expected a string",
            ),
            (
                json!({"tool": "t", "context": null}),
                "`context`: invalid type: null, expected an object",
            ),
            // An array is not read as the fields in order.
            (
                json!({"tool": "t", "context": ["s1", "main"]}),
                "`context`: invalid type: array, expected an object",
            ),
            (
                json!({"tool": "t", "context": []}),
                "`context`: invalid type: array, expected an object",
            ),
            (
                json!({"tool": "t", "context": {"origin": "user", "trusted_server": 1}}),
                "`context.trusted_server`: invalid type: integer `1`, expected a boolean",
            ),
            (
                json!({"tool": "t", "annotations": []}),
                "`annotations`: invalid type: array, expected an object",
            ),
            (
                json!({"tool": "t", "tags": ["read_only", 5]}),
                "`tags[1]`: invalid type: integer `5`, expected a string",
            ),
            (json!({"args": {}}), "missing field `tool`"),
        ] {
            let error = Call::from_value(call.clone()).unwrap_err();
            assert_eq!(error.message, message, "{call}");
        }
        let error = Call::from_value(json!({"tool": "t", "context": {"nope": 1}})).unwrap_err();
        assert!(
            error
                .message
                .starts_with("`context`: unknown field `nope`, expected one of"),
            "{}",
            error.message
        );
    }

    #[test]
    fn minimal_call_defaults() {
        let call = Call::from_json(r#"{"tool":"t"}"#).unwrap();
        assert_eq!(call, Call::new("t"));
        assert!(call.args_object().unwrap().is_empty());
    }

    #[test]
    fn errors_are_classified() {
        let e = Call::from_json("{not json").unwrap_err();
        assert_eq!(e.kind, CallErrorKind::InvalidJson);
        let e = Call::from_json(r#"{"args":{}}"#).unwrap_err();
        assert_eq!(e.kind, CallErrorKind::InvalidCall);
        assert!(e.message.contains("missing field `tool`"), "{}", e.message);
        let e = Call::from_json(r#"{"tool":"t","arguments":{}}"#).unwrap_err();
        assert!(
            e.message.contains("unknown field `arguments`"),
            "{}",
            e.message
        );
        let e = Call::from_json(r#"[1]"#).unwrap_err();
        assert_eq!(e.message, "a call is a JSON object, got an array");
        let e = Call::from_json(r#"{"tool":"t","context":{"mode":"yolo"}}"#).unwrap_err();
        assert!(e.message.contains("unknown mode `yolo`"), "{}", e.message);
        let e = Call::from_json(r#"{"tool":"t","context":{"origin":"User"}}"#).unwrap_err();
        assert!(e.message.contains("unknown origin `User`"), "{}", e.message);
    }

    #[test]
    fn non_object_args_parse_but_are_rejected_by_args_object() {
        for args in [json!([1]), json!("x"), json!(null), json!(3)] {
            let call = Call::from_value(json!({"tool": "t", "args": args})).unwrap();
            assert_eq!(
                call.args_object().unwrap_err().kind,
                CallErrorKind::InvalidArguments
            );
        }
    }

    #[test]
    fn empty_mode_is_approve_reads() {
        let call = Call::from_json(r#"{"tool":"t","context":{"mode":""}}"#).unwrap();
        assert_eq!(call.context.mode, Some(Mode::ApproveReads));
    }

    #[test]
    fn custom_tags_never_equal_builtin_tags() {
        assert_eq!(Tag::parse("read_only"), Tag::ReadOnly);
        assert_eq!(Tag::parse("read-only"), Tag::Custom("read-only".into()));
        assert_ne!(Tag::Custom("read_only".into()), Tag::ReadOnly);
        assert!(!Tag::parse("READ_ONLY").is_builtin());
    }
}
