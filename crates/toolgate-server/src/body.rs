//! Request bodies: JSON only, size-limited, with errors in the API's JSON shape.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{HeaderMap, StatusCode, header};
use serde_json::Value;

use crate::config::MAX_BODY;
use crate::error::ApiError;
use crate::state::AppState;

/// A JSON request body (`Content-Type: application/json`, at most 1 MiB).
#[derive(Debug)]
pub(crate) struct JsonBody(pub(crate) Value);

/// The deepest a JSON body may nest (arrays and objects within each other): what is kept of
/// it is wrapped in a few levels more, in the store and in the answers that show it, and
/// every level past what serde_json reads (128) would make it unreadable there.
pub(crate) const MAX_NESTING: usize = 64;

impl FromRequest<AppState> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<JsonBody, ApiError> {
        check_head(request.headers())?;
        let limit = state.inner.config.read_timeout;
        let bytes = tokio::time::timeout(limit, Bytes::from_request(request, state))
            .await
            .map_err(|_| {
                ApiError::new(
                    StatusCode::REQUEST_TIMEOUT,
                    "body_timeout",
                    format!("the body did not arrive within {} s", limit.as_secs_f64()),
                )
            })?
            .map_err(|rejection| {
                if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::new(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "body_too_large",
                        format!("the body is over {MAX_BODY} bytes"),
                    )
                } else {
                    ApiError::bad_request(
                        "unreadable_body",
                        "the body could not be read (a malformed chunked encoding, or the \
                         connection ended early)",
                    )
                }
            })?;
        if let Some(nested) = toolgate_store::nests_deeper(&bytes, MAX_NESTING) {
            return Err(ApiError::bad_request(
                "too_deep",
                format!(
                    "the body nests {nested} levels deep (arrays and objects within each \
                     other); at most {MAX_NESTING} are taken"
                ),
            ));
        }
        strict_json(&bytes).map(JsonBody).map_err(|e| {
            // serde_json's word for a lone surrogate (`"\ud800"`) does not say what is wrong.
            let hint = if e.to_string().contains("hex escape") {
                " (a `\\u` escape is four hex digits, and one from D800 to DBFF must be \
                 followed by one from DC00 to DFFF: JSON text is Unicode)"
            } else {
                ""
            };
            ApiError::bad_request("invalid_json", format!("the body is not JSON: {e}{hint}"))
        })
    }
}

/// Refuses, before any of the body is read, what cannot be a JSON body of at most
/// [`MAX_BODY`] bytes, and what could be read two ways: another media type, a character set
/// other than UTF-8, two `Content-Type` headers, a content coding (`gzip`: the bytes would be
/// read as they come), a transfer coding other than `chunked`, a declared length over the limit.
fn check_head(headers: &HeaderMap) -> Result<(), ApiError> {
    let unsupported = |code: &'static str, message: String| {
        ApiError::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, code, message)
    };
    // Sent once (as every header the guard reads); one that is not text is not JSON's.
    let content_type = match crate::security::header_text(headers, &header::CONTENT_TYPE) {
        Ok(content_type) => content_type.unwrap_or(""),
        Err(error) if error.code == "bad_header" => "",
        Err(error) => return Err(error),
    };
    let mut parts = content_type.split(';');
    if !parts
        .next()
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
    {
        return Err(unsupported(
            "json_required",
            "send the body as `Content-Type: application/json`".into(),
        ));
    }
    for parameter in parts {
        let (name, value) = parameter.split_once('=').unwrap_or((parameter, ""));
        let value = value.trim().trim_matches('"');
        if name.trim().eq_ignore_ascii_case("charset")
            && !(value.eq_ignore_ascii_case("utf-8") || value.eq_ignore_ascii_case("utf8"))
        {
            return Err(unsupported(
                "json_required",
                "JSON bodies are UTF-8 (`charset=utf-8`, or no charset)".into(),
            ));
        }
    }
    for coding in headers.get_all(header::CONTENT_ENCODING) {
        let identity = coding.to_str().is_ok_and(|c| {
            c.split(',')
                .all(|c| c.trim().eq_ignore_ascii_case("identity"))
        });
        if !identity {
            return Err(unsupported(
                "unsupported_encoding",
                "bodies are sent as they are: no `Content-Encoding` (gzip, br, …)".into(),
            ));
        }
    }
    // One `chunked`, nothing else: chunked twice (RFC 9112 §6.1 forbids it) is read once here
    // and maybe twice by a proxy in front.
    let mut codings = 0usize;
    for coding in headers.get_all(header::TRANSFER_ENCODING) {
        let chunked = coding.to_str().is_ok_and(|c| {
            c.split(',').all(|c| {
                codings += 1;
                c.trim().eq_ignore_ascii_case("chunked")
            })
        });
        if !chunked || codings > 1 {
            return Err(ApiError::new(
                StatusCode::NOT_IMPLEMENTED,
                "unsupported_transfer_coding",
                "the only transfer coding taken is `chunked`, once",
            ));
        }
    }
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|length| length > MAX_BODY as u64) {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!("the body is over {MAX_BODY} bytes"),
        ));
    }
    Ok(())
}

/// Parses JSON, refusing an object that names a key twice: parsers disagree on which of the
/// two wins (the first, the last, an error), so a body that says two things is refused rather
/// than read one way here and another way by whoever checked it before.
pub(crate) fn strict_json(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    serde_json::from_slice::<Strict>(bytes).map(|Strict(value)| value)
}

/// A JSON value whose objects have no repeated key.
struct Strict(Value);

