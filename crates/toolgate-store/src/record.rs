//! The rows a store keeps.

use std::time::SystemTime;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use toolgate_runtime::Event;

/// A cause kept with a [`StoreError`].
pub type ErrorSource = Box<dyn std::error::Error + Send + Sync>;

/// Why a store operation failed. Nothing the operation asked for was written.
///
/// The daemon tells its clients only the kind (and, for [`StoreError::Refused`], which is
/// about the client's own input, the words): the rest (paths, the engine's messages) goes to
/// its log. What a condition of a write finds (the request no longer pending, the grant gone)
/// is not an error: see [`Committed`](crate::Committed).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Another program holds the database's write lock past the store's wait.
    #[error("{message}")]
    Locked {
        /// What was locked, and what to do.
        message: String,
        /// The engine's error.
        #[source]
        source: Option<ErrorSource>,
    },
    /// A condition of the write that the caller does not allow for failed: a request id
    /// already pending, a grant id already stored.
    #[error("{0}")]
    Conflict(String),
    /// The store cannot take or give anything now: the database is unreachable, its disk full
    /// or read-only, its file replaced, too many commits waiting, the store closed.
    #[error("{message}")]
    Unavailable {
        /// What failed.
        message: String,
        /// The engine's or the system's error.
        #[source]
        source: Option<ErrorSource>,
    },
    /// What was to be stored cannot be (nested too deep for JSON readers, too large): about
    /// the caller's own input, so its words may be shown to whoever sent it.
    #[error("{0}")]
    Refused(String),
    /// What is stored cannot be read or used as it is: a damaged row, a schema newer than this
    /// toolgate, a commit journal out of step with its database.
    #[error("{message}")]
    Damaged {
        /// What is damaged, and what to do.
        message: String,
        /// The cause.
        #[source]
        source: Option<ErrorSource>,
    },
}

impl StoreError {
    /// [`StoreError::Unavailable`] without a cause.
    pub fn unavailable(message: impl Into<String>) -> StoreError {
        StoreError::Unavailable {
            message: message.into(),
            source: None,
        }
    }

    /// [`StoreError::Damaged`] without a cause.
    pub fn damaged(message: impl Into<String>) -> StoreError {
        StoreError::Damaged {
            message: message.into(),
            source: None,
        }
    }

    /// A short, stable name of the kind, for logs and clients.
    pub fn kind(&self) -> &'static str {
        match self {
            StoreError::Locked { .. } => "locked",
            StoreError::Conflict(_) => "conflict",
            StoreError::Unavailable { .. } => "unavailable",
            StoreError::Refused(_) => "refused",
            StoreError::Damaged { .. } => "damaged",
        }
    }

    /// The same kind and words, without the cause (what a failed group of commits tells each
    /// of its callers).
    pub fn again(&self) -> StoreError {
        let message = self.to_string();
        match self {
            StoreError::Locked { .. } => StoreError::Locked {
                message,
                source: None,
            },
            StoreError::Conflict(_) => StoreError::Conflict(message),
            StoreError::Unavailable { .. } => StoreError::unavailable(message),
            StoreError::Refused(_) => StoreError::Refused(message),
            StoreError::Damaged { .. } => StoreError::damaged(message),
        }
    }

    /// Whether the words say `text` (for tests and logs; code matches on the variants).
    pub fn says(&self, text: &str) -> bool {
        self.to_string().contains(text)
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> StoreError {
        use rusqlite::ErrorCode;
        let message = error.to_string();
        let code = match &error {
            rusqlite::Error::SqliteFailure(failure, _) => Some(failure.code),
            _ => None,
        };
        let source = Some(Box::new(error) as ErrorSource);
        match code {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
                StoreError::Locked { message, source }
            }
            Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => {
                StoreError::Damaged { message, source }
            }
            _ => StoreError::Unavailable { message, source },
        }
    }
}

impl From<std::io::Error> for StoreError {
    fn from(error: std::io::Error) -> StoreError {
        StoreError::Unavailable {
            message: error.to_string(),
            source: Some(Box::new(error)),
        }
    }
}

