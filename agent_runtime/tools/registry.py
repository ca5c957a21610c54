"""Tools the model can call: a name, a description, a JSON Schema and a handler.

The registry keeps tools in the order they were added (the tool catalog is part of the cached
prompt prefix, so its order must not change from one request to the next), validates the
model's arguments against the schema before calling a handler, and turns every failure into a
clear message fed back to the model rather than an exception.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from agent_runtime.process.disk_space import is_disk_full
from agent_runtime.transport.httpclient import HttpError

if TYPE_CHECKING:
    import jsonschema.exceptions

Handler = Callable[[dict[str, Any]], str]
FailureHook = Callable[[str, Any, str], object]
# host: a tool the orchestrator itself runs for the agent (http_request, exec, notify).
ToolSource = Literal["builtin", "mcp", "peer", "orchestrator_mcp", "host"]
# Tools whose parameter schema was written outside this runtime (the orchestrator's host tools
# are sent over the wire too, so they are checked like a server's).
FOREIGN_SCHEMA_SOURCES: frozenset[ToolSource] = frozenset({"mcp", "orchestrator_mcp", "host"})
ApprovalOutcome = Literal["approved", "denied", "expired"]
DEFAULT_MAX_OUTPUT_CHARS = 16_000


class ToolError(Exception):
    """Raised by a handler for an expected failure; the message goes back to the model as is."""


# What a handler may raise for a failed call. Anything else is a bug and propagates.
TOOL_FAILURES: tuple[type[BaseException], ...] = (
    ToolError,
    ValueError,
    LookupError,
    OSError,
    HttpError,
)


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    handler: Handler = field(compare=False)
    source: ToolSource = "builtin"

    def spec(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


@dataclass(frozen=True)
class Verdict:
    """An operator's decision on a call that needed approval."""

    state: ApprovalOutcome
    approval_id: str
    reason: str = ""

    @property
    def allowed(self) -> bool:
        return self.state == "approved"


# Asked before a tool runs: None when the call needs no approval, else the operator's decision.
Gate = Callable[[str, dict[str, Any]], Verdict | None]


@dataclass(frozen=True)
class ToolOutcome:
    name: str
    ok: bool
    output: str
    arguments: Any
    source: ToolSource = "builtin"
    verdict: Verdict | None = None
    duration_s: float = 0.0


def parse_arguments(raw: str | dict[str, Any] | None) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if raw is None or not raw.strip():
        return {}
    parsed = json.loads(raw)
    if not isinstance(parsed, dict):
        raise ValueError(f"arguments must be a JSON object, got {type(parsed).__name__}")
    return parsed


def _schema_problem(error: jsonschema.exceptions.ValidationError) -> str:
    where = "/".join(str(part) for part in error.absolute_path)
    return f"{error.message} (at '{where}')" if where else error.message


