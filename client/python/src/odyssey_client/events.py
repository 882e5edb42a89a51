"""A session's event stream: events in sequence order, each once, heartbeats hidden, and
resubscribed by itself after the connection drops."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable, Iterator, Optional, Protocol

import grpc

from odyssey.v1 import events_pb2, session_pb2, session_pb2_grpc
from odyssey_client.errors import OdysseyError
from odyssey_client.policy import ReconnectPolicy

if TYPE_CHECKING:
    # The type of a server-streaming call, known to grpc's type stubs only.
    from grpc import _CallIterator

    Subscription = _CallIterator[session_pb2.SubscribeSessionResponse]


class StreamPosition(Protocol):
    """What an event stream (sync or asyncio) keeps of its place in the log."""

    last_sequence: int
    heartbeats: int
    last_heartbeat: Optional[session_pb2.Heartbeat]
    keep: Optional[Callable[[events_pb2.SessionEvent], bool]]
    stop_when: Optional[Callable[[events_pb2.SessionEvent], bool]]

    def close(self) -> None: ...


def next_event(
    stream: StreamPosition, item: session_pb2.SubscribeSessionResponse
) -> Optional[events_pb2.SessionEvent]:
    """The event ``stream`` hands out for one received item, or ``None``: heartbeats are
    counted, never handed out; an event already handed out before a resubscribe (or older
    than where the caller resumed) is skipped, never repeated; events ``keep`` refuses are
    left out; the stream closes after the event ``stop_when`` names."""
    if item.HasField("heartbeat"):
        stream.heartbeats += 1
        stream.last_heartbeat = item.heartbeat
        return None
    event = item.event
    if event.sequence <= stream.last_sequence:
        return None
    stream.last_sequence = event.sequence
    if stream.keep is not None and not stream.keep(event):
        return None
    if stream.stop_when is not None and stream.stop_when(event):
        stream.close()
    return event


class EventStream(Iterator[events_pb2.SessionEvent]):
    """Iterates a session's events after a sequence number, replayed then live.

    The server sends every stored event after ``after_sequence``, then follows new ones
    with no gap. When the connection drops (``UNAVAILABLE``: a network failure, a server
    restarting), the stream resubscribes after ``last_sequence`` by itself, as
    ``reconnect`` allows, so the caller sees every event once, in order. ``reconnects``
    counts resubscriptions: each new subscription the server answered after a dropped
    connection, once, however many attempts failed before it. Heartbeats only prove the
    stream is alive: they are counted in ``heartbeats`` (the latest is
    ``last_heartbeat``) and never yielded.

    ``keep``, when set, hides the events it rejects (``last_sequence`` still moves past
    them); ``stop_when``, when set, ends the stream after the first event it accepts.
    Iteration ends when the server ends the stream or :meth:`close` is called; a refusal
    (``NOT_FOUND`` for an unknown or deleted session) or a connection that stays down past
    the policy raises :class:`OdysseyError`.
    """

    def __init__(
        self,
        stub: session_pb2_grpc.SessionServiceStub,
        session_id: str,
        after_sequence: int,
        metadata: tuple[tuple[str, str], ...],
        stop_when: Optional[Callable[[events_pb2.SessionEvent], bool]] = None,
        reconnect: ReconnectPolicy = ReconnectPolicy(),
        keep: Optional[Callable[[events_pb2.SessionEvent], bool]] = None,
    ) -> None:
        self.session_id = session_id
        self.last_sequence = after_sequence
        self.heartbeats = 0
        self.last_heartbeat: Optional[session_pb2.Heartbeat] = None
        self.reconnects = 0
        self.stop_when = stop_when
        self.keep = keep
        self.reconnect = reconnect
        self._stub = stub
        self._metadata = metadata
        self._closed = False
        self._call = self._subscribe()
        # Waits for the server's answer, as the first call only: a session that does not
        # exist or a server that is not there is reported at once by the first next(),
        # never retried; once answered, the subscription is open on the server.
        self._call.initial_metadata()
        self._retry = self._call.is_active()

    def _subscribe(self) -> Subscription:
        request = session_pb2.SubscribeSessionRequest(
            session_id=self.session_id, after_sequence=self.last_sequence
        )
        return self._stub.SubscribeSession(request, metadata=self._metadata)

    def __iter__(self) -> EventStream:
        return self

    def __next__(self) -> events_pb2.SessionEvent:
        attempts = 0
        while True:
            if self._closed:
                raise StopIteration
            try:
                item = next(self._call)
            except StopIteration:
                self._closed = True
                raise
            except grpc.RpcError as error:
                if self._closed:
                    raise StopIteration from None
                failure = OdysseyError.from_rpc_error(error)
                if (
                    not self._retry
                    or failure.code != grpc.StatusCode.UNAVAILABLE
                    or attempts >= self.reconnect.max_attempts
                ):
                    self._closed = True
                    raise failure from None
                attempts += 1
                time.sleep(self.reconnect.delay(attempts))
                if self._closed:
                    raise StopIteration from None
                self._call = self._subscribe()
                # Counted once the server answers the new subscription; a failed attempt
                # is not a resubscription.
                self._call.initial_metadata()
                if self._call.is_active():
                    self.reconnects += 1
                continue
            attempts = 0
            event = next_event(self, item)
            if event is not None:
                return event

    def close(self) -> None:
        """Ends the subscription (the server sees the client go away). Safe to call from
        another thread: a blocked iteration ends."""
        if not self._closed:
            self._closed = True
            self._call.cancel()

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def of_turn(execution_id: str) -> Callable[[events_pb2.SessionEvent], bool]:
    """True for the events of the given turn (``turn_id`` is its execution id)."""

    def check(event: events_pb2.SessionEvent) -> bool:
        return event.turn_id == execution_id

    return check


def ends_turn(execution_id: str) -> Callable[[events_pb2.SessionEvent], bool]:
    """True for the ``turn_completed`` event of the given turn: the last event of a turn."""

    def check(event: events_pb2.SessionEvent) -> bool:
        return event.turn_id == execution_id and event.HasField("turn_completed")

    return check