impl From<serde_json::Error> for StoreError {
    fn from(error: serde_json::Error) -> StoreError {
        StoreError::Damaged {
            message: format!("a stored value is not valid JSON: {error}"),
            source: Some(Box::new(error)),
        }
    }
}

/// The deepest a commit's record may nest (arrays and objects open at once). serde_json reads
/// at most 128 levels; a record wraps what it holds in a few (the entry, its batch, the pending
/// request, its call), and an answer wraps a stored value in a few more, so a call's arguments
/// get what is left: the daemon refuses a body past 64 levels before it comes to this.
pub const MAX_NESTING: usize = 100;

/// The deepest stored JSON is read (see [`from_stored`]).
const READ_NESTING: usize = 1024;

pub use toolgate_runtime::nesting::{nesting, nests_deeper};

/// Reads stored JSON. Text nested past serde_json's 128 levels — which versions before the
/// bound on commits ([`MAX_NESTING`]) could store — is read all the same (up to
/// [`READ_NESTING`]): one such record must not stop the store from listing or starting.
pub(crate) fn from_stored<T: serde::de::DeserializeOwned>(
    text: &[u8],
) -> Result<T, serde_json::Error> {
    match serde_json::from_slice(text) {
        Err(error)
            if error.to_string().starts_with("recursion limit exceeded")
                && nesting(text) <= READ_NESTING =>
        {
            let mut reader = serde_json::Deserializer::from_slice(text);
            reader.disable_recursion_limit();
            let value = T::deserialize(&mut reader)?;
            reader.end()?;
            Ok(value)
        }
        read => read,
    }
}

/// The deepest an event's body nests: what lies deeper is left out of it, said in its place.
pub const EVENT_NESTING: usize = 64;

/// Replaces what in `value` (itself one level) nests more than `most` levels deep with a string
/// saying so.
fn cut_deeper_than(value: &mut Value, most: usize) {
    // A child one level down: cut when it is past the bound, else looked into in turn.
    fn visit<'a>(
        child: &'a mut Value,
        depth: usize,
        most: usize,
        stack: &mut Vec<(&'a mut Value, usize)>,
    ) {
        if !(child.is_array() || child.is_object()) {
            return;
        }
        if depth >= most {
            *child = Value::String(format!(
                "[nested more than {EVENT_NESTING} levels: left out]"
            ));
        } else {
            stack.push((child, depth + 1));
        }
    }
    let mut stack: Vec<(&mut Value, usize)> = vec![(value, 1)];
    while let Some((value, depth)) = stack.pop() {
        match value {
            Value::Array(items) => {
                for child in items.iter_mut() {
                    visit(child, depth, most, &mut stack);
                }
            }
            Value::Object(fields) => {
                for child in fields.values_mut() {
                    visit(child, depth, most, &mut stack);
                }
            }
            _ => {}
        }
    }
}

pub(crate) fn rfc3339(time: SystemTime) -> String {
    humantime::format_rfc3339_micros(time).to_string()
}

/// One event of the audit log, in the canonical shape of DESIGN §7: its JSON `body` carries
/// `schema`, `seq`, `type`, `timestamp`, the scope (`session`, `branch`, `turn`, …) and the
/// event's own fields; the indexed columns are copies of the body's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    /// Its place in the log (0 until appended).
    pub seq: i64,
    /// `type`.
    pub kind: String,
    /// `timestamp`, RFC 3339.
    pub time: String,
    /// `session`.
    pub session: Option<String>,
    /// `request_id`.
    pub request_id: Option<String>,
    /// `tool_call_id`.
    pub tool_call_id: Option<String>,
    /// The whole event, without its sequence number (see [`EventRecord::served`]).
    pub body: JsonText,
}

fn text(body: &Map<String, Value>, key: &str) -> Option<String> {
    body.get(key).and_then(Value::as_str).map(str::to_owned)
}

impl EventRecord {
    /// An event of `kind` with these fields, stamped now.
    pub fn new(kind: &str, fields: Value) -> EventRecord {
        let mut body = match fields {
            Value::Object(map) => map,
            other => {
                let mut map = Map::new();
                map.insert("data".into(), other);
                map
            }
        };
        body.insert("type".into(), Value::String(kind.to_owned()));
        body.entry("timestamp")
            .or_insert_with(|| Value::String(rfc3339(SystemTime::now())));
        EventRecord::from_body(body)
    }

