"""Errors of the Odyssey SDK: every failed call raises :class:`OdysseyError`, with the
server's ``google.rpc`` details decoded (``ErrorInfo``, ``BadRequest``, ``RetryInfo``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator, Mapping, Optional, TypeVar, Union

import time

import grpc
from grpc import aio

from odyssey_client.policy import ReconnectPolicy

T = TypeVar("T")

#: The trailer that carries the whole ``google.rpc.Status``, details included.
STATUS_DETAILS_KEY = "grpc-status-details-bin"

_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
_BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"
_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"


@dataclass(frozen=True)
class FieldViolation:
    """One field of a request that was wrong: its path as the request spells it
    (``input.prompt``, ``session_id``) and what was wrong with it."""

    field: str
    description: str


class OdysseyError(Exception):
    """A call the server refused or could not answer.

    ``code`` is the gRPC status code (``grpc.StatusCode.NOT_FOUND``, ...) and ``code_name``
    its gRPC name (``"NOT_FOUND"``); ``message`` is the server's message, which names what
    was wrong (``details`` is the same text). From the status details: ``reason`` and
    ``domain`` of its ``ErrorInfo`` (``"SESSION_NOT_FOUND"``, ``"odyssey.ai"``; empty
    when the failure did not come from the server) and its ``metadata``;
    ``field_violations``, the ``BadRequest`` fields at fault; ``retry_delay``, the
    ``RetryInfo`` wait in seconds before trying again (``None`` when not given).
    """

    def __init__(
        self,
        code: grpc.StatusCode,
        message: str,
        *,
        reason: str = "",
        domain: str = "",
        metadata: Optional[Mapping[str, str]] = None,
        field_violations: tuple[FieldViolation, ...] = (),
        retry_delay: Optional[float] = None,
    ) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.code_name: str = code.name
        self.message = message
        self.details = message
        self.reason = reason
        self.domain = domain
        self.metadata: dict[str, str] = dict(metadata or {})
        self.field_violations = field_violations
        self.retry_delay = retry_delay

    @classmethod
    def from_rpc_error(cls, error: grpc.RpcError) -> OdysseyError:
        # Every RpcError raised by a call is also a grpc.Call carrying the status, or an
        # AioRpcError (asyncio) with the same accessors.
        if isinstance(error, grpc.Call):
            code, message = error.code(), error.details()
            trailers = error.trailing_metadata()
        elif isinstance(error, aio.AioRpcError):
            code, message = error.code(), error.details()
            trailers = error.trailing_metadata()
        else:
            return cls(grpc.StatusCode.UNKNOWN, str(error))
        raw = b""
        for key, value in trailers or ():
            if key == STATUS_DETAILS_KEY and isinstance(value, bytes):
                raw = value
        return cls.from_status(code, message or str(error), raw)

    @classmethod
    def from_status(cls, code: grpc.StatusCode, message: str, status: bytes) -> OdysseyError:
        """The error of a status ``code`` and ``message`` whose ``google.rpc.Status``
        (``status``, its encoded bytes; may be empty) holds the details."""
        reason = domain = ""
        metadata: dict[str, str] = {}
        violations: list[FieldViolation] = []
        delay: Optional[float] = None
        try:
            for number, value in _fields(status):
                if number != 3 or not isinstance(value, bytes):
                    continue
                type_url, body = _any(value)
                if type_url == _ERROR_INFO:
                    reason, domain = _error_info(body, metadata)
                elif type_url == _BAD_REQUEST:
                    violations.extend(_bad_request(body))
                elif type_url == _RETRY_INFO:
                    delay = _retry_info(body)
        except ValueError:
            # Undecodable details: the code and message still say what happened.
            pass
        return cls(
            code,
            message,
            reason=reason,
            domain=domain,
            metadata=metadata,
            field_violations=tuple(violations),
            retry_delay=delay,
        )


def call(rpc: Callable[[], T], retry: Optional[ReconnectPolicy] = None) -> T:
    """Runs one RPC, turning grpc's ``RpcError`` into :class:`OdysseyError`. With
    ``retry`` (reads only), an UNAVAILABLE answer is retried with backoff as it allows."""
    attempts = 0
    while True:
        try:
            return rpc()
        except grpc.RpcError as error:
            failure = OdysseyError.from_rpc_error(error)
        if (
            retry is None
            or failure.code != grpc.StatusCode.UNAVAILABLE
            or attempts >= retry.max_attempts
        ):
            raise failure
        attempts += 1
        time.sleep(retry.delay(attempts))


#: Attempts of a submit the server refused for a full queue, and the longest pause taken.
SUBMIT_ATTEMPTS = 3
LONGEST_RETRY_DELAY = 10.0


def retry_after(failure: OdysseyError, attempts: int) -> Optional[float]:
    """How long to wait before submitting again: only when the server refused with
    RESOURCE_EXHAUSTED and said how long (a full queue, ``RetryInfo``); then nothing
    happened, so trying again is safe."""
    if (
        failure.code != grpc.StatusCode.RESOURCE_EXHAUSTED
        or failure.retry_delay is None
        or attempts + 1 >= SUBMIT_ATTEMPTS
    ):
        return None
    return min(failure.retry_delay, LONGEST_RETRY_DELAY)


def call_submit(rpc: Callable[[], T]) -> T:
    """Runs a Submit or Run, again after the server's delay while it refuses it for a full
    queue (:func:`retry_after`); writes are never retried otherwise."""
    attempts = 0
    while True:
        try:
            return call(rpc)
        except OdysseyError as failure:
            pause = retry_after(failure, attempts)
            if pause is None:
                raise
        attempts += 1
        time.sleep(pause)


# The protobuf wire format of the three detail messages, read by hand: the SDK needs no
# googleapis package for four small messages.


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def _fields(data: bytes) -> Iterator[tuple[int, Union[int, bytes]]]:
    """(field number, value) of each field: an int for varints, bytes for the others."""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(data, at)
            yield number, value
        elif wire == 2:
            size, at = _varint(data, at)
            if at + size > len(data):
                raise ValueError("truncated field")
            yield number, data[at : at + size]
            at += size
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            yield number, data[at : at + width]
            at += width
        else:
            raise ValueError(f"wire type {wire}")


def _text(value: Union[int, bytes]) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else ""


def _any(data: bytes) -> tuple[str, bytes]:
    type_url, body = "", b""
    for number, value in _fields(data):
        if number == 1:
            type_url = _text(value)
        elif number == 2 and isinstance(value, bytes):
            body = value
    return type_url, body


def _error_info(data: bytes, metadata: dict[str, str]) -> tuple[str, str]:
    reason = domain = ""
    for number, value in _fields(data):
        if number == 1:
            reason = _text(value)
        elif number == 2:
            domain = _text(value)
        elif number == 3 and isinstance(value, bytes):
            entry = dict(_fields(value))
            metadata[_text(entry.get(1, b""))] = _text(entry.get(2, b""))
    return reason, domain


def _bad_request(data: bytes) -> Iterator[FieldViolation]:
    for number, value in _fields(data):
        if number == 1 and isinstance(value, bytes):
            violation = dict(_fields(value))
            yield FieldViolation(_text(violation.get(1, b"")), _text(violation.get(2, b"")))


def _retry_info(data: bytes) -> Optional[float]:
    for number, value in _fields(data):
        if number == 1 and isinstance(value, bytes):
            duration = dict(_fields(value))
            seconds = duration.get(1, 0)
            nanos = duration.get(2, 0)
            if isinstance(seconds, int) and isinstance(nanos, int):
                return seconds + nanos / 1e9
    return None
