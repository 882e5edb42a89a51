import datetime

from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from odyssey.v1 import events_pb2 as _events_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ApprovalKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    APPROVAL_KIND_UNSPECIFIED: _ClassVar[ApprovalKind]
    APPROVAL_KIND_TOOL_CALL: _ClassVar[ApprovalKind]
    APPROVAL_KIND_INPUT: _ClassVar[ApprovalKind]
APPROVAL_KIND_UNSPECIFIED: ApprovalKind
APPROVAL_KIND_TOOL_CALL: ApprovalKind
APPROVAL_KIND_INPUT: ApprovalKind

class Approval(_message.Message):
    __slots__ = ("request_id", "session_id", "execution_id", "call_id", "tool", "arguments", "summary", "requested_at", "expires_at", "display", "control_characters", "reason", "parent_session_ids", "kind", "requested_schema", "message")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_FIELD_NUMBER: _ClassVar[int]
    CONTROL_CHARACTERS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    PARENT_SESSION_IDS_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    session_id: str
    execution_id: str
    call_id: str
    tool: str
    arguments: _struct_pb2.Struct
    summary: str
    requested_at: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    display: str
    control_characters: bool
    reason: str
    parent_session_ids: _containers.RepeatedScalarFieldContainer[str]
    kind: ApprovalKind
    requested_schema: _struct_pb2.Struct
    message: str
    def __init__(self, request_id: _Optional[str] = ..., session_id: _Optional[str] = ..., execution_id: _Optional[str] = ..., call_id: _Optional[str] = ..., tool: _Optional[str] = ..., arguments: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., summary: _Optional[str] = ..., requested_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., display: _Optional[str] = ..., control_characters: _Optional[bool] = ..., reason: _Optional[str] = ..., parent_session_ids: _Optional[_Iterable[str]] = ..., kind: _Optional[_Union[ApprovalKind, str]] = ..., requested_schema: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., message: _Optional[str] = ...) -> None: ...

class ListApprovalsRequest(_message.Message):
    __slots__ = ("session_id", "page_size", "page_token")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    page_size: int
    page_token: str
    def __init__(self, session_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListApprovalsResponse(_message.Message):
    __slots__ = ("approvals", "next_page_token")
    APPROVALS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    approvals: _containers.RepeatedCompositeFieldContainer[Approval]
    next_page_token: str
    def __init__(self, approvals: _Optional[_Iterable[_Union[Approval, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ResolveApprovalRequest(_message.Message):
    __slots__ = ("request_id", "decision", "reason", "answer", "action")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    decision: _events_pb2.ApprovalDecision
    reason: str
    answer: _struct_pb2.Struct
    action: _events_pb2.HumanInputAction
    def __init__(self, request_id: _Optional[str] = ..., decision: _Optional[_Union[_events_pb2.ApprovalDecision, str]] = ..., reason: _Optional[str] = ..., answer: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., action: _Optional[_Union[_events_pb2.HumanInputAction, str]] = ...) -> None: ...

class ResolveApprovalResponse(_message.Message):
    __slots__ = ("approval", "decision")
    APPROVAL_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    approval: Approval
    decision: _events_pb2.ApprovalDecision
    def __init__(self, approval: _Optional[_Union[Approval, _Mapping]] = ..., decision: _Optional[_Union[_events_pb2.ApprovalDecision, str]] = ...) -> None: ...

class WatchApprovalsRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class WatchApprovalsResponse(_message.Message):
    __slots__ = ("snapshot", "added", "removed", "heartbeat")
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    ADDED_FIELD_NUMBER: _ClassVar[int]
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    snapshot: ApprovalSnapshot
    added: Approval
    removed: _events_pb2.ApprovalResolved
    heartbeat: ApprovalsHeartbeat
    def __init__(self, snapshot: _Optional[_Union[ApprovalSnapshot, _Mapping]] = ..., added: _Optional[_Union[Approval, _Mapping]] = ..., removed: _Optional[_Union[_events_pb2.ApprovalResolved, _Mapping]] = ..., heartbeat: _Optional[_Union[ApprovalsHeartbeat, _Mapping]] = ...) -> None: ...

class ApprovalSnapshot(_message.Message):
    __slots__ = ("approvals",)
    APPROVALS_FIELD_NUMBER: _ClassVar[int]
    approvals: _containers.RepeatedCompositeFieldContainer[Approval]
    def __init__(self, approvals: _Optional[_Iterable[_Union[Approval, _Mapping]]] = ...) -> None: ...

class ApprovalsHeartbeat(_message.Message):
    __slots__ = ("sent_at", "pending")
    SENT_AT_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    sent_at: _timestamp_pb2.Timestamp
    pending: int
    def __init__(self, sent_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., pending: _Optional[int] = ...) -> None: ...
