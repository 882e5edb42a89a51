"""SendInput against a real server, while the demo's turn waits for its Bash approval:
steered input joins that turn, interrupt stops it (reason ``interrupted_by_input``) and
runs the input next, queue runs after; with no turn running a mode starts one; a bad mode
is refused. The same calls through the asyncio client."""

from __future__ import annotations

import asyncio
import threading

import grpc
import pytest

from conftest import REPO, Server
from odyssey.v1 import common_pb2, events_pb2, execution_pb2
from odyssey_client import AsyncOdysseyClient, OdysseyClient, OdysseyError

DEMO = REPO / "bundles" / "demo"
DONE = (
    execution_pb2.EXECUTION_STATE_COMPLETED,
    execution_pb2.EXECUTION_STATE_FAILED,
    execution_pb2.EXECUTION_STATE_CANCELLED,
)


def waiting_turn(client: OdysseyClient, session_id: str) -> str:
    """Submits the demo's tour and returns its execution once it waits for approval."""
    execution = client.submit(session_id, "Give me a tour")
    for _ in range(1200):
        if any(a.execution_id == execution for a in client.list_approvals(session_id)):
            return execution
        threading.Event().wait(0.05)
    raise AssertionError("the tour never asked")


def ended(client: OdysseyClient, execution_id: str) -> execution_pb2.ExecutionStatus:
    for _ in range(1200):
        status = client.execution_status(execution_id)
        if status.state in DONE:
            return status
        threading.Event().wait(0.05)
    raise AssertionError(f"{execution_id} never ended")


def test_steer_then_interrupt_a_waiting_turn(client: OdysseyClient) -> None:
    client.install_bundle(DEMO)
    session = client.create_session("demo")
    running = waiting_turn(client, session.id)

    steered = client.send_input(session.id, "Keep it short", mode="steer")
    assert steered.disposition == execution_pb2.INPUT_DISPOSITION_STEERED
    assert steered.execution_id == running

    stopped = client.send_input(
        session.id, "Stop the tour", mode=common_pb2.INPUT_MODE_INTERRUPT
    )
    assert stopped.disposition == execution_pb2.INPUT_DISPOSITION_INTERRUPTED
    assert stopped.interrupted_execution_id == running
    assert client.execution_status(running).state == execution_pb2.EXECUTION_STATE_CANCELLED
    assert ended(client, stopped.execution_id).state == execution_pb2.EXECUTION_STATE_COMPLETED

    kinds: dict[str, events_pb2.SessionEvent] = {}
    with client.events(session.id) as events:
        for event in events:
            if event.turn_id == running:
                kinds[str(event.WhichOneof("payload"))] = event
                if event.HasField("turn_completed"):
                    break
    assert kinds["user_input_added"].user_input_added.text == "Keep it short"
    assert kinds["user_input_added"].user_input_added.mode == common_pb2.INPUT_MODE_STEER
    done = kinds["turn_completed"].turn_completed
    assert done.outcome == events_pb2.TURN_OUTCOME_CANCELLED
    assert done.reason == "interrupted_by_input"


def test_idle_sessions_start_a_turn_and_bad_modes_are_refused(client: OdysseyClient) -> None:
    client.install_bundle(DEMO)
    session = client.create_session("demo")
    started = client.send_input(session.id, "Give me a tour", mode="queue")
    assert started.disposition == execution_pb2.INPUT_DISPOSITION_STARTED
    assert started.session_id == session.id
    with pytest.raises(OdysseyError) as refused:
        client.send_input(session.id, "hi", mode=common_pb2.INPUT_MODE_UNSPECIFIED)
    assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert [v.field for v in refused.value.field_violations] == ["mode"]
    with pytest.raises(OdysseyError) as empty:
        client.send_input(session.id, "", mode="steer")
    assert [v.field for v in empty.value.field_violations] == ["text"]
    client.cancel(started.execution_id)


def test_queue_through_the_asyncio_client(server: Server) -> None:
    async def scenario() -> None:
        async with AsyncOdysseyClient(server.address, token=server.token) as client:
            await client.wait_until_serving()
            await client.install_bundle(DEMO)
            session = await client.create_session("demo")
            running = await client.submit(session.id, "Give me a tour")
            queued = await client.send_input(session.id, "And then?", mode="queue")
            assert queued.disposition == execution_pb2.INPUT_DISPOSITION_QUEUED
            assert queued.execution_id != running
            status = await client.execution_status(queued.execution_id)
            assert status.state == execution_pb2.EXECUTION_STATE_QUEUED
            await client.cancel(queued.execution_id)
            await client.cancel(running)

    asyncio.run(scenario())
