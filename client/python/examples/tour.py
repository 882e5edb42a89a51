"""Installs the demo bundle, runs its tour turn and approves the command it asks to run.

    python client/python/examples/tour.py   # from the repository root, with odysseyd running

ODYSSEY_ADDRESS (default 127.0.0.1:8472) and ODYSSEY_AUTH_TOKEN say where and how to connect.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from odyssey_client import OdysseyClient, OdysseyError

DEMO = Path(__file__).resolve().parents[3] / "bundles" / "demo"


def main() -> int:
    address = os.environ.get("ODYSSEY_ADDRESS", "127.0.0.1:8472")
    token = os.environ.get("ODYSSEY_AUTH_TOKEN")
    with OdysseyClient(address, token=token) as client:
        client.install_bundle(DEMO)
        session = client.create_session("demo")
        turn = client.stream_turn(session.id, "Give me a tour")
        for event in turn:
            kind = event.WhichOneof("payload")
            if kind == "agent_message_delta":
                print(event.agent_message_delta.delta, end="", flush=True)
            elif kind == "permission_requested":
                print(f"\n[approving: {event.permission_requested.display}]")
                client.approve(event.permission_requested.request_id)
            elif kind == "turn_completed":
                print(f"\n[turn {turn.execution_id} ended at sequence {turn.last_sequence}]")
        try:
            client.get_session("00000000-0000-0000-0000-000000000000")
        except OdysseyError as error:
            print(f"[an unknown session is {error.code.name}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
