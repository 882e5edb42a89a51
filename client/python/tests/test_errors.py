"""Every failed call raises ``OdysseyError`` with the server's status decoded: the gRPC
code and its name, the message, and the ``google.rpc`` details (``ErrorInfo`` reason and
domain, ``BadRequest`` field violations, ``RetryInfo`` delay), from real refusals."""

from __future__ import annotations

import threading
import time
import uuid

import grpc
import pytest

from conftest import REPO, start_server
from odyssey.v1 import execution_pb2
from odyssey_client import OdysseyClient, OdysseyError
from odyssey_client.errors import call


def test_an_unknown_session_is_not_found_with_its_reason(client: OdysseyClient) -> None:
    missing = str(uuid.uuid4())
    with pytest.raises(OdysseyError) as caught:
        client.get_session(missing)
    error = caught.value
    assert error.code == grpc.StatusCode.NOT_FOUND
    assert error.code_name == "NOT_FOUND"
    assert missing in error.message
    assert error.reason == "SESSION_NOT_FOUND"
    assert error.domain == "odyssey.ai"
    assert error.field_violations == ()
    assert error.retry_delay is None


def test_a_bad_request_names_the_field(client: OdysseyClient) -> None:
    with pytest.raises(OdysseyError) as caught:
        client.get_session("not-a-session-id")
    error = caught.value
    assert error.code_name == "INVALID_ARGUMENT"
    assert error.reason != ""
    assert [v.field for v in error.field_violations] == ["session_id"]
    assert "not-a-session-id" in error.field_violations[0].description


def test_a_full_queue_says_when_to_retry() -> None:
    """One worker and room for one queued turn: turns that wait on an approval fill both,
    and the next submit is refused with a RetryInfo delay."""
    with start_server("--worker-count", "1", "--queue-capacity", "1") as server:
        with OdysseyClient(server.address, token=server.token) as client:
            client.wait_until_serving()
            client.install_bundle(REPO / "bundles" / "demo")
            sessions = [client.create_session("demo").id for _ in range(6)]
            # The raw stub: ``submit`` itself would wait the delay out and send it again.
            with pytest.raises(OdysseyError) as caught:
                for session in sessions:
                    request = execution_pb2.SubmitRequest(
                        input=execution_pb2.TurnInput(session_id=session, prompt="Tour")
                    )
                    call(lambda: client.executions.Submit(request))
            error = caught.value
            assert error.code == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert error.reason == "QUEUE_FULL"
            assert error.retry_delay is not None and error.retry_delay > 0


def test_a_submit_refused_for_a_full_queue_is_sent_again_after_the_delay() -> None:
    """The queue frees up while the client waits the server's RetryInfo delay: the same
    submit then goes through, and the caller never sees QUEUE_FULL."""
    with start_server("--worker-count", "1", "--queue-capacity", "1") as server:
        with OdysseyClient(server.address, token=server.token) as client:
            client.wait_until_serving()
            client.install_bundle(REPO / "bundles" / "demo")
            running, queued, late = (client.create_session("demo").id for _ in range(3))
            first = client.submit(running, "Give me a tour")  # waits on its approval
            client.submit(queued, "Give me a tour")  # fills the queue
            freed = threading.Timer(0.3, lambda: client.cancel(first))
            freed.start()
            started = time.monotonic()
            try:
                execution = client.submit(late, "Give me a tour")
            finally:
                freed.join()
            assert execution
            assert time.monotonic() - started >= 0.3, "it waited for the queue"


def test_a_connection_failure_has_no_reason() -> None:
    with OdysseyClient("127.0.0.1:1") as nowhere:
        with pytest.raises(OdysseyError) as caught:
            nowhere.server_info()
    assert caught.value.code_name == "UNAVAILABLE"
    assert caught.value.reason == ""
