"""WatchApprovals and Session.state against a real server: a turn's Bash call appears in a
watch, another client decides it, the watch sees it go, the session's state follows."""

from __future__ import annotations

import asyncio
import time

import grpc
import pytest

from conftest import REPO, Server
from odyssey.v1 import events_pb2, session_pb2
from odyssey_client import AsyncOdysseyClient, OdysseyClient, OdysseyError

DEMO = REPO / "bundles" / "demo"


def wait_for_state(client: OdysseyClient, session_id: str, state: int) -> None:
    for _ in range(400):
        if client.get_session(session_id).state == state:
            return
        time.sleep(0.05)
    raise AssertionError(f"session never reached state {state}")


def test_a_watch_follows_a_request_decided_by_another_client(
    client: OdysseyClient, server: Server
) -> None:
    client.install_bundle(DEMO)
    session = client.create_session("demo")
    assert session.state == session_pb2.SESSION_STATE_IDLE
    with client.watch_approvals(session.id) as watch:
        first = next(watch)
        assert first.WhichOneof("item") == "snapshot"
        assert list(first.snapshot.approvals) == []

        execution = client.submit(session.id, "Give me a tour")
        added = next(watch)
        assert added.WhichOneof("item") == "added"
        assert added.added.execution_id == execution
        assert added.added.tool == "Bash"
        assert added.added.display and added.added.reason
        assert list(watch.pending) == [added.added.request_id]
        assert client.get_session(session.id).state == (
            session_pb2.SESSION_STATE_WAITING_FOR_APPROVAL
        )

        with OdysseyClient(server.address, token=server.token) as other:
            other.approve(added.added.request_id)
        removed = next(watch)
        assert removed.WhichOneof("item") == "removed"
        assert removed.removed.request_id == added.added.request_id
        assert removed.removed.decision == events_pb2.APPROVAL_DECISION_ALLOW_ONCE
        assert removed.removed.resolution == events_pb2.APPROVAL_RESOLUTION_DECIDED
        assert watch.pending == {}
    wait_for_state(client, session.id, session_pb2.SESSION_STATE_IDLE)


def test_watching_an_unknown_session_is_not_found(client: OdysseyClient) -> None:
    with pytest.raises(OdysseyError) as refused:
        next(client.watch_approvals("0190a4c1-0000-7000-8000-000000000000"))
    assert refused.value.code == grpc.StatusCode.NOT_FOUND


def test_an_async_watch_sees_a_deny(server: Server) -> None:
    async def scenario() -> None:
        async with AsyncOdysseyClient(server.address, token=server.token) as client:
            await client.wait_until_serving()
            await client.install_bundle(DEMO)
            session = await client.create_session("demo")
            async with await client.watch_approvals(session.id) as watch:
                first = await watch.__anext__()
                assert first.WhichOneof("item") == "snapshot"
                await client.submit(session.id, "Give me a tour")
                added = await watch.__anext__()
                assert added.WhichOneof("item") == "added"
                await client.deny(added.added.request_id, "not now")
                removed = await watch.__anext__()
                assert removed.removed.request_id == added.added.request_id
                assert removed.removed.decision == events_pb2.APPROVAL_DECISION_DENY
                assert removed.removed.reason == "not now"
                assert watch.pending == {}

    asyncio.run(scenario())
