"""The `exec` tool of one agent: checked against its `tools.exec` policy and approval rules, run
by the runtime's sandbox, its output files written back through the workspace's one write path,
and published as an `exec.ran` event (a refusal as `exec.refused`)."""

from __future__ import annotations

import asyncio
import base64
import builtins
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent_runtime.protocol import (
    OrchestratorTool,
    OrchestratorToolCall,
    OrchestratorToolResult,
    OrchestratorTools,
)
from orchestrator.approvals import ApprovalStore
from orchestrator.backends.base import Backend, BackendError
from orchestrator.backends.sandbox import (
    OUTPUT_FILE_BYTES,
    CodeSandbox,
    SandboxJob,
    SandboxLimits,
    SandboxOutcome,
)
from orchestrator.config.exec_tool import ExecPolicy
from orchestrator.config.tools import ToolsConfig
from orchestrator.config.units import format_bytes
from orchestrator.errors import Refused
from orchestrator.events import EventBus
from orchestrator.host_tools.approval_check import unapproved
from orchestrator.host_tools.base import HostToolRefused
from orchestrator.host_tools.sandbox.arguments import ExecArguments, input_schema, parse_arguments
from orchestrator.host_tools.sandbox.result import WrittenOutput, agent_text, event_data, verdict
from orchestrator.host_tools.sandbox.slots import SLOTS
from orchestrator.host_tools.sandbox.staging import staged_inputs
from orchestrator.workspaces.access import AgentWorkspace, WorkspaceAccess

log = logging.getLogger(__name__)

EXEC_TOOL = "exec"
EXEC_RAN = "exec.ran"
EXEC_REFUSED = "exec.refused"
# A refusal quotes at most this much of what it refuses, to the agent, events and logs.
REASON_CHARS = 300


class ExecRefused(HostToolRefused):
    """The exec call is not allowed (no policy, not approved, no sandbox in this runtime)."""


@dataclass(frozen=True)
class ExecContext:
    """What one agent's exec tool works with, taken from the orchestrator's parts."""

    fleet: str
    agent: str
    image: str
    tools: ToolsConfig
    backend: Backend
    workspaces: WorkspaceAccess
    approvals: ApprovalStore
    events: EventBus
    staging_root: Path


