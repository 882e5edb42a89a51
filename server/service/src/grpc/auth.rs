//! Bearer-token authentication for every RPC but health checks and reflection. A tower
//! layer rather than a per-service interceptor, so every future service is covered without
//! remembering to opt in.

use std::sync::Arc;
use std::task::{Context, Poll};

use tonic::Status;
use tower::{Layer, Service};

/// Health checks answer without a token: load balancers and orchestrators probe them.
pub(crate) const OPEN_PREFIX: &str = "/grpc.health.v1.Health/";
/// Services that answer without a token: health, and reflection (both versions), which
/// tells a client like grpcurl the API's schema, no secret (it is the `.proto` files of
/// the repository), and which grpcurl asks for before any call, health checks included.
const OPEN_PREFIXES: [&str; 3] = [
    OPEN_PREFIX,
    "/grpc.reflection.v1.ServerReflection/",
    "/grpc.reflection.v1alpha.ServerReflection/",
];

#[derive(Clone)]
pub struct AuthLayer {
    token: Option<Arc<str>>,
}

impl AuthLayer {
    pub fn new(token: Option<String>) -> Self {
        Self {
            token: token.filter(|t| !t.is_empty()).map(Arc::from),
        }
    }
}

impl<S> Layer<S> for AuthLayer {
    type Service = Auth<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Auth {
            inner,
            token: self.token.clone(),
        }
    }
}

#[derive(Clone)]
pub struct Auth<S> {
    inner: S,
    token: Option<Arc<str>>,
}

impl<S, B> Service<http::Request<B>> for Auth<S>
where
    S: Service<http::Request<B>, Response = http::Response<tonic::body::Body>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = futures::future::Either<
        S::Future,
        futures::future::Ready<Result<Self::Response, Self::Error>>,
    >;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let Some(token) = &self.token else {
            return futures::future::Either::Left(self.inner.call(request));
        };
        let path = request.uri().path();
        let open = OPEN_PREFIXES.iter().any(|prefix| path.starts_with(prefix));
        if open || authorized(&request, token) {
            return futures::future::Either::Left(self.inner.call(request));
        }
        let status = Status::unauthenticated(
            "missing or wrong bearer token: send `authorization: Bearer <token>`",
        );
        futures::future::Either::Right(futures::future::ready(Ok(status.into_http())))
    }
}

fn authorized<B>(request: &http::Request<B>, token: &str) -> bool {
    bearer_matches(request.headers(), token)
}

/// Whether the headers carry `authorization: Bearer <token>`. Shared with the HTTP
/// gateway, which sits behind the same token.
pub(crate) fn bearer_matches(headers: &http::HeaderMap, token: &str) -> bool {
    headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|given| constant_time_eq(given.as_bytes(), token.as_bytes()))
}

/// Compares without an early exit, so response time does not reveal a matching prefix.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
