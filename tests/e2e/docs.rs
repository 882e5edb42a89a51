//! The event reference (docs/events.md) against the server's own types: every log example
//! reads back through the runtime's `Event` into exactly the same JSON (no unknown or
//! misspelled field is silently dropped, no default is left out or added), and every
//! payload of the API's `SessionEvent` has an example in both shapes. `scripts/check-docs`
//! checks the same examples against a running server and grpcurl.

use std::collections::BTreeSet;

use odyssey_runtime::events::Event;
use prost::Message;
use prost_types::FileDescriptorSet;
use serde_json::Value;

const EVENTS_DOC: &str = include_str!("../../docs/events.md");

/// The bodies of the fenced blocks that follow `<!-- check: KIND -->`.
fn checked_blocks(doc: &str, kind: &str) -> Vec<String> {
    let directive = format!("<!-- check: {kind} -->");
    let mut blocks = Vec::new();
    let mut lines = doc.lines();
    while let Some(line) = lines.next() {
        if line.trim() != directive {
            continue;
        }
        let fence = lines.next().unwrap_or_default();
        assert!(
            fence.starts_with("```"),
            "`{directive}` must be followed by a code block, not `{fence}`"
        );
        let body: Vec<&str> = lines
            .by_ref()
            .take_while(|l| !l.starts_with("```"))
            .collect();
        blocks.push(body.join("\n"));
    }
    blocks
}

/// The oneof fields of `SessionEvent.payload`: (proto name, JSON name).
fn payload_fields() -> Vec<(String, String)> {
    let set = FileDescriptorSet::decode(odyssey_api::FILE_DESCRIPTOR_SET).expect("descriptor set");
    let message = set
        .file
        .iter()
        .filter(|f| f.package() == "odyssey.v1")
        .flat_map(|f| &f.message_type)
        .find(|m| m.name() == "SessionEvent")
        .expect("SessionEvent in the descriptor set");
    let payload = message
        .oneof_decl
        .iter()
        .position(|o| o.name() == "payload")
        .expect("the payload oneof");
    message
        .field
        .iter()
        .filter(|f| f.oneof_index == Some(payload as i32))
        .map(|f| (f.name().to_owned(), f.json_name().to_owned()))
        .collect()
}

#[test]
fn every_log_example_is_exactly_what_the_server_writes() {
    let blocks = checked_blocks(EVENTS_DOC, "event-log");
    assert!(
        !blocks.is_empty(),
        "docs/events.md has no event-log examples"
    );
    for block in &blocks {
        let shown: Value =
            serde_json::from_str(block).unwrap_or_else(|e| panic!("not JSON ({e}):\n{block}"));
        let event: Event = serde_json::from_value(shown.clone())
            .unwrap_or_else(|e| panic!("not an event ({e}):\n{block}"));
        let written = serde_json::to_value(&event).expect("serialize");
        assert_eq!(
            written, shown,
            "the server would write this event differently:\n{written:#}"
        );
    }
}

#[test]
fn every_event_payload_is_documented_in_both_shapes() {
    let logged: BTreeSet<String> = checked_blocks(EVENTS_DOC, "event-log")
        .iter()
        .filter_map(|b| {
            let value: Value = serde_json::from_str(b).ok()?;
            value.get("type")?.as_str().map(str::to_owned)
        })
        .collect();
    let printed: BTreeSet<String> = checked_blocks(EVENTS_DOC, "event-grpcurl")
        .iter()
        .filter_map(|b| {
            let value: Value = serde_json::from_str(b).ok()?;
            let event = value.get("event")?.as_object()?.clone();
            Some(event.into_iter().map(|(k, _)| k).collect::<Vec<_>>())
        })
        .flatten()
        .collect();
    let fields = payload_fields();
    assert!(fields.len() >= 18, "payload fields: {fields:?}");
    for (name, json_name) in &fields {
        assert!(
            logged.contains(name),
            "docs/events.md has no event-log example of `{name}`"
        );
        assert!(
            printed.contains(json_name),
            "docs/events.md has no event-grpcurl example of `{json_name}`"
        );
        assert!(
            EVENTS_DOC.contains(&format!("\n## {name}\n")),
            "docs/events.md has no `## {name}` section"
        );
    }
    let known: BTreeSet<&str> = fields.iter().map(|(name, _)| name.as_str()).collect();
    for name in &logged {
        assert!(
            known.contains(name.as_str()),
            "`{name}` is not an event of the API"
        );
    }
}

/// The one public JSON form (gateway, `odyssey --json`, event hooks) is what grpcurl
/// prints: every grpcurl example, parsed by the canonical proto3 JSON parser, prints back
/// exactly the same through `odyssey_api::json`. (`scripts/check-docs` checks that grpcurl
/// prints these examples from the log examples.)
#[test]
fn the_public_json_form_prints_each_grpcurl_example_exactly() {
    use odyssey_api::v1 as pb;
    let examples = checked_blocks(EVENTS_DOC, "event-grpcurl");
    assert!(examples.len() >= 18, "{} examples", examples.len());
    for example in &examples {
        let message: pb::SubscribeSessionResponse =
            odyssey_api::json::from_str(example).unwrap_or_else(|e| panic!("{e}:\n{example}"));
        let printed = odyssey_api::json::to_string(&message).expect("prints");
        let printed: Value = serde_json::from_str(&printed).expect("JSON");
        let expected: Value = serde_json::from_str(example).expect("JSON");
        assert_eq!(printed, expected, "{example}");
    }
}
