"""The official A2A Python SDK (`a2a-sdk`) against a real odysseyd: it discovers the
agent from its card, reads its extended card, then runs a task, a streamed task, a cancelled one, and one that
waits for an approval (answered with a decision) over the binding named (GRPC, JSONRPC or
HTTP+JSON, one of the card's interfaces), lists the tasks of a context, and asks for a
task that does not exist. Run by tests/e2e/a2a_sdk.rs, which starts the server and its
model; prints one line per check and exits non-zero on the first failure.

Usage: client.py HTTP_BASE_URL TOKEN BINDING
"""

from __future__ import annotations

import asyncio
import sys
import uuid

import grpc
import httpx
from google.protobuf import struct_pb2
from a2a.client import (
    A2ACardResolver,
    AuthInterceptor,
    ClientCallContext,
    ClientConfig,
    ClientFactory,
    CredentialService,
)
from a2a.types import (
    CancelTaskRequest,
    GetExtendedAgentCardRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskNotFoundError,
    TaskState,
)


class Token(CredentialService):
    """The server's token, for the bearer scheme its card declares."""

    def __init__(self, token: str) -> None:
        self.token = token

    async def get_credentials(
        self, security_scheme_name: str, context: ClientCallContext | None
    ) -> str | None:
        return self.token


def message(text: str) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(
            message_id=str(uuid.uuid4()),
            role=Role.ROLE_USER,
            parts=[Part(text=text)],
        )
    )


def check(condition: bool, what: str) -> None:
    if not condition:
        raise AssertionError(what)
    print(f"ok: {what}", flush=True)


async def client(
    base: str, token: str, binding: str, *, streaming: bool, polling: bool = False
):
    config = ClientConfig(
        streaming=streaming,
        polling=polling,
        supported_protocol_bindings=[binding],
        grpc_channel_factory=grpc.aio.insecure_channel,
    )
    return await ClientFactory(config).create_from_url(
        base, interceptors=[AuthInterceptor(Token(token))]
    )


async def main(base: str, token: str, binding: str) -> None:
    # A task over the binding, the client found from the card alone.
    async with httpx.AsyncClient() as http:
        card = await A2ACardResolver(http, base).get_agent_card()
    used = [i for i in card.supported_interfaces if i.protocol_binding == binding]
    check(len(used) == 1, f"the card offers {binding}: {used[0].url if used else None}")
    check(card.capabilities.extended_agent_card, "the card offers an extended card")
    plain = await client(base, token, binding, streaming=False)
    responses = [r async for r in plain.send_message(message("Say hello"))]
    extended = await plain.get_extended_agent_card(GetExtendedAgentCardRequest())
    details = [
        e.params
        for e in extended.capabilities.extensions
        if e.uri == "urn:odyssey:a2a:agent-details:v1"
    ]
    check(
        extended.name == card.name
        and len(details) == 1
        and list(details[0]["tools"]) == ["Bash"],
        f"the extended card, behind the token, lists the agent's tools: {details}",
    )
    check(len(responses) == 1 and responses[0].HasField("task"), "SendMessage answers a task")
    task = responses[0].task
    check(task.status.state == TaskState.TASK_STATE_COMPLETED, "the task completed")
    answer = "".join(p.text for p in task.artifacts[0].parts)
    check(answer == "Hello from Odyssey", f"its artifact is the model's answer: {answer!r}")
    again = await plain.get_task(GetTaskRequest(id=task.id, history_length=1))
    check(
        again.id == task.id and len(again.history) == 1,
        "GetTask finds it, history cut to one message",
    )
    listed = await plain.list_tasks(ListTasksRequest(context_id=task.context_id))
    check(
        [t.id for t in listed.tasks] == [task.id] and listed.total_size == 1,
        "ListTasks lists the context's task",
    )

    # A streamed task: the task, then status updates and the answer in chunks.
    streamed = await client(base, token, binding, streaming=True)
    kinds, chunks, states = [], [], []
    async for response in streamed.send_message(message("Count to three")):
        kind = response.WhichOneof("payload")
        kinds.append(kind)
        if kind == "artifact_update":
            chunks.append("".join(p.text for p in response.artifact_update.artifact.parts))
        elif kind == "status_update":
            states.append(response.status_update.status.state)
    check(kinds[0] == "task", "the stream starts with the task")
    check("".join(chunks) == "one two three", f"the chunks make the answer: {chunks!r}")
    check(states[-1] == TaskState.TASK_STATE_COMPLETED, "the stream ends completed")

    # A call waiting for a person makes the task input-required; a message on the task
    # whose data part is the decision answers it.
    responses = [r async for r in plain.send_message(message("Run a command"))]
    asking = responses[0].task
    check(
        asking.status.state == TaskState.TASK_STATE_INPUT_REQUIRED,
        "a call waiting for approval makes the task input-required",
    )
    decision = struct_pb2.Value()
    decision.struct_value.update({"decision": "deny", "reason": "not in a test"})
    answer = SendMessageRequest(
        message=Message(
            message_id=str(uuid.uuid4()),
            role=Role.ROLE_USER,
            task_id=asking.id,
            context_id=asking.context_id,
            parts=[Part(data=decision)],
        )
    )
    responses = [r async for r in plain.send_message(answer)]
    decided = responses[0].task
    check(
        decided.id == asking.id and decided.status.state == TaskState.TASK_STATE_COMPLETED,
        "the decision resolves the approval and the task completes",
    )
    answer_text = "".join(p.text for p in decided.artifacts[0].parts)
    check(answer_text == "Denied as asked", f"with the agent's answer: {answer_text!r}")

    # A task cancelled while it runs.
    polling = await client(base, token, binding, streaming=False, polling=True)
    responses = [r async for r in polling.send_message(message("Take your time"))]
    slow = responses[0].task
    for _ in range(200):
        state = (await polling.get_task(GetTaskRequest(id=slow.id))).status.state
        if state == TaskState.TASK_STATE_WORKING:
            break
        await asyncio.sleep(0.05)
    check(state == TaskState.TASK_STATE_WORKING, "the slow task works")
    cancelled = await polling.cancel_task(CancelTaskRequest(id=slow.id))
    check(cancelled.status.state == TaskState.TASK_STATE_CANCELED, "CancelTask cancels it")

    # A2A's own error, as the SDK reads it.
    try:
        await plain.get_task(GetTaskRequest(id=str(uuid.uuid4())))
    except TaskNotFoundError:
        check(True, "an unknown task is TaskNotFoundError")
    else:
        check(False, "an unknown task is TaskNotFoundError")

    for c in (plain, streamed, polling):
        await c.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
