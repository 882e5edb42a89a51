import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from odyssey.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Bundle(_message.Message):
    __slots__ = ("ref", "description", "default_agent_id", "agent_ids", "installed_at", "size_bytes", "file_count")
    REF_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    AGENT_IDS_FIELD_NUMBER: _ClassVar[int]
    INSTALLED_AT_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    FILE_COUNT_FIELD_NUMBER: _ClassVar[int]
    ref: _common_pb2.BundleRef
    description: str
    default_agent_id: str
    agent_ids: _containers.RepeatedScalarFieldContainer[str]
    installed_at: _timestamp_pb2.Timestamp
    size_bytes: int
    file_count: int
    def __init__(self, ref: _Optional[_Union[_common_pb2.BundleRef, _Mapping]] = ..., description: _Optional[str] = ..., default_agent_id: _Optional[str] = ..., agent_ids: _Optional[_Iterable[str]] = ..., installed_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., size_bytes: _Optional[int] = ..., file_count: _Optional[int] = ...) -> None: ...

class AgentInfo(_message.Message):
    __slots__ = ("id", "name", "version", "description", "model", "is_default", "tools_allow", "tools_ask", "tools_deny", "bundle_model", "mcp_servers", "delegates", "a2a_agents")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    IS_DEFAULT_FIELD_NUMBER: _ClassVar[int]
    TOOLS_ALLOW_FIELD_NUMBER: _ClassVar[int]
    TOOLS_ASK_FIELD_NUMBER: _ClassVar[int]
    TOOLS_DENY_FIELD_NUMBER: _ClassVar[int]
    BUNDLE_MODEL_FIELD_NUMBER: _ClassVar[int]
    MCP_SERVERS_FIELD_NUMBER: _ClassVar[int]
    DELEGATES_FIELD_NUMBER: _ClassVar[int]
    A2A_AGENTS_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    version: str
    description: str
    model: _common_pb2.ModelSpec
    is_default: bool
    tools_allow: _containers.RepeatedScalarFieldContainer[str]
    tools_ask: _containers.RepeatedScalarFieldContainer[str]
    tools_deny: _containers.RepeatedScalarFieldContainer[str]
    bundle_model: _common_pb2.ModelSpec
    mcp_servers: _containers.RepeatedCompositeFieldContainer[McpServerInfo]
    delegates: _containers.RepeatedScalarFieldContainer[str]
    a2a_agents: _containers.RepeatedCompositeFieldContainer[A2aAgentInfo]
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., version: _Optional[str] = ..., description: _Optional[str] = ..., model: _Optional[_Union[_common_pb2.ModelSpec, _Mapping]] = ..., is_default: _Optional[bool] = ..., tools_allow: _Optional[_Iterable[str]] = ..., tools_ask: _Optional[_Iterable[str]] = ..., tools_deny: _Optional[_Iterable[str]] = ..., bundle_model: _Optional[_Union[_common_pb2.ModelSpec, _Mapping]] = ..., mcp_servers: _Optional[_Iterable[_Union[McpServerInfo, _Mapping]]] = ..., delegates: _Optional[_Iterable[str]] = ..., a2a_agents: _Optional[_Iterable[_Union[A2aAgentInfo, _Mapping]]] = ...) -> None: ...

class McpServerInfo(_message.Message):
    __slots__ = ("name", "kind", "operator")
    NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    name: str
    kind: str
    operator: bool
    def __init__(self, name: _Optional[str] = ..., kind: _Optional[str] = ..., operator: _Optional[bool] = ...) -> None: ...

class SkillInfo(_message.Message):
    __slots__ = ("name", "description", "path", "error", "source")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    path: str
    error: str
    source: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., path: _Optional[str] = ..., error: _Optional[str] = ..., source: _Optional[str] = ...) -> None: ...

class ModelInfo(_message.Message):
    __slots__ = ("agent_id", "model", "available", "detail", "bundle_model")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    BUNDLE_MODEL_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    model: _common_pb2.ModelSpec
    available: bool
    detail: str
    bundle_model: _common_pb2.ModelSpec
    def __init__(self, agent_id: _Optional[str] = ..., model: _Optional[_Union[_common_pb2.ModelSpec, _Mapping]] = ..., available: _Optional[bool] = ..., detail: _Optional[str] = ..., bundle_model: _Optional[_Union[_common_pb2.ModelSpec, _Mapping]] = ...) -> None: ...

class ToolInfo(_message.Message):
    __slots__ = ("name", "source")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    name: str
    source: str
    def __init__(self, name: _Optional[str] = ..., source: _Optional[str] = ...) -> None: ...

