"""Errors of the Odyssey SDK: every failed call raises :class:`OdysseyError`."""

from __future__ import annotations

from typing import Callable, TypeVar

import grpc

T = TypeVar("T")


class OdysseyError(Exception):
    """A call the server refused or could not answer.

    ``code`` is the gRPC status code (``grpc.StatusCode.NOT_FOUND``, ``INVALID_ARGUMENT``,
    ``UNAUTHENTICATED``, ...); ``details`` is the server's message, which names what was
    wrong.
    """

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details

    @classmethod
    def from_rpc_error(cls, error: grpc.RpcError) -> OdysseyError:
        # Every RpcError raised by a call is also a grpc.Call carrying the status.
        code = error.code() if isinstance(error, grpc.Call) else grpc.StatusCode.UNKNOWN
        details = (error.details() if isinstance(error, grpc.Call) else None) or str(error)
        return cls(code, details)


def call(rpc: Callable[[], T]) -> T:
    """Runs one RPC, turning grpc's ``RpcError`` into :class:`OdysseyError`."""
    try:
        return rpc()
    except grpc.RpcError as error:
        raise OdysseyError.from_rpc_error(error) from None
