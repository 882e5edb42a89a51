"""Every failed call raises ``OdysseyError`` with the server's status decoded: the gRPC
code and its name, the message, and the ``google.rpc`` details (``ErrorInfo`` reason and
domain, ``BadRequest`` field violations, ``RetryInfo`` delay), from real refusals."""

from __future__ import annotations

import uuid

import grpc
import pytest

from conftest import REPO, start_server
from odyssey_client import OdysseyClient, OdysseyError


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
            with pytest.raises(OdysseyError) as caught:
                for session in sessions:
                    client.submit(session, "Give me a tour")
            error = caught.value
            assert error.code == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert error.reason == "QUEUE_FULL"
            assert error.retry_delay is not None and error.retry_delay > 0


def test_a_connection_failure_has_no_reason() -> None:
    with OdysseyClient("127.0.0.1:1") as nowhere:
        with pytest.raises(OdysseyError) as caught:
            nowhere.server_info()
    assert caught.value.code_name == "UNAVAILABLE"
    assert caught.value.reason == ""
