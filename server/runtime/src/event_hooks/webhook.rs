//! A webhook hook: each event is one `POST` of its JSON (`content-type:
//! application/json`), one at a time so the receiver sees a session's events in order. A
//! 2xx answer is a delivery; anything else, a redirect included (it could lead to a host
//! the operator did not name), is a failure. Failed events are not retried: a hook
//! observes, and a retry would hold up every event behind it.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::CONTENT_TYPE;
use tokio::sync::mpsc;

use super::{Control, EventEncoder, Failure, HookStats};
use crate::events::Event;

/// The HTTP client every webhook shares.
pub(super) fn client() -> Result<reqwest::Client, String> {
    crate::provider::install_crypto_provider();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("odysseyd/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot set up the event hooks' HTTP client: {e}"))
}

pub(super) struct Webhook {
    client: reqwest::Client,
    url: String,
    timeout: Duration,
    encoder: EventEncoder,
    stats: Arc<HookStats>,
}

impl Webhook {
    pub(super) fn new(
        client: reqwest::Client,
        url: String,
        timeout: Duration,
        encoder: EventEncoder,
        stats: Arc<HookStats>,
    ) -> Self {
        Self {
            client,
            url,
            timeout,
            encoder,
            stats,
        }
    }

    pub(super) async fn run(self, mut events: mpsc::Receiver<Arc<Event>>, control: Control) {
        let mut stopping = false;
        loop {
            let next = tokio::select! {
                biased;
                () = control.abort.cancelled() => return,
                () = control.stop.cancelled(), if !stopping => {
                    stopping = true;
                    events.close();
                    continue;
                }
                event = events.recv() => event,
            };
            let Some(event) = next else {
                return;
            };
            tokio::select! {
                () = control.abort.cancelled() => return,
                () = self.deliver(&event) => {}
            }
        }
    }

    async fn deliver(&self, event: &Event) {
        let request = self
            .client
            .post(&self.url)
            .header(CONTENT_TYPE, "application/json")
            .body(self.encoder.encode(event))
            .send();
        let exchange = async {
            let response = request.await?;
            let status = response.status();
            // Reading the (small) answer lets the connection serve the next event.
            response.bytes().await?;
            Ok::<_, reqwest::Error>(status)
        };
        let failure = match tokio::time::timeout(self.timeout, exchange).await {
            Ok(Ok(status)) if status.is_success() => {
                self.stats.delivered(1);
                return;
            }
            Ok(Ok(status)) => (Failure::Status, format!("the webhook answered {status}")),
            Ok(Err(e)) if e.is_timeout() => (Failure::Timeout, timed_out(self.timeout)),
            Ok(Err(e)) => {
                // The URL stays out of the log: some receivers put a secret in it.
                let e = e.without_url();
                (
                    Failure::Request,
                    format!("the request failed: {}", crate::error::chain(&e)),
                )
            }
            Err(_) => (Failure::Timeout, timed_out(self.timeout)),
        };
        self.stats.events_failed(1);
        self.stats.error(failure.0, &failure.1);
    }
}

fn timed_out(after: Duration) -> String {
    format!("no answer within {} ms", after.as_millis())
}