    /// A runtime event, as stored.
    pub fn from_event(event: &Event) -> EventRecord {
        match serde_json::to_value(event) {
            Ok(Value::Object(body)) => EventRecord::from_body(body),
            _ => EventRecord::new("unserialisable", Value::Null),
        }
    }

    fn from_body(mut body: Map<String, Value>) -> EventRecord {
        // A tool's output or a model's arguments may nest without end: what an event keeps of
        // them stops where a commit could not take it (the rest of its batch would go with it).
        for value in body.values_mut() {
            cut_deeper_than(value, EVENT_NESTING - 1);
        }
        body.entry("schema")
            .or_insert_with(|| Value::String(toolgate_runtime::EVENT_SCHEMA.to_owned()));
        body.remove("seq");
        EventRecord {
            seq: 0,
            kind: text(&body, "type").unwrap_or_default(),
            time: text(&body, "timestamp").unwrap_or_else(|| rfc3339(SystemTime::now())),
            session: text(&body, "session"),
            request_id: text(&body, "request_id")
                .or_else(|| body.get("id").and_then(Value::as_str).map(str::to_owned)),
            tool_call_id: text(&body, "tool_call_id"),
            body: JsonText::of_value(&Value::Object(body)),
        }
    }

    /// The body with its sequence number first, as served.
    ///
    /// Events are stored as objects without a `seq` of their own, and are spliced as text; a
    /// body written otherwise (by hand, or by another program) is parsed instead: its own `seq`
    /// gives way, and a body that is not an object is served as `{"seq": N, "body": …}`.
    pub fn served(&self) -> String {
        let body = self.body.as_str().trim_start();
        if !body.contains("\"seq\"") {
            match body.strip_prefix('{').map(str::trim_start) {
                Some(rest) if rest.starts_with('}') => {
                    return format!("{{\"seq\":{}}}", self.seq);
                }
                Some(rest) => return format!("{{\"seq\":{},{rest}", self.seq),
                None => {}
            }
        }
        let mut served = Map::new();
        served.insert("seq".into(), self.seq.into());
        match self.body.to_value() {
            Ok(Value::Object(fields)) => {
                served.extend(fields.into_iter().filter(|(name, _)| name != "seq"));
            }
            Ok(other) => {
                served.insert("body".into(), other);
            }
            Err(_) => {}
        }
        Value::Object(served).to_string()
    }

    /// [`EventRecord::served`] as JSON text.
    pub fn served_json(&self) -> Result<JsonText, serde_json::Error> {
        JsonText::parse(self.served())
    }
}

/// Which events to read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventFilter {
    /// Only this session's.
    pub session: Option<String>,
    /// Only these types.
    pub kinds: Vec<String>,
    /// Only this request's.
    pub request_id: Option<String>,
    /// Only at or after this time (RFC 3339).
    pub since: Option<String>,
}

/// A request waiting for a person.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PendingRecord {
    /// The request's id.
    pub id: String,
    /// `permission`, `continuation` or `decision` (an external requester's call).
    pub kind: String,
    /// The session it belongs to.
    pub session: Option<String>,
    /// When it was opened, RFC 3339.
    pub created: String,
    /// The request as published.
    pub request: Value,
}

/// Where an external requester's decision stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DecisionStatus {
    /// Waiting for a person.
    Pending,
    /// Allowed or denied.
    Decided,
}

impl DecisionStatus {
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            DecisionStatus::Pending => "pending",
            DecisionStatus::Decided => "decided",
        }
    }
}

/// A JSON value kept as its text, which is known to be valid JSON: written once, then stored,
/// journaled and sent as it is.
#[derive(Clone, Debug)]
pub struct JsonText(Box<RawValue>);

impl JsonText {
    /// `value` written as JSON.
    pub fn of<T: Serialize + ?Sized>(value: &T) -> Result<JsonText, serde_json::Error> {
        serde_json::value::to_raw_value(value).map(JsonText)
    }

    /// `value` written as JSON (which a `Value` always can be).
    pub fn of_value(value: &Value) -> JsonText {
        JsonText::of(value).unwrap_or_else(|_| JsonText(Box::default()))
    }

