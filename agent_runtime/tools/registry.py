"""Tools the model can call: a name, a description, a JSON Schema and a handler.

The registry keeps tools in the order they were added (the tool catalog is part of the cached
prompt prefix, so its order must not change from one request to the next), validates the
model's arguments against the schema before calling a handler, and turns every failure into a
clear message fed back to the model rather than an exception.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import httpx
import jsonschema
import jsonschema.exceptions
import jsonschema.validators

Handler = Callable[[dict[str, Any]], str]
FailureHook = Callable[[str, Any, str], object]
DEFAULT_MAX_OUTPUT_CHARS = 16_000


class ToolError(Exception):
    """Raised by a handler for an expected failure; the message goes back to the model as is."""


# What a handler may raise for a failed call. Anything else is a bug and propagates.
TOOL_FAILURES: tuple[type[BaseException], ...] = (
    ToolError,
    ValueError,
    LookupError,
    OSError,
    httpx.HTTPError,
)


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    handler: Handler = field(compare=False)

    def spec(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


@dataclass(frozen=True)
class ToolOutcome:
    name: str
    ok: bool
    output: str
    arguments: Any


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
    ) -> None:
        self._tools: dict[str, Tool] = {}
        self._validators: dict[str, Any] = {}
        self.max_output_chars = max_output_chars
        self.on_failure = on_failure
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is registered twice")
        validator_class = jsonschema.validators.validator_for(tool.parameters)
        try:
            validator_class.check_schema(tool.parameters)
        except jsonschema.exceptions.SchemaError as bad:
            raise ValueError(f"tool {tool.name!r} has an invalid parameter schema: {bad.message}") from None
        self._tools[tool.name] = tool
        self._validators[tool.name] = validator_class(tool.parameters)

    def extend(self, tools: Iterable[Tool]) -> None:
        for tool in tools:
            self.add(tool)

    def names(self) -> list[str]:
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

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
        problems = sorted(self._validators[name].iter_errors(arguments), key=lambda e: list(e.absolute_path))
        if problems:
            details = "; ".join(_schema_problem(problem) for problem in problems[:5])
            return self._failed(name, arguments, f"invalid arguments for {name}: {details}")
        try:
            output = tool.handler(arguments)
        except TOOL_FAILURES as failed:
            message = str(failed) or failed.__class__.__name__
            return self._failed(name, arguments, f"{name} failed: {message}")
        return ToolOutcome(name=name, ok=True, output=self._clip(output), arguments=arguments)

    def _failed(self, name: str, arguments: Any, message: str) -> ToolOutcome:
        if self.on_failure is not None:
            self.on_failure(name, arguments, message)
        return ToolOutcome(name=name, ok=False, output=f"ERROR: {message}", arguments=arguments)

    def _clip(self, output: str) -> str:
        if len(output) <= self.max_output_chars:
            return output
        return (
            output[: self.max_output_chars]
            + f"\n[... output cut: {self.max_output_chars} of {len(output)} characters shown]"
        )
