"""A real ``odysseyd`` for the tests: started on a free loopback port with a temporary
home, found through ``$ODYSSEYD`` or at ``target/debug/odysseyd`` (``cargo build``)."""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

import pytest

from odyssey_client import OdysseyClient

REPO = Path(__file__).resolve().parents[3]
TOKEN = "python-sdk-test-token"


@dataclass
class Server:
    address: str
    token: str
    log: list[str]


def _binary() -> Path:
    path = Path(os.environ.get("ODYSSEYD") or REPO / "target" / "debug" / "odysseyd")
    if not path.is_file():
        pytest.fail(f"no odysseyd at {path}: run `cargo build` or set ODYSSEYD")
    return path


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with start_server() as server:
        yield server


@contextmanager
def start_server(
    *flags: str, home: Optional[Path] = None, listen: str = "127.0.0.1:0"
) -> Iterator[Server]:
    """A real odysseyd with the test token and any further ``flags`` (e.g. TLS). With
    ``home``, the server keeps its state there (and leaves it), so a second server on the
    same home and ``listen`` address is the first one restarted."""
    # Not under pytest's private tmp folder: sandboxed commands run as another user, who
    # must be able to reach the home's sandbox cells.
    owned = home is None
    if home is None:
        home = Path(tempfile.mkdtemp(prefix="odyssey-python-sdk-"))
        home.chmod(0o755)
    process = subprocess.Popen(
        [
            str(_binary()),
            "--listen", listen,
            "--home", str(home),
            "--log-format", "json",
            "--heartbeat-seconds", "1",
            "--auth-token", TOKEN,
            *flags,
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    log: list[str] = []
    lines: queue.Queue[str] = queue.Queue()

    def drain() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            log.append(line)
            lines.put(line)

    threading.Thread(target=drain, daemon=True).start()
    try:
        address = _serving_address(lines, process)
        yield Server(address=address, token=TOKEN, log=log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if owned:
            shutil.rmtree(home, ignore_errors=True)


def _serving_address(lines: queue.Queue[str], process: subprocess.Popen[str]) -> str:
    """The address from the server's `odysseyd serving` log line (it binds port 0)."""
    while True:
        try:
            line = lines.get(timeout=60)
        except queue.Empty:
            pytest.fail("odysseyd did not start within 60 s")
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        fields = record.get("fields", {})
        if fields.get("message") == "odysseyd serving":
            return str(fields["addr"])
        if process.poll() is not None:
            pytest.fail(f"odysseyd exited with {process.returncode}: {line}")


@pytest.fixture
def client(server: Server) -> Iterator[OdysseyClient]:
    with OdysseyClient(server.address, token=server.token) as client:
        client.wait_until_serving()
        yield client
