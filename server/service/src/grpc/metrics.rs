//! RPC metrics: every call counted and timed by service, method and gRPC status code, in
//! a tower layer around the whole API (health and reflection included), so no service
//! can forget it.
//!
//! A call is counted when its status is known: at the response headers for a
//! trailers-only answer (most errors, auth refusals), else at the trailers that close the
//! response body. So a unary call's duration includes sending its answer, and a
//! streaming call (SubscribeSession, BuildBundle, ExportBundle) is counted when its stream
//! ends, with the stream's lifetime as its duration; `odyssey_rpc_in_flight` shows the
//! streams still open. A call the client abandons counts as `CANCELLED`. Methods come
//! from the served descriptors: a client calling made-up paths lands in the one `other`
//! series instead of creating new ones.

use std::collections::HashMap;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use futures::future::{BoxFuture, Either};
use http_body::{Body as _, Frame, SizeHint};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prost::Message as _;
use tower::{Layer, Service};

use odyssey_runtime::metrics::{self, Histogram};

/// gRPC status codes by number, as labels.
const CODES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];
const CANCELLED: usize = 1;
const UNKNOWN: usize = 2;

/// The label of paths no served method has.
const OTHER: &str = "other";

struct Method {
    service: String,
    method: String,
    in_flight: AtomicI64,
    /// By status code.
    calls: [Histogram; CODES.len()],
}

impl Method {
    fn new(service: String, method: String) -> Self {
        Self {
            service,
            method,
            in_flight: AtomicI64::new(0),
            calls: std::array::from_fn(|_| Histogram::seconds()),
        }
    }

    fn used(&self) -> bool {
        self.in_flight.load(Ordering::Relaxed) != 0 || self.calls.iter().any(|h| h.count() > 0)
    }
}

/// Every served method's numbers. Built once; calls only touch atomics.
pub struct RpcMetrics {
    /// `/package.Service/Method` → position in `methods`.
    index: HashMap<String, usize>,
    /// The served methods, then `other`.
    methods: Vec<Method>,
}

impl fmt::Debug for RpcMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RpcMetrics")
            .field("methods", &self.methods.len())
            .finish()
    }
}

impl Default for RpcMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl RpcMetrics {
    /// Slots for every method this server serves: the API, health and reflection.
    pub fn new() -> Self {
        let sets = [
            odyssey_api::FILE_DESCRIPTOR_SET,
            tonic_health::pb::FILE_DESCRIPTOR_SET,
            tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET,
            tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET,
        ];
        let mut methods = Vec::new();
        for set in sets {
            let Ok(set) = prost_types::FileDescriptorSet::decode(set) else {
                continue;
            };
            for file in &set.file {
                let package = file.package();
                for service in &file.service {
                    let service_name = if package.is_empty() {
                        service.name().to_owned()
                    } else {
                        format!("{package}.{}", service.name())
                    };
                    for method in &service.method {
                        methods.push(Method::new(service_name.clone(), method.name().to_owned()));
                    }
                }
            }
        }
        let index = methods
            .iter()
            .enumerate()
            .map(|(at, m)| (format!("/{}/{}", m.service, m.method), at))
            .collect();
        methods.push(Method::new(OTHER.to_owned(), OTHER.to_owned()));
        Self { index, methods }
    }

    fn slot(&self, path: &str) -> usize {
        self.index
            .get(path)
            .copied()
            .unwrap_or(self.methods.len() - 1)
    }
}

impl Collector for RpcMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let used: Vec<&Method> = self.methods.iter().filter(|m| m.used()).collect();
        let calls = || {
            used.iter().flat_map(|m| {
                CODES
                    .iter()
                    .zip(&m.calls)
                    .filter(|(_, h)| h.count() > 0)
                    .map(|(code, h)| {
                        (
                            [
                                ("service", m.service.as_str()),
                                ("method", m.method.as_str()),
                                ("code", *code),
                            ],
                            h,
                        )
                    })
            })
        };
        metrics::counters(
            &mut encoder,
            "odyssey_rpc_calls",
            "gRPC calls ended, by service, method and status code (streams count when they end).",
            calls().map(|(labels, h)| (labels, h.count())),
        )?;
        metrics::histograms(
            &mut encoder,
            "odyssey_rpc_duration_seconds",
            "Duration of gRPC calls, from the request to the status (a stream's lifetime).",
            calls().map(|(labels, h)| (labels, h.snapshot())),
        )?;
        metrics::gauges(
            &mut encoder,
            "odyssey_rpc_in_flight",
            "gRPC calls in progress (open streams included), by service and method.",
            used.iter().map(|m| {
                (
                    [
                        ("service", m.service.as_str()),
                        ("method", m.method.as_str()),
                    ],
                    m.in_flight.load(Ordering::Relaxed),
                )
            }),
        )
    }
}

