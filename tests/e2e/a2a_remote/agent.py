"""A remote A2A agent built with the official Python SDK (`a2a-sdk`: its request handler,
task store and JSON-RPC routes under Starlette and uvicorn), which an Odyssey agent
delegates to in tests/e2e/a2a_delegate.rs. What it does depends on the message:

- `echo: TEXT`: works, then streams `Remote says: TEXT` as an artifact in two chunks;
- `ask: TEXT`: asks for input (`May I delete TEXT?`); the answer's data part decides:
  `deleted TEXT` on allow, `kept TEXT (REASON)` on deny;
- `hang`: works and never ends until it is cancelled, which it writes to MARKER_FILE;
- `fail`: fails with a message;
- `whoami`: says whether the request carried the Authorization header EXPECTED_AUTH
  (never the header itself).

Usage: agent.py PORT MARKER_FILE EXPECTED_AUTH
"""

from __future__ import annotations

import asyncio
import sys

import uvicorn
from starlette.applications import Starlette

from a2a.helpers.proto_helpers import (
    get_data_parts,
    get_message_text,
    new_task_from_user_message,
    new_text_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, TaskState

PORT = int(sys.argv[1])
MARKER = sys.argv[2]
EXPECTED_AUTH = sys.argv[3]


class Remote(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            await self.answered(context, task, updater)
            return
        text = get_message_text(context.message)
        await updater.start_work(updater.new_agent_message([new_text_part("on it")]))
        if text.startswith("echo: "):
            said = text.removeprefix("echo: ")
            await updater.add_artifact([new_text_part("Remote says: ")], artifact_id="answer")
            await updater.add_artifact(
                [new_text_part(said)], artifact_id="answer", append=True, last_chunk=True
            )
            await updater.complete()
        elif text.startswith("ask: "):
            what = text.removeprefix("ask: ")
            await updater.requires_input(
                updater.new_agent_message([new_text_part(f"May I delete {what}?")])
            )
        elif text == "hang":
            await asyncio.sleep(3600)
        elif text == "fail":
            await updater.failed(updater.new_agent_message([new_text_part("the disk is full")]))
        elif text == "whoami":
            headers = context.call_context.state.get("headers", {})
            seen = headers.get("authorization") == EXPECTED_AUTH
            answer = "authorized" if seen else "anonymous"
            await updater.add_artifact([new_text_part(answer)], artifact_id="answer")
            await updater.complete()
        else:
            await updater.failed(updater.new_agent_message([new_text_part("unknown request")]))

    async def answered(self, context: RequestContext, task, updater: TaskUpdater) -> None:
        asked = get_message_text(task.history[0]) if task.history else ""
        what = asked.removeprefix("ask: ")
        decisions = [d for d in get_data_parts(context.message.parts) if isinstance(d, dict)]
        decision = decisions[0] if decisions else {}
        await updater.start_work()
        if decision.get("decision") in ("allow_once", "allow_always"):
            answer = f"deleted {what}"
        else:
            answer = f"kept {what} ({decision.get('reason', '')})"
        await updater.add_artifact([new_text_part(answer)], artifact_id="answer")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        with open(MARKER, "a", encoding="utf-8") as marker:
            marker.write(f"cancelled {context.task_id}\n")
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel()


card = AgentCard(
    name="Remote helper",
    description="A remote agent Odyssey delegates to in its tests.",
    version="1.0.0",
    supported_interfaces=[
        AgentInterface(
            url=f"http://127.0.0.1:{PORT}/rpc",
            protocol_binding="JSONRPC",
            protocol_version="1.0",
        )
    ],
    capabilities=AgentCapabilities(streaming=True),
    default_input_modes=["text/plain"],
    default_output_modes=["text/plain"],
    skills=[AgentSkill(id="echo", name="echo", description="Echoes", tags=["test"])],
)
handler = DefaultRequestHandler(
    agent_executor=Remote(), task_store=InMemoryTaskStore(), agent_card=card
)
app = Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/rpc")])
uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
