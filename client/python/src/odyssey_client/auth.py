"""The bearer token on every call of a channel, the raw stubs' included: a client
interceptor adds ``authorization: Bearer <token>`` to each call that carries none."""

from __future__ import annotations

from typing import (
    TYPE_CHECKING,
    AsyncIterable,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Optional,
    TypeVar,
    Union,
)

import grpc
from grpc import aio

if TYPE_CHECKING:
    from grpc import _CallFuture, _CallIterator

_Request = TypeVar("_Request")
_Response = TypeVar("_Response")


class _CallDetails(grpc.ClientCallDetails):
    def __init__(
        self,
        details: grpc.ClientCallDetails,
        metadata: tuple[tuple[str, str | bytes], ...],
    ) -> None:
        self.method = details.method
        self.timeout = details.timeout
        self.metadata = metadata
        self.credentials = details.credentials
        self.wait_for_ready = details.wait_for_ready
        self.compression: Optional[grpc.Compression] = getattr(details, "compression", None)


class TokenInterceptor(
    grpc.UnaryUnaryClientInterceptor,
    grpc.UnaryStreamClientInterceptor,
    grpc.StreamUnaryClientInterceptor,
    grpc.StreamStreamClientInterceptor,
):
    """Adds the bearer token to every call that carries no ``authorization`` of its own."""

    def __init__(self, token: str) -> None:
        self._header = ("authorization", f"Bearer {token}")

    def _with_token(self, details: grpc.ClientCallDetails) -> grpc.ClientCallDetails:
        metadata = tuple(details.metadata or ())
        if any(key == "authorization" for key, _ in metadata):
            return details
        return _CallDetails(details, metadata + (self._header,))

    def intercept_unary_unary(
        self,
        continuation: Callable[[grpc.ClientCallDetails, _Request], _CallFuture[_Response]],
        client_call_details: grpc.ClientCallDetails,
        request: _Request,
    ) -> _CallFuture[_Response]:
        return continuation(self._with_token(client_call_details), request)

    def intercept_unary_stream(
        self,
        continuation: Callable[[grpc.ClientCallDetails, _Request], _CallIterator[_Response]],
        client_call_details: grpc.ClientCallDetails,
        request: _Request,
    ) -> _CallIterator[_Response]:
        return continuation(self._with_token(client_call_details), request)

    def intercept_stream_unary(
        self,
        continuation: Callable[[grpc.ClientCallDetails, Iterator[_Request]], _CallFuture[_Response]],
        client_call_details: grpc.ClientCallDetails,
        request_iterator: Iterator[_Request],
    ) -> _CallFuture[_Response]:
        return continuation(self._with_token(client_call_details), request_iterator)

    def intercept_stream_stream(
        self,
        continuation: Callable[[grpc.ClientCallDetails, Iterator[_Request]], _CallIterator[_Response]],
        client_call_details: grpc.ClientCallDetails,
        request_iterator: Iterator[_Request],
    ) -> _CallIterator[_Response]:
        return continuation(self._with_token(client_call_details), request_iterator)


class AsyncTokenInterceptor(
    aio.UnaryUnaryClientInterceptor,
    aio.UnaryStreamClientInterceptor,
    aio.StreamUnaryClientInterceptor,
    aio.StreamStreamClientInterceptor,
):
    """:class:`TokenInterceptor` for ``grpc.aio`` channels."""

    def __init__(self, token: str) -> None:
        self._header = ("authorization", f"Bearer {token}")

    def _with_token(self, details: aio.ClientCallDetails) -> aio.ClientCallDetails:
        pairs = tuple(details.metadata or ())
        if any(key == "authorization" for key, _ in pairs):
            return details
        metadata = aio.Metadata(*pairs)
        metadata.add(*self._header)
        return aio.ClientCallDetails(
            details.method, details.timeout, metadata, details.credentials, details.wait_for_ready
        )

    async def intercept_unary_unary(
        self,
        continuation: Callable[
            [aio.ClientCallDetails, _Request], Awaitable[aio.UnaryUnaryCall[_Request, _Response]]
        ],
        client_call_details: aio.ClientCallDetails,
        request: _Request,
    ) -> aio.UnaryUnaryCall[_Request, _Response]:
        return await continuation(self._with_token(client_call_details), request)

    async def intercept_unary_stream(
        self,
        continuation: Callable[
            [aio.ClientCallDetails, _Request], Awaitable[aio.UnaryStreamCall[_Request, _Response]]
        ],
        client_call_details: aio.ClientCallDetails,
        request: _Request,
    ) -> aio.UnaryStreamCall[_Request, _Response]:
        return await continuation(self._with_token(client_call_details), request)

    async def intercept_stream_unary(
        self,
        continuation: Callable[
            [aio.ClientCallDetails, Union[AsyncIterable[_Request], Iterable[_Request]]],
            Awaitable[aio.StreamUnaryCall[_Request, _Response]],
        ],
        client_call_details: aio.ClientCallDetails,
        request_iterator: Union[AsyncIterable[_Request], Iterable[_Request]],
    ) -> aio.StreamUnaryCall[_Request, _Response]:
        return await continuation(self._with_token(client_call_details), request_iterator)

    async def intercept_stream_stream(
        self,
        continuation: Callable[
            [aio.ClientCallDetails, Union[AsyncIterable[_Request], Iterable[_Request]]],
            Awaitable[aio.StreamStreamCall[_Request, _Response]],
        ],
        client_call_details: aio.ClientCallDetails,
        request_iterator: Union[AsyncIterable[_Request], Iterable[_Request]],
    ) -> aio.StreamStreamCall[_Request, _Response]:
        return await continuation(self._with_token(client_call_details), request_iterator)
