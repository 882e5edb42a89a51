//! The one public JSON form of the API: the proto3 canonical JSON mapping of `odyssey.v1`,
//! as grpcurl prints it (lowerCamelCase names, enums by name, 64-bit integers as strings,
//! `Timestamp` as RFC 3339, `Struct` as plain JSON, default values omitted).
//!
//! Nothing here is written per message: the mapping is derived at run time from the
//! embedded descriptor set ([`crate::FILE_DESCRIPTOR_SET`]) with prost-reflect. A message
//! is encoded, decoded into a [`DynamicMessage`] by its full name, and serialized; parsing
//! runs the same way backwards.
//!
//! One detail follows grpcurl (Go's protojson) rather than serde_json: a whole `double`
//! (a `Struct` number, say) is written `512`, not `512.0`. Both are the same JSON number;
//! the first is what every other proto3 JSON printer writes.

use std::sync::OnceLock;

use prost::{Message, Name};
use prost_reflect::{
    DescriptorPool, DynamicMessage, MessageDescriptor, ReflectMessage, SerializeOptions,
};

/// What can go wrong between a message and its JSON form.
#[derive(Debug, thiserror::Error)]
pub enum JsonError {
    /// The embedded descriptor set did not decode (a build defect, not a request's).
    #[error("the API's descriptor set is unreadable: {0}")]
    Descriptors(String),
    /// The message's full name is not in the descriptor set.
    #[error("message `{0}` is not in the API's descriptor set")]
    UnknownMessage(String),
    /// The encoded message did not decode against its descriptor.
    #[error("message `{name}` does not match its descriptor: {source}")]
    Decode {
        name: String,
        source: prost::DecodeError,
    },
    /// Serializing or parsing the JSON failed.
    #[error("JSON of message `{name}`: {source}")]
    Json {
        name: String,
        source: serde_json::Error,
    },
}

