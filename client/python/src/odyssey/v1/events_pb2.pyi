import datetime

from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from odyssey.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TurnOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TURN_OUTCOME_UNSPECIFIED: _ClassVar[TurnOutcome]
    TURN_OUTCOME_COMPLETED: _ClassVar[TurnOutcome]
    TURN_OUTCOME_FAILED: _ClassVar[TurnOutcome]
    TURN_OUTCOME_CANCELLED: _ClassVar[TurnOutcome]
    TURN_OUTCOME_INTERRUPTED: _ClassVar[TurnOutcome]

class ChatRole(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CHAT_ROLE_UNSPECIFIED: _ClassVar[ChatRole]
    CHAT_ROLE_SYSTEM: _ClassVar[ChatRole]
    CHAT_ROLE_USER: _ClassVar[ChatRole]
    CHAT_ROLE_ASSISTANT: _ClassVar[ChatRole]
    CHAT_ROLE_TOOL: _ClassVar[ChatRole]

class OutputStream(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OUTPUT_STREAM_UNSPECIFIED: _ClassVar[OutputStream]
    OUTPUT_STREAM_STDOUT: _ClassVar[OutputStream]
    OUTPUT_STREAM_STDERR: _ClassVar[OutputStream]

class ApprovalDecision(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    APPROVAL_DECISION_UNSPECIFIED: _ClassVar[ApprovalDecision]
    APPROVAL_DECISION_ALLOW_ONCE: _ClassVar[ApprovalDecision]
    APPROVAL_DECISION_ALLOW_ALWAYS: _ClassVar[ApprovalDecision]
    APPROVAL_DECISION_DENY: _ClassVar[ApprovalDecision]

class ApprovalResolution(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    APPROVAL_RESOLUTION_UNSPECIFIED: _ClassVar[ApprovalResolution]
    APPROVAL_RESOLUTION_DECIDED: _ClassVar[ApprovalResolution]
    APPROVAL_RESOLUTION_TIMED_OUT: _ClassVar[ApprovalResolution]
    APPROVAL_RESOLUTION_CANCELLED: _ClassVar[ApprovalResolution]
    APPROVAL_RESOLUTION_INTERRUPTED: _ClassVar[ApprovalResolution]

class PlanStepStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PLAN_STEP_STATUS_UNSPECIFIED: _ClassVar[PlanStepStatus]
    PLAN_STEP_STATUS_PENDING: _ClassVar[PlanStepStatus]
    PLAN_STEP_STATUS_IN_PROGRESS: _ClassVar[PlanStepStatus]
    PLAN_STEP_STATUS_COMPLETED: _ClassVar[PlanStepStatus]

class HumanInputAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    HUMAN_INPUT_ACTION_UNSPECIFIED: _ClassVar[HumanInputAction]
    HUMAN_INPUT_ACTION_ACCEPT: _ClassVar[HumanInputAction]
    HUMAN_INPUT_ACTION_DECLINE: _ClassVar[HumanInputAction]
    HUMAN_INPUT_ACTION_CANCEL: _ClassVar[HumanInputAction]
TURN_OUTCOME_UNSPECIFIED: TurnOutcome
TURN_OUTCOME_COMPLETED: TurnOutcome
TURN_OUTCOME_FAILED: TurnOutcome
TURN_OUTCOME_CANCELLED: TurnOutcome
TURN_OUTCOME_INTERRUPTED: TurnOutcome
CHAT_ROLE_UNSPECIFIED: ChatRole
CHAT_ROLE_SYSTEM: ChatRole
CHAT_ROLE_USER: ChatRole
CHAT_ROLE_ASSISTANT: ChatRole
CHAT_ROLE_TOOL: ChatRole
OUTPUT_STREAM_UNSPECIFIED: OutputStream
OUTPUT_STREAM_STDOUT: OutputStream
OUTPUT_STREAM_STDERR: OutputStream
APPROVAL_DECISION_UNSPECIFIED: ApprovalDecision
APPROVAL_DECISION_ALLOW_ONCE: ApprovalDecision
APPROVAL_DECISION_ALLOW_ALWAYS: ApprovalDecision
APPROVAL_DECISION_DENY: ApprovalDecision
APPROVAL_RESOLUTION_UNSPECIFIED: ApprovalResolution
APPROVAL_RESOLUTION_DECIDED: ApprovalResolution
APPROVAL_RESOLUTION_TIMED_OUT: ApprovalResolution
APPROVAL_RESOLUTION_CANCELLED: ApprovalResolution
APPROVAL_RESOLUTION_INTERRUPTED: ApprovalResolution
PLAN_STEP_STATUS_UNSPECIFIED: PlanStepStatus
PLAN_STEP_STATUS_PENDING: PlanStepStatus
PLAN_STEP_STATUS_IN_PROGRESS: PlanStepStatus
PLAN_STEP_STATUS_COMPLETED: PlanStepStatus
HUMAN_INPUT_ACTION_UNSPECIFIED: HumanInputAction
HUMAN_INPUT_ACTION_ACCEPT: HumanInputAction
HUMAN_INPUT_ACTION_DECLINE: HumanInputAction
HUMAN_INPUT_ACTION_CANCEL: HumanInputAction

class SessionEvent(_message.Message):
    __slots__ = ("id", "session_id", "sequence", "created_at", "turn_id", "turn_started", "turn_completed", "agent_message_delta", "reasoning_delta", "reasoning_section_break", "tool_call_started", "tool_call_delta", "tool_call_finished", "exec_command_begin", "exec_command_output_delta", "exec_command_end", "permission_requested", "approval_resolved", "plan_updated", "token_usage_reported", "error_occurred", "history_compacted", "memory_recalled", "network_connection_attempted", "user_input_added", "session_rewound", "subagent_started", "subagent_finished", "human_input_requested", "human_input_answered")
    ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_STARTED_FIELD_NUMBER: _ClassVar[int]
    TURN_COMPLETED_FIELD_NUMBER: _ClassVar[int]
    AGENT_MESSAGE_DELTA_FIELD_NUMBER: _ClassVar[int]
    REASONING_DELTA_FIELD_NUMBER: _ClassVar[int]
    REASONING_SECTION_BREAK_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_STARTED_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_DELTA_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_FINISHED_FIELD_NUMBER: _ClassVar[int]
    EXEC_COMMAND_BEGIN_FIELD_NUMBER: _ClassVar[int]
    EXEC_COMMAND_OUTPUT_DELTA_FIELD_NUMBER: _ClassVar[int]
    EXEC_COMMAND_END_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_RESOLVED_FIELD_NUMBER: _ClassVar[int]
    PLAN_UPDATED_FIELD_NUMBER: _ClassVar[int]
    TOKEN_USAGE_REPORTED_FIELD_NUMBER: _ClassVar[int]
    ERROR_OCCURRED_FIELD_NUMBER: _ClassVar[int]
    HISTORY_COMPACTED_FIELD_NUMBER: _ClassVar[int]
    MEMORY_RECALLED_FIELD_NUMBER: _ClassVar[int]
    NETWORK_CONNECTION_ATTEMPTED_FIELD_NUMBER: _ClassVar[int]
    USER_INPUT_ADDED_FIELD_NUMBER: _ClassVar[int]
    SESSION_REWOUND_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_STARTED_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_FINISHED_FIELD_NUMBER: _ClassVar[int]
    HUMAN_INPUT_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    HUMAN_INPUT_ANSWERED_FIELD_NUMBER: _ClassVar[int]
    id: str
    session_id: str
    sequence: int
    created_at: _timestamp_pb2.Timestamp
    turn_id: str
    turn_started: TurnStarted
    turn_completed: TurnCompleted
    agent_message_delta: AgentMessageDelta
    reasoning_delta: ReasoningDelta
    reasoning_section_break: ReasoningSectionBreak
    tool_call_started: ToolCallStarted
    tool_call_delta: ToolCallDelta
    tool_call_finished: ToolCallFinished
    exec_command_begin: ExecCommandBegin
    exec_command_output_delta: ExecCommandOutputDelta
    exec_command_end: ExecCommandEnd
    permission_requested: PermissionRequested
    approval_resolved: ApprovalResolved
    plan_updated: PlanUpdated
    token_usage_reported: TokenUsageReported
    error_occurred: ErrorOccurred
    history_compacted: HistoryCompacted
    memory_recalled: MemoryRecalled
    network_connection_attempted: NetworkConnectionAttempted
    user_input_added: UserInputAdded
    session_rewound: SessionRewound
    subagent_started: SubagentStarted
    subagent_finished: SubagentFinished
    human_input_requested: HumanInputRequested
    human_input_answered: HumanInputAnswered
    def __init__(self, id: _Optional[str] = ..., session_id: _Optional[str] = ..., sequence: _Optional[int] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., turn_id: _Optional[str] = ..., turn_started: _Optional[_Union[TurnStarted, _Mapping]] = ..., turn_completed: _Optional[_Union[TurnCompleted, _Mapping]] = ..., agent_message_delta: _Optional[_Union[AgentMessageDelta, _Mapping]] = ..., reasoning_delta: _Optional[_Union[ReasoningDelta, _Mapping]] = ..., reasoning_section_break: _Optional[_Union[ReasoningSectionBreak, _Mapping]] = ..., tool_call_started: _Optional[_Union[ToolCallStarted, _Mapping]] = ..., tool_call_delta: _Optional[_Union[ToolCallDelta, _Mapping]] = ..., tool_call_finished: _Optional[_Union[ToolCallFinished, _Mapping]] = ..., exec_command_begin: _Optional[_Union[ExecCommandBegin, _Mapping]] = ..., exec_command_output_delta: _Optional[_Union[ExecCommandOutputDelta, _Mapping]] = ..., exec_command_end: _Optional[_Union[ExecCommandEnd, _Mapping]] = ..., permission_requested: _Optional[_Union[PermissionRequested, _Mapping]] = ..., approval_resolved: _Optional[_Union[ApprovalResolved, _Mapping]] = ..., plan_updated: _Optional[_Union[PlanUpdated, _Mapping]] = ..., token_usage_reported: _Optional[_Union[TokenUsageReported, _Mapping]] = ..., error_occurred: _Optional[_Union[ErrorOccurred, _Mapping]] = ..., history_compacted: _Optional[_Union[HistoryCompacted, _Mapping]] = ..., memory_recalled: _Optional[_Union[MemoryRecalled, _Mapping]] = ..., network_connection_attempted: _Optional[_Union[NetworkConnectionAttempted, _Mapping]] = ..., user_input_added: _Optional[_Union[UserInputAdded, _Mapping]] = ..., session_rewound: _Optional[_Union[SessionRewound, _Mapping]] = ..., subagent_started: _Optional[_Union[SubagentStarted, _Mapping]] = ..., subagent_finished: _Optional[_Union[SubagentFinished, _Mapping]] = ..., human_input_requested: _Optional[_Union[HumanInputRequested, _Mapping]] = ..., human_input_answered: _Optional[_Union[HumanInputAnswered, _Mapping]] = ...) -> None: ...

class TurnContext(_message.Message):
    __slots__ = ("cwd", "model", "sandbox_mode", "approval_policy", "metadata")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CWD_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_MODE_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_POLICY_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    cwd: str
    model: _common_pb2.ModelSpec
    sandbox_mode: _common_pb2.SandboxMode
    approval_policy: _common_pb2.ApprovalPolicy
    metadata: _containers.ScalarMap[str, str]
    def __init__(self, cwd: _Optional[str] = ..., model: _Optional[_Union[_common_pb2.ModelSpec, _Mapping]] = ..., sandbox_mode: _Optional[_Union[_common_pb2.SandboxMode, str]] = ..., approval_policy: _Optional[_Union[_common_pb2.ApprovalPolicy, str]] = ..., metadata: _Optional[_Mapping[str, str]] = ...) -> None: ...

class TurnStarted(_message.Message):
    __slots__ = ("prompt", "context")
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    prompt: str
    context: TurnContext
    def __init__(self, prompt: _Optional[str] = ..., context: _Optional[_Union[TurnContext, _Mapping]] = ...) -> None: ...

class TurnCompleted(_message.Message):
    __slots__ = ("outcome", "response", "error", "usage", "messages", "model_calls", "reason")
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    MODEL_CALLS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    outcome: TurnOutcome
    response: str
    error: str
    usage: _common_pb2.TokenUsage
    messages: _containers.RepeatedCompositeFieldContainer[ChatMessage]
    model_calls: int
    reason: str
    def __init__(self, outcome: _Optional[_Union[TurnOutcome, str]] = ..., response: _Optional[str] = ..., error: _Optional[str] = ..., usage: _Optional[_Union[_common_pb2.TokenUsage, _Mapping]] = ..., messages: _Optional[_Iterable[_Union[ChatMessage, _Mapping]]] = ..., model_calls: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class ChatMessage(_message.Message):
    __slots__ = ("role", "content", "tool_calls", "tool_call_id", "is_error")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    role: ChatRole
    content: str
    tool_calls: _containers.RepeatedCompositeFieldContainer[ToolCall]
    tool_call_id: str
    is_error: bool
    def __init__(self, role: _Optional[_Union[ChatRole, str]] = ..., content: _Optional[str] = ..., tool_calls: _Optional[_Iterable[_Union[ToolCall, _Mapping]]] = ..., tool_call_id: _Optional[str] = ..., is_error: _Optional[bool] = ...) -> None: ...

class ToolCall(_message.Message):
    __slots__ = ("id", "name", "arguments_json")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    arguments_json: str
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., arguments_json: _Optional[str] = ...) -> None: ...

class AgentMessageDelta(_message.Message):
    __slots__ = ("delta",)
    DELTA_FIELD_NUMBER: _ClassVar[int]
    delta: str
    def __init__(self, delta: _Optional[str] = ...) -> None: ...

class ReasoningDelta(_message.Message):
    __slots__ = ("delta",)
    DELTA_FIELD_NUMBER: _ClassVar[int]
    delta: str
    def __init__(self, delta: _Optional[str] = ...) -> None: ...

class ReasoningSectionBreak(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ToolCallStarted(_message.Message):
    __slots__ = ("call_id", "tool", "arguments")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    tool: str
    arguments: _struct_pb2.Struct
    def __init__(self, call_id: _Optional[str] = ..., tool: _Optional[str] = ..., arguments: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class ToolCallDelta(_message.Message):
    __slots__ = ("call_id", "delta")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    delta: str
    def __init__(self, call_id: _Optional[str] = ..., delta: _Optional[str] = ...) -> None: ...

class ToolCallFinished(_message.Message):
    __slots__ = ("call_id", "tool", "success", "result")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    tool: str
    success: bool
    result: str
    def __init__(self, call_id: _Optional[str] = ..., tool: _Optional[str] = ..., success: _Optional[bool] = ..., result: _Optional[str] = ...) -> None: ...

class ExecCommandBegin(_message.Message):
    __slots__ = ("exec_id", "argv", "cwd", "call_id")
    EXEC_ID_FIELD_NUMBER: _ClassVar[int]
    ARGV_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    exec_id: str
    argv: _containers.RepeatedScalarFieldContainer[str]
    cwd: str
    call_id: str
    def __init__(self, exec_id: _Optional[str] = ..., argv: _Optional[_Iterable[str]] = ..., cwd: _Optional[str] = ..., call_id: _Optional[str] = ...) -> None: ...

class ExecCommandOutputDelta(_message.Message):
    __slots__ = ("exec_id", "stream", "text")
    EXEC_ID_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    exec_id: str
    stream: OutputStream
    text: str
    def __init__(self, exec_id: _Optional[str] = ..., stream: _Optional[_Union[OutputStream, str]] = ..., text: _Optional[str] = ...) -> None: ...

class ExecCommandEnd(_message.Message):
    __slots__ = ("exec_id", "exit_code", "duration_ms", "timed_out", "output_truncated")
    EXEC_ID_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    TIMED_OUT_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    exec_id: str
    exit_code: int
    duration_ms: int
    timed_out: bool
    output_truncated: bool
    def __init__(self, exec_id: _Optional[str] = ..., exit_code: _Optional[int] = ..., duration_ms: _Optional[int] = ..., timed_out: _Optional[bool] = ..., output_truncated: _Optional[bool] = ...) -> None: ...

class PermissionRequested(_message.Message):
    __slots__ = ("request_id", "call_id", "tool", "arguments", "summary", "reason", "display", "control_characters")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_FIELD_NUMBER: _ClassVar[int]
    CONTROL_CHARACTERS_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    call_id: str
    tool: str
    arguments: _struct_pb2.Struct
    summary: str
    reason: str
    display: str
    control_characters: bool
    def __init__(self, request_id: _Optional[str] = ..., call_id: _Optional[str] = ..., tool: _Optional[str] = ..., arguments: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., summary: _Optional[str] = ..., reason: _Optional[str] = ..., display: _Optional[str] = ..., control_characters: _Optional[bool] = ...) -> None: ...

class ApprovalResolved(_message.Message):
    __slots__ = ("request_id", "decision", "resolution", "reason")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    RESOLUTION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    decision: ApprovalDecision
    resolution: ApprovalResolution
    reason: str
    def __init__(self, request_id: _Optional[str] = ..., decision: _Optional[_Union[ApprovalDecision, str]] = ..., resolution: _Optional[_Union[ApprovalResolution, str]] = ..., reason: _Optional[str] = ...) -> None: ...

class PlanStep(_message.Message):
    __slots__ = ("text", "status")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    text: str
    status: PlanStepStatus
    def __init__(self, text: _Optional[str] = ..., status: _Optional[_Union[PlanStepStatus, str]] = ...) -> None: ...

class PlanUpdated(_message.Message):
    __slots__ = ("steps",)
    STEPS_FIELD_NUMBER: _ClassVar[int]
    steps: _containers.RepeatedCompositeFieldContainer[PlanStep]
    def __init__(self, steps: _Optional[_Iterable[_Union[PlanStep, _Mapping]]] = ...) -> None: ...

class TokenUsageReported(_message.Message):
    __slots__ = ("call", "turn_total")
    CALL_FIELD_NUMBER: _ClassVar[int]
    TURN_TOTAL_FIELD_NUMBER: _ClassVar[int]
    call: _common_pb2.TokenUsage
    turn_total: _common_pb2.TokenUsage
    def __init__(self, call: _Optional[_Union[_common_pb2.TokenUsage, _Mapping]] = ..., turn_total: _Optional[_Union[_common_pb2.TokenUsage, _Mapping]] = ...) -> None: ...

class ErrorOccurred(_message.Message):
    __slots__ = ("code", "message", "fatal")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    FATAL_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    fatal: bool
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ..., fatal: _Optional[bool] = ...) -> None: ...

class HistoryCompacted(_message.Message):
    __slots__ = ("summary", "through_turn_id", "turns_compacted", "tokens_before", "tokens_after", "usage")
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    THROUGH_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    TURNS_COMPACTED_FIELD_NUMBER: _ClassVar[int]
    TOKENS_BEFORE_FIELD_NUMBER: _ClassVar[int]
    TOKENS_AFTER_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    summary: str
    through_turn_id: str
    turns_compacted: int
    tokens_before: int
    tokens_after: int
    usage: _common_pb2.TokenUsage
    def __init__(self, summary: _Optional[str] = ..., through_turn_id: _Optional[str] = ..., turns_compacted: _Optional[int] = ..., tokens_before: _Optional[int] = ..., tokens_after: _Optional[int] = ..., usage: _Optional[_Union[_common_pb2.TokenUsage, _Mapping]] = ...) -> None: ...

class MemoryRecalled(_message.Message):
    __slots__ = ("records", "section")
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    SECTION_FIELD_NUMBER: _ClassVar[int]
    records: int
    section: str
    def __init__(self, records: _Optional[int] = ..., section: _Optional[str] = ...) -> None: ...

class NetworkConnectionAttempted(_message.Message):
    __slots__ = ("host", "port", "address", "allowed", "reason")
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    host: str
    port: int
    address: str
    allowed: bool
    reason: str
    def __init__(self, host: _Optional[str] = ..., port: _Optional[int] = ..., address: _Optional[str] = ..., allowed: _Optional[bool] = ..., reason: _Optional[str] = ...) -> None: ...

class UserInputAdded(_message.Message):
    __slots__ = ("text", "mode")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    text: str
    mode: _common_pb2.InputMode
    def __init__(self, text: _Optional[str] = ..., mode: _Optional[_Union[_common_pb2.InputMode, str]] = ...) -> None: ...

class SessionRewound(_message.Message):
    __slots__ = ("to_turn", "to_turn_id", "to_sequence", "turns_left", "entries")
    TO_TURN_FIELD_NUMBER: _ClassVar[int]
    TO_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    TO_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TURNS_LEFT_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    to_turn: int
    to_turn_id: str
    to_sequence: int
    turns_left: int
    entries: int
    def __init__(self, to_turn: _Optional[int] = ..., to_turn_id: _Optional[str] = ..., to_sequence: _Optional[int] = ..., turns_left: _Optional[int] = ..., entries: _Optional[int] = ...) -> None: ...

class SubagentStarted(_message.Message):
    __slots__ = ("call_id", "child_session_id", "child_turn_id", "agent_id", "workspace")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    CHILD_SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    CHILD_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    child_session_id: str
    child_turn_id: str
    agent_id: str
    workspace: str
    def __init__(self, call_id: _Optional[str] = ..., child_session_id: _Optional[str] = ..., child_turn_id: _Optional[str] = ..., agent_id: _Optional[str] = ..., workspace: _Optional[str] = ...) -> None: ...

class SubagentFinished(_message.Message):
    __slots__ = ("call_id", "child_session_id", "child_turn_id", "agent_id", "outcome", "error", "usage")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    CHILD_SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    CHILD_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    child_session_id: str
    child_turn_id: str
    agent_id: str
    outcome: TurnOutcome
    error: str
    usage: _common_pb2.TokenUsage
    def __init__(self, call_id: _Optional[str] = ..., child_session_id: _Optional[str] = ..., child_turn_id: _Optional[str] = ..., agent_id: _Optional[str] = ..., outcome: _Optional[_Union[TurnOutcome, str]] = ..., error: _Optional[str] = ..., usage: _Optional[_Union[_common_pb2.TokenUsage, _Mapping]] = ...) -> None: ...

class HumanInputRequested(_message.Message):
    __slots__ = ("request_id", "call_id", "tool", "server", "message", "requested_schema", "display")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    call_id: str
    tool: str
    server: str
    message: str
    requested_schema: _struct_pb2.Struct
    display: str
    def __init__(self, request_id: _Optional[str] = ..., call_id: _Optional[str] = ..., tool: _Optional[str] = ..., server: _Optional[str] = ..., message: _Optional[str] = ..., requested_schema: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., display: _Optional[str] = ...) -> None: ...

class HumanInputAnswered(_message.Message):
    __slots__ = ("request_id", "action", "resolution", "answer", "reason")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    RESOLUTION_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    action: HumanInputAction
    resolution: ApprovalResolution
    answer: _struct_pb2.Struct
    reason: str
    def __init__(self, request_id: _Optional[str] = ..., action: _Optional[_Union[HumanInputAction, str]] = ..., resolution: _Optional[_Union[ApprovalResolution, str]] = ..., answer: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., reason: _Optional[str] = ...) -> None: ...
