//! What a hook receives for an event. A server installs the API's public JSON form (the
//! proto3 JSON of the message SubscribeSession sends, the same as its HTTP gateway and
//! `odyssey --json` print); the runtime, which knows nothing of the API, has only its own
//! serde form of [`Event`], used when it is embedded without a server.

use std::fmt;
use std::sync::Arc;

use crate::events::Event;

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
        serde_json::to_vec(event).unwrap_or_else(|_| b"{}".to_vec())
    }
}
