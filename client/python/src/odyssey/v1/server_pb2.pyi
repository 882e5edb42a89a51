import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from odyssey.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SnapshotMechanism(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SNAPSHOT_MECHANISM_UNSPECIFIED: _ClassVar[SnapshotMechanism]
    SNAPSHOT_MECHANISM_DISABLED: _ClassVar[SnapshotMechanism]
    SNAPSHOT_MECHANISM_COPIES: _ClassVar[SnapshotMechanism]
    SNAPSHOT_MECHANISM_OVERLAY: _ClassVar[SnapshotMechanism]
SNAPSHOT_MECHANISM_UNSPECIFIED: SnapshotMechanism
SNAPSHOT_MECHANISM_DISABLED: SnapshotMechanism
SNAPSHOT_MECHANISM_COPIES: SnapshotMechanism
SNAPSHOT_MECHANISM_OVERLAY: SnapshotMechanism

class GetServerInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetServerInfoResponse(_message.Message):
    __slots__ = ("version", "started_at", "limits", "sandbox", "quarantined_sessions", "providers", "activity", "workspace_snapshots", "store")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    QUARANTINED_SESSIONS_FIELD_NUMBER: _ClassVar[int]
    PROVIDERS_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_SNAPSHOTS_FIELD_NUMBER: _ClassVar[int]
    STORE_FIELD_NUMBER: _ClassVar[int]
    version: str
    started_at: _timestamp_pb2.Timestamp
    limits: ServerLimits
    sandbox: SandboxCapabilities
    quarantined_sessions: _containers.RepeatedCompositeFieldContainer[QuarantinedSession]
    providers: _containers.RepeatedScalarFieldContainer[str]
    activity: ServerActivity
    workspace_snapshots: WorkspaceSnapshots
    store: StoreInfo
    def __init__(self, version: _Optional[str] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., limits: _Optional[_Union[ServerLimits, _Mapping]] = ..., sandbox: _Optional[_Union[SandboxCapabilities, _Mapping]] = ..., quarantined_sessions: _Optional[_Iterable[_Union[QuarantinedSession, _Mapping]]] = ..., providers: _Optional[_Iterable[str]] = ..., activity: _Optional[_Union[ServerActivity, _Mapping]] = ..., workspace_snapshots: _Optional[_Union[WorkspaceSnapshots, _Mapping]] = ..., store: _Optional[_Union[StoreInfo, _Mapping]] = ...) -> None: ...

class ServerActivity(_message.Message):
    __slots__ = ("tasks", "open_sessions", "subscriptions")
    TASKS_FIELD_NUMBER: _ClassVar[int]
    OPEN_SESSIONS_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTIONS_FIELD_NUMBER: _ClassVar[int]
    tasks: int
    open_sessions: int
    subscriptions: int
    def __init__(self, tasks: _Optional[int] = ..., open_sessions: _Optional[int] = ..., subscriptions: _Optional[int] = ...) -> None: ...

class ServerLimits(_message.Message):
    __slots__ = ("worker_count", "queue_capacity", "max_request_bytes", "max_archive_bytes", "max_turn_steps", "max_turn_duration_ms", "queued", "running", "max_subagent_depth", "max_concurrent_subagents")
    WORKER_COUNT_FIELD_NUMBER: _ClassVar[int]
    QUEUE_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    MAX_REQUEST_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_ARCHIVE_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_TURN_STEPS_FIELD_NUMBER: _ClassVar[int]
    MAX_TURN_DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    QUEUED_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    MAX_SUBAGENT_DEPTH_FIELD_NUMBER: _ClassVar[int]
    MAX_CONCURRENT_SUBAGENTS_FIELD_NUMBER: _ClassVar[int]
    worker_count: int
    queue_capacity: int
    max_request_bytes: int
    max_archive_bytes: int
    max_turn_steps: int
    max_turn_duration_ms: int
    queued: int
    running: int
    max_subagent_depth: int
    max_concurrent_subagents: int
    def __init__(self, worker_count: _Optional[int] = ..., queue_capacity: _Optional[int] = ..., max_request_bytes: _Optional[int] = ..., max_archive_bytes: _Optional[int] = ..., max_turn_steps: _Optional[int] = ..., max_turn_duration_ms: _Optional[int] = ..., queued: _Optional[int] = ..., running: _Optional[int] = ..., max_subagent_depth: _Optional[int] = ..., max_concurrent_subagents: _Optional[int] = ...) -> None: ...

class SandboxCapabilities(_message.Message):
    __slots__ = ("bubblewrap", "landlock", "seccomp", "forced_mode", "danger_full_access_allowed", "notes", "session_limits")
    BUBBLEWRAP_FIELD_NUMBER: _ClassVar[int]
    LANDLOCK_FIELD_NUMBER: _ClassVar[int]
    SECCOMP_FIELD_NUMBER: _ClassVar[int]
    FORCED_MODE_FIELD_NUMBER: _ClassVar[int]
    DANGER_FULL_ACCESS_ALLOWED_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    SESSION_LIMITS_FIELD_NUMBER: _ClassVar[int]
    bubblewrap: bool
    landlock: bool
    seccomp: bool
    forced_mode: _common_pb2.SandboxMode
    danger_full_access_allowed: bool
    notes: _containers.RepeatedScalarFieldContainer[str]
    session_limits: SessionLimits
    def __init__(self, bubblewrap: _Optional[bool] = ..., landlock: _Optional[bool] = ..., seccomp: _Optional[bool] = ..., forced_mode: _Optional[_Union[_common_pb2.SandboxMode, str]] = ..., danger_full_access_allowed: _Optional[bool] = ..., notes: _Optional[_Iterable[str]] = ..., session_limits: _Optional[_Union[SessionLimits, _Mapping]] = ...) -> None: ...

class SessionLimits(_message.Message):
    __slots__ = ("memory_cgroup_version", "pids_cgroup_version", "default_memory_mb", "max_processes", "max_concurrent_commands", "processes_counted_per_command")
    MEMORY_CGROUP_VERSION_FIELD_NUMBER: _ClassVar[int]
    PIDS_CGROUP_VERSION_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_MEMORY_MB_FIELD_NUMBER: _ClassVar[int]
    MAX_PROCESSES_FIELD_NUMBER: _ClassVar[int]
    MAX_CONCURRENT_COMMANDS_FIELD_NUMBER: _ClassVar[int]
    PROCESSES_COUNTED_PER_COMMAND_FIELD_NUMBER: _ClassVar[int]
    memory_cgroup_version: int
    pids_cgroup_version: int
    default_memory_mb: int
    max_processes: int
    max_concurrent_commands: int
    processes_counted_per_command: bool
    def __init__(self, memory_cgroup_version: _Optional[int] = ..., pids_cgroup_version: _Optional[int] = ..., default_memory_mb: _Optional[int] = ..., max_processes: _Optional[int] = ..., max_concurrent_commands: _Optional[int] = ..., processes_counted_per_command: _Optional[bool] = ...) -> None: ...

class QuarantinedSession(_message.Message):
    __slots__ = ("session_id", "reason", "quarantined_at")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    QUARANTINED_AT_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    reason: str
    quarantined_at: _timestamp_pb2.Timestamp
    def __init__(self, session_id: _Optional[str] = ..., reason: _Optional[str] = ..., quarantined_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class WorkspaceSnapshots(_message.Message):
    __slots__ = ("mechanism", "max_turns", "max_bytes", "max_workspace_files", "max_workspace_bytes")
    MECHANISM_FIELD_NUMBER: _ClassVar[int]
    MAX_TURNS_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_WORKSPACE_FILES_FIELD_NUMBER: _ClassVar[int]
    MAX_WORKSPACE_BYTES_FIELD_NUMBER: _ClassVar[int]
    mechanism: SnapshotMechanism
    max_turns: int
    max_bytes: int
    max_workspace_files: int
    max_workspace_bytes: int
    def __init__(self, mechanism: _Optional[_Union[SnapshotMechanism, str]] = ..., max_turns: _Optional[int] = ..., max_bytes: _Optional[int] = ..., max_workspace_files: _Optional[int] = ..., max_workspace_bytes: _Optional[int] = ...) -> None: ...

class StoreInfo(_message.Message):
    __slots__ = ("kind", "replica_id", "replicas")
    KIND_FIELD_NUMBER: _ClassVar[int]
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    kind: str
    replica_id: str
    replicas: _containers.RepeatedCompositeFieldContainer[ReplicaInfo]
    def __init__(self, kind: _Optional[str] = ..., replica_id: _Optional[str] = ..., replicas: _Optional[_Iterable[_Union[ReplicaInfo, _Mapping]]] = ...) -> None: ...

class ReplicaInfo(_message.Message):
    __slots__ = ("id", "last_seen", "alive")
    ID_FIELD_NUMBER: _ClassVar[int]
    LAST_SEEN_FIELD_NUMBER: _ClassVar[int]
    ALIVE_FIELD_NUMBER: _ClassVar[int]
    id: str
    last_seen: _timestamp_pb2.Timestamp
    alive: bool
    def __init__(self, id: _Optional[str] = ..., last_seen: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., alive: _Optional[bool] = ...) -> None: ...