    /// Text that must be JSON (it is checked).
    pub fn parse(text: String) -> Result<JsonText, serde_json::Error> {
        // Read as stored JSON is (see `from_stored`): text older versions wrote deeper than
        // serde_json reads at once is JSON all the same.
        from_stored::<Box<RawValue>>(text.as_bytes()).map(JsonText)
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        self.0.get()
    }

    /// The value the text holds.
    pub fn to_value(&self) -> Result<Value, serde_json::Error> {
        from_stored(self.0.get().as_bytes())
    }
}

impl PartialEq for JsonText {
    fn eq(&self, other: &JsonText) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for JsonText {}

impl Serialize for JsonText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for JsonText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<JsonText, D::Error> {
        Box::<RawValue>::deserialize(deserializer).map(JsonText)
    }
}

/// An external requester's call and its outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DecisionRow {
    /// Its id (the request's, when a person is asked).
    pub id: String,
    /// Pending or decided.
    pub status: DecisionStatus,
    /// The call as submitted.
    pub call: Value,
    /// The outcome (the evaluation, then the answer), as served.
    pub result: JsonText,
    /// When it was submitted, RFC 3339.
    pub created: String,
    /// When it last changed, RFC 3339.
    pub updated: String,
}

impl DecisionRow {
    /// Where a page of decisions that ends with this one goes on (see
    /// [`Store::decisions_page`](crate::Store::decisions_page)).
    pub fn cursor(&self) -> String {
        format!("{} {}", self.created, self.id)
    }
}

/// Which decisions [`Store::decisions_page`](crate::Store::decisions_page) reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DecisionQuery {
    /// Those made at or after this RFC 3339 time.
    pub since: Option<String>,
    /// Those of this session (the call's `context.session`).
    pub session: Option<String>,
    /// Those after this one (its creation time and id, as [`DecisionRow::cursor`] writes them).
    pub after: Option<(String, String)>,
}

impl DecisionQuery {
    /// The (creation time, id) every decision read comes after: the later of `since` and
    /// `after`.
    pub fn lower_bound(&self) -> (String, String) {
        let since = self
            .since
            .as_ref()
            .map(|since| (since.clone(), String::new()));
        match (since, self.after.clone()) {
            (Some(since), Some(after)) => since.max(after),
            (Some(bound), None) | (None, Some(bound)) => bound,
            (None, None) => (String::new(), String::new()),
        }
    }

    /// The position a [`DecisionRow::cursor`] names; `None` when `text` is not one.
    pub fn parse_cursor(text: &str) -> Option<(String, String)> {
        let (created, id) = text.split_once(' ')?;
        (!created.is_empty() && !id.is_empty()).then(|| (created.to_owned(), id.to_owned()))
    }
}

/// A named access token with a role: what it may do, and who it is in the audit log. Only the
/// token's SHA-256 is kept (hex), never the token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRow {
    /// Its name: who it is (unique).
    pub name: String,
    /// Its role: `agent`, `approver` or `admin`.
    pub role: String,
    /// The token's SHA-256, hex.
    pub hash: String,
    /// When it was made, RFC 3339.
    pub created: String,
}

