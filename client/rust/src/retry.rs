//! Trying calls again when the server asked for it or could not answer for a moment.
//!
//! Reads change nothing, so one that fails with UNAVAILABLE (a restart, a dropped
//! connection) is tried again with backoff. Writes are not: the first attempt may have
//! happened. Submit and Run are tried again only when the server refused them with
//! RESOURCE_EXHAUSTED and said, in `RetryInfo`, how long to wait: then nothing happened.

use std::future::Future;
use std::time::Duration;

use tonic::Code;

use crate::error::ClientError;

/// Attempts of a read: the pauses between them add up to 1.5 s.
const READ_ATTEMPTS: u32 = 5;
const FIRST_PAUSE: Duration = Duration::from_millis(100);
/// Attempts of a refused submit, and the longest pause the server may ask for.
const SUBMIT_ATTEMPTS: u32 = 3;
const LONGEST_RETRY_DELAY: Duration = Duration::from_secs(10);

/// Runs `call`, again while it fails with UNAVAILABLE, pausing 0.1 s, 0.2 s, 0.4 s, 0.8 s.
pub(crate) async fn read<T, F, Fut>(mut call: F) -> Result<T, ClientError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ClientError>>,
{
    let mut pause = FIRST_PAUSE;
    for _ in 1..READ_ATTEMPTS {
        match call().await {
            Err(e) if e.code() == Some(Code::Unavailable) => {
                tokio::time::sleep(pause).await;
                pause *= 2;
            }
            done => return done,
        }
    }
    call().await
}

/// Runs `call`, again after the server's delay while it refuses with RESOURCE_EXHAUSTED
/// and a `RetryInfo` (a full queue).
pub(crate) async fn submit<T, F, Fut>(mut call: F) -> Result<T, ClientError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ClientError>>,
{
    for _ in 1..SUBMIT_ATTEMPTS {
        match call().await {
            Err(e) if e.code() == Some(Code::ResourceExhausted) => {
                match e.details().and_then(|d| d.retry_delay) {
                    Some(delay) => tokio::time::sleep(delay.min(LONGEST_RETRY_DELAY)).await,
                    None => return Err(e),
                }
            }
            done => return done,
        }
    }
    call().await
}
