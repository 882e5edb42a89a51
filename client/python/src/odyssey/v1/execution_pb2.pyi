from odyssey.v1 import common_pb2 as _common_pb2
from odyssey.v1 import events_pb2 as _events_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ExecutionState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EXECUTION_STATE_UNSPECIFIED: _ClassVar[ExecutionState]
    EXECUTION_STATE_QUEUED: _ClassVar[ExecutionState]
    EXECUTION_STATE_RUNNING: _ClassVar[ExecutionState]
    EXECUTION_STATE_WAITING_APPROVAL: _ClassVar[ExecutionState]
    EXECUTION_STATE_COMPLETED: _ClassVar[ExecutionState]
    EXECUTION_STATE_FAILED: _ClassVar[ExecutionState]
    EXECUTION_STATE_CANCELLED: _ClassVar[ExecutionState]
    EXECUTION_STATE_INTERRUPTED: _ClassVar[ExecutionState]

class InputDisposition(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INPUT_DISPOSITION_UNSPECIFIED: _ClassVar[InputDisposition]
    INPUT_DISPOSITION_STEERED: _ClassVar[InputDisposition]
    INPUT_DISPOSITION_QUEUED: _ClassVar[InputDisposition]
    INPUT_DISPOSITION_INTERRUPTED: _ClassVar[InputDisposition]
    INPUT_DISPOSITION_STARTED: _ClassVar[InputDisposition]
EXECUTION_STATE_UNSPECIFIED: ExecutionState
EXECUTION_STATE_QUEUED: ExecutionState
EXECUTION_STATE_RUNNING: ExecutionState
EXECUTION_STATE_WAITING_APPROVAL: ExecutionState
EXECUTION_STATE_COMPLETED: ExecutionState
EXECUTION_STATE_FAILED: ExecutionState
EXECUTION_STATE_CANCELLED: ExecutionState
EXECUTION_STATE_INTERRUPTED: ExecutionState
INPUT_DISPOSITION_UNSPECIFIED: InputDisposition
INPUT_DISPOSITION_STEERED: InputDisposition
INPUT_DISPOSITION_QUEUED: InputDisposition
INPUT_DISPOSITION_INTERRUPTED: InputDisposition
INPUT_DISPOSITION_STARTED: InputDisposition

class TurnOverrides(_message.Message):
    __slots__ = ("cwd", "model")
    CWD_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    cwd: str
    model: _common_pb2.ModelSpec
    def __init__(self, cwd: _Optional[str] = ..., model: _Optional[_Union[_common_pb2.ModelSpec, _Mapping]] = ...) -> None: ...

class TurnInput(_message.Message):
    __slots__ = ("session_id", "prompt", "overrides", "metadata")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    OVERRIDES_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    prompt: str
    overrides: TurnOverrides
    metadata: _containers.ScalarMap[str, str]
    def __init__(self, session_id: _Optional[str] = ..., prompt: _Optional[str] = ..., overrides: _Optional[_Union[TurnOverrides, _Mapping]] = ..., metadata: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ExecutionStatus(_message.Message):
    __slots__ = ("execution_id", "session_id", "state", "response", "error", "usage", "first_sequence", "last_sequence")
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    execution_id: str
    session_id: str
    state: ExecutionState
    response: str
    error: str
    usage: _common_pb2.TokenUsage
    first_sequence: int
    last_sequence: int
    def __init__(self, execution_id: _Optional[str] = ..., session_id: _Optional[str] = ..., state: _Optional[_Union[ExecutionState, str]] = ..., response: _Optional[str] = ..., error: _Optional[str] = ..., usage: _Optional[_Union[_common_pb2.TokenUsage, _Mapping]] = ..., first_sequence: _Optional[int] = ..., last_sequence: _Optional[int] = ...) -> None: ...

class RunRequest(_message.Message):
    __slots__ = ("input",)
    INPUT_FIELD_NUMBER: _ClassVar[int]
    input: TurnInput
    def __init__(self, input: _Optional[_Union[TurnInput, _Mapping]] = ...) -> None: ...

class RunResponse(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: ExecutionStatus
    def __init__(self, status: _Optional[_Union[ExecutionStatus, _Mapping]] = ...) -> None: ...

class SubmitRequest(_message.Message):
    __slots__ = ("input",)
    INPUT_FIELD_NUMBER: _ClassVar[int]
    input: TurnInput
    def __init__(self, input: _Optional[_Union[TurnInput, _Mapping]] = ...) -> None: ...

class SubmitResponse(_message.Message):
    __slots__ = ("execution_id", "session_id")
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    execution_id: str
    session_id: str
    def __init__(self, execution_id: _Optional[str] = ..., session_id: _Optional[str] = ...) -> None: ...

class GetExecutionStatusRequest(_message.Message):
    __slots__ = ("execution_id",)
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    execution_id: str
    def __init__(self, execution_id: _Optional[str] = ...) -> None: ...

class GetExecutionStatusResponse(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: ExecutionStatus
    def __init__(self, status: _Optional[_Union[ExecutionStatus, _Mapping]] = ...) -> None: ...

class CancelExecutionRequest(_message.Message):
    __slots__ = ("execution_id",)
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    execution_id: str
    def __init__(self, execution_id: _Optional[str] = ...) -> None: ...

class CancelExecutionResponse(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: ExecutionStatus
    def __init__(self, status: _Optional[_Union[ExecutionStatus, _Mapping]] = ...) -> None: ...

class RunSessionCommandRequest(_message.Message):
    __slots__ = ("session_id", "argv", "command_line", "cwd", "timeout_ms")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    ARGV_FIELD_NUMBER: _ClassVar[int]
    COMMAND_LINE_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    argv: _containers.RepeatedScalarFieldContainer[str]
    command_line: str
    cwd: str
    timeout_ms: int
    def __init__(self, session_id: _Optional[str] = ..., argv: _Optional[_Iterable[str]] = ..., command_line: _Optional[str] = ..., cwd: _Optional[str] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class RunSessionCommandResponse(_message.Message):
    __slots__ = ("exec_id", "exit_code", "stdout", "stderr", "output_truncated", "timed_out", "duration_ms")
    EXEC_ID_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    STDOUT_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    TIMED_OUT_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    exec_id: str
    exit_code: int
    stdout: str
    stderr: str
    output_truncated: bool
    timed_out: bool
    duration_ms: int
    def __init__(self, exec_id: _Optional[str] = ..., exit_code: _Optional[int] = ..., stdout: _Optional[str] = ..., stderr: _Optional[str] = ..., output_truncated: _Optional[bool] = ..., timed_out: _Optional[bool] = ..., duration_ms: _Optional[int] = ...) -> None: ...

class StreamSessionCommandRequest(_message.Message):
    __slots__ = ("session_id", "argv", "command_line", "cwd", "timeout_ms")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    ARGV_FIELD_NUMBER: _ClassVar[int]
    COMMAND_LINE_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    argv: _containers.RepeatedScalarFieldContainer[str]
    command_line: str
    cwd: str
    timeout_ms: int
    def __init__(self, session_id: _Optional[str] = ..., argv: _Optional[_Iterable[str]] = ..., command_line: _Optional[str] = ..., cwd: _Optional[str] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class StreamSessionCommandResponse(_message.Message):
    __slots__ = ("begin", "output", "end")
    BEGIN_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    begin: _events_pb2.ExecCommandBegin
    output: _events_pb2.ExecCommandOutputDelta
    end: _events_pb2.ExecCommandEnd
    def __init__(self, begin: _Optional[_Union[_events_pb2.ExecCommandBegin, _Mapping]] = ..., output: _Optional[_Union[_events_pb2.ExecCommandOutputDelta, _Mapping]] = ..., end: _Optional[_Union[_events_pb2.ExecCommandEnd, _Mapping]] = ...) -> None: ...

class SendInputRequest(_message.Message):
    __slots__ = ("session_id", "text", "mode")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    text: str
    mode: _common_pb2.InputMode
    def __init__(self, session_id: _Optional[str] = ..., text: _Optional[str] = ..., mode: _Optional[_Union[_common_pb2.InputMode, str]] = ...) -> None: ...

class SendInputResponse(_message.Message):
    __slots__ = ("session_id", "disposition", "execution_id", "interrupted_execution_id")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    DISPOSITION_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    INTERRUPTED_EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    disposition: InputDisposition
    execution_id: str
    interrupted_execution_id: str
    def __init__(self, session_id: _Optional[str] = ..., disposition: _Optional[_Union[InputDisposition, str]] = ..., execution_id: _Optional[str] = ..., interrupted_execution_id: _Optional[str] = ...) -> None: ...
