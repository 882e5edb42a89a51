"""The Odyssey client: one channel, the services of ``odyssey.v1``, idiomatic calls."""

from __future__ import annotations

import os
import time
from typing import Iterator, Mapping, Optional, Union

import grpc
from grpc_health.v1 import health_pb2

from odyssey.v1 import (
    approval_pb2,
    approval_pb2_grpc,
    bundle_pb2,
    bundle_pb2_grpc,
    events_pb2,
    execution_pb2,
    execution_pb2_grpc,
    server_pb2,
    server_pb2_grpc,
    session_pb2,
    session_pb2_grpc,
)
from odyssey_client.archive import pack_project
from odyssey_client.errors import OdysseyError, call
from odyssey_client.events import EventStream, ReconnectPolicy, ends_turn, of_turn

#: Archive bytes per BuildBundle message: well under the server's message limit.
CHUNK_BYTES = 256 * 1024

#: Channel settings. The server caps what it sends (4 MiB by default, configurable), so
#: the receive limit only has to be at least as large. Keepalive pings find a dead
#: connection under a long-lived event stream, which would otherwise wait forever on a
#: peer that vanished without closing it.
CHANNEL_OPTIONS = (
    ("grpc.max_receive_message_length", 64 * 1024 * 1024),
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 20_000),
)