class SandboxPolicy(_message.Message):
    __slots__ = ("mode", "network", "mounts_read", "mounts_write", "env", "cpu", "memory_mb")
    class EnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    MODE_FIELD_NUMBER: _ClassVar[int]
    NETWORK_FIELD_NUMBER: _ClassVar[int]
    MOUNTS_READ_FIELD_NUMBER: _ClassVar[int]
    MOUNTS_WRITE_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    CPU_FIELD_NUMBER: _ClassVar[int]
    MEMORY_MB_FIELD_NUMBER: _ClassVar[int]
    mode: _common_pb2.SandboxMode
    network: _containers.RepeatedScalarFieldContainer[str]
    mounts_read: _containers.RepeatedScalarFieldContainer[str]
    mounts_write: _containers.RepeatedScalarFieldContainer[str]
    env: _containers.ScalarMap[str, str]
    cpu: int
    memory_mb: int
    def __init__(self, mode: _Optional[_Union[_common_pb2.SandboxMode, str]] = ..., network: _Optional[_Iterable[str]] = ..., mounts_read: _Optional[_Iterable[str]] = ..., mounts_write: _Optional[_Iterable[str]] = ..., env: _Optional[_Mapping[str, str]] = ..., cpu: _Optional[int] = ..., memory_mb: _Optional[int] = ...) -> None: ...

class InitBundleRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class InitBundleResponse(_message.Message):
    __slots__ = ("archive",)
    ARCHIVE_FIELD_NUMBER: _ClassVar[int]
    archive: bytes
    def __init__(self, archive: _Optional[bytes] = ...) -> None: ...

class BuildBundleRequest(_message.Message):
    __slots__ = ("options", "chunk")
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    options: BuildOptions
    chunk: bytes
    def __init__(self, options: _Optional[_Union[BuildOptions, _Mapping]] = ..., chunk: _Optional[bytes] = ...) -> None: ...

class BuildOptions(_message.Message):
    __slots__ = ("namespace", "force")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    force: bool
    def __init__(self, namespace: _Optional[str] = ..., force: _Optional[bool] = ...) -> None: ...

class BuildBundleResponse(_message.Message):
    __slots__ = ("bundle",)
    BUNDLE_FIELD_NUMBER: _ClassVar[int]
    bundle: Bundle
    def __init__(self, bundle: _Optional[_Union[Bundle, _Mapping]] = ...) -> None: ...

class InspectBundleRequest(_message.Message):
    __slots__ = ("reference",)
    REFERENCE_FIELD_NUMBER: _ClassVar[int]
    reference: str
    def __init__(self, reference: _Optional[str] = ...) -> None: ...

class InspectBundleResponse(_message.Message):
    __slots__ = ("bundle", "agents", "skills", "tools", "sandbox", "readme")
    BUNDLE_FIELD_NUMBER: _ClassVar[int]
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    SKILLS_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    README_FIELD_NUMBER: _ClassVar[int]
    bundle: Bundle
    agents: _containers.RepeatedCompositeFieldContainer[AgentInfo]
    skills: _containers.RepeatedCompositeFieldContainer[SkillInfo]
    tools: _containers.RepeatedCompositeFieldContainer[ToolInfo]
    sandbox: SandboxPolicy
    readme: str
    def __init__(self, bundle: _Optional[_Union[Bundle, _Mapping]] = ..., agents: _Optional[_Iterable[_Union[AgentInfo, _Mapping]]] = ..., skills: _Optional[_Iterable[_Union[SkillInfo, _Mapping]]] = ..., tools: _Optional[_Iterable[_Union[ToolInfo, _Mapping]]] = ..., sandbox: _Optional[_Union[SandboxPolicy, _Mapping]] = ..., readme: _Optional[str] = ...) -> None: ...

class ListBundlesRequest(_message.Message):
    __slots__ = ("page_size", "page_token", "namespace")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    namespace: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., namespace: _Optional[str] = ...) -> None: ...

