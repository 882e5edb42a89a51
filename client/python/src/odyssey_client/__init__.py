"""Python SDK for the Odyssey agent runtime.

``OdysseyClient`` wraps the generated ``odyssey.v1`` stubs (importable as
``odyssey.v1.<file>_pb2`` and ``_pb2_grpc``) with idiomatic calls: install a bundle from a
folder, open sessions, run turns and stream their events, resolve approvals, resume a
stream from the last sequence seen (event streams also resubscribe by themselves after a
dropped connection). Failed calls raise :class:`OdysseyError` carrying the
gRPC status code and the status's decoded details (reason, field violations, retry delay).
"""

from odyssey_client.archive import pack_project
from odyssey_client.client import OdysseyClient, TurnStream
from odyssey_client.errors import FieldViolation, OdysseyError
from odyssey_client.events import EventStream, ReconnectPolicy

__all__ = [
    "EventStream",
    "FieldViolation",
    "OdysseyClient",
    "OdysseyError",
    "ReconnectPolicy",
    "TurnStream",
    "pack_project",
]
