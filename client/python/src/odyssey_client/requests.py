"""Request builders shared by the sync and ``asyncio`` clients: one place that turns
keyword arguments into ``odyssey.v1`` messages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Mapping, Optional, Sequence, Union, cast

from odyssey.v1 import bundle_pb2, common_pb2, execution_pb2, session_pb2

#: Archive bytes per BuildBundle / ImportBundle message: well under the server's limit.
CHUNK_BYTES = 256 * 1024

#: A sandbox mode or approval policy, as the enum value or its short name
#: (``"workspace_write"``, ``"never"``).
SandboxMode = Union[common_pb2.SandboxMode, str]
ApprovalPolicy = Union[common_pb2.ApprovalPolicy, str]
#: A model: a ``ModelSpec``, or ``"provider/name"``.
Model = Union[common_pb2.ModelSpec, str]
#: How SendInput takes input: the enum value or ``"steer"``, ``"queue"``, ``"interrupt"``.
InputMode = Union[common_pb2.InputMode, str]


@dataclass(frozen=True)
class ExportedBundle:
    """An installed bundle as ExportBundle sends it: its identity and its archive
    (tar + gzip), which ``import_bundle`` installs elsewhere."""

    bundle: bundle_pb2.Bundle
    archive: bytes


def sandbox_mode(mode: Optional[SandboxMode]) -> common_pb2.SandboxMode:
    if mode is None:
        return common_pb2.SANDBOX_MODE_UNSPECIFIED
    if isinstance(mode, str):
        return cast(common_pb2.SandboxMode, common_pb2.SandboxMode.Value("SANDBOX_MODE_" + mode.upper()))
    return mode


def approval_policy(policy: Optional[ApprovalPolicy]) -> common_pb2.ApprovalPolicy:
    if policy is None:
        return common_pb2.APPROVAL_POLICY_UNSPECIFIED
    if isinstance(policy, str):
        return cast(
            common_pb2.ApprovalPolicy,
            common_pb2.ApprovalPolicy.Value("APPROVAL_POLICY_" + policy.upper()),
        )
    return policy


def send_input(session_id: str, text: str, mode: InputMode) -> execution_pb2.SendInputRequest:
    if isinstance(mode, str):
        mode = cast(common_pb2.InputMode, common_pb2.InputMode.Value("INPUT_MODE_" + mode.upper()))
    return execution_pb2.SendInputRequest(session_id=session_id, text=text, mode=mode)


def model_spec(model: Optional[Model]) -> Optional[common_pb2.ModelSpec]:
    if model is None or isinstance(model, common_pb2.ModelSpec):
        return model
    provider, slash, name = model.partition("/")
    if not slash or not provider or not name:
        raise ValueError(f"model {model!r}: expected provider/name")
    return common_pb2.ModelSpec(provider=provider, name=name)


def create_session(
    bundle_reference: str,
    agent_id: str,
    model: Optional[Model],
    sandbox: Optional[SandboxMode],
    approvals: Optional[ApprovalPolicy],
    metadata: Optional[Mapping[str, str]],
    token_budget: int,
) -> session_pb2.CreateSessionRequest:
    return session_pb2.CreateSessionRequest(
        bundle_reference=bundle_reference,
        agent_id=agent_id,
        model=model_spec(model),
        sandbox_mode=sandbox_mode(sandbox),
        approval_policy=approval_policy(approvals),
        metadata=metadata or {},
        token_budget=token_budget,
    )


def fork(session_id: str, after_turn: int, at_sequence: int) -> session_pb2.ForkSessionRequest:
    """A ForkSession request: exactly one of ``after_turn`` and ``at_sequence``."""
    if (after_turn > 0) == (at_sequence > 0):
        raise ValueError("give exactly one of after_turn (a turn number) and at_sequence")
    if after_turn > 0:
        return session_pb2.ForkSessionRequest(session_id=session_id, after_turn=after_turn)
    return session_pb2.ForkSessionRequest(session_id=session_id, at_sequence=at_sequence)


def turn_input(
    session_id: str,
    prompt: str,
    cwd: str,
    model: Optional[Model],
    metadata: Optional[Mapping[str, str]],
) -> execution_pb2.TurnInput:
    overrides = None
    spec = model_spec(model)
    if cwd or spec is not None:
        overrides = execution_pb2.TurnOverrides(cwd=cwd, model=spec)
    return execution_pb2.TurnInput(
        session_id=session_id, prompt=prompt, overrides=overrides, metadata=metadata or {}
    )


def command(
    session_id: str,
    argv: Union[str, Sequence[str]],
    cwd: str,
    timeout_ms: int,
) -> execution_pb2.RunSessionCommandRequest:
    """A command as an argv list, or a command line split with shell quoting rules (no
    shell runs it)."""
    if isinstance(argv, str):
        return execution_pb2.RunSessionCommandRequest(
            session_id=session_id, command_line=argv, cwd=cwd, timeout_ms=timeout_ms
        )
    return execution_pb2.RunSessionCommandRequest(
        session_id=session_id, argv=list(argv), cwd=cwd, timeout_ms=timeout_ms
    )


def stream_command(request: execution_pb2.RunSessionCommandRequest) -> execution_pb2.StreamSessionCommandRequest:
    return execution_pb2.StreamSessionCommandRequest(
        session_id=request.session_id,
        argv=request.argv,
        command_line=request.command_line,
        cwd=request.cwd,
        timeout_ms=request.timeout_ms,
    )


def build_messages(
    archive: bytes, namespace: str, force: bool
) -> Iterator[bundle_pb2.BuildBundleRequest]:
    yield bundle_pb2.BuildBundleRequest(
        options=bundle_pb2.BuildOptions(namespace=namespace, force=force)
    )
    for start in range(0, len(archive), CHUNK_BYTES):
        yield bundle_pb2.BuildBundleRequest(chunk=archive[start : start + CHUNK_BYTES])


def import_messages(
    archive: bytes, namespace: str, force: bool
) -> Iterator[bundle_pb2.ImportBundleRequest]:
    yield bundle_pb2.ImportBundleRequest(
        options=bundle_pb2.ImportOptions(namespace=namespace, force=force)
    )
    for start in range(0, len(archive), CHUNK_BYTES):
        yield bundle_pb2.ImportBundleRequest(chunk=archive[start : start + CHUNK_BYTES])
