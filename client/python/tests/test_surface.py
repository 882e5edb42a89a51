"""Every RPC of odyssey.v1 through the SDK's calls, against a real server: bundles
(scaffold, build, inspect, list page by page, export, import, delete, push and pull
refused without a registry), sessions with their options, turns with their options,
commands, approvals; a deadline that expires; a stream closed from another thread."""

from __future__ import annotations

import gzip
import threading

import grpc
import pytest

from conftest import REPO
from odyssey.v1 import common_pb2, events_pb2, execution_pb2, session_pb2
from odyssey_client import OdysseyClient, OdysseyError

DEMO = REPO / "bundles" / "demo"


def test_bundles(client: OdysseyClient) -> None:
    scaffold = client.init_bundle("scaffold")
    assert gzip.decompress(scaffold)  # a tar + gzip archive
    built = client.build_bundle(scaffold)
    assert built.ref.name == "scaffold"
    demo = client.install_bundle(DEMO)

    inspected = client.inspect_bundle("demo")
    assert inspected.bundle.ref.digest == demo.ref.digest
    assert [a.id for a in inspected.agents] == ["guide"]

    # One bundle a page: the pager follows every page.
    names = {b.ref.name for b in client.list_bundles(page_size=1)}
    assert {"demo", "scaffold"} <= names
    assert [a.id for a in client.list_agents("demo")] == ["guide"]
    assert client.list_models("demo")
    assert [s.name for s in client.list_skills("demo")] == ["tour"]

    exported = client.export_bundle("demo")
    assert exported.bundle.ref.digest == demo.ref.digest
    imported = client.import_bundle(exported.archive, namespace="copies")
    assert imported.ref.namespace == "copies" and imported.ref.digest == demo.ref.digest

    removed = client.delete_bundle("scaffold")
    assert removed.ref.name == "scaffold"
    assert "scaffold" not in {b.ref.name for b in client.list_bundles()}

    # No registry here: refused with the server's status, decoded.
    with pytest.raises(OdysseyError) as pushed:
        client.push_bundle("demo", "127.0.0.1:1/demo:0.1.0", timeout=30)
    assert pushed.value.reason
    with pytest.raises(OdysseyError) as pulled:
        client.pull_bundle("127.0.0.1:1/demo:0.1.0", timeout=30)
    assert pulled.value.reason


def test_sessions_turns_and_commands(client: OdysseyClient) -> None:
    client.install_bundle(DEMO)
    session = client.create_session(
        "demo",
        agent_id="guide",
        sandbox_mode="read_only",
        approval_policy="never",
        metadata={"team": "sdk"},
        token_budget=1_000_000,
    )
    assert session.sandbox_mode == common_pb2.SANDBOX_MODE_READ_ONLY
    assert session.approval_policy == common_pb2.APPROVAL_POLICY_NEVER
    assert session.token_budget == 1_000_000
    assert session.metadata["team"] == "sdk"
    other = client.create_session("demo")
    ids = {s.id for s in client.list_sessions(bundle="demo", page_size=1)}
    assert {session.id, other.id} <= ids

    # Approval policy "never": the Bash call that would ask is denied, and the turn ends.
    status = client.run(session.id, "Give me a tour", metadata={"ticket": "42"}, timeout=60)
    assert status.state == execution_pb2.EXECUTION_STATE_COMPLETED, status.error
    assert client.execution_status(status.execution_id).state == status.state
    submitted = client.submit(session.id, "Give me a tour", cwd="", metadata={"ticket": "43"})
    client.cancel(submitted)

    result = client.run_command(other.id, ["echo", "hello"])
    assert result.exit_code == 0 and result.stdout == "hello\n"
    streamed = list(client.stream_command(other.id, "echo streamed"))
    kinds = [item.WhichOneof("item") for item in streamed]
    assert kinds[0] == "begin" and kinds[-1] == "end", kinds
    output = "".join(item.output.text for item in streamed if item.HasField("output"))
    assert "streamed" in output, streamed

    with pytest.raises(OdysseyError) as cassette:
        client.export_cassette(session.id)
    assert cassette.value.code == grpc.StatusCode.FAILED_PRECONDITION

    # The raw stubs carry the token by themselves.
    raw = client.sessions.GetSession(session_pb2.GetSessionRequest(session_id=other.id))
    assert raw.session.id == other.id

    client.delete_session(other.id)
    with pytest.raises(OdysseyError) as gone:
        client.get_session(other.id)
    assert gone.value.reason == "SESSION_NOT_FOUND"


def test_fork_rewind_and_turn_changes(client: OdysseyClient) -> None:
    client.install_bundle(DEMO)
    session = client.create_session("demo", sandbox_mode="workspace_write", approval_policy="never")
    written = client.run_command(session.id, ["sh", "-c", "echo one > notes.txt"])
    assert written.exit_code == 0, written.stderr
    status = client.run(session.id, "Give me a tour", timeout=60)
    assert status.state == execution_pb2.EXECUTION_STATE_COMPLETED, status.error

    changes = client.get_turn_changes(session.id, 1)
    assert [(c.path, c.change) for c in changes.changes] == [
        ("notes.txt", session_pb2.FILE_CHANGE_KIND_ADDED)
    ]
    assert "+one" in changes.changes[0].unified_diff

    fork = client.fork_session(session.id, after_turn=1)
    assert fork.forked_from == session.id and fork.forked_at.turn == 1
    assert client.run_command(fork.id, ["cat", "notes.txt"]).stdout == "one\n"

    client.run_command(session.id, ["sh", "-c", "echo two > notes.txt"])
    rewound = client.rewind_session(session.id, 1)
    assert rewound.event.session_rewound.to_turn == 1
    assert client.run_command(session.id, ["cat", "notes.txt"]).stdout == "one\n"
    assert client.run_command(fork.id, ["cat", "notes.txt"]).stdout == "one\n"

    with pytest.raises(OdysseyError) as refused:
        client.fork_session(session.id, at_sequence=1)
    assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT


def test_a_deadline_that_expires(client: OdysseyClient) -> None:
    client.install_bundle(DEMO)
    session = client.create_session("demo")
    # The turn waits for an approval nobody gives: Run's deadline passes first.
    with pytest.raises(OdysseyError) as caught:
        client.run(session.id, "Give me a tour", timeout=1.0)
    assert caught.value.code_name == "DEADLINE_EXCEEDED"
    # The turn runs on; deny its request so it ends.
    for _ in range(200):
        pending = list(client.list_approvals(session.id))
        if pending:
            client.deny(pending[0].request_id, "not now")
            break
        threading.Event().wait(0.05)
    assert pending


def test_a_stream_closed_from_another_thread_ends(client: OdysseyClient) -> None:
    client.install_bundle(DEMO)
    session = client.create_session("demo")
    stream = client.events(session.id)
    threading.Timer(0.5, stream.close).start()
    # Nothing happens in the session: iteration blocks until close() ends it.
    assert list(stream) == []
    assert client.get_session(session.id).last_sequence == 0


def test_decisions_are_the_generated_enum(client: OdysseyClient) -> None:
    assert events_pb2.APPROVAL_DECISION_DENY != events_pb2.APPROVAL_DECISION_ALLOW_ONCE