/// A saved session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionRow {
    /// Its id.
    pub id: String,
    /// Its snapshot.
    pub snapshot: Value,
    /// When it was last saved, RFC 3339.
    pub updated: String,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn served(body: &str) -> String {
        EventRecord {
            seq: 7,
            kind: "k".into(),
            time: String::new(),
            session: None,
            request_id: None,
            tool_call_id: None,
            body: JsonText::parse(body.into()).unwrap(),
        }
        .served()
    }

    #[test]
    fn an_event_is_served_with_its_number_first() {
        assert_eq!(served(r#"{"a":1}"#), r#"{"seq":7,"a":1}"#);
        assert_eq!(served(r#" { "a" : 1 } "#), r#"{"seq":7,"a" : 1 }"#);
        assert_eq!(served("{}"), r#"{"seq":7}"#);
        assert_eq!(served(" {  } "), r#"{"seq":7}"#);
        assert_eq!(served("[1]"), r#"{"seq":7,"body":[1]}"#);
        assert_eq!(served("null"), r#"{"seq":7,"body":null}"#);
        assert_eq!(served(r#"{"a":1,"seq":99}"#), r#"{"seq":7,"a":1}"#);
        assert_eq!(
            served(r#"{"a":{"seq":1}}"#),
            r#"{"seq":7,"a":{"seq":1}}"#,
            "a nested `seq` stays"
        );
        for body in [r#"{"a":1}"#, " { \"a\" : {} } ", "{}", " { } "] {
            let value: Value = serde_json::from_str(&served(body)).unwrap();
            assert_eq!(value["seq"], 7, "{body}");
        }
    }

    #[test]
    fn a_new_event_is_stamped_and_indexed() {
        let event = EventRecord::new("custom", serde_json::json!({"id": "r1", "seq": 3}));
        let body = event.body.to_value().unwrap();
        assert_eq!(body["type"], "custom");
        assert_eq!(body["schema"], toolgate_runtime::EVENT_SCHEMA);
        assert_eq!(body.get("seq"), None);
        assert_eq!(event.request_id.as_deref(), Some("r1"));
        assert_eq!(body["timestamp"], event.time.as_str());
    }
}

#[cfg(test)]
mod nesting_tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn nested(levels: usize) -> String {
        format!("{}{}", "[".repeat(levels), "]".repeat(levels))
    }

    #[test]
    fn nesting_counts_what_is_open_at_once_outside_strings() {
        assert_eq!(nesting(b"1"), 0);
        assert_eq!(nesting(b"{\"a\": [1, {\"b\": []}], \"c\": {}}"), 4);
        assert_eq!(nesting(br#"["[[[", "\"[[", {"}": "\\"}]"#), 2);
        assert_eq!(nesting(nested(200).as_bytes()), 200);
        // Deeper than a limit: the same answer, whether the brackets are counted or read.
        let texts = [
            nested(200),
            nested(3),
            r#"["[[[", "\"[[", {"}": "\\"}]"#.to_owned(),
            format!("[{}]", "\"{{{{\",".repeat(50) + "1"),
            "{}".repeat(80),
        ];
        for text in &texts {
            for limit in [0, 1, 2, 3, 4, 63, 64, 100, 199, 200, 201] {
                let depth = nesting(text.as_bytes());
                assert_eq!(
                    nests_deeper(text.as_bytes(), limit),
                    Some(depth).filter(|&d| d > limit),
                    "{text} with limit {limit}"
                );
            }
        }
    }

    /// What an event would keep nested past its bound is left out, said in its place; the
    /// rest is kept as it is.
    #[test]
    fn an_events_body_is_cut_where_it_nests_too_deep() {
        let deep: Value = serde_json::from_str(&nested(120)).unwrap();
        let event = EventRecord::new(
            "tool_result",
            serde_json::json!({"content": deep, "ok": [1]}),
        );
        let text = event.body.as_str();
        assert_eq!(nesting(text.as_bytes()), EVENT_NESTING, "{text}");
        assert!(text.contains("levels: left out]"), "{text}");
        let body = event.body.to_value().unwrap();
        assert_eq!(body["ok"], serde_json::json!([1]));
        let shallow: Value = serde_json::from_str(&nested(EVENT_NESTING - 1)).unwrap();
        let event = EventRecord::new("tool_result", serde_json::json!({"content": shallow}));
        assert_eq!(event.body.to_value().unwrap()["content"], shallow);
    }

    #[test]
    fn stored_json_past_serde_jsons_limit_is_read() {
        let deep = nested(130);
        assert!(serde_json::from_str::<Value>(&deep).is_err());
        let value: Value = from_stored(deep.as_bytes()).unwrap();
        assert_eq!(value.to_string(), deep);
        let raw = JsonText::parse(deep.clone()).unwrap();
        assert_eq!(raw.as_str(), deep);
        assert_eq!(raw.to_value().unwrap(), value);
        // Past what is read at all, and broken JSON, are errors still.
        assert!(from_stored::<Value>(nested(READ_NESTING + 1).as_bytes()).is_err());
        assert!(from_stored::<Value>(b"[[[").is_err());
        assert!(from_stored::<Value>(b"[] x").is_err());
    }
}
