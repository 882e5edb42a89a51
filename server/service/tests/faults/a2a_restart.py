"""The official A2A Python SDK (`a2a-sdk`) against a child odysseyd that is killed and
started again between its two steps. Run by tests/faults/a2a_restart.rs.

  a2a_restart.py send  HTTP_BASE TOKEN BINDING
      streams a task until its first text arrives, then leaves; prints one JSON line
      {"task", "context", "text", "sequence"}.
  a2a_restart.py after HTTP_BASE TOKEN BINDING TASK CONTEXT TEXT
      on the restarted server: the task is found from the log with all its text, cannot
      be subscribed to (it ended with the server), is listed in its context, and the
      context takes a new task. Prints one line per check; exits non-zero on a failure.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid

import grpc
from a2a.client import (
    AuthInterceptor,
    ClientCallContext,
    ClientConfig,
    ClientFactory,
    CredentialService,
)
from a2a.types import (
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
    UnsupportedOperationError,
)


class Token(CredentialService):
    def __init__(self, token: str) -> None:
        self.token = token

    async def get_credentials(
        self, security_scheme_name: str, context: ClientCallContext | None
    ) -> str | None:
        return self.token


def check(condition: bool, what: str) -> None:
    if not condition:
        raise AssertionError(what)
    print(f"ok: {what}", flush=True)


async def client(base: str, token: str, binding: str, *, streaming: bool):
    config = ClientConfig(
        streaming=streaming,
        supported_protocol_bindings=[binding],
        grpc_channel_factory=grpc.aio.insecure_channel,
    )
    return await ClientFactory(config).create_from_url(
        base, interceptors=[AuthInterceptor(Token(token))]
    )


def message(text: str, context_id: str = "") -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(
            message_id=str(uuid.uuid4()),
            role=Role.ROLE_USER,
            context_id=context_id,
            parts=[Part(text=text)],
        )
    )


async def send(base: str, token: str, binding: str) -> None:
    streamed = await client(base, token, binding, streaming=True)
    task_id, context_id, text, sequence = "", "", "", 0
    async for response in streamed.send_message(message("Tell a long story")):
        kind = response.WhichOneof("payload")
        if kind == "task":
            task_id, context_id = response.task.id, response.task.context_id
        elif kind == "artifact_update":
            update = response.artifact_update
            text += "".join(p.text for p in update.artifact.parts)
            sequence = int(update.metadata["odysseySequence"])
            break
    await streamed.close()
    print(json.dumps({"task": task_id, "context": context_id, "text": text, "sequence": sequence}))


async def after(
    base: str, token: str, binding: str, task_id: str, context_id: str, seen: str
) -> None:
    plain = await client(base, token, binding, streaming=False)
    task = await plain.get_task(GetTaskRequest(id=task_id))
    check(task.id == task_id and task.context_id == context_id, "GetTask finds the task after a restart")
    check(task.status.state == TaskState.TASK_STATE_FAILED, "it ended with the server: failed")
    why = "".join(p.text for p in task.status.message.parts)
    check("server stopped" in why, f"its status says why: {why!r}")
    answer = "".join(p.text for p in task.artifacts[0].parts) if task.artifacts else ""
    check(answer.startswith(seen) and len(answer) > len(seen), f"its answer holds all the log kept: {answer!r}")
    check(task.history[0].parts[0].text == "Tell a long story", "its history holds the prompt")

    streamed = await client(base, token, binding, streaming=True)
    try:
        async for _ in streamed.subscribe(SubscribeToTaskRequest(id=task_id)):
            pass
    except UnsupportedOperationError:
        check(True, "SubscribeToTask on the ended task is UnsupportedOperationError")
    else:
        check(False, "SubscribeToTask on the ended task is UnsupportedOperationError")

    listed = await plain.list_tasks(ListTasksRequest(context_id=context_id))
    check([t.id for t in listed.tasks] == [task_id], "ListTasks lists it in its context")

    responses = [r async for r in plain.send_message(message("And now?", context_id))]
    done = responses[0].task
    check(
        done.context_id == context_id and done.status.state == TaskState.TASK_STATE_COMPLETED,
        "the context takes a new task after the restart",
    )
    listed = await plain.list_tasks(ListTasksRequest(context_id=context_id))
    check([t.id for t in listed.tasks] == [done.id, task_id], "the newest task is listed first")
    for c in (plain, streamed):
        await c.close()


if __name__ == "__main__":
    step, base, token, binding = sys.argv[1:5]
    if step == "send":
        asyncio.run(send(base, token, binding))
    else:
        asyncio.run(after(base, token, binding, *sys.argv[5:8]))
