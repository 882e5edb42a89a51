//! Issue 11 ("Also fix"): request bytes that are not the method's protobuf message are
//! INVALID_ARGUMENT, not INTERNAL. Sent through a real tonic channel with a codec that
//! writes the bytes as given, so the frame is well formed and only the message is not.

use bytes::{Buf, BufMut};
use http::uri::PathAndQuery;
use tonic::Code;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};

use crate::support::{TestServer, error_reason};

/// Bytes no protobuf message decodes: a varint that never ends.
const GARBAGE: [u8; 11] = [0xff; 11];

/// Sends and receives raw message bytes.
#[derive(Clone, Copy, Default)]
struct RawCodec;

impl Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawCodec;
    type Decoder = RawCodec;

    fn encoder(&mut self) -> Self::Encoder {
        RawCodec
    }

    fn decoder(&mut self) -> Self::Decoder {
        RawCodec
    }
}

impl Encoder for RawCodec {
    type Item = Vec<u8>;
    type Error = tonic::Status;

    fn encode(&mut self, item: Vec<u8>, buf: &mut EncodeBuf<'_>) -> Result<(), Self::Error> {
        buf.put_slice(&item);
        Ok(())
    }
}

impl Decoder for RawCodec {
    type Item = Vec<u8>;
    type Error = tonic::Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Self::Error> {
        Ok(Some(buf.copy_to_bytes(buf.remaining()).to_vec()))
    }
}

fn assert_malformed(what: &str, status: tonic::Status) {
    assert_eq!(status.code(), Code::InvalidArgument, "{what}: {status:?}");
    assert_eq!(
        error_reason(&status).as_deref(),
        Some("MALFORMED_REQUEST"),
        "{what}"
    );
    assert!(
        status.message().contains("not a valid protobuf message"),
        "{what}: {}",
        status.message()
    );
}

#[tokio::test]
async fn request_bytes_that_do_not_decode_are_invalid_argument() {
    let server = TestServer::start().await;
    let mut grpc = tonic::client::Grpc::new(server.channel.clone());

    for path in [
        "/odyssey.v1.SessionService/GetSession",
        "/odyssey.v1.ServerService/GetServerInfo",
        "/grpc.health.v1.Health/Check",
    ] {
        grpc.ready().await.expect("ready");
        let status = grpc
            .unary(
                tonic::Request::new(GARBAGE.to_vec()),
                PathAndQuery::from_static(path),
                RawCodec,
            )
            .await
            .expect_err(path);
        assert_malformed(path, status);
    }

    // A server stream refuses its request before the first message.
    grpc.ready().await.expect("ready");
    let path = "/odyssey.v1.SessionService/SubscribeSession";
    let status = match grpc
        .server_streaming(
            tonic::Request::new(GARBAGE.to_vec()),
            PathAndQuery::from_static(path),
            RawCodec,
        )
        .await
    {
        Err(status) => status,
        Ok(stream) => stream
            .into_inner()
            .message()
            .await
            .expect_err("the stream fails"),
    };
    assert_malformed(path, status);

    // An upload stream whose message does not decode.
    grpc.ready().await.expect("ready");
    let path = "/odyssey.v1.BundleService/BuildBundle";
    let status = grpc
        .client_streaming(
            tonic::Request::new(futures::stream::iter([GARBAGE.to_vec()])),
            PathAndQuery::from_static(path),
            RawCodec,
        )
        .await
        .expect_err(path);
    assert_malformed(path, status);

    // A well-formed request through the same codec still works.
    grpc.ready().await.expect("ready");
    let info = grpc
        .unary(
            tonic::Request::new(Vec::new()),
            PathAndQuery::from_static("/odyssey.v1.ServerService/GetServerInfo"),
            RawCodec,
        )
        .await
        .expect("an empty message is a valid GetServerInfoRequest");
    assert!(!info.into_inner().is_empty());
}
