"""Two turns of one session at once: turn A waits on an approval while turn B is queued
behind it. B's stream carries B's events only; A's (its approval included) never show, so
an approval loop on B's stream cannot answer A's request."""

from __future__ import annotations

import threading
import time

from conftest import REPO
from odyssey.v1 import events_pb2
from odyssey_client import OdysseyClient


def approve_turn(client: OdysseyClient, session_id: str, execution_id: str) -> None:
    """Approves the first request of the given turn, as soon as it is pending (60 s)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for approval in client.list_approvals(session_id):
            if approval.execution_id == execution_id:
                client.approve(approval.request_id)
                return
        time.sleep(0.05)


def test_a_turn_stream_carries_only_its_own_turn(client: OdysseyClient) -> None:
    client.install_bundle(REPO / "bundles" / "demo")
    session = client.create_session("demo")

    first = client.submit(session.id, "Give me a tour")
    turn = client.stream_turn(session.id, "Give me a tour")
    start = turn.last_sequence
    # A runs while B's stream is open: its approval, tool call and completion all happen
    # after B subscribed.
    approver = threading.Thread(target=approve_turn, args=(client, session.id, first))
    approver.start()

    seen: list[events_pb2.SessionEvent] = []
    with turn:
        for event in turn:
            seen.append(event)
            if event.HasField("permission_requested"):  # B's own, if it asks
                client.approve(event.permission_requested.request_id)
    approver.join()

    assert turn.execution_id != first
    assert seen, "no events"
    assert {e.turn_id for e in seen} == {turn.execution_id}
    kinds = [e.WhichOneof("payload") for e in seen]
    assert kinds[0] == "turn_started" and kinds[-1] == "turn_completed", kinds
    assert seen[-1].turn_completed.outcome == events_pb2.TURN_OUTCOME_COMPLETED

    # The overlap was real: A's events were appended while B's stream was open.
    with client.events(session.id, after_sequence=start) as everything:
        others = []
        for event in everything:
            if event.sequence > seen[-1].sequence:
                break
            if event.turn_id == first:
                others.append(event.WhichOneof("payload"))
            if event.sequence == seen[-1].sequence:
                break
    assert "approval_resolved" in others and "turn_completed" in others, others
