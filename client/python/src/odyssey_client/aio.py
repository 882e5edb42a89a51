"""The ``asyncio`` client (``grpc.aio``): the same calls as :class:`OdysseyClient`, as
coroutines, with async iterators for streams and lists.

    async with AsyncOdysseyClient("127.0.0.1:8472", token=token) as client:
        async with await client.stream_turn(session.id, "Give me a tour") as turn:
            async for event in turn:
                ...
"""

from __future__ import annotations

import asyncio
import os
from typing import (
    Any,
    AsyncIterator,
    Awaitable,
    Callable,
    Mapping,
    Optional,
    Sequence,
    TypeVar,
    Union,
)

import grpc
from google.protobuf import struct_pb2
from grpc import aio
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
from odyssey_client import requests
from odyssey_client.archive import pack_project
from odyssey_client.auth import AsyncTokenInterceptor
from odyssey_client.approvals import PendingApprovals
from odyssey_client.client import CHANNEL_OPTIONS
from odyssey_client.errors import OdysseyError, retry_after
from odyssey_client.events import ends_turn, next_event, of_turn
from odyssey_client.policy import READ_RETRY, ReconnectPolicy
from odyssey_client.requests import (
    ApprovalPolicy,
    ExportedBundle,
    InputMode,
    Model,
    SandboxMode,
)

T = TypeVar("T")


async def acall(
    rpc: Callable[[], Awaitable[T]], retry: Optional[ReconnectPolicy] = None
) -> T:
    """Awaits one RPC, turning ``AioRpcError`` into :class:`OdysseyError`; with ``retry``
    (reads only), UNAVAILABLE is retried with backoff as it allows."""
    attempts = 0
    while True:
        try:
            return await rpc()
        except grpc.RpcError as error:
            failure = OdysseyError.from_rpc_error(error)
        if (
            retry is None
            or failure.code != grpc.StatusCode.UNAVAILABLE
            or attempts >= retry.max_attempts
        ):
            raise failure
        attempts += 1
        await asyncio.sleep(retry.delay(attempts))


async def acall_submit(rpc: Callable[[], Awaitable[T]]) -> T:
    """Awaits a Submit or Run, again after the server's delay while it refuses it for a
    full queue (see :func:`~odyssey_client.errors.retry_after`)."""
    attempts = 0
    while True:
        try:
            return await acall(rpc)
        except OdysseyError as failure:
            pause = retry_after(failure, attempts)
            if pause is None:
                raise
        attempts += 1
        await asyncio.sleep(pause)


