//! Reading a session's event stream as a subscriber does, checking that it misses
//! nothing and repeats nothing.

use std::time::Instant;

use odyssey_client::proto::session_event::Payload;
use odyssey_client::{EventStream, OdysseyClient};

use crate::error::{BenchError, ClientContext, Result};

/// What one subscriber received.
#[derive(Clone, Debug)]
pub struct Followed {
    pub events: u64,
    pub last_sequence: u64,
    /// When the first and the last event arrived.
    pub first_at: Instant,
    pub last_at: Instant,
    /// Every sequence was the one after the previous (none missed, none repeated).
    pub in_order: bool,
}

impl Followed {
    /// Events per second between the first and the last event.
    pub fn rate(&self) -> f64 {
        let seconds = self.last_at.duration_since(self.first_at).as_secs_f64();
        if seconds <= 0.0 {
            return f64::NAN;
        }
        (self.events.saturating_sub(1)) as f64 / seconds
    }
}

/// Until what a stream is read.
#[derive(Clone, Copy, Debug)]
pub enum Until {
    /// The first `turn_completed`.
    TurnEnd,
    /// The event with this sequence.
    Sequence(u64),
}

/// Subscribes after `after_sequence`.
pub async fn subscribe(
    client: &OdysseyClient,
    session_id: &str,
    after_sequence: u64,
) -> Result<EventStream> {
    client
        .subscribe(session_id, after_sequence)
        .await
        .context("SubscribeSession")
}

/// Reads `stream` until `until`.
pub async fn follow(mut stream: EventStream, until: Until) -> Result<Followed> {
    let mut expected = stream.last_sequence() + 1;
    let mut followed: Option<Followed> = None;
    loop {
        let event = stream
            .next()
            .await
            .context("read the event stream")?
            .ok_or_else(|| BenchError::check("the event stream ended early"))?;
        let now = Instant::now();
        let f = followed.get_or_insert(Followed {
            events: 0,
            last_sequence: 0,
            first_at: now,
            last_at: now,
            in_order: true,
        });
        f.events += 1;
        f.in_order &= event.sequence == expected;
        f.last_sequence = event.sequence;
        f.last_at = now;
        expected = event.sequence + 1;
        let done = match until {
            Until::TurnEnd => matches!(event.payload, Some(Payload::TurnCompleted(_))),
            Until::Sequence(last) => event.sequence >= last,
        };
        if done {
            return Ok(f.clone());
        }
    }
}
