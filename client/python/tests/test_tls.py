"""TLS end to end: a real odysseyd serving a certificate from a test CA. A client that
trusts the CA runs calls with its token; one that does not, or speaks plaintext, fails
with UNAVAILABLE; the token is still required over TLS."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Iterator

import grpc
import pytest

from conftest import REPO, Server, start_server
from odyssey_client import OdysseyClient, OdysseyError
from pki import Pki, issue


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return issue(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def tls_server(pki: Pki) -> Iterator[Server]:
    with start_server("--tls-cert", str(pki.cert_file), "--tls-key", str(pki.key_file)) as server:
        yield server


def test_a_client_trusting_the_ca_runs_a_turn(tls_server: Server, pki: Pki) -> None:
    with OdysseyClient(
        tls_server.address, token=tls_server.token, tls=True, root_certificates=pki.ca_pem
    ) as client:
        client.wait_until_serving()
        assert client.server_info().version
        client.install_bundle(REPO / "bundles" / "demo")
        session = client.create_session("demo")
        with client.events(session.id) as events:
            turn = client.submit(session.id, "Give me a tour")
            for event in events:
                if event.HasField("permission_requested"):
                    client.deny(event.permission_requested.request_id, "not over TLS")
                if event.HasField("turn_completed") and event.turn_id == turn:
                    break
        assert client.execution_status(turn).last_sequence == events.last_sequence


def test_the_token_is_still_required_over_tls(tls_server: Server, pki: Pki) -> None:
    with OdysseyClient(tls_server.address, tls=True, root_certificates=pki.ca_pem) as anonymous:
        with pytest.raises(OdysseyError) as error:
            anonymous.get_session(str(uuid.uuid4()))
        assert error.value.code == grpc.StatusCode.UNAUTHENTICATED


def test_a_client_that_does_not_trust_the_ca_is_unavailable(
    tls_server: Server, tmp_path: Path
) -> None:
    stranger = issue(tmp_path, "another CA")
    for roots in (stranger.ca_pem, None):  # another CA, then the system's roots
        with OdysseyClient(
            tls_server.address, token=tls_server.token, tls=True, root_certificates=roots
        ) as client:
            with pytest.raises(OdysseyError) as error:
                client.server_info()
            assert error.value.code == grpc.StatusCode.UNAVAILABLE
            assert "handshake" in error.value.details.lower(), error.value.details


def test_a_plaintext_client_is_unavailable(tls_server: Server) -> None:
    with OdysseyClient(tls_server.address, token=tls_server.token) as plaintext:
        with pytest.raises(OdysseyError) as error:
            plaintext.server_info()
        assert error.value.code == grpc.StatusCode.UNAVAILABLE