class ListBundlesResponse(_message.Message):
    __slots__ = ("bundles", "next_page_token")
    BUNDLES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    bundles: _containers.RepeatedCompositeFieldContainer[Bundle]
    next_page_token: str
    def __init__(self, bundles: _Optional[_Iterable[_Union[Bundle, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class DeleteBundleRequest(_message.Message):
    __slots__ = ("reference",)
    REFERENCE_FIELD_NUMBER: _ClassVar[int]
    reference: str
    def __init__(self, reference: _Optional[str] = ...) -> None: ...

class DeleteBundleResponse(_message.Message):
    __slots__ = ("bundle",)
    BUNDLE_FIELD_NUMBER: _ClassVar[int]
    bundle: Bundle
    def __init__(self, bundle: _Optional[_Union[Bundle, _Mapping]] = ...) -> None: ...

class ExportBundleRequest(_message.Message):
    __slots__ = ("reference",)
    REFERENCE_FIELD_NUMBER: _ClassVar[int]
    reference: str
    def __init__(self, reference: _Optional[str] = ...) -> None: ...

class ExportBundleResponse(_message.Message):
    __slots__ = ("bundle", "chunk")
    BUNDLE_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    bundle: Bundle
    chunk: bytes
    def __init__(self, bundle: _Optional[_Union[Bundle, _Mapping]] = ..., chunk: _Optional[bytes] = ...) -> None: ...

class ImportBundleRequest(_message.Message):
    __slots__ = ("options", "chunk")
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    options: ImportOptions
    chunk: bytes
    def __init__(self, options: _Optional[_Union[ImportOptions, _Mapping]] = ..., chunk: _Optional[bytes] = ...) -> None: ...

class ImportOptions(_message.Message):
    __slots__ = ("namespace", "force")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    force: bool
    def __init__(self, namespace: _Optional[str] = ..., force: _Optional[bool] = ...) -> None: ...

class ImportBundleResponse(_message.Message):
    __slots__ = ("bundle",)
    BUNDLE_FIELD_NUMBER: _ClassVar[int]
    bundle: Bundle
    def __init__(self, bundle: _Optional[_Union[Bundle, _Mapping]] = ...) -> None: ...

class PushBundleRequest(_message.Message):
    __slots__ = ("reference", "target")
    REFERENCE_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    reference: str
    target: str
    def __init__(self, reference: _Optional[str] = ..., target: _Optional[str] = ...) -> None: ...

class PushBundleResponse(_message.Message):
    __slots__ = ("target", "manifest_digest", "content_digest", "bundle")
    TARGET_FIELD_NUMBER: _ClassVar[int]
    MANIFEST_DIGEST_FIELD_NUMBER: _ClassVar[int]
    CONTENT_DIGEST_FIELD_NUMBER: _ClassVar[int]
    BUNDLE_FIELD_NUMBER: _ClassVar[int]
    target: str
    manifest_digest: str
    content_digest: str
    bundle: Bundle
    def __init__(self, target: _Optional[str] = ..., manifest_digest: _Optional[str] = ..., content_digest: _Optional[str] = ..., bundle: _Optional[_Union[Bundle, _Mapping]] = ...) -> None: ...

class PullBundleRequest(_message.Message):
    __slots__ = ("reference", "force", "namespace")
    REFERENCE_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    reference: str
    force: bool
    namespace: str
    def __init__(self, reference: _Optional[str] = ..., force: _Optional[bool] = ..., namespace: _Optional[str] = ...) -> None: ...

class PullBundleResponse(_message.Message):
    __slots__ = ("bundle", "manifest_digest", "content_digest", "source")
    BUNDLE_FIELD_NUMBER: _ClassVar[int]
    MANIFEST_DIGEST_FIELD_NUMBER: _ClassVar[int]
    CONTENT_DIGEST_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    bundle: Bundle
    manifest_digest: str
    content_digest: str
    source: str
    def __init__(self, bundle: _Optional[_Union[Bundle, _Mapping]] = ..., manifest_digest: _Optional[str] = ..., content_digest: _Optional[str] = ..., source: _Optional[str] = ...) -> None: ...

class ListAgentsRequest(_message.Message):
    __slots__ = ("bundle_reference",)
    BUNDLE_REFERENCE_FIELD_NUMBER: _ClassVar[int]
    bundle_reference: str
    def __init__(self, bundle_reference: _Optional[str] = ...) -> None: ...

class ListAgentsResponse(_message.Message):
    __slots__ = ("agents",)
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    agents: _containers.RepeatedCompositeFieldContainer[AgentInfo]
    def __init__(self, agents: _Optional[_Iterable[_Union[AgentInfo, _Mapping]]] = ...) -> None: ...

class ListModelsRequest(_message.Message):
    __slots__ = ("bundle_reference",)
    BUNDLE_REFERENCE_FIELD_NUMBER: _ClassVar[int]
    bundle_reference: str
    def __init__(self, bundle_reference: _Optional[str] = ...) -> None: ...

class ListModelsResponse(_message.Message):
    __slots__ = ("models",)
    MODELS_FIELD_NUMBER: _ClassVar[int]
    models: _containers.RepeatedCompositeFieldContainer[ModelInfo]
    def __init__(self, models: _Optional[_Iterable[_Union[ModelInfo, _Mapping]]] = ...) -> None: ...

class ListSkillsRequest(_message.Message):
    __slots__ = ("bundle_reference",)
    BUNDLE_REFERENCE_FIELD_NUMBER: _ClassVar[int]
    bundle_reference: str
    def __init__(self, bundle_reference: _Optional[str] = ...) -> None: ...

class ListSkillsResponse(_message.Message):
    __slots__ = ("skills",)
    SKILLS_FIELD_NUMBER: _ClassVar[int]
    skills: _containers.RepeatedCompositeFieldContainer[SkillInfo]
    def __init__(self, skills: _Optional[_Iterable[_Union[SkillInfo, _Mapping]]] = ...) -> None: ...

class A2aAgentInfo(_message.Message):
    __slots__ = ("name", "url", "operator")
    NAME_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    name: str
    url: str
    operator: bool
    def __init__(self, name: _Optional[str] = ..., url: _Optional[str] = ..., operator: _Optional[bool] = ...) -> None: ...