class ExecTool:
    def __init__(self, context: ExecContext, charge_refusal: Callable[[], None] | None = None) -> None:
        """`charge_refusal` charges a refused call to the agent's rates (RateLimited past them)."""
        self._context = context
        self._policy = context.tools.exec
        self._charge_refusal = charge_refusal

    def owns(self, name: str) -> bool:
        return name == EXEC_TOOL and self._policy is not None

    async def list(self) -> OrchestratorTools:
        policy = self._policy
        if policy is None:
            return OrchestratorTools()
        tool = OrchestratorTool(
            name=EXEC_TOOL,
            server="sandbox",
            kind="host",
            description=_description(policy),
            input_schema=input_schema(),
        )
        problem = self._sandbox_problem(policy)
        return OrchestratorTools(tools=[tool], problems=[problem] if problem else [])

    async def call(self, request: OrchestratorToolCall) -> OrchestratorToolResult:
        policy = self._policy
        if policy is None:
            raise self._refused(
                f"agent {self._context.agent} has no exec tool: declare tools.exec in fleet.yaml"
            )
        arguments = parse_arguments(request.arguments)
        if isinstance(arguments, str):
            self._charge()
            self._context.events.publish(EXEC_REFUSED, self._context.agent, reason=arguments[:REASON_CHARS])
            return OrchestratorToolResult(ok=False, output=arguments)
        reason = unapproved(self._context.approvals, self._context.agent, self._context.tools, request)
        if reason is not None:
            raise self._refused(reason)
        sandbox = self._sandbox(policy)
        limits = _limits(policy, arguments)
        async with SLOTS.slot(f"{self._context.fleet}/{self._context.agent}"):
            try:
                outcome = await SLOTS.run(lambda: self._run(sandbox, arguments, limits))
            except BackendError as failed:
                outcome = SandboxOutcome(None, 0.0, problem=str(failed))
        ok, first_line = verdict(outcome, limits)
        written = await asyncio.to_thread(self._write_back, outcome, arguments, ok)
        data = event_data(arguments.shown, outcome, ok, sandbox.confined, arguments.files, written)
        # The inbox item joins the event to the run record of the turn that made the call.
        self._context.events.publish(EXEC_RAN, self._context.agent, item_id=request.item_id, **data)
        log.info("agent %s: exec %r: %s", self._context.agent, arguments.shown, first_line)
        return OrchestratorToolResult(ok=ok, output=agent_text(outcome, limits, first_line, written))

    def _sandbox_problem(self, policy: ExecPolicy) -> str | None:
        try:
            self._sandbox(policy, publish=False)
        except ExecRefused as refused:
            return str(refused)
        return None

    def _sandbox(self, policy: ExecPolicy, publish: bool = True) -> CodeSandbox:
        backend = self._context.backend
        try:
            sandbox = backend.sandbox()
        except BackendError as missing:
            raise self._refused(f"exec: {missing}", publish) from None
        if not sandbox.confined and not policy.allow_unsandboxed:
            raise self._refused(
                f"exec refused: {sandbox.description}. Run the fleet with the docker runtime, or set "
                f"tools.exec.allow_unsandboxed: true for agent {self._context.agent} to run its commands "
                "on the host unsandboxed",
                publish,
            )
        return sandbox

    def _run(self, sandbox: CodeSandbox, arguments: ExecArguments, limits: SandboxLimits) -> SandboxOutcome:
        access = self._context.workspaces.open(self._context.agent)
        with staged_inputs(self._context.staging_root, access.workspace, arguments.files) as inputs:
            job = SandboxJob(
                fleet=self._context.fleet,
                agent=self._context.agent,
                image=self._context.image,
                argv=arguments.argv,
                limits=limits,
                inputs_dir=inputs,
                outputs=arguments.outputs,
            )
            return sandbox.run(job)

    def _write_back(
        self, outcome: SandboxOutcome, arguments: ExecArguments, ok: bool
    ) -> builtins.list[WrittenOutput]:
        """The output files, each through the one write path as the agent, then handed to it.
        Only from a command that succeeded: a failed one may have left them half written."""
        report = outcome.report
        if not arguments.outputs:
            return []
        if report is None or not ok:
            return [WrittenOutput(name, problem="the command did not succeed") for name in arguments.outputs]
        access = self._context.workspaces.open(self._context.agent)
        written = []
        for name in arguments.outputs:
            if name in report.too_large:
                written.append(WrittenOutput(name, problem=f"larger than {OUTPUT_FILE_BYTES} bytes"))
            else:
                written.append(self._write_one(access, name, report.outputs.get(name), arguments))
        changed = [output.name for output in written if not output.problem]
        if changed:
            self._context.workspaces.push_files(access, changed)
        return written

    def _write_one(
        self, access: AgentWorkspace, name: str, encoded: str | None, arguments: ExecArguments
    ) -> WrittenOutput:
        if encoded is None:
            return WrittenOutput(name, problem="no such file in /work when the command ended")
        try:
            text = base64.b64decode(encoded, validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return WrittenOutput(name, problem="not UTF-8 text")
        reason = f"exec output: {arguments.shown}"
        try:
            result = self._context.workspaces.write_file(
                access, name, text, reason, author="agent", source="exec"
            )
        except Refused as refused:
            return WrittenOutput(name, problem=refused.message)
        except OSError as failed:
            return WrittenOutput(name, problem=f"the host could not write it ({failed.strerror or failed})")
        return WrittenOutput(name, result.version, result.size)

    def _refused(self, reason: str, publish: bool = True) -> ExecRefused:
        if publish:
            self._charge()
            reason = reason[:REASON_CHARS]
            log.warning("agent %s: exec refused: %s", self._context.agent, reason)
            self._context.events.publish(EXEC_REFUSED, self._context.agent, reason=reason)
        return ExecRefused(reason)

    def _charge(self) -> None:
        if self._charge_refusal is not None:
            self._charge_refusal()


def _limits(policy: ExecPolicy, arguments: ExecArguments) -> SandboxLimits:
    asked = arguments.timeout_s
    return SandboxLimits(
        timeout_s=min(asked, policy.timeout_s) if asked is not None else policy.timeout_s,
        memory_bytes=policy.memory_bytes,
        cpus=policy.cpus,
        pids=policy.pids,
        output_bytes=policy.output_bytes,
        work_bytes=policy.work_bytes,
    )


def _description(policy: ExecPolicy) -> str:
    return (
        "Run a command (or Python source) in a throwaway sandbox: a fresh container with no "
        "network, a read-only system and a writable work folder /work (the current folder), "
        f"at most {policy.timeout_s:g} s, {format_bytes(policy.memory_bytes)} of memory and "
        f"{policy.pids} processes; {policy.output_bytes} bytes of stdout and of stderr come back. "
        "Workspace files named in `files` are readable at /workspace/NAME; files named in `outputs` "
        "are copied back from /work/NAME as new versions of those workspace files. Nothing else "
        "survives the call."
    )
