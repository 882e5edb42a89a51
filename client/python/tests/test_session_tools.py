"""An agent's MCP servers as InspectBundle and ListAgents show them, and the tools of a
session as ListSessionTools lists them (the server starts the agent's stdio MCP server in
the session's sandbox cell), in the sync and asyncio clients."""

from __future__ import annotations

import asyncio

from conftest import REPO, Server
from odyssey.v1 import session_pb2
from odyssey_client import AsyncOdysseyClient, OdysseyClient

BUNDLE = REPO / "bundles" / "mcp-tools"


def check_tools(listed: session_pb2.ListSessionToolsResponse) -> None:
    # `LS` is denied outright, so it is not offered; sorted by name.
    assert [t.name for t in listed.tools] == ["Read", "mcp__clock__now"]
    read, now = listed.tools
    assert (read.source, read.mcp_server) == ("builtin", "")
    assert (now.source, now.mcp_server) == ("mcp", "clock")
    assert "current time" in now.description
    assert '"type":"object"' in now.input_schema_json
    assert [e.server for e in listed.mcp_server_errors] == ["missing"]
    assert listed.mcp_server_errors[0].error


def test_agents_show_their_mcp_servers_and_sessions_list_their_tools(
    client: OdysseyClient,
) -> None:
    client.install_bundle(BUNDLE)
    inspected = client.inspect_bundle("mcp-tools")
    servers = [(s.name, s.kind, s.operator) for s in inspected.agents[0].mcp_servers]
    assert servers == [("clock", "stdio", False), ("missing", "stdio", False)]
    agents = list(client.list_agents("mcp-tools"))
    assert [s.name for s in agents[0].mcp_servers] == ["clock", "missing"]

    session = client.create_session("mcp-tools")
    check_tools(client.list_session_tools(session.id))


def test_the_asyncio_client_lists_a_sessions_tools(server: Server, client: OdysseyClient) -> None:
    client.install_bundle(BUNDLE)
    session = client.create_session("mcp-tools")

    async def listed() -> session_pb2.ListSessionToolsResponse:
        async with AsyncOdysseyClient(server.address, token=server.token) as aio:
            return await aio.list_session_tools(session.id)

    check_tools(asyncio.run(listed()))