class OdysseyClient:
    """A connection to an ``odysseyd`` server.

    ``address`` is ``host:port``. ``token`` is sent as ``authorization: Bearer <token>``
    on every call. ``tls=True`` connects over TLS, checked against the system's roots or
    ``root_certificates`` (PEM bytes) when given. Use as a context manager, or call
    :meth:`close`.
    """

    def __init__(
        self,
        address: str,
        *,
        token: Optional[str] = None,
        tls: bool = False,
        root_certificates: Optional[bytes] = None,
    ) -> None:
        if root_certificates is not None and not tls:
            raise ValueError("root_certificates needs tls=True")
        if tls:
            credentials = grpc.ssl_channel_credentials(root_certificates=root_certificates)
            self._channel = grpc.secure_channel(address, credentials, options=CHANNEL_OPTIONS)
        else:
            self._channel = grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
        self._metadata: tuple[tuple[str, str], ...] = (
            (("authorization", f"Bearer {token}"),) if token else ()
        )
        self.bundles = bundle_pb2_grpc.BundleServiceStub(self._channel)
        self.sessions = session_pb2_grpc.SessionServiceStub(self._channel)
        self.executions = execution_pb2_grpc.ExecutionServiceStub(self._channel)
        self.approvals = approval_pb2_grpc.ApprovalServiceStub(self._channel)
        self.server = server_pb2_grpc.ServerServiceStub(self._channel)
        # The method directly rather than grpc_health's stub, whose type stubs omit it.
        self._health_check = self._channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
            response_deserializer=health_pb2.HealthCheckResponse.FromString,
        )

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        """The call metadata (the bearer token), for calls made on the raw stubs."""
        return self._metadata

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> OdysseyClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # Server

    def health(self, service: str = "") -> str:
        """The serving status of the server (or one service): ``SERVING``, ``NOT_SERVING``."""
        response = call(
            lambda: self._health_check(health_pb2.HealthCheckRequest(service=service))
        )
        return health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)

    def wait_until_serving(self, timeout: float = 30.0) -> None:
        """Waits until the server answers health checks with ``SERVING``."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                if self.health() == "SERVING":
                    return
            except OdysseyError as error:
                if time.monotonic() >= deadline:
                    raise error
            if time.monotonic() >= deadline:
                raise OdysseyError(grpc.StatusCode.DEADLINE_EXCEEDED, "server not serving")
            time.sleep(0.05)

    def server_info(self) -> server_pb2.GetServerInfoResponse:
        return call(
            lambda: self.server.GetServerInfo(
                server_pb2.GetServerInfoRequest(), metadata=self._metadata
            )
        )

    # Bundles

    def install_bundle(
        self,
        folder: Union[str, os.PathLike[str]],
        *,
        namespace: str = "",
        force: bool = False,
    ) -> bundle_pb2.Bundle:
        """Packs a bundle project folder, uploads it, and returns the installed bundle."""
        archive = pack_project(folder)

        def messages() -> Iterator[bundle_pb2.BuildBundleRequest]:
            yield bundle_pb2.BuildBundleRequest(
                options=bundle_pb2.BuildOptions(namespace=namespace, force=force)
            )
            for start in range(0, len(archive), CHUNK_BYTES):
                yield bundle_pb2.BuildBundleRequest(chunk=archive[start : start + CHUNK_BYTES])

        response = call(lambda: self.bundles.BuildBundle(messages(), metadata=self._metadata))
        return response.bundle

    # Sessions

    def create_session(
        self,
        bundle_reference: str,
        *,
        agent_id: str = "",
        metadata: Optional[Mapping[str, str]] = None,
    ) -> session_pb2.Session:
        """Opens a session on an installed bundle (``name``, ``name@version``, ...)."""
        request = session_pb2.CreateSessionRequest(
            bundle_reference=bundle_reference, agent_id=agent_id, metadata=metadata or {}
        )
        return call(
            lambda: self.sessions.CreateSession(request, metadata=self._metadata)
        ).session

    def get_session(self, session_id: str) -> session_pb2.Session:
        request = session_pb2.GetSessionRequest(session_id=session_id)
        return call(lambda: self.sessions.GetSession(request, metadata=self._metadata)).session

    def delete_session(self, session_id: str) -> None:
        request = session_pb2.DeleteSessionRequest(session_id=session_id)
        call(lambda: self.sessions.DeleteSession(request, metadata=self._metadata))

    def events(
        self,
        session_id: str,
        *,
        after_sequence: int = 0,
        reconnect: ReconnectPolicy = ReconnectPolicy(),
    ) -> EventStream:
        """The session's events after ``after_sequence`` (0: from the start), then live ones.

        The stream resubscribes by itself after a dropped connection, as ``reconnect``
        allows (``ReconnectPolicy.never()``: not at all). The subscription is open on the
        server when this returns.
        """
        return EventStream(
            self.sessions, session_id, after_sequence, self._metadata, reconnect=reconnect
        )

    # Turns

    def submit(
        self, session_id: str, prompt: str, *, metadata: Optional[Mapping[str, str]] = None
    ) -> str:
        """Queues a turn and returns its execution id at once."""
        request = execution_pb2.SubmitRequest(
            input=execution_pb2.TurnInput(
                session_id=session_id, prompt=prompt, metadata=metadata or {}
            )
        )
        return call(lambda: self.executions.Submit(request, metadata=self._metadata)).execution_id

    def run(
        self, session_id: str, prompt: str, *, metadata: Optional[Mapping[str, str]] = None
    ) -> execution_pb2.ExecutionStatus:
        """Runs a turn and waits for it to end (a turn that needs an approval waits for it)."""
        request = execution_pb2.RunRequest(
            input=execution_pb2.TurnInput(
                session_id=session_id, prompt=prompt, metadata=metadata or {}
            )
        )
        return call(lambda: self.executions.Run(request, metadata=self._metadata)).status

    def stream_turn(
        self,
        session_id: str,
        prompt: str,
        *,
        metadata: Optional[Mapping[str, str]] = None,
        reconnect: ReconnectPolicy = ReconnectPolicy(),
    ) -> TurnStream:
        """Starts a turn and streams its events as they happen, ending with its
        ``turn_completed`` event. Only this turn's events: those of another turn of the
        session (one queued before it, say) are left out. Subscribes before submitting, so
        nothing is missed; the stream resubscribes by itself after a dropped connection, as
        ``reconnect`` allows."""
        after = self.get_session(session_id).last_sequence
        return TurnStream(self, session_id, after, prompt, metadata, reconnect)

    def execution_status(self, execution_id: str) -> execution_pb2.ExecutionStatus:
        request = execution_pb2.GetExecutionStatusRequest(execution_id=execution_id)
        return call(
            lambda: self.executions.GetExecutionStatus(request, metadata=self._metadata)
        ).status

    def cancel(self, execution_id: str) -> execution_pb2.ExecutionStatus:
        request = execution_pb2.CancelExecutionRequest(execution_id=execution_id)
        return call(
            lambda: self.executions.CancelExecution(request, metadata=self._metadata)
        ).status

    # Approvals

    def list_approvals(self, session_id: str = "") -> list[approval_pb2.Approval]:
        """Pending approval requests, oldest first, of one session or all."""
        approvals: list[approval_pb2.Approval] = []
        token = ""
        while True:
            request = approval_pb2.ListApprovalsRequest(session_id=session_id, page_token=token)
            page = call(lambda: self.approvals.ListApprovals(request, metadata=self._metadata))
            approvals.extend(page.approvals)
            token = page.next_page_token
            if not token:
                return approvals

    def resolve_approval(
        self, request_id: str, decision: events_pb2.ApprovalDecision, reason: str = ""
    ) -> approval_pb2.ResolveApprovalResponse:
        request = approval_pb2.ResolveApprovalRequest(
            request_id=request_id, decision=decision, reason=reason
        )
        return call(lambda: self.approvals.ResolveApproval(request, metadata=self._metadata))

    def approve(self, request_id: str, *, always: bool = False) -> None:
        """Lets the waiting tool call run (``always``: and matching calls of this session)."""
        decision = (
            events_pb2.APPROVAL_DECISION_ALLOW_ALWAYS
            if always
            else events_pb2.APPROVAL_DECISION_ALLOW_ONCE
        )
        self.resolve_approval(request_id, decision)

    def deny(self, request_id: str, reason: str = "") -> None:
        """Refuses the waiting tool call; ``reason`` is shown to the model."""
        self.resolve_approval(request_id, events_pb2.APPROVAL_DECISION_DENY, reason)


class TurnStream(Iterator[events_pb2.SessionEvent]):
    """The events of one turn, live, ending with its ``turn_completed`` event.

    ``execution_id`` names the turn; the events of the session's other turns are left
    out. Like :class:`EventStream` it resubscribes by itself
    after a dropped connection; ``last_sequence`` is the last event seen, for resuming
    with ``client.events(session_id, after_sequence=...)`` after the stream was closed.
    """

    def __init__(
        self,
        client: OdysseyClient,
        session_id: str,
        after_sequence: int,
        prompt: str,
        metadata: Optional[Mapping[str, str]],
        reconnect: ReconnectPolicy = ReconnectPolicy(),
    ) -> None:
        self.session_id = session_id
        self._events = client.events(
            session_id, after_sequence=after_sequence, reconnect=reconnect
        )
        try:
            self.execution_id = client.submit(session_id, prompt, metadata=metadata)
        except OdysseyError:
            self._events.close()
            raise
        self._events.keep = of_turn(self.execution_id)
        self._events.stop_when = ends_turn(self.execution_id)

    @property
    def last_sequence(self) -> int:
        return self._events.last_sequence

    @property
    def reconnects(self) -> int:
        """How many times the stream resubscribed after a dropped connection: each
        subscription the server answered counts once; failed attempts do not count."""
        return self._events.reconnects

    def __iter__(self) -> TurnStream:
        return self

    def __next__(self) -> events_pb2.SessionEvent:
        return next(self._events)

    def close(self) -> None:
        self._events.close()

    def __enter__(self) -> TurnStream:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
