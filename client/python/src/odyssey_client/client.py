"""The Odyssey client: one channel, every RPC of ``odyssey.v1`` as an idiomatic call."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Optional, Sequence, Union

import grpc
from google.protobuf import struct_pb2
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
from odyssey_client.approvals import ApprovalWatch
from odyssey_client.auth import TokenInterceptor
from odyssey_client.errors import OdysseyError, call, call_submit
from odyssey_client.events import EventStream, ends_turn, of_turn
from odyssey_client.policy import READ_RETRY, ReconnectPolicy
from odyssey_client.requests import (
    ApprovalPolicy,
    ExportedBundle,
    InputMode,
    Model,
    SandboxMode,
)

if TYPE_CHECKING:
    from odyssey_client.a2a import A2AClient

#: Archive bytes per BuildBundle message: well under the server's message limit.
CHUNK_BYTES = requests.CHUNK_BYTES

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
    on every call, those made on the raw stubs (``client.sessions``, ...) included. ``tls=True`` connects over TLS, checked against the system's roots or
    ``root_certificates`` (PEM bytes) when given. Use as a context manager, or call
    :meth:`close`.

    Every call takes ``timeout=`` (seconds; ``None``: no deadline), and raises
    :class:`OdysseyError` when it fails (``DEADLINE_EXCEEDED`` when the deadline passed).
    Reads (gets, lists, inspections, exports, server info) are retried with backoff after
    ``UNAVAILABLE`` as ``read_retry`` allows (``ReconnectPolicy.never()``: not at all);
    writes are never retried. List calls return iterators that fetch every page.
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
        if tls:
            credentials = grpc.ssl_channel_credentials(root_certificates=root_certificates)
            self._channel = grpc.secure_channel(address, credentials, options=CHANNEL_OPTIONS)
        else:
            self._channel = grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
        if token:
            # The raw stubs below carry the token too.
            self._channel = grpc.intercept_channel(self._channel, TokenInterceptor(token))
        self._metadata: tuple[tuple[str, str], ...] = (
            (("authorization", f"Bearer {token}"),) if token else ()
        )
        self._retry = read_retry
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
        """The call metadata (the bearer token). The raw stubs of this client carry it by
        themselves; it is for stubs made on another channel."""
        return self._metadata

    def close(self) -> None:
        self._channel.close()

    def a2a(self) -> A2AClient:
        """The server's agents over the Agent2Agent protocol (A2A v1.0), on this channel
        and token: see :mod:`odyssey_client.a2a`. Its stubs load on this first call (they
        share their protobuf names with the official ``a2a-sdk``, which cannot be loaded
        in the same process)."""
        from odyssey_client.a2a import A2AClient

        return A2AClient(self._channel)

    def __enter__(self) -> OdysseyClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # Server

    def health(self, service: str = "", *, timeout: Optional[float] = None) -> str:
        """The serving status of the server (or one service): ``SERVING``, ``NOT_SERVING``."""
        request = health_pb2.HealthCheckRequest(service=service)
        response = call(lambda: self._health_check(request, timeout=timeout))
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

    def server_info(self, *, timeout: Optional[float] = None) -> server_pb2.GetServerInfoResponse:
        request = server_pb2.GetServerInfoRequest()
        return call(
            lambda: self.server.GetServerInfo(request, metadata=self._metadata, timeout=timeout),
            self._retry,
        )

    # Bundles

    def init_bundle(self, name: str = "", *, timeout: Optional[float] = None) -> bytes:
        """A new bundle project (``hello`` unless ``name`` is given), as a tar + gzip
        archive of the scaffold."""
        request = bundle_pb2.InitBundleRequest(name=name)
        return call(
            lambda: self.bundles.InitBundle(request, metadata=self._metadata, timeout=timeout),
            self._retry,
        ).archive

    def install_bundle(
        self,
        folder: Union[str, os.PathLike[str]],
        *,
        namespace: str = "",
        force: bool = False,
        timeout: Optional[float] = None,
    ) -> bundle_pb2.Bundle:
        """Packs a bundle project folder, uploads it (BuildBundle), and returns the
        installed bundle."""
        return self.build_bundle(
            pack_project(folder), namespace=namespace, force=force, timeout=timeout
        )

    def build_bundle(
        self,
        archive: bytes,
        *,
        namespace: str = "",
        force: bool = False,
        timeout: Optional[float] = None,
    ) -> bundle_pb2.Bundle:
        """Builds and installs a bundle project sent as a tar + gzip archive."""
        return call(
            lambda: self.bundles.BuildBundle(
                requests.build_messages(archive, namespace, force),
                metadata=self._metadata,
                timeout=timeout,
            )
        ).bundle

    def inspect_bundle(
        self, reference: str, *, timeout: Optional[float] = None
    ) -> bundle_pb2.InspectBundleResponse:
        """An installed bundle with its agents, skills, tools, sandbox policy and README."""
        request = bundle_pb2.InspectBundleRequest(reference=reference)
        return call(
            lambda: self.bundles.InspectBundle(request, metadata=self._metadata, timeout=timeout),
            self._retry,
        )

    def list_bundles(
        self, *, namespace: str = "", page_size: int = 0, timeout: Optional[float] = None
    ) -> Iterator[bundle_pb2.Bundle]:
        """Every installed bundle (of one namespace, when given), page after page."""
        token = ""
        while True:
            request = bundle_pb2.ListBundlesRequest(
                namespace=namespace, page_size=page_size, page_token=token
            )
            page = call(
                lambda: self.bundles.ListBundles(
                    request, metadata=self._metadata, timeout=timeout
                ),
                self._retry,
            )
            yield from page.bundles
            token = page.next_page_token
            if not token:
                return

    def delete_bundle(
        self, reference: str, *, timeout: Optional[float] = None
    ) -> bundle_pb2.Bundle:
        """Uninstalls a bundle and returns what was removed."""
        request = bundle_pb2.DeleteBundleRequest(reference=reference)
        return call(
            lambda: self.bundles.DeleteBundle(request, metadata=self._metadata, timeout=timeout)
        ).bundle

    def export_bundle(
        self, reference: str, *, timeout: Optional[float] = None
    ) -> ExportedBundle:
        """An installed bundle and its archive, which :meth:`import_bundle` installs."""

        def read() -> ExportedBundle:
            bundle = bundle_pb2.Bundle()
            chunks: list[bytes] = []
            request = bundle_pb2.ExportBundleRequest(reference=reference)
            for part in self.bundles.ExportBundle(
                request, metadata=self._metadata, timeout=timeout
            ):
                if part.HasField("bundle"):
                    bundle = part.bundle
                chunks.append(part.chunk)
            return ExportedBundle(bundle=bundle, archive=b"".join(chunks))

        return call(read, self._retry)

    def import_bundle(
        self,
        archive: bytes,
        *,
        namespace: str = "",
        force: bool = False,
        timeout: Optional[float] = None,
    ) -> bundle_pb2.Bundle:
        """Installs an exported bundle archive."""
        return call(
            lambda: self.bundles.ImportBundle(
                requests.import_messages(archive, namespace, force),
                metadata=self._metadata,
                timeout=timeout,
            )
        ).bundle

    def push_bundle(
        self, reference: str, target: str = "", *, timeout: Optional[float] = None
    ) -> bundle_pb2.PushBundleResponse:
        """Publishes an installed bundle to an OCI registry (``target``; the server's
        default registry when empty), with the server's credentials."""
        request = bundle_pb2.PushBundleRequest(reference=reference, target=target)
        return call(
            lambda: self.bundles.PushBundle(request, metadata=self._metadata, timeout=timeout)
        )

    def pull_bundle(
        self,
        reference: str,
        *,
        namespace: str = "",
        force: bool = False,
        timeout: Optional[float] = None,
    ) -> bundle_pb2.PullBundleResponse:
        """Installs a bundle from an OCI registry."""
        request = bundle_pb2.PullBundleRequest(
            reference=reference, namespace=namespace, force=force
        )
        return call(
            lambda: self.bundles.PullBundle(request, metadata=self._metadata, timeout=timeout)
        )

    def list_agents(
        self, bundle_reference: str, *, timeout: Optional[float] = None
    ) -> list[bundle_pb2.AgentInfo]:
        """The agents of an installed bundle, with the model this server runs each on."""
        request = bundle_pb2.ListAgentsRequest(bundle_reference=bundle_reference)
        return list(
            call(
                lambda: self.bundles.ListAgents(
                    request, metadata=self._metadata, timeout=timeout
                ),
                self._retry,
            ).agents
        )

    def list_models(
        self, bundle_reference: str, *, timeout: Optional[float] = None
    ) -> list[bundle_pb2.ModelInfo]:
        request = bundle_pb2.ListModelsRequest(bundle_reference=bundle_reference)
        return list(
            call(
                lambda: self.bundles.ListModels(
                    request, metadata=self._metadata, timeout=timeout
                ),
                self._retry,
            ).models
        )

    def list_skills(
        self, bundle_reference: str, *, timeout: Optional[float] = None
    ) -> list[bundle_pb2.SkillInfo]:
        request = bundle_pb2.ListSkillsRequest(bundle_reference=bundle_reference)
        return list(
            call(
                lambda: self.bundles.ListSkills(
                    request, metadata=self._metadata, timeout=timeout
                ),
                self._retry,
            ).skills
        )

    # Sessions

    def create_session(
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
        """Opens a session on an installed bundle (``name``, ``name@version``, ...).

        ``model`` (a ``ModelSpec`` or ``"provider/name"``) replaces the agent's;
        ``sandbox_mode`` (``"read_only"``, ``"workspace_write"``, ...) may be no more
        permissive than the operator allows; ``approval_policy`` (``"on_request"``,
        ``"untrusted"``, ``"never"``); ``token_budget``: tokens the session may spend
        (0: the server's default)."""
        request = requests.create_session(
            bundle_reference, agent_id, model, sandbox_mode, approval_policy, metadata,
            token_budget,
        )
        return call(
            lambda: self.sessions.CreateSession(
                request, metadata=self._metadata, timeout=timeout
            )
        ).session

    def get_session(
        self, session_id: str, *, timeout: Optional[float] = None
    ) -> session_pb2.Session:
        request = session_pb2.GetSessionRequest(session_id=session_id)
        return call(
            lambda: self.sessions.GetSession(request, metadata=self._metadata, timeout=timeout),
            self._retry,
        ).session

    def list_sessions(
        self,
        *,
        bundle: str = "",
        agent_id: str = "",
        parent_session_id: str = "",
        page_size: int = 0,
        timeout: Optional[float] = None,
    ) -> Iterator[session_pb2.Session]:
        """Every session (of one bundle name or agent, or the sub-agents one session
        started, when given), page after page."""
        token = ""
        while True:
            request = session_pb2.ListSessionsRequest(
                bundle=bundle,
                agent_id=agent_id,
                parent_session_id=parent_session_id,
                page_size=page_size,
                page_token=token,
            )
            page = call(
                lambda: self.sessions.ListSessions(
                    request, metadata=self._metadata, timeout=timeout
                ),
                self._retry,
            )
            yield from page.sessions
            token = page.next_page_token
            if not token:
                return

    def delete_session(self, session_id: str, *, timeout: Optional[float] = None) -> None:
        request = session_pb2.DeleteSessionRequest(session_id=session_id)
        call(lambda: self.sessions.DeleteSession(request, metadata=self._metadata, timeout=timeout))

    def list_session_tools(
        self, session_id: str, *, timeout: Optional[float] = None
    ) -> session_pb2.ListSessionToolsResponse:
        """Every tool the session's agent is offered (builtin, host and MCP ones, sorted by
        name), read page by page, with the agent's MCP servers that could not be started
        (``mcp_server_errors``). The server starts those not running in the session's cell."""
        merged = session_pb2.ListSessionToolsResponse()
        token = ""
        while True:
            request = session_pb2.ListSessionToolsRequest(session_id=session_id, page_token=token)
            page = call(
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

    def fork_session(
        self,
        session_id: str,
        *,
        after_turn: int = 0,
        at_sequence: int = 0,
        timeout: Optional[float] = None,
    ) -> session_pb2.Session:
        """A new session whose history is ``session_id``'s up to the end of a turn, given
        by number (``after_turn``, 1 for the first) or by the sequence of its
        ``turn_completed`` event (``at_sequence``), and whose workspace is what it held
        then. The source is untouched."""
        request = requests.fork(session_id, after_turn, at_sequence)
        return call(
            lambda: self.sessions.ForkSession(request, metadata=self._metadata, timeout=timeout)
        ).session

    def rewind_session(
        self, session_id: str, to_turn: int, *, timeout: Optional[float] = None
    ) -> session_pb2.RewindSessionResponse:
        """Puts the session's conversation and workspace back to the end of ``to_turn``;
        answers the session and the ``session_rewound`` event recording it."""
        request = session_pb2.RewindSessionRequest(session_id=session_id, to_turn=to_turn)
        return call(
            lambda: self.sessions.RewindSession(request, metadata=self._metadata, timeout=timeout)
        )

    def get_turn_changes(
        self, session_id: str, turn: int, *, timeout: Optional[float] = None
    ) -> session_pb2.GetTurnChangesResponse:
        """The files ``turn`` added, changed or removed, with unified diffs of text files."""
        request = session_pb2.GetTurnChangesRequest(session_id=session_id, turn=turn)
        return call(
            lambda: self.sessions.GetTurnChanges(request, metadata=self._metadata, timeout=timeout),
            self._retry,
        )

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

    def export_cassette(self, session_id: str, *, timeout: Optional[float] = None) -> bytes:
        """The cassette the server recorded for the session (``--record-cassettes``): one
        JSON line per model call, as the ``replay`` provider plays them."""

        def read() -> bytes:
            request = session_pb2.ExportSessionCassetteRequest(session_id=session_id)
            return b"".join(
                part.chunk
                for part in self.sessions.ExportSessionCassette(
                    request, metadata=self._metadata, timeout=timeout
                )
            )

        return call(read, self._retry)

    # Turns

    def submit(
        self,
        session_id: str,
        prompt: str,
        *,
        cwd: str = "",
        model: Optional[Model] = None,
        metadata: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = None,
    ) -> str:
        """Queues a turn and returns its execution id at once. ``cwd`` (relative to the
        session workspace) and ``model`` override the session's for this turn."""
        request = execution_pb2.SubmitRequest(
            input=requests.turn_input(session_id, prompt, cwd, model, metadata)
        )
        return call_submit(
            lambda: self.executions.Submit(request, metadata=self._metadata, timeout=timeout)
        ).execution_id

    def run(
        self,
        session_id: str,
        prompt: str,
        *,
        cwd: str = "",
        model: Optional[Model] = None,
        metadata: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = None,
    ) -> execution_pb2.ExecutionStatus:
        """Runs a turn and waits for it to end (a turn that needs an approval waits for it).
        A ``timeout`` that passes first raises ``DEADLINE_EXCEEDED``; the turn runs on."""
        request = execution_pb2.RunRequest(
            input=requests.turn_input(session_id, prompt, cwd, model, metadata)
        )
        return call_submit(
            lambda: self.executions.Run(request, metadata=self._metadata, timeout=timeout)
        ).status

    def stream_turn(
        self,
        session_id: str,
        prompt: str,
        *,
        cwd: str = "",
        model: Optional[Model] = None,
        metadata: Optional[Mapping[str, str]] = None,
        reconnect: ReconnectPolicy = ReconnectPolicy(),
    ) -> TurnStream:
        """Starts a turn and streams its events as they happen, ending with its
        ``turn_completed`` event. Only this turn's events: those of another turn of the
        session (one queued before it, say) are left out. Subscribes before submitting, so
        nothing is missed; the stream resubscribes by itself after a dropped connection, as
        ``reconnect`` allows."""
        after = self.get_session(session_id).last_sequence
        events = self.events(session_id, after_sequence=after, reconnect=reconnect)
        try:
            execution_id = self.submit(
                session_id, prompt, cwd=cwd, model=model, metadata=metadata
            )
        except OdysseyError:
            events.close()
            raise
        return TurnStream(events, execution_id)

    def execution_status(
        self, execution_id: str, *, timeout: Optional[float] = None
    ) -> execution_pb2.ExecutionStatus:
        request = execution_pb2.GetExecutionStatusRequest(execution_id=execution_id)
        return call(
            lambda: self.executions.GetExecutionStatus(
                request, metadata=self._metadata, timeout=timeout
            ),
            self._retry,
        ).status

    def cancel(
        self, execution_id: str, *, timeout: Optional[float] = None
    ) -> execution_pb2.ExecutionStatus:
        request = execution_pb2.CancelExecutionRequest(execution_id=execution_id)
        return call(
            lambda: self.executions.CancelExecution(
                request, metadata=self._metadata, timeout=timeout
            )
        ).status

    def send_input(
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
        return call(
            lambda: self.executions.SendInput(request, metadata=self._metadata, timeout=timeout)
        )

    # Commands

    def run_command(
        self,
        session_id: str,
        argv: Union[str, Sequence[str]],
        *,
        cwd: str = "",
        timeout_ms: int = 0,
        timeout: Optional[float] = None,
    ) -> execution_pb2.RunSessionCommandResponse:
        """Runs a command in the session's sandbox and returns its exit code and output.
        ``argv`` is the program and its arguments, or a command line (split with shell
        quoting rules; no shell runs it). ``timeout_ms`` is the command's own limit."""
        request = requests.command(session_id, argv, cwd, timeout_ms)
        return call(
            lambda: self.executions.RunSessionCommand(
                request, metadata=self._metadata, timeout=timeout
            )
        )

    def stream_command(
        self,
        session_id: str,
        argv: Union[str, Sequence[str]],
        *,
        cwd: str = "",
        timeout_ms: int = 0,
        timeout: Optional[float] = None,
    ) -> Iterator[execution_pb2.StreamSessionCommandResponse]:
        """Runs a command and yields its ``begin``, ``output`` deltas and ``end`` as they
        happen."""
        request = requests.stream_command(requests.command(session_id, argv, cwd, timeout_ms))
        stream = call(
            lambda: self.executions.StreamSessionCommand(
                request, metadata=self._metadata, timeout=timeout
            )
        )
        try:
            yield from stream
        except grpc.RpcError as error:
            raise OdysseyError.from_rpc_error(error) from None
        finally:
            stream.cancel()

    # Approvals

    def list_approvals(
        self, session_id: str = "", *, page_size: int = 0, timeout: Optional[float] = None
    ) -> Iterator[approval_pb2.Approval]:
        """Pending approval requests, oldest first, of one session or all, page after page."""
        token = ""
        while True:
            request = approval_pb2.ListApprovalsRequest(
                session_id=session_id, page_size=page_size, page_token=token
            )
            page = call(
                lambda: self.approvals.ListApprovals(
                    request, metadata=self._metadata, timeout=timeout
                ),
                self._retry,
            )
            yield from page.approvals
            token = page.next_page_token
            if not token:
                return

    def watch_approvals(
        self, session_id: str = "", *, reconnect: ReconnectPolicy = ReconnectPolicy()
    ) -> ApprovalWatch:
        """Follows the pending approval requests (of one session, or all): a snapshot, then
        each request filed and each that ends, decided here or by anyone else. The watch is
        open on the server when this returns; see :class:`ApprovalWatch`."""
        return ApprovalWatch(self.approvals, session_id, self._metadata, reconnect)

    def resolve_approval(
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
        return call(
            lambda: self.approvals.ResolveApproval(
                request, metadata=self._metadata, timeout=timeout
            )
        )

    def approve(
        self, request_id: str, *, always: bool = False, timeout: Optional[float] = None
    ) -> None:
        """Lets the waiting tool call run (``always``: and matching calls of this session)."""
        decision = (
            events_pb2.APPROVAL_DECISION_ALLOW_ALWAYS
            if always
            else events_pb2.APPROVAL_DECISION_ALLOW_ONCE
        )
        self.resolve_approval(request_id, decision, timeout=timeout)

    def deny(self, request_id: str, reason: str = "", *, timeout: Optional[float] = None) -> None:
        """Refuses the waiting tool call; ``reason`` is shown to the model."""
        self.resolve_approval(
            request_id, events_pb2.APPROVAL_DECISION_DENY, reason, timeout=timeout
        )

    def answer(
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
        return self._resolve_input(
            request_id, events_pb2.HUMAN_INPUT_ACTION_ACCEPT, fields, timeout
        )

    def decline(
        self, request_id: str, *, cancel: bool = False, timeout: Optional[float] = None
    ) -> approval_pb2.ResolveApprovalResponse:
        """Refuses a request for input (``cancel``: dismisses it without a choice); the
        server is told which."""
        action = (
            events_pb2.HUMAN_INPUT_ACTION_CANCEL
            if cancel
            else events_pb2.HUMAN_INPUT_ACTION_DECLINE
        )
        return self._resolve_input(request_id, action, None, timeout)

    def _resolve_input(
        self,
        request_id: str,
        action: events_pb2.HumanInputAction,
        answer: Optional[struct_pb2.Struct],
        timeout: Optional[float],
    ) -> approval_pb2.ResolveApprovalResponse:
        request = approval_pb2.ResolveApprovalRequest(
            request_id=request_id, action=action, answer=answer
        )
        return call(
            lambda: self.approvals.ResolveApproval(
                request, metadata=self._metadata, timeout=timeout
            )
        )


class TurnStream(Iterator[events_pb2.SessionEvent]):
    """The events of one turn, live, ending with its ``turn_completed`` event.

    ``execution_id`` names the turn; the events of the session's other turns are left
    out. Like :class:`EventStream` it resubscribes by itself after a dropped connection;
    ``last_sequence`` is the last event seen, for resuming with
    ``client.events(session_id, after_sequence=...)`` after the stream was closed.
    """

    def __init__(self, events: EventStream, execution_id: str) -> None:
        self.session_id = events.session_id
        self.execution_id = execution_id
        self._events = events
        events.keep = of_turn(execution_id)
        events.stop_when = ends_turn(execution_id)

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
