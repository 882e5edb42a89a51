//! The API's one public JSON form, as the gateway answers and event hooks receive it:
//! each body is an `odyssey.v1` message in its proto3 canonical JSON mapping
//! ([`odyssey_api::json`]), exactly what grpcurl prints for the same RPC. An event is the
//! `SubscribeSessionResponse` that SubscribeSession sends for it.

use axum::response::{IntoResponse, Response};
use odyssey_api::v1 as pb;
use odyssey_runtime::event_hooks::EncodeEvent;
use odyssey_runtime::events::Event;
use prost::{Message, Name};

use super::error::HttpError;
use crate::grpc::convert::EventIds;

/// `event` as the message SubscribeSession sends for it.
pub(crate) fn event_message(ids: &mut EventIds, event: &Event) -> pb::SubscribeSessionResponse {
    pb::SubscribeSessionResponse {
        item: Some(pb::subscribe_session_response::Item::Event(
            ids.event(event),
        )),
    }
}

/// Event hooks' bodies in the public JSON form, installed by `serve` in place of the
/// runtime's own serde form of events.
pub struct ApiEventJson;

impl EncodeEvent for ApiEventJson {
    fn encode(&self, event: &Event) -> Vec<u8> {
        let message = event_message(&mut EventIds::default(), event);
        match odyssey_api::json::to_string(&message) {
            Ok(text) => text.into_bytes(),
            Err(error) => {
                // A server defect; an empty object keeps a command hook's framing.
                tracing::error!(error = %error, "an event has no JSON form");
                b"{}".to_vec()
            }
        }
    }
}

/// An API message as a JSON answer.
pub struct ProtoJson<M>(pub M);

impl<M: Message + Name> IntoResponse for ProtoJson<M> {
    fn into_response(self) -> Response {
        match odyssey_api::json::to_string(&self.0) {
            Ok(text) => ([(http::header::CONTENT_TYPE, "application/json")], text).into_response(),
            Err(error) => HttpError::unencodable(&error).into_response(),
        }
    }
}
