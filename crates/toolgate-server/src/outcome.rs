//! An external requester's outcome as JSON text: written once, then stored and sent
//! as it is. Deciding a pending outcome copies its fields' text instead of parsing them.

use std::borrow::Cow;
use std::fmt;

use axum::body::Bytes;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use toolgate_store::JsonText;

use crate::lifecycle::Ending;

/// `text` as a JSON response.
pub(crate) fn respond(status: StatusCode, text: &JsonText) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        Bytes::copy_from_slice(text.as_str().as_bytes()),
    )
        .into_response()
}

/// `pending` decided: `decision`, `layer`, `reason` and `status` replaced in place, `actor` set,
/// the offer (`choices`, `always`, `timeout_ms`, `grant`) dropped, every other field copied as it is. (Of anything but
/// an object, which the daemon never stores, nothing is kept.)
pub(crate) fn decided(pending: &JsonText, ending: &Ending) -> Result<JsonText, serde_json::Error> {
    let fields = serde_json::from_str(pending.as_str()).unwrap_or(Fields(Vec::new()));
    JsonText::of(&Decided { fields, ending })
}

/// An object's fields, in order, each value's text borrowed.
struct Fields<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for Fields<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Fields<'a>, D::Error> {
        deserializer.deserialize_map(FieldsVisitor(std::marker::PhantomData))
    }
}

struct FieldsVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for FieldsVisitor<'a> {
    type Value = Fields<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an outcome object")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Fields<'a>, M::Error> {
        let mut fields = Vec::with_capacity(map.size_hint().unwrap_or(16));
        while let Some(Key(key)) = map.next_key()? {
            fields.push((key, map.next_value()?));
        }
        Ok(Fields(fields))
    }
}

/// A field's name: borrowed unless it had escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Key<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Key<'a>, D::Error> {
        struct KeyVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for KeyVisitor<'a> {
            type Value = Key<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_borrowed_str<E>(self, key: &'de str) -> Result<Key<'a>, E> {
                Ok(Key(Cow::Borrowed(key)))
            }
            fn visit_str<E>(self, key: &str) -> Result<Key<'a>, E> {
                Ok(Key(Cow::Owned(key.to_owned())))
            }
        }
        deserializer.deserialize_str(KeyVisitor(std::marker::PhantomData))
    }
}

struct Decided<'a, 'e> {
    fields: Fields<'a>,
    ending: &'e Ending,
}

impl Serialize for Decided<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let ending = self.ending;
        let mut map = serializer.serialize_map(None)?;
        let mut replaced = [false; 4];
        for (key, value) in &self.fields.0 {
            match key.as_ref() {
                "decision" => {
                    map.serialize_entry("decision", &ending.decision)?;
                    replaced[0] = true;
                }
                "layer" => {
                    map.serialize_entry("layer", &ending.layer)?;
                    replaced[1] = true;
                }
                "reason" => {
                    map.serialize_entry("reason", &ending.reason)?;
                    replaced[2] = true;
                }
                "status" => {
                    map.serialize_entry("status", "decided")?;
                    replaced[3] = true;
                }
                "actor" => {}
                key if crate::decisions::OFFER.contains(&key) => {}
                other => map.serialize_entry(other, value)?,
            }
        }
        let [decision, layer, reason, status] = replaced;
        if !decision {
            map.serialize_entry("decision", &ending.decision)?;
        }
        if !layer {
            map.serialize_entry("layer", &ending.layer)?;
        }
        if !reason {
            map.serialize_entry("reason", &ending.reason)?;
        }
        if !status {
            map.serialize_entry("status", "decided")?;
        }
        map.serialize_entry("actor", &ending.actor)?;
        map.end()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use serde_json::{Value, json};

    use super::*;
    use toolgate_policy::{Decision, Layer};

    fn decide(pending: &Value) -> Result<Value, serde_json::Error> {
        let ending = Ending {
            decision: Decision::Allow,
            layer: Layer::Handler,
            reason: "approved by ann \"the\" reviewer".into(),
            actor: "ann".into(),
        };
        decided(&JsonText::of(pending).unwrap(), &ending).map(|t| t.to_value().unwrap())
    }

    #[test]
    fn a_pending_outcome_is_decided_field_by_field() {
        let pending = json!({
            "decision": "ask", "reason": "matched rule `r`", "rule": "r", "layer": "rule",
            "source": {"file": "p.toml", "line": 3}, "subjects": [{"kind": "call"}],
            "choices": ["allow-once"], "timeout_ms": 1000, "id": "x", "status": "pending",
            "always": [{"choice": "allow-always"}], "actor": "someone else",
            "odd\"key\n": "kept \u{1F600}",
        });
        assert_eq!(
            decide(&pending).unwrap(),
            json!({
                "decision": "allow", "reason": "approved by ann \"the\" reviewer", "rule": "r",
                "layer": "handler", "source": {"file": "p.toml", "line": 3},
                "subjects": [{"kind": "call"}], "id": "x",
                "status": "decided", "actor": "ann", "odd\"key\n": "kept \u{1F600}",
            })
        );
    }

    #[test]
    fn missing_fields_are_added_and_a_non_object_is_replaced() {
        let ending = json!({"decision": "allow", "layer": "handler",
            "reason": "approved by ann \"the\" reviewer", "status": "decided", "actor": "ann"});
        let mut with_id = json!({"id": "x"});
        with_id
            .as_object_mut()
            .unwrap()
            .extend(ending.as_object().unwrap().clone());
        assert_eq!(decide(&json!({"id": "x"})).unwrap(), with_id);
        for other in [json!(null), json!([1]), json!("text"), json!(3)] {
            assert_eq!(decide(&other).unwrap(), ending, "{other}");
        }
    }
}
