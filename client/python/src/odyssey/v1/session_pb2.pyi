import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from odyssey.v1 import common_pb2 as _common_pb2
from odyssey.v1 import events_pb2 as _events_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SessionState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SESSION_STATE_UNSPECIFIED: _ClassVar[SessionState]
    SESSION_STATE_IDLE: _ClassVar[SessionState]
    SESSION_STATE_RUNNING: _ClassVar[SessionState]
    SESSION_STATE_WAITING_FOR_APPROVAL: _ClassVar[SessionState]

class FileChangeKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FILE_CHANGE_KIND_UNSPECIFIED: _ClassVar[FileChangeKind]
    FILE_CHANGE_KIND_ADDED: _ClassVar[FileChangeKind]
    FILE_CHANGE_KIND_CHANGED: _ClassVar[FileChangeKind]
    FILE_CHANGE_KIND_REMOVED: _ClassVar[FileChangeKind]

class FileNodeKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FILE_NODE_KIND_UNSPECIFIED: _ClassVar[FileNodeKind]
    FILE_NODE_KIND_FILE: _ClassVar[FileNodeKind]
    FILE_NODE_KIND_DIRECTORY: _ClassVar[FileNodeKind]
    FILE_NODE_KIND_SYMLINK: _ClassVar[FileNodeKind]
SESSION_STATE_UNSPECIFIED: SessionState
SESSION_STATE_IDLE: SessionState
SESSION_STATE_RUNNING: SessionState
SESSION_STATE_WAITING_FOR_APPROVAL: SessionState
FILE_CHANGE_KIND_UNSPECIFIED: FileChangeKind
FILE_CHANGE_KIND_ADDED: FileChangeKind
FILE_CHANGE_KIND_CHANGED: FileChangeKind
FILE_CHANGE_KIND_REMOVED: FileChangeKind
FILE_NODE_KIND_UNSPECIFIED: FileNodeKind
FILE_NODE_KIND_FILE: FileNodeKind
FILE_NODE_KIND_DIRECTORY: FileNodeKind
FILE_NODE_KIND_SYMLINK: FileNodeKind

