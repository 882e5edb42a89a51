"""The SDK's A2A client against a real server: the demo agent's extended card, a task
that waits for an approval answered with a decision, its stream resumed from a sequence
number with nothing missed and nothing twice, and A2A's errors."""

from __future__ import annotations

from typing import Generator

import grpc
import pytest

from conftest import REPO
from odyssey_client import OdysseyClient, OdysseyError
from odyssey_client.a2a import DETAILS_EXTENSION, TaskUpdate, answer_text, sequence_of
from lf.a2a.v1 import a2a_pb2

DEMO = REPO / "bundles" / "demo"


def until_input_required(updates: Generator[TaskUpdate, None, None]) -> list[TaskUpdate]:
    seen = []
    for update in updates:
        seen.append(update)
        response = update.response
        if (
            response.WhichOneof("payload") == "status_update"
            and response.status_update.status.state == a2a_pb2.TASK_STATE_INPUT_REQUIRED
        ):
            break
    updates.close()
    return seen


def test_a2a_card_task_decision_and_resumed_stream(client: OdysseyClient) -> None:
    client.install_bundle(DEMO)
    a2a = client.a2a()

    card = a2a.agent_card("demo", "guide")
    assert card.name == "guide"
    details = [e for e in card.capabilities.extensions if e.uri == DETAILS_EXTENSION]
    assert len(details) == 1
    permissions = details[0].params.fields["permissions"].struct_value
    asked = [v.string_value for v in permissions.fields["ask"].list_value.values]
    assert "Bash" in asked

    # The demo's turn asks before it runs Bash: the task is input-required.
    task = a2a.send("Give me a tour", tenant="demo.guide")
    assert task.status.state == a2a_pb2.TASK_STATE_INPUT_REQUIRED
    assert a2a.get(task.id, history_length=1).id == task.id

    # Follow it to the approval; then again from the third update's sequence: the rest,
    # nothing missed and nothing twice.
    whole = until_input_required(a2a.subscribe(task.id))
    assert whole[0].response.WhichOneof("payload") == "task"
    sequences = [u.sequence for u in whole if u.sequence is not None]
    handled = sequences[2]
    resumed = until_input_required(a2a.subscribe(task.id, after_sequence=handled))
    assert [u.sequence for u in resumed if u.sequence is not None] == sequences[3:]

    decided = a2a.decide(task, "allow_once")
    assert decided.status.state == a2a_pb2.TASK_STATE_COMPLETED
    assert "That was the approval flow" in answer_text(decided)

    # The task ended: a subscription is refused; a new streamed task in the same context
    # carries increasing sequence numbers.
    with pytest.raises(OdysseyError) as refused:
        list(a2a.subscribe(task.id))
    assert refused.value.code == grpc.StatusCode.FAILED_PRECONDITION
    streamed = list(a2a.stream("Anything else?", context_id=task.context_id))
    sequences = [u.sequence for u in streamed if u.sequence is not None]
    assert sequences == sorted(sequences) and sequences[0] > handled
    last = streamed[-1].response.status_update.status.state
    assert last == a2a_pb2.TASK_STATE_COMPLETED
    assert all(sequence_of(u.response) == u.sequence for u in streamed)

    with pytest.raises(OdysseyError) as unknown:
        a2a.get(f"{task.context_id}.00000000-0000-0000-0000-000000000000")
    assert unknown.value.code == grpc.StatusCode.NOT_FOUND
    assert unknown.value.reason == "TASK_NOT_FOUND"
