//! Server-sent events from an HTTP response, with an idle timeout.
//!
//! Parsing is [`SseParser`]'s; this adds what a model call needs on top: a limit on the
//! silence between two pieces of data (a stalled connection must not hang a turn
//! forever), and errors phrased as [`ProviderError`]s.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;

use super::error::ProviderError;
use super::sse_parser::{SseEvent, SseParser};

/// The events of one streamed response.
pub(crate) struct SseEvents {
    body: BoxStream<'static, Result<Bytes, reqwest::Error>>,
    parser: SseParser,
    /// The server closed the stream.
    ended: bool,
    idle_timeout: Duration,
    provider: String,
}

impl SseEvents {
    /// Callers redact errors (see [`ProviderError::redact_secret`]) before passing them on.
    pub fn new(response: reqwest::Response, idle_timeout: Duration, provider: &str) -> Self {
        Self {
            body: response.bytes_stream().boxed(),
            parser: SseParser::new(),
            ended: false,
            idle_timeout,
            provider: provider.to_owned(),
        }
    }

    /// The next event; `None` when the server closed the stream (an event it left
    /// unfinished is dropped, as the format says).
    pub async fn next(&mut self) -> Option<Result<SseEvent, ProviderError>> {
        loop {
            match self.parser.next_event() {
                Ok(Some(event)) => return Some(Ok(event)),
                Ok(None) if self.ended => return None,
                Ok(None) => {}
                Err(e) => {
                    self.ended = true;
                    return Some(Err(ProviderError::Protocol {
                        provider: self.provider.clone(),
                        message: format!("event stream is not UTF-8: {e}"),
                    }));
                }
            }
            match tokio::time::timeout(self.idle_timeout, self.body.next()).await {
                Ok(Some(Ok(chunk))) => self.parser.push(&chunk),
                Ok(Some(Err(e))) => {
                    self.ended = true;
                    return Some(Err(ProviderError::Unavailable {
                        provider: self.provider.clone(),
                        message: format!("connection lost mid-answer: {}", crate::error::chain(&e)),
                        retry_after: None,
                    }));
                }
                Ok(None) => self.ended = true,
                Err(_) => {
                    return Some(Err(ProviderError::Timeout {
                        provider: self.provider.clone(),
                        what: "no data from the stream",
                        after: self.idle_timeout,
                    }));
                }
            }
        }
    }
}