class ToolRegistry:
    def __init__(
        self,
        tools: Iterable[Tool] = (),
        *,
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
        on_failure: FailureHook | None = None,
        gate: Gate | None = None,
    ) -> None:
        self._tools: dict[str, Tool] = {}
        # Made on a tool's first call: jsonschema costs an agent tens of milliseconds at start, and
        # most tools are never called in a given run.
        self._validators: dict[str, Any] = {}
        self.max_output_chars = max_output_chars
        self.on_failure = on_failure
        self.gate = gate
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        """Register a tool. A schema from outside the runtime (an MCP server's) is checked here;
        the runtime's own, the peer tools' included, are checked by its tests."""
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is registered twice")
        if tool.source in FOREIGN_SCHEMA_SOURCES:
            import jsonschema.exceptions
            import jsonschema.validators

            try:
                jsonschema.validators.validator_for(tool.parameters).check_schema(tool.parameters)
            except jsonschema.exceptions.SchemaError as bad:
                raise ValueError(
                    f"tool {tool.name!r} has an invalid parameter schema: {bad.message}"
                ) from None
        self._tools[tool.name] = tool

    def _validator(self, tool: Tool) -> Any:
        validator = self._validators.get(tool.name)
        if validator is None:
            import jsonschema.validators

            validator = jsonschema.validators.validator_for(tool.parameters)(tool.parameters)
            self._validators[tool.name] = validator
        return validator

    def extend(self, tools: Iterable[Tool]) -> None:
        for tool in tools:
            self.add(tool)

    def names(self) -> list[str]:
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def tools(self) -> list[Tool]:
        return list(self._tools.values())

    def specs(self) -> list[dict[str, Any]]:
        return [tool.spec() for tool in self._tools.values()]

    def dispatch(self, name: str, raw_arguments: str | dict[str, Any] | None) -> ToolOutcome:
        tool = self._tools.get(name)
        if tool is None:
            known = ", ".join(self._tools) or "none"
            return self._failed(name, raw_arguments, f"unknown tool {name!r}; available tools: {known}")
        try:
            arguments = parse_arguments(raw_arguments)
        except (json.JSONDecodeError, ValueError) as bad:
            return self._failed(
                name, raw_arguments, f"arguments for {name} are not a valid JSON object: {bad}"
            )
        problems = sorted(self._validator(tool).iter_errors(arguments), key=lambda e: list(e.absolute_path))
        if problems:
            details = "; ".join(_schema_problem(problem) for problem in problems[:5])
            return self._failed(name, arguments, f"invalid arguments for {name}: {details}")
        verdict = self.gate(name, arguments) if self.gate is not None else None
        if verdict is not None and not verdict.allowed:
            return _denied(tool, arguments, verdict)
        started = time.monotonic()
        try:
            output = tool.handler(arguments)
        except TOOL_FAILURES as failed:
            return self._failed(name, arguments, _failure_message(name, failed), tool.source, verdict)
        return ToolOutcome(
            name=name,
            ok=True,
            output=self._clip(output),
            arguments=arguments,
            source=tool.source,
            verdict=verdict,
            duration_s=time.monotonic() - started,
        )

    def _failed(
        self,
        name: str,
        arguments: Any,
        message: str,
        source: ToolSource = "builtin",
        verdict: Verdict | None = None,
    ) -> ToolOutcome:
        if self.on_failure is not None:
            self.on_failure(name, arguments, message)
        return ToolOutcome(
            name=name,
            ok=False,
            output=f"ERROR: {message}",
            arguments=arguments,
            source=source,
            verdict=verdict,
        )

    def _clip(self, output: str) -> str:
        if len(output) <= self.max_output_chars:
            return output
        return (
            output[: self.max_output_chars]
            + f"\n[... output cut: {self.max_output_chars} of {len(output)} characters shown]"
        )


def _failure_message(name: str, failed: BaseException) -> str:
    """What the model is told of a failed call; a call refused for want of space says so, for
    the model to go on without it rather than try again."""
    message = str(failed) or failed.__class__.__name__
    if is_disk_full(failed) or (failed.__cause__ is not None and is_disk_full(failed.__cause__)):
        return (
            f"{name} was refused: the agent's disk is full ({message}). Nothing was written; "
            "do not call it again for this request, go on without it and say so."
        )
    return f"{name} failed: {message}"


def _denied(tool: Tool, arguments: dict[str, Any], verdict: Verdict) -> ToolOutcome:
    why = "no operator decided in time" if verdict.state == "expired" else "the operator denied it"
    reason = f" ({verdict.reason})" if verdict.reason and verdict.state == "denied" else ""
    return ToolOutcome(
        name=tool.name,
        ok=False,
        output=f"DENIED: {tool.name} was not run: {why}{reason} [approval {verdict.approval_id}]. "
        "Do not call it again for this request; go on without it and say so.",
        arguments=arguments,
        source=tool.source,
        verdict=verdict,
    )
