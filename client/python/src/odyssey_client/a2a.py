"""Odyssey's agents over the Agent2Agent protocol (A2A v1.0, gRPC binding,
``lf.a2a.v1.A2AService``), which the server offers on the same port as ``odyssey.v1``.

A task is one turn; its ``context_id`` is the session. :class:`A2AClient` (from
:meth:`odyssey_client.OdysseyClient.a2a`) reads an agent's extended card, sends messages,
streams tasks, reads and cancels them, answers an input-required task with a decision,
and follows a running task from a sequence number (Odyssey's
``urn:odyssey:a2a:event-sequence:v1`` extension), so a client that lost its stream
resumes with nothing missed and nothing twice.

The stubs are ``lf.a2a.v1.a2a_pb2`` (generated from the project's ``proto/lf``). They
define the same protobuf names as the official ``a2a-sdk``'s: one process can load only
one of the two, so this module is imported on first use of :meth:`OdysseyClient.a2a`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Generator, Iterator, Optional

import grpc
from google.protobuf import struct_pb2

from lf.a2a.v1 import a2a_pb2, a2a_pb2_grpc
from odyssey_client.errors import OdysseyError, call

#: The metadata key of every streamed update that holds the session's sequence number of
#: the event it comes from.
SEQUENCE_KEY = "odysseySequence"

#: The extension of extended cards that holds an agent's details (model, tools, rules).
DETAILS_EXTENSION = "urn:odyssey:a2a:agent-details:v1"


def tenant(bundle: str = "", agent: str = "") -> str:
    """The tenant naming ``agent`` of ``bundle`` (``name`` or ``namespace/name``) in A2A
    requests; both empty: the server's default agent."""
    if not bundle and not agent:
        return ""
    return f"{bundle}.{agent}"


def sequence_of(update: a2a_pb2.StreamResponse) -> Optional[int]:
    """The session's sequence number an update carries; ``None`` for the task sent first."""
    kind = update.WhichOneof("payload")
    if kind == "status_update":
        metadata = update.status_update.metadata
    elif kind == "artifact_update":
        metadata = update.artifact_update.metadata
    else:
        return None
    if SEQUENCE_KEY not in metadata.fields:
        return None
    return int(metadata.fields[SEQUENCE_KEY].number_value)


def answer_text(task: a2a_pb2.Task) -> str:
    """The text of a task's artifacts: the agent's answer."""
    return "".join(p.text for a in task.artifacts for p in a.parts if p.HasField("text"))


@dataclass
class TaskUpdate:
    """One update of a streamed task, with the sequence number it carries."""

    sequence: Optional[int]
    response: a2a_pb2.StreamResponse


class A2AClient:
    """The A2A calls, on an :class:`odyssey_client.OdysseyClient`'s channel and token."""

    def __init__(self, channel: grpc.Channel) -> None:
        #: The generated stub, for what the helpers leave out (push notification configs).
        self.stub = a2a_pb2_grpc.A2AServiceStub(channel)

    def agent_card(
        self, bundle: str = "", agent: str = "", *, timeout: Optional[float] = None
    ) -> a2a_pb2.AgentCard:
        """The extended card of ``agent`` of ``bundle`` (both empty: the server's default
        agent): the public card plus the agent's details under :data:`DETAILS_EXTENSION`."""
        request = a2a_pb2.GetExtendedAgentCardRequest(tenant=tenant(bundle, agent))
        return call(lambda: self.stub.GetExtendedAgentCard(request, timeout=timeout))

    def send(
        self,
        text: str,
        *,
        tenant: str = "",
        context_id: str = "",
        timeout: Optional[float] = None,
    ) -> a2a_pb2.Task:
        """Sends ``text`` to the agent ``tenant`` names (``<bundle>.<agent>``; empty: the
        default agent), in the context (session) ``context_id`` or a new one; returns the
        task once its turn ended or waits for an approval (input-required)."""
        request = _message(tenant, context_id, a2a_pb2.Part(text=text))
        return _task(call(lambda: self.stub.SendMessage(request, timeout=timeout)))

    def decide(
        self,
        task: a2a_pb2.Task,
        decision: str,
        reason: str = "",
        *,
        timeout: Optional[float] = None,
    ) -> a2a_pb2.Task:
        """Answers an input-required ``task``: ``decision`` is ``allow_once``,
        ``allow_always`` or ``deny`` (``reason`` is shown to the agent on a deny)."""
        data = struct_pb2.Value()
        fields: dict[str, str] = {"decision": decision}
        if reason:
            fields["reason"] = reason
        data.struct_value.update(fields)
        request = _message("", task.context_id, a2a_pb2.Part(data=data), task_id=task.id)
        return _task(call(lambda: self.stub.SendMessage(request, timeout=timeout)))

    def stream(
        self, text: str, *, tenant: str = "", context_id: str = ""
    ) -> Generator[TaskUpdate, None, None]:
        """:meth:`send` as a stream: the task, then its status updates and the agent's
        text in chunks, until the turn ends or waits for an approval."""
        request = _message(tenant, context_id, a2a_pb2.Part(text=text))
        return _updates(self.stub.SendStreamingMessage(request), 0)

    def get(
        self, task_id: str, *, history_length: Optional[int] = None,
        timeout: Optional[float] = None,
    ) -> a2a_pb2.Task:
        """The task, with the last ``history_length`` messages of its history (``None``:
        all of it)."""
        request = a2a_pb2.GetTaskRequest(id=task_id)
        if history_length is not None:
            request.history_length = history_length
        return call(lambda: self.stub.GetTask(request, timeout=timeout))

    def cancel(self, task_id: str, *, timeout: Optional[float] = None) -> a2a_pb2.Task:
        """Cancels the task (its turn); returns it as it ended."""
        request = a2a_pb2.CancelTaskRequest(id=task_id)
        return call(lambda: self.stub.CancelTask(request, timeout=timeout))

    def subscribe(
        self, task_id: str, *, after_sequence: int = 0
    ) -> Generator[TaskUpdate, None, None]:
        """Follows a running task from the session's log: the task, then the updates
        whose sequence number is above ``after_sequence`` (0: all of them). An ended task
        is refused (``FAILED_PRECONDITION``): read it with :meth:`get`."""
        request = a2a_pb2.SubscribeToTaskRequest(id=task_id)
        return _updates(self.stub.SubscribeToTask(request), after_sequence)


def _message(
    tenant: str, context_id: str, part: a2a_pb2.Part, *, task_id: str = ""
) -> a2a_pb2.SendMessageRequest:
    return a2a_pb2.SendMessageRequest(
        tenant=tenant,
        message=a2a_pb2.Message(
            message_id=str(uuid.uuid4()),
            role=a2a_pb2.ROLE_USER,
            context_id=context_id,
            task_id=task_id,
            parts=[part],
        ),
    )


def _task(response: a2a_pb2.SendMessageResponse) -> a2a_pb2.Task:
    if response.WhichOneof("payload") != "task":
        raise OdysseyError(
            grpc.StatusCode.INTERNAL, "SendMessage answered a message instead of a task"
        )
    return response.task


def _updates(
    stream: Iterator[a2a_pb2.StreamResponse], after: int
) -> Generator[TaskUpdate, None, None]:
    try:
        for response in stream:
            sequence = sequence_of(response)
            if sequence is not None and sequence <= after:
                continue
            yield TaskUpdate(sequence, response)
    except grpc.RpcError as error:
        raise OdysseyError.from_rpc_error(error) from None
    finally:
        cancel = getattr(stream, "cancel", None)
        if cancel is not None:
            cancel()
