"""The official MCP Python client (`mcp`) against a real odysseyd's `/mcp`: it lists the
agents as tools, runs one (with progress), continues its session, cancels a slow turn,
reads the session's events as a resource, and is refused a bad argument, an unknown tool
and a wrong token. Run by tests/e2e/mcp_serve.rs, which starts the server and its model;
prints one line per check and exits non-zero on the first failure.

Usage: client.py MCP_URL TOKEN TOOL [one]   (`one`: make one call and print its answer)
"""

from __future__ import annotations

import json
import sys
import uuid

import anyio
import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError


def check(condition: bool, what: str) -> None:
    if not condition:
        raise AssertionError(what)
    print(f"ok: {what}", flush=True)


def text_of(result) -> str:
    return "".join(block.text for block in result.content if block.type == "text")


async def main(url: str, token: str, tool: str) -> None:
    wrong = await httpx2.AsyncClient().post(
        url,
        headers={"authorization": "Bearer not-the-token", "accept": "application/json, text/event-stream"},
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    )
    check(wrong.status_code == 401, f"a wrong token is refused with 401 (got {wrong.status_code})")

    http = create_mcp_http_client(headers={"authorization": f"Bearer {token}"})
    async with http, streamable_http_client(url, http_client=http) as (read, write):
        async with ClientSession(read, write) as session:
            info = await session.initialize()
            check(info.server_info.name == "odysseyd", "the server introduces itself as odysseyd")

            tools = (await session.list_tools()).tools
            names = [t.name for t in tools]
            check(tool in names, f"the agent is listed as tool {tool} (tools: {names})")
            agent = next(t for t in tools if t.name == tool)
            check(agent.input_schema.get("required") == ["prompt"], "the tool takes a required prompt")

            progress: list[str] = []

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                progress.append(message or "")

            first = await session.call_tool(tool, {"prompt": "Say hello"}, progress_callback=on_progress)
            check(not first.is_error, f"the call succeeds ({text_of(first)})")
            check(text_of(first) == "Hello from Odyssey", "the answer is the turn's final text")
            session_id = first.structured_content["session_id"]
            print(f"session: {session_id}", flush=True)
            check("turn_started" in progress, f"progress notifications carry the turn's events ({progress})")

            second = await session.call_tool(tool, {"prompt": "Count", "session_id": session_id})
            check(text_of(second) == "one two three", "a call with session_id continues the session")
            check(second.structured_content["session_id"] == session_id, "in the same session")

            try:
                await session.call_tool(tool, {"prompt": "Take your time", "session_id": session_id}, read_timeout_seconds=3)
                check(False, "the slow call times out")
            except Exception as e:  # the client's timeout, whichever type it raises
                print(f"ok: the slow call is abandoned ({e!r})", flush=True)
            # The abandoned turn must be cancelled: otherwise this one would queue behind
            # its minute-long pause.
            with anyio.fail_after(30):
                after = await session.call_tool(tool, {"prompt": "Still there?", "session_id": session_id})
            check(text_of(after) == "After the cancel", "a cancelled call's turn ends and the session goes on")

            templates = (await session.list_resource_templates()).resource_templates
            template = "odyssey://sessions/{session_id}/events"
            check([t.uri_template for t in templates] == [template], "sessions are resources")
            uri = template.replace("{session_id}", session_id)
            contents = (await session.read_resource(uri)).contents
            events = [json.loads(line) for line in contents[0].text.splitlines()]
            completed = [e["event"]["turnCompleted"] for e in events if "turnCompleted" in e["event"]]
            check(len(completed) == 4, f"the session's resource holds its four turns ({len(completed)}: {events[-1:]})")
            check(completed[0].get("response") == "Hello from Odyssey", "with their answers, in the API's JSON form")
            try:
                await session.read_resource(template.replace("{session_id}", str(uuid.uuid4())))
                check(False, "an unknown session is not a resource")
            except MCPError as e:
                check("no session" in e.error.message, f"an unknown session is an error saying so ({e.error.message})")

            try:
                await session.call_tool(tool, {"session_id": session_id})
                check(False, "a call without a prompt is refused")
            except MCPError as e:
                check("prompt" in e.error.message, f"a call without a prompt is an error naming it ({e.error.message})")

            try:
                await session.call_tool(tool, {"prompt": "hi", "session_id": "not-a-session"})
                check(False, "a malformed session id is refused")
            except MCPError as e:
                check("session_id" in e.error.message, f"a bad session_id is an error naming it ({e.error.message})")

            try:
                await session.call_tool("nobody__here", {"prompt": "hi"})
                check(False, "an unknown tool is refused")
            except MCPError as e:
                check("nobody__here" in e.error.message, f"an unknown tool is an error naming it ({e.error.message})")
    print("done", flush=True)


async def one_call(url: str, token: str, tool: str) -> None:
    """One call, its answer printed: for a turn that waits on an approval."""
    http = create_mcp_http_client(headers={"authorization": f"Bearer {token}"})
    async with http, streamable_http_client(url, http_client=http) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool(tool, {"prompt": "Write a note"})
            print(f"answer: {text_of(result)} (error: {result.is_error})", flush=True)


if __name__ == "__main__":
    if sys.argv[4:] == ["one"]:
        anyio.run(one_call, sys.argv[1], sys.argv[2], sys.argv[3])
    else:
        anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3])
