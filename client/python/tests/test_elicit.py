"""An MCP server's request for input (``bundles/mcp-input``: ``trip.py`` asks during its
tool call) on the approvals surface: listed with its message and schema, a bad answer
refused naming the field, a good one reaching the server, both ends in the turn's events;
declining through the asyncio client."""

from __future__ import annotations

import asyncio
import threading

import grpc
import pytest

from conftest import REPO, Server
from odyssey.v1 import approval_pb2, events_pb2, execution_pb2
from odyssey_client import AsyncOdysseyClient, OdysseyClient, OdysseyError

BUNDLE = REPO / "bundles" / "mcp-input"
DONE = (
    execution_pb2.EXECUTION_STATE_COMPLETED,
    execution_pb2.EXECUTION_STATE_FAILED,
    execution_pb2.EXECUTION_STATE_CANCELLED,
)


def asked(client: OdysseyClient, session_id: str) -> approval_pb2.Approval:
    for _ in range(1200):
        pending = list(client.list_approvals(session_id))
        if pending:
            return pending[0]
        threading.Event().wait(0.05)
    raise AssertionError("the server never asked")


def ended(client: OdysseyClient, execution_id: str) -> execution_pb2.ExecutionStatus:
    for _ in range(1200):
        status = client.execution_status(execution_id)
        if status.state in DONE:
            return status
        threading.Event().wait(0.05)
    raise AssertionError(f"{execution_id} never ended")


def turn_events(
    client: OdysseyClient, session_id: str, execution_id: str
) -> list[events_pb2.SessionEvent]:
    seen: list[events_pb2.SessionEvent] = []
    with client.events(session_id) as stream:
        for event in stream:
            if event.turn_id == execution_id:
                seen.append(event)
            if event.turn_id == execution_id and event.HasField("turn_completed"):
                return seen
    return seen


def test_a_request_for_input_is_answered(client: OdysseyClient) -> None:
    client.install_bundle(BUNDLE)
    session = client.create_session("mcp-input")
    execution = client.submit(session.id, "Plan a trip")
    request = asked(client, session.id)
    assert request.kind == approval_pb2.APPROVAL_KIND_INPUT
    assert request.message == "Where to, and for how long?"
    assert request.tool == "mcp__trip__plan"
    required = request.requested_schema.fields["required"].list_value.values
    assert [v.string_value for v in required] == ["city"]

    with pytest.raises(OdysseyError) as refused:
        client.answer(request.request_id, {"days": 3})
    assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert [v.field for v in refused.value.field_violations] == ["answer.city"]

    client.answer(request.request_id, {"city": "Kyoto", "days": 5})
    assert ended(client, execution).state == execution_pb2.EXECUTION_STATE_COMPLETED
    events = turn_events(client, session.id, execution)
    requested = [e.human_input_requested for e in events if e.HasField("human_input_requested")]
    answered = [e.human_input_answered for e in events if e.HasField("human_input_answered")]
    assert [r.server for r in requested] == ["trip"]
    assert [a.action for a in answered] == [events_pb2.HUMAN_INPUT_ACTION_ACCEPT]
    assert answered[0].answer["city"] == "Kyoto"
    results = [e.tool_call_finished.result for e in events if e.HasField("tool_call_finished")]
    assert results == ["trip to Kyoto for 5 days"]


def test_the_asyncio_client_declines_a_request_for_input(
    server: Server, client: OdysseyClient
) -> None:
    client.install_bundle(BUNDLE)
    session = client.create_session("mcp-input")
    execution = client.submit(session.id, "Plan a trip")
    request = asked(client, session.id)

    async def decline() -> None:
        async with AsyncOdysseyClient(server.address, token=server.token) as aio:
            await aio.decline(request.request_id)

    asyncio.run(decline())
    assert ended(client, execution).state == execution_pb2.EXECUTION_STATE_COMPLETED
    events = turn_events(client, session.id, execution)
    results = [e.tool_call_finished.result for e in events if e.HasField("tool_call_finished")]
    assert results == ["no trip: the person chose decline"]