class Session(_message.Message):
    __slots__ = ("id", "bundle_reference", "bundle", "agent_id", "model", "sandbox_mode", "approval_policy", "created_at", "updated_at", "turn_count", "last_sequence", "metadata", "usage", "token_budget", "state", "parent_session_id", "parent_call_id", "forked_from", "forked_at")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    BUNDLE_REFERENCE_FIELD_NUMBER: _ClassVar[int]
    BUNDLE_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_MODE_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_POLICY_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    TURN_COUNT_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    TOKEN_BUDGET_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PARENT_SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    FORKED_FROM_FIELD_NUMBER: _ClassVar[int]
    FORKED_AT_FIELD_NUMBER: _ClassVar[int]
    id: str
    bundle_reference: str
    bundle: _common_pb2.BundleRef
    agent_id: str
    model: _common_pb2.ModelSpec
    sandbox_mode: _common_pb2.SandboxMode
    approval_policy: _common_pb2.ApprovalPolicy
    created_at: _timestamp_pb2.Timestamp
    updated_at: _timestamp_pb2.Timestamp
    turn_count: int
    last_sequence: int
    metadata: _containers.ScalarMap[str, str]
    usage: _common_pb2.TokenUsage
    token_budget: int
    state: SessionState
    parent_session_id: str
    parent_call_id: str
    forked_from: str
    forked_at: ForkPoint
    def __init__(self, id: _Optional[str] = ..., bundle_reference: _Optional[str] = ..., bundle: _Optional[_Union[_common_pb2.BundleRef, _Mapping]] = ..., agent_id: _Optional[str] = ..., model: _Optional[_Union[_common_pb2.ModelSpec, _Mapping]] = ..., sandbox_mode: _Optional[_Union[_common_pb2.SandboxMode, str]] = ..., approval_policy: _Optional[_Union[_common_pb2.ApprovalPolicy, str]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., turn_count: _Optional[int] = ..., last_sequence: _Optional[int] = ..., metadata: _Optional[_Mapping[str, str]] = ..., usage: _Optional[_Union[_common_pb2.TokenUsage, _Mapping]] = ..., token_budget: _Optional[int] = ..., state: _Optional[_Union[SessionState, str]] = ..., parent_session_id: _Optional[str] = ..., parent_call_id: _Optional[str] = ..., forked_from: _Optional[str] = ..., forked_at: _Optional[_Union[ForkPoint, _Mapping]] = ...) -> None: ...

class ForkPoint(_message.Message):
    __slots__ = ("turn", "sequence", "turn_id")
    TURN_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    turn: int
    sequence: int
    turn_id: str
    def __init__(self, turn: _Optional[int] = ..., sequence: _Optional[int] = ..., turn_id: _Optional[str] = ...) -> None: ...

class CreateSessionRequest(_message.Message):
    __slots__ = ("bundle_reference", "agent_id", "model", "sandbox_mode", "approval_policy", "metadata", "token_budget")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    BUNDLE_REFERENCE_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_MODE_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_POLICY_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    TOKEN_BUDGET_FIELD_NUMBER: _ClassVar[int]
    bundle_reference: str
    agent_id: str
    model: _common_pb2.ModelSpec
    sandbox_mode: _common_pb2.SandboxMode
    approval_policy: _common_pb2.ApprovalPolicy
    metadata: _containers.ScalarMap[str, str]
    token_budget: int
    def __init__(self, bundle_reference: _Optional[str] = ..., agent_id: _Optional[str] = ..., model: _Optional[_Union[_common_pb2.ModelSpec, _Mapping]] = ..., sandbox_mode: _Optional[_Union[_common_pb2.SandboxMode, str]] = ..., approval_policy: _Optional[_Union[_common_pb2.ApprovalPolicy, str]] = ..., metadata: _Optional[_Mapping[str, str]] = ..., token_budget: _Optional[int] = ...) -> None: ...

class CreateSessionResponse(_message.Message):
    __slots__ = ("session",)
    SESSION_FIELD_NUMBER: _ClassVar[int]
    session: Session
    def __init__(self, session: _Optional[_Union[Session, _Mapping]] = ...) -> None: ...

class GetSessionRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class GetSessionResponse(_message.Message):
    __slots__ = ("session",)
    SESSION_FIELD_NUMBER: _ClassVar[int]
    session: Session
    def __init__(self, session: _Optional[_Union[Session, _Mapping]] = ...) -> None: ...

class ListSessionsRequest(_message.Message):
    __slots__ = ("page_size", "page_token", "bundle", "agent_id", "parent_session_id")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    BUNDLE_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    bundle: str
    agent_id: str
    parent_session_id: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., bundle: _Optional[str] = ..., agent_id: _Optional[str] = ..., parent_session_id: _Optional[str] = ...) -> None: ...

