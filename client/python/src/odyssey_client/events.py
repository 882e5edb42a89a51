"""A session's event stream: events in sequence order, each once, heartbeats hidden."""

from __future__ import annotations

from typing import Callable, Iterator, Optional

import grpc

from odyssey.v1 import events_pb2, session_pb2, session_pb2_grpc
from odyssey_client.errors import OdysseyError


class EventStream(Iterator[events_pb2.SessionEvent]):
    """Iterates a session's events after a sequence number, replayed then live.

    The server sends every stored event after ``after_sequence``, then follows new ones
    with no gap. ``last_sequence`` is the sequence of the last event handed out: after a
    disconnect, ``client.events(session_id, after_sequence=stream.last_sequence)`` resumes
    with nothing missed and nothing repeated. Heartbeats only prove the stream is alive;
    they are counted in ``heartbeats`` and never yielded.

    ``stop_when``, when set, ends the stream after the first event it accepts.
    Iteration ends when the server ends the stream or :meth:`close` is called; a refusal
    (``NOT_FOUND`` for an unknown or deleted session, ``UNAVAILABLE`` when the server goes
    away) raises :class:`OdysseyError`.
    """

    def __init__(
        self,
        stub: session_pb2_grpc.SessionServiceStub,
        session_id: str,
        after_sequence: int,
        metadata: tuple[tuple[str, str], ...],
        stop_when: Optional[Callable[[events_pb2.SessionEvent], bool]] = None,
    ) -> None:
        self.session_id = session_id
        self.last_sequence = after_sequence
        self.heartbeats = 0
        self.stop_when = stop_when
        self._closed = False
        self._call = stub.SubscribeSession(
            session_pb2.SubscribeSessionRequest(
                session_id=session_id, after_sequence=after_sequence
            ),
            metadata=metadata,
        )

    def __iter__(self) -> EventStream:
        return self

    def __next__(self) -> events_pb2.SessionEvent:
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
                self._closed = True
                raise OdysseyError.from_rpc_error(error) from None
            if item.HasField("heartbeat"):
                self.heartbeats += 1
                continue
            event = item.event
            # Replay and live delivery never overlap on the server; this guard keeps the
            # promise even if a caller resumes from an older sequence than it has seen.
            if event.sequence <= self.last_sequence:
                continue
            self.last_sequence = event.sequence
            if self.stop_when is not None and self.stop_when(event):
                self.close()
            return event

    def close(self) -> None:
        """Ends the subscription (the server sees the client go away)."""
        if not self._closed:
            self._closed = True
            self._call.cancel()

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def ends_turn(execution_id: str) -> Callable[[events_pb2.SessionEvent], bool]:
    """True for the ``turn_completed`` event of the given turn: the last event of a turn."""

    def check(event: events_pb2.SessionEvent) -> bool:
        return event.turn_id == execution_id and event.HasField("turn_completed")

    return check
