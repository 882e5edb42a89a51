//! Deliveries a receiver asked for: bodies POSTed to one webhook in order, each retried
//! with exponential backoff until a 2xx answer or the last attempt. Unlike the operator's
//! event hooks, which observe and never retry, these carry updates a client subscribed to
//! (A2A push notifications), so each is worth a few attempts; a delivery still gives up,
//! so a receiver that is gone never holds anything up for long. The HTTP client is the
//! hooks' own: no redirects (they could lead to a host nobody allowed), no credentials
//! but the headers given.

use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use tokio_util::sync::CancellationToken;

/// How hard a delivery tries.
#[derive(Clone, Copy, Debug)]
pub struct RetryPolicy {
    /// Attempts per body, the first included.
    pub attempts: u32,
    /// The wait after the first failure; doubled after each next one.
    pub first_backoff: Duration,
    /// The longest one attempt may take.
    pub timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 4,
            first_backoff: Duration::from_millis(500),
            timeout: Duration::from_secs(10),
        }
    }
}

/// Why a body was not delivered.
#[derive(Debug, thiserror::Error)]
pub enum DeliveryError {
    #[error("a header is not valid: {0}")]
    Header(String),
    #[error("cannot set up the HTTP client: {0}")]
    Client(String),
    #[error("not delivered after {attempts} attempts: {last}")]
    GaveUp { attempts: u32, last: String },
    #[error("stopped before it was delivered")]
    Stopped,
}

/// One webhook that bodies are delivered to, in order.
pub struct RetryingWebhook {
    client: reqwest::Client,
    url: reqwest::Url,
    headers: HeaderMap,
    policy: RetryPolicy,
}

impl RetryingWebhook {
    /// A webhook at `url` that gets `headers` with every body.
    pub fn new(
        url: reqwest::Url,
        headers: &[(String, String)],
        policy: RetryPolicy,
    ) -> Result<Self, DeliveryError> {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            let name = HeaderName::try_from(name.as_str())
                .map_err(|_| DeliveryError::Header(name.clone()))?;
            let mut value = HeaderValue::try_from(value.as_str())
                .map_err(|_| DeliveryError::Header(name.to_string()))?;
            value.set_sensitive(true);
            map.insert(name, value);
        }
        let client = super::webhook::client().map_err(DeliveryError::Client)?;
        Ok(Self {
            client,
            url,
            headers: map,
            policy,
        })
    }

    /// POSTs `body` as `content_type`, retrying until a 2xx answer, the last attempt, or
    /// `stop`.
    pub async fn post(
        &self,
        content_type: &'static str,
        body: Vec<u8>,
        stop: &CancellationToken,
    ) -> Result<(), DeliveryError> {
        let mut backoff = self.policy.first_backoff;
        let mut last = String::new();
        let attempts = self.policy.attempts.max(1);
        for attempt in 1..=attempts {
            let request = self
                .client
                .post(self.url.clone())
                .headers(self.headers.clone())
                .header(CONTENT_TYPE, content_type)
                .body(body.clone())
                .timeout(self.policy.timeout)
                .send();
            let outcome = tokio::select! {
                () = stop.cancelled() => return Err(DeliveryError::Stopped),
                outcome = request => outcome,
            };
            match outcome {
                Ok(response) if response.status().is_success() => return Ok(()),
                Ok(response) => last = format!("the webhook answered {}", response.status()),
                // The URL stays out of messages: receivers put secrets in it.
                Err(e) => last = crate::error::chain(&e.without_url()),
            }
            if attempt < attempts {
                tokio::select! {
                    () = stop.cancelled() => return Err(DeliveryError::Stopped),
                    () = tokio::time::sleep(backoff) => {}
                }
                backoff = backoff.saturating_mul(2);
            }
        }
        Err(DeliveryError::GaveUp { attempts, last })
    }
}
