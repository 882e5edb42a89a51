"""The whole SDK against a real server: install the demo bundle, run a turn whose replayed
model calls Bash (which the agent's rules say must ask), approve it from the client, drop
the event stream mid-turn and resume it with no gap and no duplicate."""

from __future__ import annotations

import uuid

import grpc
import pytest

from conftest import REPO, Server
from odyssey.v1 import events_pb2, execution_pb2
from odyssey_client import OdysseyClient, OdysseyError

DEMO = REPO / "bundles" / "demo"
DELEGATE = REPO / "bundles" / "delegate"
A2A_DELEGATE = REPO / "bundles" / "a2a-delegate"


def test_turn_with_approval_and_resumed_stream(client: OdysseyClient) -> None:
    bundle = client.install_bundle(DEMO)
    assert bundle.ref.name == "demo"
    assert bundle.ref.digest.startswith("sha256:")

    session = client.create_session("demo")
    assert session.agent_id == "guide"

    seen: list[events_pb2.SessionEvent] = []
    turn = client.stream_turn(session.id, "Give me a tour")
    # Disconnect after a few events, while the turn is still streaming.
    for event in turn:
        seen.append(event)
        if len(seen) == 3:
            break
    turn.close()
    assert turn.last_sequence == seen[-1].sequence

    approvals: list[str] = []
    with client.events(session.id, after_sequence=turn.last_sequence) as resumed:
        for event in resumed:
            seen.append(event)
            kind = event.WhichOneof("payload")
            if kind == "permission_requested":
                request = event.permission_requested
                assert request.tool == "Bash"
                pending = list(client.list_approvals(session.id))
                assert [a.request_id for a in pending] == [request.request_id]
                # What a person is shown: the call, control characters escaped (none here).
                assert request.display and not request.control_characters
                assert pending[0].display == request.display
                client.approve(request.request_id)
                approvals.append(request.request_id)
            if kind == "turn_completed" and event.turn_id == turn.execution_id:
                break

    sequences = [e.sequence for e in seen]
    assert sequences == list(range(1, len(seen) + 1)), "a gap or a duplicate"
    assert all(e.turn_id == turn.execution_id for e in seen)
    kinds = [e.WhichOneof("payload") for e in seen]
    assert kinds[0] == "turn_started"
    assert kinds[-1] == "turn_completed"
    assert len(approvals) == 1
    resolved = [e.approval_resolved for e in seen if e.HasField("approval_resolved")]
    assert [r.decision for r in resolved] == [events_pb2.APPROVAL_DECISION_ALLOW_ONCE]
    bash = [
        e.tool_call_finished
        for e in seen
        if e.HasField("tool_call_finished") and e.tool_call_finished.tool == "Bash"
    ]
    assert len(bash) == 1 and bash[0].success, bash
    completed = seen[-1].turn_completed
    assert completed.outcome == events_pb2.TURN_OUTCOME_COMPLETED, completed.error
    assert "approval flow" in completed.response

    # A full replay from the start is the same events, in the same order.
    with client.events(session.id) as replay:
        replayed = [next(replay) for _ in seen]
    assert [e.id for e in replayed] == [e.id for e in seen]

    status = client.execution_status(turn.execution_id)
    assert status.last_sequence == seen[-1].sequence
    assert client.get_session(session.id).last_sequence == seen[-1].sequence


def test_a_sub_agent_runs_in_a_child_session_listed_under_its_parent(
    client: OdysseyClient,
) -> None:
    client.install_bundle(DELEGATE)
    session = client.create_session("delegate")
    assert session.agent_id == "planner" and not session.parent_session_id

    status = client.run(session.id, "Get the notes written")
    assert status.state == execution_pb2.EXECUTION_STATE_COMPLETED, status.error
    assert "hello from the coder" in status.response

    children = list(client.list_sessions(parent_session_id=session.id))
    assert len(children) == 1
    child = children[0]
    assert child.agent_id == "coder"
    assert child.parent_session_id == session.id
    assert child.parent_call_id == "call_agent"
    assert client.get_session(child.id).parent_session_id == session.id

    with client.events(session.id) as stream:
        seen = []
        for event in stream:
            seen.append(event)
            if event.sequence == status.last_sequence:
                break
    started = [e.subagent_started for e in seen if e.HasField("subagent_started")]
    finished = [e.subagent_finished for e in seen if e.HasField("subagent_finished")]
    assert [s.child_session_id for s in started] == [child.id]
    assert started[0].workspace == "shared"
    assert [f.outcome for f in finished] == [events_pb2.TURN_OUTCOME_COMPLETED]
    assert finished[0].usage.input_tokens == 200
    assert client.server_info().limits.max_subagent_depth == 3


def test_unknown_session_is_not_found(client: OdysseyClient) -> None:
    missing = str(uuid.uuid4())
    with pytest.raises(OdysseyError) as error:
        client.get_session(missing)
    assert error.value.code == grpc.StatusCode.NOT_FOUND
    assert missing in error.value.details

    with pytest.raises(OdysseyError) as error:
        next(client.events(missing))
    assert error.value.code == grpc.StatusCode.NOT_FOUND

    with pytest.raises(OdysseyError) as error:
        client.submit(missing, "hello")
    assert error.value.code == grpc.StatusCode.NOT_FOUND


def test_bad_session_id_is_invalid_argument(client: OdysseyClient) -> None:
    with pytest.raises(OdysseyError) as error:
        client.get_session("not-a-session-id")
    assert error.value.code == grpc.StatusCode.INVALID_ARGUMENT


def test_server_info_says_how_sessions_are_limited(client: OdysseyClient) -> None:
    """Issue 11: each session's memory and processes, by a cgroup or by the fallback."""
    limits = client.server_info().sandbox.session_limits
    assert limits.max_processes > 0
    # Without a pids cgroup, the number of commands a session runs at once is capped.
    assert (limits.max_concurrent_commands == 0) == (limits.pids_cgroup_version > 0)


def test_server_info_names_the_store_and_its_replicas(client: OdysseyClient) -> None:
    """A server on its home folder keeps sessions in files: no replica id, no replicas."""
    store = client.server_info().store
    assert store.kind == "files"
    assert store.replica_id == ""
    assert list(store.replicas) == []


def test_calls_without_the_token_are_refused(server: Server) -> None:
    with OdysseyClient(server.address) as anonymous:
        assert anonymous.health() == "SERVING"  # health needs no token
        with pytest.raises(OdysseyError) as error:
            anonymous.server_info()
        assert error.value.code == grpc.StatusCode.UNAUTHENTICATED
    with OdysseyClient(server.address, token="wrong") as wrong:
        with pytest.raises(OdysseyError) as error:
            wrong.get_session(str(uuid.uuid4()))
        assert error.value.code == grpc.StatusCode.UNAUTHENTICATED


def test_agents_show_their_remote_a2a_agents(client: OdysseyClient) -> None:
    """The bundle's remote agent with its URL, the operator's (not configured on this
    server) without one."""
    client.install_bundle(A2A_DELEGATE)
    agents = client.list_agents("a2a-delegate")
    remotes = [(a.name, a.url, a.operator) for a in agents[0].a2a_agents]
    assert remotes == [
        ("helper", "https://agents.example.com/helper", False),
        ("research", "", True),
    ]
