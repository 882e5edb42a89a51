//! Requests whose bytes are not the protobuf message their method takes. tonic's protobuf
//! codec answers them INTERNAL, which tells the client the server broke when it was the
//! request that was wrong. This layer, around every service (health and reflection too),
//! turns exactly those statuses into INVALID_ARGUMENT with the `ErrorInfo` every status of
//! this server carries. It reads the status where tonic puts it: the response headers of
//! a trailers-only answer (a unary or server-streaming request that does not decode, an
//! upload stream whose handler gave up on a bad message) or the trailers of a stream.

use std::collections::HashMap;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::TryFutureExt;
use futures::future::MapOk;
use http::HeaderMap;
use http_body::{Body as _, Frame, SizeHint};
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};
use tower::{Layer, Service};

use super::status::ERROR_DOMAIN;

/// How prost's `DecodeError` starts its message, which tonic's codec passes on as is.
const DECODE_ERROR: &str = "failed to decode Protobuf message";

/// The `ErrorInfo` reason of the answer.
const REASON: &str = "MALFORMED_REQUEST";

#[derive(Clone, Copy, Default)]
pub struct MalformedRequestLayer;

impl<S> Layer<S> for MalformedRequestLayer {
    type Service = MalformedRequest<S>;

    fn layer(&self, inner: S) -> Self::Service {
        MalformedRequest { inner }
    }
}

#[derive(Clone)]
pub struct MalformedRequest<S> {
    inner: S,
}

type Response = http::Response<tonic::body::Body>;

impl<S, B> Service<http::Request<B>> for MalformedRequest<S>
where
    S: Service<http::Request<B>, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = MapOk<S::Future, fn(Response) -> Response>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        self.inner
            .call(request)
            .map_ok(remap_response as fn(_) -> _)
    }
}

/// Rewrites a trailers-only decode failure now; watches the trailers of any other answer.
fn remap_response(mut response: Response) -> Response {
    if remap(response.headers_mut()) || response.body().is_end_stream() {
        return response;
    }
    response.map(|inner| tonic::body::Body::new(Watched { inner }))
}

/// Replaces a decode failure's status in `headers` with INVALID_ARGUMENT; says whether
/// `headers` held a status at all.
fn remap(headers: &mut HeaderMap) -> bool {
    let Some(status) = Status::from_header_map(headers) else {
        return false;
    };
    if status.code() != Code::Internal || !status.message().starts_with(DECODE_ERROR) {
        return true;
    }
    let answer = Status::with_error_details(
        Code::InvalidArgument,
        format!(
            "the request is not a valid protobuf message of this method ({})",
            status.message()
        ),
        ErrorDetails::with_error_info(REASON, ERROR_DOMAIN, HashMap::new()),
    );
    for name in [
        Status::GRPC_STATUS,
        Status::GRPC_MESSAGE,
        Status::GRPC_STATUS_DETAILS,
    ] {
        headers.remove(name);
    }
    if answer.add_header(headers).is_err() {
        // Our own message and details are always valid header values; should that ever
        // fail, the code alone still tells the client what went wrong.
        headers.insert(Status::GRPC_STATUS, http::HeaderValue::from_static("3"));
    }
    true
}

/// A response body whose trailers are remapped.
struct Watched {
    inner: tonic::body::Body,
}

impl http_body::Body for Watched {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        polled.map(|frame| {
            frame.map(|frame| {
                frame.map(|frame| match frame.into_trailers() {
                    Ok(mut trailers) => {
                        remap(&mut trailers);
                        Frame::trailers(trailers)
                    }
                    Err(frame) => frame,
                })
            })
        })
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

    fn headers_of(status: &Status) -> HeaderMap {
        let mut headers = HeaderMap::new();
        status.add_header(&mut headers).expect("valid headers");
        headers
    }

    #[test]
    fn only_decode_failures_become_invalid_argument() {
        let mut decode = headers_of(&Status::internal(
            "failed to decode Protobuf message: invalid varint",
        ));
        assert!(remap(&mut decode));
        let status = Status::from_header_map(&decode).expect("status");
        assert_eq!(status.code(), Code::InvalidArgument);
        assert!(status.message().contains("invalid varint"), "{status:?}");
        assert_eq!(
            status.get_details_error_info().map(|i| i.reason),
            Some(REASON.to_owned())
        );

        let mut internal = headers_of(&Status::internal("internal error"));
        assert!(remap(&mut internal));
        let status = Status::from_header_map(&internal).expect("status");
        assert_eq!(status.code(), Code::Internal);

        assert!(!remap(&mut HeaderMap::new()));
    }
}
