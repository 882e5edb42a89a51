//! What a hook receives for an event. A server installs the API's public JSON form (the
//! proto3 JSON of the message SubscribeSession sends, the same as its HTTP gateway and
//! `odyssey --json` print); the runtime, which knows nothing of the API, has only its own
//! serde form of [`Event`], used when it is embedded without a server.

use std::fmt;
use std::sync::Arc;

use crate::events::{Event, EventPayload};

/// Turns an event into the body of one delivery (a webhook request, a command's line).
/// The result holds no newline of its own: command hooks put one after each event.
pub trait EncodeEvent: Send + Sync {
    fn encode(&self, event: &Event) -> Vec<u8>;
}

/// The encoder every hook of a runtime uses ([`crate::RuntimeConfig::event_hook_encoder`]).
#[derive(Clone)]
pub struct EventEncoder(Arc<dyn EncodeEvent>);

impl EventEncoder {
    pub fn new(encoder: impl EncodeEvent + 'static) -> Self {
        Self(Arc::new(encoder))
    }

    /// The runtime's own serde form of events, for a runtime embedded without a server.
    pub fn runtime_form() -> Self {
        Self::new(RuntimeForm)
    }

    pub(super) fn encode(&self, event: &Event) -> Vec<u8> {
        self.0.encode(event)
    }
}

impl Default for EventEncoder {
    fn default() -> Self {
        Self::runtime_form()
    }
}

impl fmt::Debug for EventEncoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EventEncoder")
    }
}

/// `serde_json` of [`Event`].
struct RuntimeForm;

impl EncodeEvent for RuntimeForm {
    fn encode(&self, event: &Event) -> Vec<u8> {
        // An event was already encoded once, into the log, so this cannot fail; an empty
        // object keeps the framing if it ever did.
        serde_json::to_vec(&without_images(event)).unwrap_or_else(|_| b"{}".to_vec())
    }
}

/// The event as hooks receive it: a turn record's tool results keep their descriptions
/// of the images tools returned, not the images (which only the model is sent).
fn without_images(event: &Event) -> std::borrow::Cow<'_, Event> {
    let EventPayload::TurnCompleted(completed) = &event.payload else {
        return std::borrow::Cow::Borrowed(event);
    };
    if completed.messages.iter().all(|m| m.images.is_empty()) {
        return std::borrow::Cow::Borrowed(event);
    }
    let mut event = event.clone();
    if let EventPayload::TurnCompleted(completed) = &mut event.payload {
        for message in &mut completed.messages {
            message.images.clear();
        }
    }
    std::borrow::Cow::Owned(event)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::{ChatImage, ChatMessage};
    use crate::events::{TurnCompleted, TurnOutcome};

    #[test]
    fn hooks_get_a_turn_records_image_descriptions_but_not_its_images() {
        let event = Event {
            id: uuid::Uuid::nil(),
            session_id: uuid::Uuid::nil(),
            sequence: 3,
            created_at_ms: 1,
            turn_id: None,
            payload: EventPayload::TurnCompleted(TurnCompleted {
                outcome: TurnOutcome::Completed,
                response: "a logo".into(),
                error: String::new(),
                usage: Default::default(),
                messages: vec![ChatMessage {
                    images: vec![ChatImage {
                        mime_type: "image/png".into(),
                        data: "iVBORw0KGgo=".into(),
                    }],
                    ..ChatMessage::tool_result("c1", "[image image/png, 8 bytes]", false)
                }],
                model_calls: 2,
                reason: String::new(),
            }),
        };
        let body = String::from_utf8(EventEncoder::runtime_form().encode(&event)).expect("utf-8");
        assert!(body.contains("[image image/png, 8 bytes]"), "{body}");
        assert!(!body.contains("iVBORw0KGgo"), "{body}");
    }
}
