"""The asyncio client against a real server: a streamed turn with its approval, the
overlap case (a turn's stream carries only its own turn), pagers as async iterators,
decoded errors, a deadline that expires and a stream closed while it waits."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from conftest import REPO, Server
from odyssey.v1 import events_pb2, session_pb2
from odyssey_client import AsyncOdysseyClient, OdysseyError

DEMO = REPO / "bundles" / "demo"


def test_a_streamed_turn_with_its_approval(server: Server) -> None:
    async def scenario() -> None:
        async with AsyncOdysseyClient(server.address, token=server.token) as client:
            await client.wait_until_serving()
            await client.install_bundle(DEMO)
            session = await client.create_session("demo")
            first = await client.submit(session.id, "Give me a tour")
            seen: list[events_pb2.SessionEvent] = []
            async with await client.stream_turn(session.id, "Give me a tour") as turn:
                approver = asyncio.create_task(approve_when_pending(client, session.id, first))
                async for event in turn:
                    seen.append(event)
                    if event.HasField("permission_requested"):
                        await client.approve(event.permission_requested.request_id)
                await approver
            assert {e.turn_id for e in seen} == {turn.execution_id}
            assert seen[0].HasField("turn_started") and seen[-1].HasField("turn_completed")
            assert seen[-1].turn_completed.outcome == events_pb2.TURN_OUTCOME_COMPLETED
            assert turn.reconnects == 0

            # The raw stubs carry the token by themselves.
            raw = await client.sessions.GetSession(
                session_pb2.GetSessionRequest(session_id=session.id)
            )
            assert raw.session.id == session.id

            sessions = [s.id async for s in client.list_sessions(page_size=1)]
            assert session.id in sessions
            bundles = [b.ref.name async for b in client.list_bundles(page_size=1)]
            assert "demo" in bundles

    asyncio.run(scenario())


async def approve_when_pending(
    client: AsyncOdysseyClient, session_id: str, execution_id: str
) -> None:
    for _ in range(1200):
        async for approval in client.list_approvals(session_id):
            if approval.execution_id == execution_id:
                await client.approve(approval.request_id)
                return
        await asyncio.sleep(0.05)
    raise AssertionError(f"turn {execution_id} never asked")


def test_errors_deadlines_and_closing(server: Server) -> None:
    async def scenario() -> None:
        async with AsyncOdysseyClient(server.address, token=server.token) as client:
            missing = str(uuid.uuid4())
            with pytest.raises(OdysseyError) as caught:
                await client.get_session(missing)
            assert caught.value.reason == "SESSION_NOT_FOUND"
            with pytest.raises(OdysseyError) as caught:
                await client.get_session("not-a-session-id")
            assert [v.field for v in caught.value.field_violations] == ["session_id"]
            with pytest.raises(OdysseyError) as caught:
                await (await client.events(missing)).__anext__()
            assert caught.value.code_name == "NOT_FOUND"

            await client.install_bundle(DEMO)
            session = await client.create_session("demo")
            with pytest.raises(OdysseyError) as caught:
                await client.run(session.id, "Give me a tour", timeout=1.0)
            assert caught.value.code_name == "DEADLINE_EXCEEDED"
            async for approval in client.list_approvals(session.id):
                await client.deny(approval.request_id, "not now")

            quiet = await client.create_session("demo")
            stream = await client.events(quiet.id)
            asyncio.get_running_loop().call_later(0.5, stream.close)
            assert [e async for e in stream] == []

    asyncio.run(scenario())