class ListSessionsResponse(_message.Message):
    __slots__ = ("sessions", "next_page_token")
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    sessions: _containers.RepeatedCompositeFieldContainer[Session]
    next_page_token: str
    def __init__(self, sessions: _Optional[_Iterable[_Union[Session, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class DeleteSessionRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class DeleteSessionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SubscribeSessionRequest(_message.Message):
    __slots__ = ("session_id", "after_sequence")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    after_sequence: int
    def __init__(self, session_id: _Optional[str] = ..., after_sequence: _Optional[int] = ...) -> None: ...

class SubscribeSessionResponse(_message.Message):
    __slots__ = ("event", "heartbeat")
    EVENT_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    event: _events_pb2.SessionEvent
    heartbeat: Heartbeat
    def __init__(self, event: _Optional[_Union[_events_pb2.SessionEvent, _Mapping]] = ..., heartbeat: _Optional[_Union[Heartbeat, _Mapping]] = ...) -> None: ...

class Heartbeat(_message.Message):
    __slots__ = ("sent_at", "last_sequence")
    SENT_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    sent_at: _timestamp_pb2.Timestamp
    last_sequence: int
    def __init__(self, sent_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_sequence: _Optional[int] = ...) -> None: ...

class ExportSessionCassetteRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class ExportSessionCassetteResponse(_message.Message):
    __slots__ = ("chunk",)
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    chunk: bytes
    def __init__(self, chunk: _Optional[bytes] = ...) -> None: ...

class ListSessionToolsRequest(_message.Message):
    __slots__ = ("session_id", "page_size", "page_token")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    page_size: int
    page_token: str
    def __init__(self, session_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListSessionToolsResponse(_message.Message):
    __slots__ = ("tools", "next_page_token", "mcp_server_errors")
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    MCP_SERVER_ERRORS_FIELD_NUMBER: _ClassVar[int]
    tools: _containers.RepeatedCompositeFieldContainer[SessionTool]
    next_page_token: str
    mcp_server_errors: _containers.RepeatedCompositeFieldContainer[McpServerError]
    def __init__(self, tools: _Optional[_Iterable[_Union[SessionTool, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., mcp_server_errors: _Optional[_Iterable[_Union[McpServerError, _Mapping]]] = ...) -> None: ...

class SessionTool(_message.Message):
    __slots__ = ("name", "description", "input_schema_json", "source", "mcp_server")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    INPUT_SCHEMA_JSON_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    MCP_SERVER_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    input_schema_json: str
    source: str
    mcp_server: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., input_schema_json: _Optional[str] = ..., source: _Optional[str] = ..., mcp_server: _Optional[str] = ...) -> None: ...

class McpServerError(_message.Message):
    __slots__ = ("server", "error")
    SERVER_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    server: str
    error: str
    def __init__(self, server: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class ForkSessionRequest(_message.Message):
    __slots__ = ("session_id", "after_turn", "at_sequence")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_TURN_FIELD_NUMBER: _ClassVar[int]
    AT_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    after_turn: int
    at_sequence: int
    def __init__(self, session_id: _Optional[str] = ..., after_turn: _Optional[int] = ..., at_sequence: _Optional[int] = ...) -> None: ...

class ForkSessionResponse(_message.Message):
    __slots__ = ("session",)
    SESSION_FIELD_NUMBER: _ClassVar[int]
    session: Session
    def __init__(self, session: _Optional[_Union[Session, _Mapping]] = ...) -> None: ...

class RewindSessionRequest(_message.Message):
    __slots__ = ("session_id", "to_turn")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TO_TURN_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    to_turn: int
    def __init__(self, session_id: _Optional[str] = ..., to_turn: _Optional[int] = ...) -> None: ...

class RewindSessionResponse(_message.Message):
    __slots__ = ("session", "event")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    session: Session
    event: _events_pb2.SessionEvent
    def __init__(self, session: _Optional[_Union[Session, _Mapping]] = ..., event: _Optional[_Union[_events_pb2.SessionEvent, _Mapping]] = ...) -> None: ...

class GetTurnChangesRequest(_message.Message):
    __slots__ = ("session_id", "turn")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    turn: int
    def __init__(self, session_id: _Optional[str] = ..., turn: _Optional[int] = ...) -> None: ...

class GetTurnChangesResponse(_message.Message):
    __slots__ = ("turn", "turn_id", "base_turn", "changes", "truncated")
    TURN_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    BASE_TURN_FIELD_NUMBER: _ClassVar[int]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    turn: int
    turn_id: str
    base_turn: int
    changes: _containers.RepeatedCompositeFieldContainer[FileChange]
    truncated: bool
    def __init__(self, turn: _Optional[int] = ..., turn_id: _Optional[str] = ..., base_turn: _Optional[int] = ..., changes: _Optional[_Iterable[_Union[FileChange, _Mapping]]] = ..., truncated: _Optional[bool] = ...) -> None: ...

class FileChange(_message.Message):
    __slots__ = ("path", "change", "kind", "size_before", "size_after", "binary", "unified_diff", "diff_truncated")
    PATH_FIELD_NUMBER: _ClassVar[int]
    CHANGE_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    SIZE_BEFORE_FIELD_NUMBER: _ClassVar[int]
    SIZE_AFTER_FIELD_NUMBER: _ClassVar[int]
    BINARY_FIELD_NUMBER: _ClassVar[int]
    UNIFIED_DIFF_FIELD_NUMBER: _ClassVar[int]
    DIFF_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    path: str
    change: FileChangeKind
    kind: FileNodeKind
    size_before: int
    size_after: int
    binary: bool
    unified_diff: str
    diff_truncated: bool
    def __init__(self, path: _Optional[str] = ..., change: _Optional[_Union[FileChangeKind, str]] = ..., kind: _Optional[_Union[FileNodeKind, str]] = ..., size_before: _Optional[int] = ..., size_after: _Optional[int] = ..., binary: _Optional[bool] = ..., unified_diff: _Optional[str] = ..., diff_truncated: _Optional[bool] = ...) -> None: ...
