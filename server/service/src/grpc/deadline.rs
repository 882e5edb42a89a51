//! Deadlines answered as gRPC names them. tonic enforces a client's `grpc-timeout` around
//! every service and, when it passes, answers CANCELLED ("Timeout expired"); a client
//! whose own timer has not fired yet (the two race) then reports a call past its deadline
//! as cancelled. This layer ends such a call a moment before tonic would, with
//! DEADLINE_EXCEEDED, as every gRPC server does. Like tonic's, it bounds the wait for the
//! response, not a stream's later messages.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::BoxFuture;
use http::HeaderMap;
use tonic::Status;
use tower::{Layer, Service};

/// How much sooner than tonic this layer answers.
const AHEAD: Duration = Duration::from_millis(5);

#[derive(Clone, Copy, Default)]
pub struct DeadlineLayer;

impl<S> Layer<S> for DeadlineLayer {
    type Service = Deadline<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Deadline { inner }
    }
}

#[derive(Clone)]
pub struct Deadline<S> {
    inner: S,
}

type Response = http::Response<tonic::body::Body>;

impl<S, B> Service<http::Request<B>> for Deadline<S>
where
    S: Service<http::Request<B>, Response = Response>,
    S::Future: Send + 'static,
    S::Error: 'static,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn std::future::Future<Output = Result<Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let timeout = grpc_timeout(request.headers());
        let answer: BoxFuture<'static, _> = Box::pin(self.inner.call(request));
        match timeout {
            None => answer,
            Some(timeout) => Box::pin(async move {
                match tokio::time::timeout(timeout.saturating_sub(AHEAD), answer).await {
                    Ok(answered) => answered,
                    Err(_) => Ok(Status::deadline_exceeded(
                        "the call's deadline passed before the server answered",
                    )
                    .into_http()),
                }
            }),
        }
    }
}

/// The `grpc-timeout` of a request: at most 8 digits and a unit (`H`, `M`, `S`, `m`, `u`,
/// `n`), as the gRPC protocol spells it; `None` when absent or malformed (then tonic's own
/// parsing decides).
fn grpc_timeout(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get("grpc-timeout")?.to_str().ok()?;
    let (digits, unit) = value.split_at(value.len().checked_sub(1)?);
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let amount: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(amount * 3600),
        "M" => Duration::from_secs(amount * 60),
        "S" => Duration::from_secs(amount),
        "m" => Duration::from_millis(amount),
        "u" => Duration::from_micros(amount),
        "n" => Duration::from_nanos(amount),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(value: &str) -> Option<Duration> {
        let mut headers = HeaderMap::new();
        headers.insert("grpc-timeout", value.parse().unwrap());
        grpc_timeout(&headers)
    }

    #[test]
    fn timeouts_are_read_as_grpc_spells_them() {
        assert_eq!(parsed("300m"), Some(Duration::from_millis(300)));
        assert_eq!(parsed("2S"), Some(Duration::from_secs(2)));
        assert_eq!(parsed("1H"), Some(Duration::from_secs(3600)));
        assert_eq!(parsed("1500000u"), Some(Duration::from_millis(1500)));
        for bad in ["", "m", "123456789m", "10x", "-1S", "1.5S"] {
            assert_eq!(parsed(bad), None, "{bad}");
        }
    }
}
