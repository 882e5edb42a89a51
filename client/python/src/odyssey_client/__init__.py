"""Python SDK for the Odyssey agent runtime.

``OdysseyClient`` (and ``AsyncOdysseyClient``, the same calls for ``asyncio``) wraps the
generated ``odyssey.v1`` stubs (importable as ``odyssey.v1.<file>_pb2`` and
``_pb2_grpc``) with a call for every RPC: bundles (build from a folder, inspect, list,
export, import, push, pull), sessions, turns and their event streams, commands,
approvals (listed, watched live, answered), server info. Event streams resume from the last sequence seen and resubscribe
by themselves after a dropped connection; lists iterate every page; every call takes
``timeout=``. Failed calls raise :class:`OdysseyError` carrying the
gRPC status code and the status's decoded details (reason, field violations, retry delay).
"""

from odyssey_client.aio import AsyncApprovalWatch, AsyncEventStream, AsyncOdysseyClient
from odyssey_client.approvals import ApprovalWatch
from odyssey_client.archive import pack_project
from odyssey_client.client import OdysseyClient, TurnStream
from odyssey_client.errors import FieldViolation, OdysseyError
from odyssey_client.events import EventStream
from odyssey_client.policy import READ_RETRY, ReconnectPolicy
from odyssey_client.requests import ExportedBundle

__all__ = [
    "ApprovalWatch",
    "AsyncApprovalWatch",
    "AsyncEventStream",
    "AsyncOdysseyClient",
    "EventStream",
    "ExportedBundle",
    "FieldViolation",
    "OdysseyClient",
    "OdysseyError",
    "READ_RETRY",
    "ReconnectPolicy",
    "TurnStream",
    "pack_project",
]