/// Counts the calls of the service it wraps in `metrics`; passes them through untouched
/// when there are none (no metrics endpoint).
#[derive(Clone)]
pub struct RpcMetricsLayer {
    metrics: Option<Arc<RpcMetrics>>,
}

impl RpcMetricsLayer {
    pub fn new(metrics: Option<Arc<RpcMetrics>>) -> Self {
        Self { metrics }
    }
}

impl<S> Layer<S> for RpcMetricsLayer {
    type Service = Metered<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Metered {
            inner,
            metrics: self.metrics.clone(),
        }
    }
}

#[derive(Clone)]
pub struct Metered<S> {
    inner: S,
    metrics: Option<Arc<RpcMetrics>>,
}

type Response = http::Response<tonic::body::Body>;

impl<S, B> Service<http::Request<B>> for Metered<S>
where
    S: Service<http::Request<B>, Response = Response>,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Either<S::Future, BoxFuture<'static, Result<Response, S::Error>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let Some(metrics) = &self.metrics else {
            return Either::Left(self.inner.call(request));
        };
        let mut timer = CallTimer::start(metrics.clone(), request.uri().path());
        let call = self.inner.call(request);
        Either::Right(Box::pin(async move {
            let response = call.await?;
            if let Some(code) = status_code(response.headers()) {
                timer.finish(code);
                return Ok(response);
            }
            if response.body().is_end_stream() {
                timer.finish(UNKNOWN);
                return Ok(response);
            }
            Ok(response.map(|body| tonic::body::Body::new(MeteredBody { inner: body, timer })))
        }))
    }
}

/// One call, from its request to its status; dropped unfinished, it was abandoned.
struct CallTimer {
    metrics: Arc<RpcMetrics>,
    slot: usize,
    started: Instant,
    done: bool,
}

impl CallTimer {
    fn start(metrics: Arc<RpcMetrics>, path: &str) -> Self {
        let slot = metrics.slot(path);
        metrics.methods[slot]
            .in_flight
            .fetch_add(1, Ordering::Relaxed);
        Self {
            metrics,
            slot,
            started: Instant::now(),
            done: false,
        }
    }

    fn finish(&mut self, code: usize) {
        if self.done {
            return;
        }
        self.done = true;
        let method = &self.metrics.methods[self.slot];
        method.in_flight.fetch_sub(1, Ordering::Relaxed);
        method.calls[code.min(CODES.len() - 1)].observe(self.started.elapsed());
    }
}

impl Drop for CallTimer {
    fn drop(&mut self) {
        self.finish(CANCELLED);
    }
}

/// The `grpc-status` of headers or trailers, as an index into [`CODES`].
fn status_code(headers: &http::HeaderMap) -> Option<usize> {
    let value = headers.get("grpc-status")?;
    let code = value
        .to_str()
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|code| *code < CODES.len());
    Some(code.unwrap_or(UNKNOWN))
}

/// A response body that finishes its call's timer at the trailers.
struct MeteredBody {
    inner: tonic::body::Body,
    timer: CallTimer,
}

impl http_body::Body for MeteredBody {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(trailers) = frame.trailers_ref() {
                    let code = status_code(trailers).unwrap_or(UNKNOWN);
                    self.timer.finish(code);
                }
            }
            Poll::Ready(Some(Err(status))) => self.timer.finish(status.code() as usize),
            Poll::Ready(None) => self.timer.finish(UNKNOWN),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn served_methods_have_slots_and_other_paths_share_one() {
        let metrics = RpcMetrics::new();
        let run = metrics.slot("/odyssey.v1.ExecutionService/Run");
        let check = metrics.slot("/grpc.health.v1.Health/Check");
        let reflect =
            metrics.slot("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo");
        let other = metrics.slot("/made.Up/Path");
        assert_eq!(metrics.methods[run].method, "Run");
        assert_eq!(metrics.methods[check].service, "grpc.health.v1.Health");
        assert_eq!(metrics.methods[reflect].method, "ServerReflectionInfo");
        assert_eq!(metrics.methods[other].service, OTHER);
        assert_eq!(other, metrics.slot("/another/one"));
    }

    #[test]
    fn status_codes_are_read_from_headers() {
        let mut headers = http::HeaderMap::new();
        assert_eq!(status_code(&headers), None);
        headers.insert("grpc-status", http::HeaderValue::from_static("5"));
        assert_eq!(status_code(&headers).map(|c| CODES[c]), Some("NOT_FOUND"));
        headers.insert("grpc-status", http::HeaderValue::from_static("99"));
        assert_eq!(status_code(&headers), Some(UNKNOWN));
    }
}