/// The descriptors of `odyssey.v1` (and the well-known types it imports), decoded once.
pub fn pool() -> Result<&'static DescriptorPool, JsonError> {
    static POOL: OnceLock<Result<DescriptorPool, String>> = OnceLock::new();
    POOL.get_or_init(|| {
        DescriptorPool::decode(crate::FILE_DESCRIPTOR_SET).map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(|e| JsonError::Descriptors(e.clone()))
}

/// The descriptor of message `M`.
pub fn descriptor<M: Name>() -> Result<MessageDescriptor, JsonError> {
    let name = M::full_name();
    pool()?
        .get_message_by_name(&name)
        .ok_or(JsonError::UnknownMessage(name))
}

/// `message` as a [`DynamicMessage`], whose fields can be read by their proto names.
pub fn dynamic<M: Message + Name>(message: &M) -> Result<DynamicMessage, JsonError> {
    let descriptor = descriptor::<M>()?;
    DynamicMessage::decode(descriptor, message.encode_to_vec().as_slice()).map_err(|source| {
        JsonError::Decode {
            name: M::full_name(),
            source,
        }
    })
}

/// `message` in its canonical JSON form.
pub fn to_value<M: Message + Name>(message: &M) -> Result<serde_json::Value, JsonError> {
    let dynamic = dynamic(message)?;
    let mut value = dynamic
        .serialize_with_options(serde_json::value::Serializer, &SerializeOptions::new())
        .map_err(|source| JsonError::Json {
            name: M::full_name(),
            source,
        })?;
    whole_numbers_as_integers(&mut value);
    Ok(value)
}

/// 2^53: up to it a double holds every integer exactly.
const EXACT: f64 = 9_007_199_254_740_992.0;

/// `n` as an integer when it is a whole number a double holds exactly.
fn whole(n: f64) -> Option<i64> {
    (n.fract() == 0.0 && n.abs() <= EXACT).then_some(n as i64)
}

fn whole_numbers_as_integers(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Number(n) => {
            if let Some(i) = n.as_f64().filter(|_| n.is_f64()).and_then(whole) {
                *n = i.into();
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(whole_numbers_as_integers),
        serde_json::Value::Object(fields) => {
            fields.values_mut().for_each(whole_numbers_as_integers)
        }
        _ => {}
    }
}

/// serde_json's compact output, but whole doubles written as integers (see the module's
/// documentation).
struct Canonical;

impl serde_json::ser::Formatter for Canonical {
    fn write_f64<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        value: f64,
    ) -> std::io::Result<()> {
        match whole(value) {
            Some(i) => write!(writer, "{i}"),
            None => serde_json::ser::CompactFormatter.write_f64(writer, value),
        }
    }
}

/// `message` in its canonical JSON form, as one line of text.
pub fn to_string<M: Message + Name>(message: &M) -> Result<String, JsonError> {
    let dynamic = dynamic(message)?;
    let mut out = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, Canonical);
    dynamic
        .serialize_with_options(&mut serializer, &SerializeOptions::new())
        .map_err(|source| JsonError::Json {
            name: M::full_name(),
            source,
        })?;
    // serde_json writes UTF-8 only.
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Parses `text`, a message of type `M` in the proto3 JSON form (canonical names or the
/// original field names, as the mapping allows), with the canonical parser.
pub fn from_str<M: Message + Name + Default>(text: &str) -> Result<M, JsonError> {
    let descriptor = descriptor::<M>()?;
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let dynamic = DynamicMessage::deserialize(descriptor, &mut deserializer).map_err(|source| {
        JsonError::Json {
            name: M::full_name(),
            source,
        }
    })?;
    deserializer.end().map_err(|source| JsonError::Json {
        name: M::full_name(),
        source,
    })?;
    dynamic
        .transcode_to::<M>()
        .map_err(|source| JsonError::Decode {
            name: M::full_name(),
            source,
        })
}

/// The name of the field set in oneof `oneof` of `message` (its proto name, e.g.
/// `agent_message_delta` for `SessionEvent.payload`), or `None` when none is set.
pub fn oneof_case<M: Message + Name>(
    message: &M,
    oneof: &str,
) -> Result<Option<String>, JsonError> {
    let dynamic = dynamic(message)?;
    let Some(group) = dynamic.descriptor().oneofs().find(|o| o.name() == oneof) else {
        return Ok(None);
    };
    Ok(group
        .fields()
        .find(|field| dynamic.has_field(field))
        .map(|field| field.name().to_owned()))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;
    use crate::v1 as pb;

    fn delta() -> pb::SessionEvent {
        pb::SessionEvent {
            id: "e1".into(),
            session_id: "s1".into(),
            sequence: 7,
            created_at: Some(prost_types::Timestamp {
                seconds: 1_700_000_000,
                nanos: 5_000_000,
            }),
            turn_id: "t1".into(),
            payload: Some(pb::session_event::Payload::AgentMessageDelta(
                pb::AgentMessageDelta { delta: "Hi".into() },
            )),
        }
    }

    #[test]
    fn enums_are_written_by_name() {
        let done = pb::TurnCompleted {
            outcome: pb::TurnOutcome::Failed.into(),
            error: "boom".into(),
            ..Default::default()
        };
        let value = to_value(&done).unwrap();
        assert_eq!(
            value,
            json!({ "outcome": "TURN_OUTCOME_FAILED", "error": "boom" })
        );
        let back: pb::TurnCompleted = from_str(&value.to_string()).unwrap();
        assert_eq!(back, done);
    }

    #[test]
    fn sixty_four_bit_integers_are_strings_and_32_bit_ones_numbers() {
        let usage = pb::TokenUsage {
            input_tokens: 12,
            total_tokens: 40,
            ..Default::default()
        };
        let value = to_value(&usage).unwrap();
        assert_eq!(value["inputTokens"], json!("12"));
        let end = pb::ExecCommandEnd {
            exec_id: "x".into(),
            exit_code: 3,
            duration_ms: 1500,
            ..Default::default()
        };
        let value = to_value(&end).unwrap();
        assert_eq!(value["exitCode"], json!(3));
        assert_eq!(value["durationMs"], json!("1500"));
    }

    #[test]
    fn structs_are_plain_json_and_timestamps_rfc3339() {
        let mut fields = BTreeMap::new();
        fields.insert(
            "path".to_owned(),
            prost_types::Value::from("a.md".to_owned()),
        );
        fields.insert("limit".to_owned(), prost_types::Value::from(10.0));
        let started = pb::ToolCallStarted {
            call_id: "c1".into(),
            tool: "Read".into(),
            arguments: Some(prost_types::Struct { fields }),
        };
        let value = to_value(&started).unwrap();
        assert_eq!(
            value,
            json!({ "callId": "c1", "tool": "Read", "arguments": { "limit": 10, "path": "a.md" } })
        );
        assert!(value["arguments"]["limit"].is_u64());
        assert_eq!(
            to_string(&started).unwrap(),
            r#"{"callId":"c1","tool":"Read","arguments":{"limit":10,"path":"a.md"}}"#
        );
        let event = to_value(&delta()).unwrap();
        assert_eq!(event["createdAt"], json!("2023-11-14T22:13:20.005Z"));
    }

    #[test]
    fn a_oneof_is_its_set_field_and_defaults_are_left_out() {
        let event = delta();
        let value = to_value(&event).unwrap();
        assert_eq!(
            value,
            json!({
                "id": "e1",
                "sessionId": "s1",
                "sequence": "7",
                "createdAt": "2023-11-14T22:13:20.005Z",
                "turnId": "t1",
                "agentMessageDelta": { "delta": "Hi" },
            })
        );
        assert_eq!(
            oneof_case(&event, "payload").unwrap().as_deref(),
            Some("agent_message_delta")
        );
        let empty = pb::SessionEvent::default();
        assert_eq!(oneof_case(&empty, "payload").unwrap(), None);
        assert_eq!(to_value(&empty).unwrap(), json!({}));
        let back: pb::SessionEvent = from_str(&to_string(&event).unwrap()).unwrap();
        assert_eq!(back, event);
    }

    #[test]
    fn whole_doubles_are_integers_and_others_stay_doubles() {
        let mut fields = BTreeMap::new();
        fields.insert("t".to_owned(), prost_types::Value::from(0.25));
        fields.insert("huge".to_owned(), prost_types::Value::from(1e300));
        fields.insert("neg".to_owned(), prost_types::Value::from(-3.0));
        let config = pb::ModelSpec {
            provider: "p".into(),
            name: "n".into(),
            config: Some(prost_types::Struct { fields }),
        };
        let text = to_string(&config).unwrap();
        assert_eq!(
            text,
            r#"{"provider":"p","name":"n","config":{"huge":1e+300,"neg":-3,"t":0.25}}"#
        );
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text).unwrap(),
            to_value(&config).unwrap()
        );
    }

    #[test]
    fn bytes_are_base64() {
        let chunk = pb::ExportSessionCassetteResponse {
            chunk: b"\x00\xffhi".to_vec(),
        };
        let text = to_string(&chunk).unwrap();
        assert_eq!(text, r#"{"chunk":"AP9oaQ=="}"#);
        let back: pb::ExportSessionCassetteResponse = from_str(&text).unwrap();
        assert_eq!(back, chunk);
    }

    #[test]
    fn the_parser_refuses_what_is_not_the_message() {
        let error = from_str::<pb::TokenUsage>(r#"{"inputTokens": "many"}"#).unwrap_err();
        assert!(matches!(error, JsonError::Json { .. }), "{error}");
        assert!(
            error.to_string().contains("odyssey.v1.TokenUsage"),
            "{error}"
        );
    }
}
