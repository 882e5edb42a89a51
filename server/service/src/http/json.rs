//! The gateway's answers in the API's one public JSON form: each is an `odyssey.v1`
//! message in its proto3 canonical JSON mapping ([`odyssey_api::json`]), exactly what
//! grpcurl prints for the same RPC.

use axum::response::{IntoResponse, Response};
use prost::{Message, Name};

use super::error::HttpError;

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
