"""Following the pending approval requests (``WatchApprovals``): a snapshot, then each
request filed and each that ends, kept as the set the server says is pending, and watched
again after the connection drops (the new watch starts with a fresh snapshot)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Iterator, Optional

import grpc

from odyssey.v1 import approval_pb2, approval_pb2_grpc
from odyssey_client.errors import OdysseyError
from odyssey_client.policy import ReconnectPolicy

if TYPE_CHECKING:
    from grpc import _CallIterator

    Watch = _CallIterator[approval_pb2.WatchApprovalsResponse]


class PendingApprovals:
    """The pending requests as the changes received so far say, oldest first."""

    def __init__(self) -> None:
        self.pending: dict[str, approval_pb2.Approval] = {}
        self.heartbeats = 0

    def apply(
        self, item: approval_pb2.WatchApprovalsResponse
    ) -> Optional[approval_pb2.WatchApprovalsResponse]:
        """Applies one received item; returns it unless it is a heartbeat (counted only)."""
        kind = item.WhichOneof("item")
        if kind == "snapshot":
            self.pending = {a.request_id: a for a in item.snapshot.approvals}
        elif kind == "added":
            self.pending[item.added.request_id] = item.added
        elif kind == "removed":
            self.pending.pop(item.removed.request_id, None)
        elif kind == "heartbeat":
            self.heartbeats += 1
            return None
        else:
            return None
        return item


class ApprovalWatch(PendingApprovals, Iterator[approval_pb2.WatchApprovalsResponse]):
    """Iterates the changes to the pending approval requests (of one session, or all).

    The first item has ``snapshot`` set: every pending request. Then each request filed
    (``added``) and each that ends, however it ends (``removed``: an ``ApprovalResolved``
    with the decision and why). ``pending`` holds the requests pending after the items
    handed out so far. When the connection drops (``UNAVAILABLE``), the watch is opened
    again as ``reconnect`` allows, and its first item is a fresh snapshot that replaces
    ``pending``; ``reconnects`` counts those. Heartbeats are counted, never yielded.
    """

    def __init__(
        self,
        stub: approval_pb2_grpc.ApprovalServiceStub,
        session_id: str,
        metadata: tuple[tuple[str, str], ...],
        reconnect: ReconnectPolicy = ReconnectPolicy(),
    ) -> None:
        super().__init__()
        self.session_id = session_id
        self.reconnect = reconnect
        self.reconnects = 0
        self._stub = stub
        self._metadata = metadata
        self._closed = False
        self._call = self._watch()
        # A refusal (an unknown session) or a missing server is reported by the first
        # next(), never retried.
        self._call.initial_metadata()
        self._retry = self._call.is_active()

    def _watch(self) -> Watch:
        request = approval_pb2.WatchApprovalsRequest(session_id=self.session_id)
        return self._stub.WatchApprovals(request, metadata=self._metadata)

    def __iter__(self) -> ApprovalWatch:
        return self

    def __next__(self) -> approval_pb2.WatchApprovalsResponse:
        attempts = 0
        while True:
            if self._closed:
                raise StopIteration
            try:
                item = next(self._call)
            except StopIteration:
                self._closed = True
                raise
            except grpc.RpcError as error:
                if self._closed:
                    raise StopIteration from None
                failure = OdysseyError.from_rpc_error(error)
                if (
                    not self._retry
                    or failure.code != grpc.StatusCode.UNAVAILABLE
                    or attempts >= self.reconnect.max_attempts
                ):
                    self._closed = True
                    raise failure from None
                attempts += 1
                time.sleep(self.reconnect.delay(attempts))
                if self._closed:
                    raise StopIteration from None
                self._call = self._watch()
                self._call.initial_metadata()
                if self._call.is_active():
                    self.reconnects += 1
                continue
            attempts = 0
            change = self.apply(item)
            if change is not None:
                return change

    def close(self) -> None:
        """Ends the watch. Safe to call from another thread: a blocked iteration ends."""
        if not self._closed:
            self._closed = True
            self._call.cancel()

    def __enter__(self) -> ApprovalWatch:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
