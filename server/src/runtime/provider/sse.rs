//! Server-sent events from an HTTP response, with an idle timeout.
//!
//! Parsing is eventsource-stream's; this adds what a model call needs on top: a limit on
//! the silence between two pieces of data (a stalled connection must not hang a turn
//! forever), and errors phrased as [`ProviderError`]s.

use std::time::Duration;

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::StreamExt;
use futures::stream::BoxStream;

use super::error::ProviderError;

/// The events of one streamed response.
pub(crate) struct SseEvents {
    inner: BoxStream<'static, Result<Event, EventStreamError<reqwest::Error>>>,
    idle_timeout: Duration,
    provider: String,
}

impl SseEvents {
    /// Callers redact errors (see [`ProviderError::redact_secret`]) before passing them on.
    pub fn new(response: reqwest::Response, idle_timeout: Duration, provider: &str) -> Self {
        Self {
            inner: response.bytes_stream().eventsource().boxed(),
            idle_timeout,
            provider: provider.to_owned(),
        }
    }

    /// The next event; `None` when the server closed the stream.
    pub async fn next(&mut self) -> Option<Result<Event, ProviderError>> {
        let item = match tokio::time::timeout(self.idle_timeout, self.inner.next()).await {
            Ok(item) => item?,
            Err(_) => {
                return Some(Err(ProviderError::Timeout {
                    provider: self.provider.clone(),
                    what: "no data from the stream",
                    after: self.idle_timeout,
                }));
            }
        };
        Some(item.map_err(|e| self.error(e)))
    }

    fn error(&self, e: EventStreamError<reqwest::Error>) -> ProviderError {
        match e {
            EventStreamError::Transport(e) => ProviderError::Unavailable {
                provider: self.provider.clone(),
                message: format!("connection lost mid-answer: {}", error_chain(&e)),
                retry_after: None,
            },
            EventStreamError::Utf8(e) => ProviderError::Protocol {
                provider: self.provider.clone(),
                message: format!("event stream is not UTF-8: {e}"),
            },
            EventStreamError::Parser(e) => ProviderError::Protocol {
                provider: self.provider.clone(),
                message: format!("event stream does not parse: {e}"),
            },
        }
    }
}

/// An error and its causes on one line: reqwest's top-level message ("error sending
/// request") hides the useful part ("connection refused") in its source chain.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
