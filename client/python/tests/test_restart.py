"""A reconnect through a server restart: a session's event stream outlives the server it
was opened on. The server stops (the stream's connection drops), starts again on the same
address and home, and the stream resubscribes by itself after its last sequence, counted
once in ``reconnects``, then carries the events of a turn run after the restart."""

from __future__ import annotations

import shutil
import socket
import tempfile
import threading
from pathlib import Path

from conftest import REPO, TOKEN, start_server
from odyssey_client import OdysseyClient


def free_address() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


def test_a_stream_resubscribes_once_through_a_restart() -> None:
    home = Path(tempfile.mkdtemp(prefix="odyssey-python-sdk-"))
    home.chmod(0o755)
    address = free_address()
    try:
        with start_server(home=home, listen=address):
            with OdysseyClient(address, token=TOKEN) as client:
                client.wait_until_serving()
                client.install_bundle(REPO / "bundles" / "demo")
                session = client.create_session("demo", approval_policy="never")
                before = client.run(session.id, "Give me a tour", timeout=60)
        with OdysseyClient(address, token=TOKEN) as watcher:
            # Opened on a fresh server, read while it restarts, then after.
            with start_server(home=home, listen=address):
                stream = watcher.events(session.id)
                replayed = [next(stream) for _ in range(before.last_sequence)]
                assert replayed[-1].sequence == before.last_sequence
            # The server is gone; the stream retries until the new one answers.
            seen = []

            def read() -> None:
                for event in stream:
                    seen.append(event)
                    if event.HasField("turn_completed"):
                        return

            reader = threading.Thread(target=read)
            reader.start()
            with start_server(home=home, listen=address):
                with OdysseyClient(address, token=TOKEN) as client:
                    client.wait_until_serving()
                    after = client.run(session.id, "Give me a tour", timeout=60)
                reader.join(timeout=60)
                stream.close()
        assert not reader.is_alive()
        assert stream.reconnects == 1
        assert [e.sequence for e in seen] == list(
            range(before.last_sequence + 1, after.last_sequence + 1)
        )
        assert {e.turn_id for e in seen} == {after.execution_id}
    finally:
        shutil.rmtree(home, ignore_errors=True)
