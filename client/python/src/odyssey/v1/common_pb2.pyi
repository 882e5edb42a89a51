from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SandboxMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SANDBOX_MODE_UNSPECIFIED: _ClassVar[SandboxMode]
    SANDBOX_MODE_READ_ONLY: _ClassVar[SandboxMode]
    SANDBOX_MODE_WORKSPACE_WRITE: _ClassVar[SandboxMode]
    SANDBOX_MODE_DANGER_FULL_ACCESS: _ClassVar[SandboxMode]

class ApprovalPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    APPROVAL_POLICY_UNSPECIFIED: _ClassVar[ApprovalPolicy]
    APPROVAL_POLICY_ON_REQUEST: _ClassVar[ApprovalPolicy]
    APPROVAL_POLICY_UNTRUSTED: _ClassVar[ApprovalPolicy]
    APPROVAL_POLICY_NEVER: _ClassVar[ApprovalPolicy]

class InputMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INPUT_MODE_UNSPECIFIED: _ClassVar[InputMode]
    INPUT_MODE_STEER: _ClassVar[InputMode]
    INPUT_MODE_QUEUE: _ClassVar[InputMode]
    INPUT_MODE_INTERRUPT: _ClassVar[InputMode]
SANDBOX_MODE_UNSPECIFIED: SandboxMode
SANDBOX_MODE_READ_ONLY: SandboxMode
SANDBOX_MODE_WORKSPACE_WRITE: SandboxMode
SANDBOX_MODE_DANGER_FULL_ACCESS: SandboxMode
APPROVAL_POLICY_UNSPECIFIED: ApprovalPolicy
APPROVAL_POLICY_ON_REQUEST: ApprovalPolicy
APPROVAL_POLICY_UNTRUSTED: ApprovalPolicy
APPROVAL_POLICY_NEVER: ApprovalPolicy
INPUT_MODE_UNSPECIFIED: InputMode
INPUT_MODE_STEER: InputMode
INPUT_MODE_QUEUE: InputMode
INPUT_MODE_INTERRUPT: InputMode

class ModelSpec(_message.Message):
    __slots__ = ("provider", "name", "config")
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    provider: str
    name: str
    config: _struct_pb2.Struct
    def __init__(self, provider: _Optional[str] = ..., name: _Optional[str] = ..., config: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class BundleRef(_message.Message):
    __slots__ = ("namespace", "name", "version", "digest")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    version: str
    digest: str
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ..., version: _Optional[str] = ..., digest: _Optional[str] = ...) -> None: ...

class TokenUsage(_message.Message):
    __slots__ = ("input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens", "total_tokens")
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHED_INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    REASONING_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    reasoning_tokens: int
    total_tokens: int
    def __init__(self, input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., cached_input_tokens: _Optional[int] = ..., reasoning_tokens: _Optional[int] = ..., total_tokens: _Optional[int] = ...) -> None: ...
