//! The gateway's bearer-token check: the same token and comparison as the gRPC port.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::HttpError;
use crate::grpc::auth::bearer_matches;

#[derive(Clone)]
pub struct Token(Option<Arc<str>>);

impl Token {
    pub fn new(token: Option<String>) -> Self {
        Self(token.filter(|t| !t.is_empty()).map(Arc::from))
    }
}

pub async fn require(State(token): State<Token>, request: Request, next: Next) -> Response {
    match &token.0 {
        Some(token) if !bearer_matches(request.headers(), token) => {
            HttpError::unauthenticated().into_response()
        }
        _ => next.run(request).await,
    }
}
