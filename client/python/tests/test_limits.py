"""Issue 11 item 5: tool-call arguments a model writes are bounded before they reach an
event. The deepest arguments allowed (20 levels) decode in this SDK's event stream; a call
nested 120 levels deep (which Python's protobuf refuses past about 33) is refused with an
error result naming the limit, and the session's stream keeps decoding."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from google.protobuf import json_format

from odyssey.v1 import events_pb2
from odyssey_client import OdysseyClient

MANIFEST = """\
apiVersion: odyssey.ai/bundle.v1
kind: AgentBundle
metadata:
  name: json-limits
  version: 0.1.0
spec:
  agents:
    - id: main
      spec: agents/main/agent.yaml
      default: true
  tools:
    - { name: Read, source: builtin }
  sandbox:
    mode: workspace_write
"""

AGENT = """\
apiVersion: odyssey.ai/v1
kind: Agent
metadata:
  name: main
  version: 0.1.0
spec:
  kind: prompt
  prompt: You are a test agent.
  model:
    provider: replay
    name: main
  tools:
    allow: [Read]
"""


def nested(levels: int) -> Any:
    """``{"a": {"a": ... "leaf" ...}}``, ``levels`` objects deep."""
    value: Any = "leaf"
    for _ in range(levels):
        value = {"a": value}
    return value


def depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


def write_bundle(folder: Path) -> None:
    deepest_allowed = {"path": "notes.txt", "payload": nested(19)}
    too_deep = {"path": "notes.txt", "payload": nested(119)}
    answers = [
        {
            "tool_calls": [
                {"id": "call_ok", "name": "Read", "arguments": deepest_allowed},
                {"id": "call_deep", "name": "Read", "arguments": too_deep},
            ]
        },
        {"text": ["done"]},
    ]
    (folder / "agents" / "main").mkdir(parents=True)
    (folder / "cassettes").mkdir()
    (folder / "odyssey.bundle.yaml").write_text(MANIFEST)
    (folder / "agents" / "main" / "agent.yaml").write_text(AGENT)
    lines = "".join(json.dumps(answer) + "\n" for answer in answers)
    (folder / "cassettes" / "main.jsonl").write_text(lines)


def test_the_deepest_allowed_arguments_decode_and_deeper_ones_are_refused(
    client: OdysseyClient, tmp_path: Path
) -> None:
    write_bundle(tmp_path)
    client.install_bundle(tmp_path)
    session = client.create_session("json-limits")

    events = list(client.stream_turn(session.id, "go"))
    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds[-1] == "turn_completed"
    assert events[-1].turn_completed.outcome == events_pb2.TURN_OUTCOME_COMPLETED
    assert events[-1].turn_completed.response == "done"

    started = [e.tool_call_started for e in events if e.HasField("tool_call_started")]
    assert [s.call_id for s in started] == ["call_ok", "call_deep"]
    kept = json_format.MessageToDict(started[0].arguments)
    assert depth(kept) == 20, "the deepest allowed arguments arrive whole"
    assert depth(json_format.MessageToDict(started[1].arguments)) == 1

    finished = {
        e.tool_call_finished.call_id: e.tool_call_finished
        for e in events
        if e.HasField("tool_call_finished")
    }
    refused = finished["call_deep"]
    assert not refused.success
    assert "120 levels" in refused.result and "limit is 20" in refused.result

    # A replay of the whole session decodes as well.
    with client.events(session.id) as replay:
        replayed = [next(replay) for _ in events]
    assert [e.id for e in replayed] == [e.id for e in events]
