"""Automatic resume: an event stream whose connection is cut mid-turn resubscribes by
itself after its last sequence. The events the server appends while the connection is
down arrive after it, with no gap and no duplicate."""

from __future__ import annotations

import threading
import time
from typing import Iterator

import grpc
import pytest

from conftest import REPO, Server
from odyssey.v1 import events_pb2, execution_pb2
from odyssey_client import OdysseyClient, OdysseyError, ReconnectPolicy
from proxy import Proxy

#: How long the connection stays cut: several retries fail before one gets through.
OUTAGE_SECONDS = 1.0


@pytest.fixture
def proxy(server: Server) -> Iterator[Proxy]:
    proxy = Proxy(server.address)
    yield proxy
    proxy.close()


def wait_until_finished(client: OdysseyClient, execution_id: str) -> None:
    """Polls the turn's state until it has ended (bounded: 60 s)."""
    ended = {
        execution_pb2.EXECUTION_STATE_COMPLETED,
        execution_pb2.EXECUTION_STATE_FAILED,
        execution_pb2.EXECUTION_STATE_CANCELLED,
        execution_pb2.EXECUTION_STATE_INTERRUPTED,
    }
    deadline = time.monotonic() + 60
    while client.execution_status(execution_id).state not in ended:
        assert time.monotonic() < deadline, "the turn did not end within 60 s"
        time.sleep(0.05)


def test_a_cut_stream_resumes_by_itself(
    server: Server, client: OdysseyClient, proxy: Proxy
) -> None:
    client.install_bundle(REPO / "bundles" / "demo")
    session = client.create_session("demo")

    with OdysseyClient(proxy.address, token=server.token) as relayed:
        seen: list[events_pb2.SessionEvent] = []
        turn = relayed.stream_turn(session.id, "Give me a tour")
        for event in turn:
            seen.append(event)
            if event.HasField("permission_requested"):
                # Cut the stream while the turn waits, let the turn run to its end while
                # nothing gets through, then let the retries through.
                proxy.cut()
                client.approve(event.permission_requested.request_id)
                wait_until_finished(client, turn.execution_id)
                threading.Timer(OUTAGE_SECONDS, proxy.mend).start()
        # One outage, one resubscription, however many attempts failed during it.
        assert turn.reconnects == 1

    sequences = [e.sequence for e in seen]
    assert sequences == list(range(sequences[0], sequences[0] + len(seen))), sequences
    kinds = [e.WhichOneof("payload") for e in seen]
    assert kinds[0] == "turn_started"
    assert kinds[-1] == "turn_completed"
    after_cut = kinds[kinds.index("permission_requested") + 1 :]
    assert "approval_resolved" in after_cut, kinds
    assert seen[-1].turn_completed.outcome == events_pb2.TURN_OUTCOME_COMPLETED


def test_without_reconnect_a_cut_stream_raises_unavailable(
    server: Server, client: OdysseyClient, proxy: Proxy
) -> None:
    client.install_bundle(REPO / "bundles" / "demo")
    session = client.create_session("demo")
    with OdysseyClient(proxy.address, token=server.token) as relayed:
        events = relayed.events(session.id, reconnect=ReconnectPolicy.never())
        proxy.cut()
        with pytest.raises(OdysseyError) as error:
            next(events)
        assert error.value.code == grpc.StatusCode.UNAVAILABLE
        assert events.reconnects == 0


def test_a_read_is_retried_while_the_connection_is_down(
    server: Server, client: OdysseyClient, proxy: Proxy
) -> None:
    """Reads retry UNAVAILABLE with backoff; writes do not. (A longer policy than
    READ_RETRY's 1.5 s: gRPC's own reconnect backoff after a failed connection starts at
    1 s, and a loaded machine must not make the test flaky.)"""
    patient = ReconnectPolicy(initial_delay=0.1, max_delay=1.0, max_attempts=10)
    with OdysseyClient(proxy.address, token=server.token, read_retry=patient) as relayed:
        relayed.wait_until_serving()
        proxy.cut()
        with pytest.raises(OdysseyError) as refused:
            relayed.create_session("demo")
        assert refused.value.code == grpc.StatusCode.UNAVAILABLE
        threading.Timer(0.2, proxy.mend).start()
        assert relayed.server_info().version