impl<'de> serde::Deserialize<'de> for Strict {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Strict, D::Error> {
        deserializer.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> serde::de::Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Strict(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(serde::de::Error::custom(format!(
                    "the key `{key}` appears twice in one object"
                )));
            }
            let Strict(value) = map.next_value()?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn json_is_read_as_serde_json_reads_it() {
        for text in [
            r#"{"a": [1, -2, 3.5, 1e300, true, null, "x\u00e9"], "b": {"c": {}}, "d": []}"#,
            "[]",
            "\"text\"",
            "18446744073709551615",
            "-9223372036854775808",
            r#"{"a": 1, "A": 2, "a ": 3}"#,
        ] {
            let expected: Value = serde_json::from_str(text).unwrap();
            assert_eq!(strict_json(text.as_bytes()).unwrap(), expected, "{text}");
        }
    }

    #[test]
    fn a_key_named_twice_is_refused_at_any_depth() {
        for text in [
            r#"{"decision": "reject-once", "decision": "allow-once"}"#,
            r#"{"tool": "read", "args": {}, "tool": "bash"}"#,
            r#"{"context": {"session": "a", "session": "b"}}"#,
            r#"[{"x": 1}, {"y": 1, "y": 2}]"#,
            // The same key, spelt with an escape.
            r#"{"tool": "read", "to\u006fl": "bash"}"#,
        ] {
            let error = strict_json(text.as_bytes()).unwrap_err().to_string();
            assert!(error.contains("appears twice"), "{text}: {error}");
        }
    }

    #[test]
    fn deep_nesting_is_still_refused_not_overflowed() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(strict_json(deep.as_bytes()).is_err());
    }
}

/// Query parameters; a malformed query is a 400 in the API's JSON shape.
#[derive(Debug)]
pub(crate) struct Query<T>(pub(crate) T);

impl<T, S> axum::extract::FromRequestParts<S> for Query<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Query<T>, ApiError> {
        // A parameter is text: bytes that are no UTF-8 once percent-decoded are refused, as in
        // a path, instead of being read with U+FFFD in their place (`?session=%FF` would filter
        // by a name nobody gave).
        if let Some(query) = parts.uri.query()
            && let Some(part) = query
                .split('&')
                .flat_map(|pair| pair.splitn(2, '='))
                .find(|part| {
                    percent_encoding::percent_decode_str(part)
                        .decode_utf8()
                        .is_err()
                })
        {
            return Err(ApiError::bad_request(
                "invalid_query",
                format!("`{part}` is not UTF-8 once percent-decoded; send parameters as UTF-8"),
            ));
        }
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Query(value)| Query(value))
            .map_err(|e| {
                // serde's words, less its preamble: which parameter, and what is wrong with it.
                let text = e.body_text();
                let detail = text
                    .strip_prefix("Failed to deserialize query string: ")
                    .unwrap_or(&text);
                if let Some((_, unknown)) = detail.split_once("unknown field ") {
                    let (name, takes) = match unknown.split_once(", expected one of ") {
                        Some((name, known)) => (name, format!("it takes {known}")),
                        None => match unknown.split_once(", expected ") {
                            Some((name, known)) => (name, format!("it takes {known}")),
                            None => (
                                unknown.split(',').next().unwrap_or(unknown),
                                "it takes none".to_owned(),
                            ),
                        },
                    };
                    return ApiError::bad_request(
                        "unknown_parameter",
                        format!("{name} is not a query parameter of this route ({takes})"),
                    );
                }
                // Rust's words for a number that does not parse, in a reader's.
                let detail = detail
                    .replace("invalid float literal", "not a number")
                    .replace("invalid digit found in string", "not a whole number")
                    .replace("number too large to fit in target type", "too large");
                // A parameter given twice is not a number written wrong.
                let hint = if detail.starts_with("duplicate field") {
                    "give each parameter once"
                } else {
                    "numbers are written plain, like `?wait=5` or `?after=10&limit=100`"
                };
                ApiError::bad_request(
                    "invalid_query",
                    format!("a query parameter is malformed ({detail}); {hint}"),
                )
            })
    }
}

/// Refuses an object body with a key not among `known`: a misspelt key (`"resaon"`,
/// `"Workspace"`) would otherwise be ignored and the request done without it. 400
/// `unknown_field`, naming the keys the body takes. Bodies that are no object pass (their
/// handler says what it takes).
pub(crate) fn known_keys(body: &serde_json::Value, known: &[&str]) -> Result<(), ApiError> {
    let Some(object) = body.as_object() else {
        return Ok(());
    };
    match object.keys().find(|key| !known.contains(&key.as_str())) {
        None => Ok(()),
        Some(key) => Err(ApiError::bad_request(
            "unknown_field",
            format!(
                "`{}` is not a field of this body (it takes {})",
                toolgate_runtime::terminal_text(key),
                known
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

/// Refuses a filter given empty (`?session=`): it names nothing, where leaving it out means
/// every one.
pub(crate) fn not_empty(
    value: Option<&str>,
    code: &'static str,
    message: impl Into<String>,
) -> Result<(), ApiError> {
    match value {
        Some("") => Err(ApiError::bad_request(code, message)),
        _ => Ok(()),
    }
}

/// The query of a route that takes no parameters: any is refused (a filter the route does not
/// have would otherwise be ignored, and everything returned).
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoQuery {}

/// Path parameters; a malformed one (bad percent-encoding, say) is a 400 in the API's JSON
/// shape.
#[derive(Debug)]
pub(crate) struct Path<T>(pub(crate) T);

impl<T, S> axum::extract::FromRequestParts<S> for Path<T>
where
    T: serde::de::DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Path<T>, ApiError> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Path(value)| Path(value))
            .map_err(|e| ApiError::bad_request("invalid_path", e.body_text()))
    }
}