class AsyncOdysseyClient:
    """A connection to an ``odysseyd`` server for ``asyncio`` programs.

    The same arguments and calls as :class:`~odyssey_client.OdysseyClient`, each a
    coroutine; ``timeout=`` on every call, reads retried after ``UNAVAILABLE``, lists and
    streams as async iterators. Use as an async context manager, or await :meth:`close`.
    """

    def __init__(
        self,
        address: str,
        *,
        token: Optional[str] = None,
        tls: bool = False,
        root_certificates: Optional[bytes] = None,
        read_retry: ReconnectPolicy = READ_RETRY,
    ) -> None:
        if root_certificates is not None and not tls:
            raise ValueError("root_certificates needs tls=True")
        # The raw stubs below carry the token too.
        interceptors = [AsyncTokenInterceptor(token)] if token else []
        if tls:
            credentials = grpc.ssl_channel_credentials(root_certificates=root_certificates)
            self._channel = aio.secure_channel(
                address, credentials, options=CHANNEL_OPTIONS, interceptors=interceptors
            )
        else:
            self._channel = aio.insecure_channel(
                address, options=CHANNEL_OPTIONS, interceptors=interceptors
            )
        self._metadata: tuple[tuple[str, str], ...] = (
            (("authorization", f"Bearer {token}"),) if token else ()
        )
        self._retry = read_retry
        self.bundles = bundle_pb2_grpc.BundleServiceStub(self._channel)
        self.sessions = session_pb2_grpc.SessionServiceStub(self._channel)
        self.executions = execution_pb2_grpc.ExecutionServiceStub(self._channel)
        self.approvals = approval_pb2_grpc.ApprovalServiceStub(self._channel)
        self.server = server_pb2_grpc.ServerServiceStub(self._channel)
        self._health_check = self._channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
            response_deserializer=health_pb2.HealthCheckResponse.FromString,
        )

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        """The call metadata (the bearer token). The raw stubs of this client carry it by
        themselves; it is for stubs made on another channel."""
        return self._metadata

    async def close(self) -> None:
        await self._channel.close()

    async def __aenter__(self) -> AsyncOdysseyClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    # Server

    async def health(self, service: str = "", *, timeout: Optional[float] = None) -> str:
        request = health_pb2.HealthCheckRequest(service=service)
        response: health_pb2.HealthCheckResponse = await acall(
            lambda: self._health_check(request, timeout=timeout)
        )
        return health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)

    async def wait_until_serving(self, timeout: float = 30.0) -> None:
        """Waits until the server answers health checks with ``SERVING``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            try:
                if await self.health() == "SERVING":
                    return
            except OdysseyError as error:
                if loop.time() >= deadline:
                    raise error
            if loop.time() >= deadline:
                raise OdysseyError(grpc.StatusCode.DEADLINE_EXCEEDED, "server not serving")
            await asyncio.sleep(0.05)

    async def server_info(
        self, *, timeout: Optional[float] = None
    ) -> server_pb2.GetServerInfoResponse:
        request = server_pb2.GetServerInfoRequest()
        return await acall(
            lambda: self.server.GetServerInfo(request, metadata=self._metadata, timeout=timeout),
            self._retry,
        )

    # Bundles

    async def init_bundle(self, name: str = "", *, timeout: Optional[float] = None) -> bytes:
        request = bundle_pb2.InitBundleRequest(name=name)
        response = await acall(
            lambda: self.bundles.InitBundle(request, metadata=self._metadata, timeout=timeout),
            self._retry,
        )
        return response.archive

    async def install_bundle(
        self,
        folder: Union[str, os.PathLike[str]],
        *,
        namespace: str = "",
        force: bool = False,
        timeout: Optional[float] = None,
    ) -> bundle_pb2.Bundle:
        """Packs a bundle project folder, uploads it, and returns the installed bundle."""
        archive = await asyncio.to_thread(pack_project, folder)
        return await self.build_bundle(archive, namespace=namespace, force=force, timeout=timeout)

    async def build_bundle(
        self,
        archive: bytes,
        *,
        namespace: str = "",
        force: bool = False,
        timeout: Optional[float] = None,
    ) -> bundle_pb2.Bundle:
        response = await acall(
            lambda: self.bundles.BuildBundle(
                requests.build_messages(archive, namespace, force),
                metadata=self._metadata,
                timeout=timeout,
            )
        )
        return response.bundle

    async def inspect_bundle(
        self, reference: str, *, timeout: Optional[float] = None
    ) -> bundle_pb2.InspectBundleResponse:
        request = bundle_pb2.InspectBundleRequest(reference=reference)
        return await acall(
            lambda: self.bundles.InspectBundle(request, metadata=self._metadata, timeout=timeout),
            self._retry,
        )

    async def list_bundles(
        self, *, namespace: str = "", page_size: int = 0, timeout: Optional[float] = None
    ) -> AsyncIterator[bundle_pb2.Bundle]:
        """Every installed bundle (of one namespace, when given), page after page."""
        token = ""
        while True:
            request = bundle_pb2.ListBundlesRequest(
                namespace=namespace, page_size=page_size, page_token=token
            )
            page = await acall(
                lambda: self.bundles.ListBundles(
                    request, metadata=self._metadata, timeout=timeout
                ),
                self._retry,
            )
            for bundle in page.bundles:
                yield bundle
            token = page.next_page_token
            if not token:
                return

    async def delete_bundle(
        self, reference: str, *, timeout: Optional[float] = None
    ) -> bundle_pb2.Bundle:
        request = bundle_pb2.DeleteBundleRequest(reference=reference)
        response = await acall(
            lambda: self.bundles.DeleteBundle(request, metadata=self._metadata, timeout=timeout)
        )
        return response.bundle

    async def export_bundle(
        self, reference: str, *, timeout: Optional[float] = None
    ) -> ExportedBundle:
        async def read() -> ExportedBundle:
            bundle = bundle_pb2.Bundle()
            chunks: list[bytes] = []
            request = bundle_pb2.ExportBundleRequest(reference=reference)
            async for part in self.bundles.ExportBundle(
                request, metadata=self._metadata, timeout=timeout
            ):
                if part.HasField("bundle"):
                    bundle = part.bundle
                chunks.append(part.chunk)
            return ExportedBundle(bundle=bundle, archive=b"".join(chunks))

        return await acall(read, self._retry)

    async def import_bundle(
        self,
        archive: bytes,
        *,
        namespace: str = "",
        force: bool = False,
        timeout: Optional[float] = None,
    ) -> bundle_pb2.Bundle:
        response = await acall(
            lambda: self.bundles.ImportBundle(
                requests.import_messages(archive, namespace, force),
                metadata=self._metadata,
                timeout=timeout,
            )
        )
        return response.bundle

    async def push_bundle(
        self, reference: str, target: str = "", *, timeout: Optional[float] = None
    ) -> bundle_pb2.PushBundleResponse:
        request = bundle_pb2.PushBundleRequest(reference=reference, target=target)
        return await acall(
            lambda: self.bundles.PushBundle(request, metadata=self._metadata, timeout=timeout)
        )

    async def pull_bundle(
        self,
        reference: str,
        *,
        namespace: str = "",
        force: bool = False,
        timeout: Optional[float] = None,
    ) -> bundle_pb2.PullBundleResponse:
        request = bundle_pb2.PullBundleRequest(
            reference=reference, namespace=namespace, force=force
        )
        return await acall(
            lambda: self.bundles.PullBundle(request, metadata=self._metadata, timeout=timeout)
        )

    async def list_agents(
        self, bundle_reference: str, *, timeout: Optional[float] = None
    ) -> list[bundle_pb2.AgentInfo]:
        request = bundle_pb2.ListAgentsRequest(bundle_reference=bundle_reference)
        response = await acall(
            lambda: self.bundles.ListAgents(request, metadata=self._metadata, timeout=timeout),
            self._retry,
        )
        return list(response.agents)

    async def list_models(
        self, bundle_reference: str, *, timeout: Optional[float] = None
    ) -> list[bundle_pb2.ModelInfo]:
        request = bundle_pb2.ListModelsRequest(bundle_reference=bundle_reference)
        response = await acall(
            lambda: self.bundles.ListModels(request, metadata=self._metadata, timeout=timeout),
            self._retry,
        )
        return list(response.models)

    async def list_skills(
        self, bundle_reference: str, *, timeout: Optional[float] = None
    ) -> list[bundle_pb2.SkillInfo]:
        request = bundle_pb2.ListSkillsRequest(bundle_reference=bundle_reference)
        response = await acall(
            lambda: self.bundles.ListSkills(request, metadata=self._metadata, timeout=timeout),
            self._retry,
        )
        return list(response.skills)

    # Sessions

    async def create_session(
        self,
        bundle_reference: str,
        *,
        agent_id: str = "",
        model: Optional[Model] = None,
        sandbox_mode: Optional[SandboxMode] = None,
        approval_policy: Optional[ApprovalPolicy] = None,
        metadata: Optional[Mapping[str, str]] = None,
        token_budget: int = 0,
        timeout: Optional[float] = None,
    ) -> session_pb2.Session:
        request = requests.create_session(
            bundle_reference, agent_id, model, sandbox_mode, approval_policy, metadata,
            token_budget,
        )
        response = await acall(
            lambda: self.sessions.CreateSession(request, metadata=self._metadata, timeout=timeout)
        )
        return response.session

    async def get_session(
        self, session_id: str, *, timeout: Optional[float] = None
    ) -> session_pb2.Session:
        request = session_pb2.GetSessionRequest(session_id=session_id)
        response = await acall(
            lambda: self.sessions.GetSession(request, metadata=self._metadata, timeout=timeout),
            self._retry,
        )
        return response.session

    async def list_sessions(
        self,
        *,
        bundle: str = "",
        agent_id: str = "",
        parent_session_id: str = "",
        page_size: int = 0,
        timeout: Optional[float] = None,
    ) -> AsyncIterator[session_pb2.Session]:
        token = ""
        while True:
            request = session_pb2.ListSessionsRequest(
                bundle=bundle,
                agent_id=agent_id,
                parent_session_id=parent_session_id,
                page_size=page_size,
                page_token=token,
            )
            page = await acall(
                lambda: self.sessions.ListSessions(
                    request, metadata=self._metadata, timeout=timeout
                ),
                self._retry,
            )
            for session in page.sessions:
                yield session
            token = page.next_page_token
            if not token:
                return

    async def delete_session(self, session_id: str, *, timeout: Optional[float] = None) -> None:
        request = session_pb2.DeleteSessionRequest(session_id=session_id)
        await acall(
            lambda: self.sessions.DeleteSession(request, metadata=self._metadata, timeout=timeout)
        )

    async def list_session_tools(
        self, session_id: str, *, timeout: Optional[float] = None
    ) -> session_pb2.ListSessionToolsResponse:
        """Every tool the session's agent is offered, page by page; see
        ``OdysseyClient.list_session_tools``."""
        merged = session_pb2.ListSessionToolsResponse()
        token = ""
        while True:
            request = session_pb2.ListSessionToolsRequest(session_id=session_id, page_token=token)
            page = await acall(
                lambda: self.sessions.ListSessionTools(
                    request, metadata=self._metadata, timeout=timeout
                ),
                self._retry,
            )
            merged.tools.extend(page.tools)
            del merged.mcp_server_errors[:]
            merged.mcp_server_errors.extend(page.mcp_server_errors)
            token = page.next_page_token
            if not token:
                return merged

    async def fork_session(
        self,
        session_id: str,
        *,
        after_turn: int = 0,
        at_sequence: int = 0,
        timeout: Optional[float] = None,
    ) -> session_pb2.Session:
        """See :meth:`OdysseyClient.fork_session`."""
        request = requests.fork(session_id, after_turn, at_sequence)
        response = await acall(
            lambda: self.sessions.ForkSession(request, metadata=self._metadata, timeout=timeout)
        )
        return response.session

    async def rewind_session(
        self, session_id: str, to_turn: int, *, timeout: Optional[float] = None
    ) -> session_pb2.RewindSessionResponse:
        """See :meth:`OdysseyClient.rewind_session`."""
        request = session_pb2.RewindSessionRequest(session_id=session_id, to_turn=to_turn)
        return await acall(
            lambda: self.sessions.RewindSession(request, metadata=self._metadata, timeout=timeout)
        )

    async def get_turn_changes(
        self, session_id: str, turn: int, *, timeout: Optional[float] = None
    ) -> session_pb2.GetTurnChangesResponse:
        """See :meth:`OdysseyClient.get_turn_changes`."""
        request = session_pb2.GetTurnChangesRequest(session_id=session_id, turn=turn)
        return await acall(
            lambda: self.sessions.GetTurnChanges(
                request, metadata=self._metadata, timeout=timeout
            ),
            self._retry,
        )

    async def events(
        self,
        session_id: str,
        *,
        after_sequence: int = 0,
        reconnect: ReconnectPolicy = ReconnectPolicy(),
    ) -> AsyncEventStream:
        """The session's events after ``after_sequence``, replayed then live; the
        subscription is open on the server when this returns."""
        stream = AsyncEventStream(
            self.sessions, session_id, after_sequence, self._metadata, reconnect
        )
        await stream._open()
        return stream

    async def export_cassette(
        self, session_id: str, *, timeout: Optional[float] = None
    ) -> bytes:
        async def read() -> bytes:
            request = session_pb2.ExportSessionCassetteRequest(session_id=session_id)
            chunks = [
                part.chunk
                async for part in self.sessions.ExportSessionCassette(
                    request, metadata=self._metadata, timeout=timeout
                )
            ]
            return b"".join(chunks)

        return await acall(read, self._retry)

    # Turns

    async def submit(
        self,
        session_id: str,
        prompt: str,
        *,
        cwd: str = "",
        model: Optional[Model] = None,
        metadata: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = None,
    ) -> str:
        request = execution_pb2.SubmitRequest(
            input=requests.turn_input(session_id, prompt, cwd, model, metadata)
        )
        response = await acall_submit(
            lambda: self.executions.Submit(request, metadata=self._metadata, timeout=timeout)
        )
        return response.execution_id

    async def run(
        self,
        session_id: str,
        prompt: str,
        *,
        cwd: str = "",
        model: Optional[Model] = None,
        metadata: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = None,
    ) -> execution_pb2.ExecutionStatus:
        request = execution_pb2.RunRequest(
            input=requests.turn_input(session_id, prompt, cwd, model, metadata)
        )
        response = await acall_submit(
            lambda: self.executions.Run(request, metadata=self._metadata, timeout=timeout)
        )
        return response.status

    async def stream_turn(
        self,
        session_id: str,
        prompt: str,
        *,
        cwd: str = "",
        model: Optional[Model] = None,
        metadata: Optional[Mapping[str, str]] = None,
        reconnect: ReconnectPolicy = ReconnectPolicy(),
    ) -> AsyncEventStream:
        """Starts a turn and streams its events (only this turn's), ending with its
        ``turn_completed``; ``execution_id`` on the stream names the turn."""
        after = (await self.get_session(session_id)).last_sequence
        events = await self.events(session_id, after_sequence=after, reconnect=reconnect)
        try:
            execution_id = await self.submit(
                session_id, prompt, cwd=cwd, model=model, metadata=metadata
            )
        except OdysseyError:
            events.close()
            raise
        events.execution_id = execution_id
        events.keep = of_turn(execution_id)
        events.stop_when = ends_turn(execution_id)
        return events

    async def execution_status(
        self, execution_id: str, *, timeout: Optional[float] = None
    ) -> execution_pb2.ExecutionStatus:
        request = execution_pb2.GetExecutionStatusRequest(execution_id=execution_id)
        response = await acall(
            lambda: self.executions.GetExecutionStatus(
                request, metadata=self._metadata, timeout=timeout
            ),
            self._retry,
        )
        return response.status

    async def cancel(
        self, execution_id: str, *, timeout: Optional[float] = None
    ) -> execution_pb2.ExecutionStatus:
        request = execution_pb2.CancelExecutionRequest(execution_id=execution_id)
        response = await acall(
            lambda: self.executions.CancelExecution(
                request, metadata=self._metadata, timeout=timeout
            )
        )
        return response.status

    async def send_input(
        self,
        session_id: str,
        text: str,
        *,
        mode: InputMode = "steer",
        timeout: Optional[float] = None,
    ) -> execution_pb2.SendInputResponse:
        """Gives a session input while a turn may be running. ``mode="steer"`` adds the
        text to the running turn before its next model call (a ``user_input_added``
        event), ``"queue"`` submits a turn after it, ``"interrupt"`` stops it (cancelled,
        reason ``interrupted_by_input``) and runs a turn with the text next. With no turn
        running, every mode starts a turn. The answer's ``disposition`` says which happened;
        ``execution_id`` is the turn that carries the text."""
        request = requests.send_input(session_id, text, mode)
        return await acall(
            lambda: self.executions.SendInput(request, metadata=self._metadata, timeout=timeout)
        )

    # Commands

    async def run_command(
        self,
        session_id: str,
        argv: Union[str, Sequence[str]],
        *,
        cwd: str = "",
        timeout_ms: int = 0,
        timeout: Optional[float] = None,
    ) -> execution_pb2.RunSessionCommandResponse:
        request = requests.command(session_id, argv, cwd, timeout_ms)
        return await acall(
            lambda: self.executions.RunSessionCommand(
                request, metadata=self._metadata, timeout=timeout
            )
        )

    async def stream_command(
        self,
        session_id: str,
        argv: Union[str, Sequence[str]],
        *,
        cwd: str = "",
        timeout_ms: int = 0,
        timeout: Optional[float] = None,
    ) -> AsyncIterator[execution_pb2.StreamSessionCommandResponse]:
        request = requests.stream_command(requests.command(session_id, argv, cwd, timeout_ms))
        stream = self.executions.StreamSessionCommand(
            request, metadata=self._metadata, timeout=timeout
        )
        try:
            async for item in stream:
                yield item
        except grpc.RpcError as error:
            raise OdysseyError.from_rpc_error(error) from None
        finally:
            stream.cancel()

    # Approvals

    async def list_approvals(
        self, session_id: str = "", *, page_size: int = 0, timeout: Optional[float] = None
    ) -> AsyncIterator[approval_pb2.Approval]:
        token = ""
        while True:
            request = approval_pb2.ListApprovalsRequest(
                session_id=session_id, page_size=page_size, page_token=token
            )
            page = await acall(
                lambda: self.approvals.ListApprovals(
                    request, metadata=self._metadata, timeout=timeout
                ),
                self._retry,
            )
            for approval in page.approvals:
                yield approval
            token = page.next_page_token
            if not token:
                return

    async def watch_approvals(
        self, session_id: str = "", *, reconnect: ReconnectPolicy = ReconnectPolicy()
    ) -> AsyncApprovalWatch:
        """Follows the pending approval requests (of one session, or all); the watch is
        open on the server when this returns. See :class:`AsyncApprovalWatch`."""
        watch = AsyncApprovalWatch(self.approvals, session_id, self._metadata, reconnect)
        await watch._open()
        return watch

    async def resolve_approval(
        self,
        request_id: str,
        decision: events_pb2.ApprovalDecision,
        reason: str = "",
        *,
        timeout: Optional[float] = None,
    ) -> approval_pb2.ResolveApprovalResponse:
        request = approval_pb2.ResolveApprovalRequest(
            request_id=request_id, decision=decision, reason=reason
        )
        return await acall(
            lambda: self.approvals.ResolveApproval(
                request, metadata=self._metadata, timeout=timeout
            )
        )

    async def approve(
        self, request_id: str, *, always: bool = False, timeout: Optional[float] = None
    ) -> None:
        decision = (
            events_pb2.APPROVAL_DECISION_ALLOW_ALWAYS
            if always
            else events_pb2.APPROVAL_DECISION_ALLOW_ONCE
        )
        await self.resolve_approval(request_id, decision, timeout=timeout)

    async def deny(
        self, request_id: str, reason: str = "", *, timeout: Optional[float] = None
    ) -> None:
        await self.resolve_approval(
            request_id, events_pb2.APPROVAL_DECISION_DENY, reason, timeout=timeout
        )

    async def answer(
        self,
        request_id: str,
        answer: Mapping[str, Any],
        *,
        timeout: Optional[float] = None,
    ) -> approval_pb2.ResolveApprovalResponse:
        """Accepts a request for input (an approval of kind ``APPROVAL_KIND_INPUT``: an MCP
        server asks a person) with ``answer``, the fields of its ``requested_schema``. An
        answer that does not match fails with INVALID_ARGUMENT naming the field
        (``answer.days``), and the request still waits."""
        fields = struct_pb2.Struct()
        fields.update(dict(answer))
        return await self._resolve_input(
            request_id, events_pb2.HUMAN_INPUT_ACTION_ACCEPT, fields, timeout
        )

    async def decline(
        self, request_id: str, *, cancel: bool = False, timeout: Optional[float] = None
    ) -> approval_pb2.ResolveApprovalResponse:
        """Refuses a request for input (``cancel``: dismisses it without a choice); the
        server is told which."""
        action = (
            events_pb2.HUMAN_INPUT_ACTION_CANCEL
            if cancel
            else events_pb2.HUMAN_INPUT_ACTION_DECLINE
        )
        return await self._resolve_input(request_id, action, None, timeout)

    async def _resolve_input(
        self,
        request_id: str,
        action: events_pb2.HumanInputAction,
        answer: Optional[struct_pb2.Struct],
        timeout: Optional[float],
    ) -> approval_pb2.ResolveApprovalResponse:
        request = approval_pb2.ResolveApprovalRequest(
            request_id=request_id, action=action, answer=answer
        )
        return await acall(
            lambda: self.approvals.ResolveApproval(
                request, metadata=self._metadata, timeout=timeout
            )
        )


class AsyncEventStream(AsyncIterator[events_pb2.SessionEvent]):
    """A session's events after a sequence number, replayed then live, as an async
    iterator: the same behaviour as :class:`~odyssey_client.EventStream` (each event once,
    heartbeats hidden, resubscribed after a dropped connection, ``reconnects`` counting
    the resubscriptions the server answered). A turn's stream (``stream_turn``) has its
    ``execution_id`` and carries only that turn's events."""

    def __init__(
        self,
        stub: session_pb2_grpc.SessionServiceAsyncStub,
        session_id: str,
        after_sequence: int,
        metadata: tuple[tuple[str, str], ...],
        reconnect: ReconnectPolicy,
    ) -> None:
        self.session_id = session_id
        self.execution_id = ""
        self.last_sequence = after_sequence
        self.heartbeats = 0
        self.last_heartbeat: Optional[session_pb2.Heartbeat] = None
        self.reconnects = 0
        self.keep: Optional[Callable[[events_pb2.SessionEvent], bool]] = None
        self.stop_when: Optional[Callable[[events_pb2.SessionEvent], bool]] = None
        self.reconnect = reconnect
        self._stub = stub
        self._metadata = metadata
        self._closed = False
        self._retry = False
        self._call = self._subscribe()

    def _subscribe(
        self,
    ) -> aio.UnaryStreamCall[session_pb2.SubscribeSessionRequest, session_pb2.SubscribeSessionResponse]:
        request = session_pb2.SubscribeSessionRequest(
            session_id=self.session_id, after_sequence=self.last_sequence
        )
        return self._stub.SubscribeSession(request, metadata=self._metadata)

    async def _answered(self) -> bool:
        """Waits for the server's answer to the current subscription."""
        try:
            await self._call.initial_metadata()
        except grpc.RpcError:
            return False
        return not self._call.done()

    async def _open(self) -> None:
        # As the first subscription only: a refusal or a missing server is reported by
        # the first iteration, never retried.
        self._retry = await self._answered()

    def __aiter__(self) -> AsyncEventStream:
        return self

    async def __anext__(self) -> events_pb2.SessionEvent:
        attempts = 0
        while True:
            if self._closed:
                raise StopAsyncIteration
            try:
                item = await self._call.read()
            except asyncio.CancelledError:
                # close() cancels the call under a waiting read; any other cancellation
                # is the caller's task being cancelled, and goes on.
                if self._closed:
                    raise StopAsyncIteration from None
                raise
            except grpc.RpcError as error:
                if self._closed:
                    raise StopAsyncIteration from None
                failure = OdysseyError.from_rpc_error(error)
                if (
                    not self._retry
                    or failure.code != grpc.StatusCode.UNAVAILABLE
                    or attempts >= self.reconnect.max_attempts
                ):
                    self._closed = True
                    raise failure from None
                attempts += 1
                await asyncio.sleep(self.reconnect.delay(attempts))
                if self._closed:
                    raise StopAsyncIteration from None
                self._call = self._subscribe()
                if await self._answered():
                    self.reconnects += 1
                continue
            if item is aio.EOF:
                self._closed = True
                raise StopAsyncIteration
            assert isinstance(item, session_pb2.SubscribeSessionResponse)
            attempts = 0
            event = next_event(self, item)
            if event is not None:
                return event

    def close(self) -> None:
        """Ends the subscription (the server sees the client go away)."""
        if not self._closed:
            self._closed = True
            self._call.cancel()

    async def __aenter__(self) -> AsyncEventStream:
        return self

    async def __aexit__(self, *_: object) -> None:
        self.close()


class AsyncApprovalWatch(
    PendingApprovals, AsyncIterator[approval_pb2.WatchApprovalsResponse]
):
    """The changes to the pending approval requests, as an async iterator: the same
    behaviour as :class:`~odyssey_client.ApprovalWatch` (a snapshot first, then ``added``
    and ``removed``; ``pending`` kept; watched again after a dropped connection, starting
    from a fresh snapshot; heartbeats counted, never yielded)."""

    def __init__(
        self,
        stub: approval_pb2_grpc.ApprovalServiceAsyncStub,
        session_id: str,
        metadata: tuple[tuple[str, str], ...],
        reconnect: ReconnectPolicy,
    ) -> None:
        super().__init__()
        self.session_id = session_id
        self.reconnect = reconnect
        self.reconnects = 0
        self._stub = stub
        self._metadata = metadata
        self._closed = False
        self._retry = False
        self._call = self._watch()

    def _watch(
        self,
    ) -> aio.UnaryStreamCall[approval_pb2.WatchApprovalsRequest, approval_pb2.WatchApprovalsResponse]:
        request = approval_pb2.WatchApprovalsRequest(session_id=self.session_id)
        return self._stub.WatchApprovals(request, metadata=self._metadata)

    async def _answered(self) -> bool:
        try:
            await self._call.initial_metadata()
        except grpc.RpcError:
            return False
        return not self._call.done()

    async def _open(self) -> None:
        self._retry = await self._answered()

    def __aiter__(self) -> AsyncApprovalWatch:
        return self

    async def __anext__(self) -> approval_pb2.WatchApprovalsResponse:
        attempts = 0
        while True:
            if self._closed:
                raise StopAsyncIteration
            try:
                item = await self._call.read()
            except asyncio.CancelledError:
                if self._closed:
                    raise StopAsyncIteration from None
                raise
            except grpc.RpcError as error:
                if self._closed:
                    raise StopAsyncIteration from None
                failure = OdysseyError.from_rpc_error(error)
                if (
                    not self._retry
                    or failure.code != grpc.StatusCode.UNAVAILABLE
                    or attempts >= self.reconnect.max_attempts
                ):
                    self._closed = True
                    raise failure from None
                attempts += 1
                await asyncio.sleep(self.reconnect.delay(attempts))
                if self._closed:
                    raise StopAsyncIteration from None
                self._call = self._watch()
                if await self._answered():
                    self.reconnects += 1
                continue
            if item is aio.EOF:
                self._closed = True
                raise StopAsyncIteration
            assert isinstance(item, approval_pb2.WatchApprovalsResponse)
            attempts = 0
            change = self.apply(item)
            if change is not None:
                return change

    def close(self) -> None:
        """Ends the watch (the server sees the client go away)."""
        if not self._closed:
            self._closed = True
            self._call.cancel()

    async def __aenter__(self) -> AsyncApprovalWatch:
        return self

    async def __aexit__(self, *_: object) -> None:
        self.close()
