"""The tool registry: stable order, specs, validation, errors fed back as text."""

from __future__ import annotations

from typing import Any

import jsonschema.validators
import pytest

from agent_runtime.tools.registry import Tool, ToolError, ToolRegistry
from tests.agent_runtime.conftest import HarnessFactory
from tests.agent_runtime.fakes import Reply


def echo(args: dict[str, Any]) -> str:
    return f"echo {args['word']}"


def failing(args: dict[str, Any]) -> str:
    raise ToolError("the thing is broken")


SCHEMA = {
    "type": "object",
    "properties": {"word": {"type": "string"}},
    "required": ["word"],
    "additionalProperties": False,
}


def test_order_and_specs_are_stable() -> None:
    registry = ToolRegistry([Tool("b", "B", SCHEMA, echo), Tool("a", "A", SCHEMA, echo)])
    assert registry.names() == ["b", "a"]
    assert registry.specs() == registry.specs()
    assert registry.specs()[0] == {
        "type": "function",
        "function": {"name": "b", "description": "B", "parameters": SCHEMA},
    }


def test_duplicate_and_invalid_schema_are_refused() -> None:
    registry = ToolRegistry([Tool("a", "A", SCHEMA, echo)])
    with pytest.raises(ValueError, match="twice"):
        registry.add(Tool("a", "A", SCHEMA, echo))
    for source in ("mcp", "orchestrator_mcp", "host"):
        with pytest.raises(ValueError, match="invalid parameter schema"):
            registry.add(Tool("c", "C", {"type": "no-such-type"}, echo, source=source))
    assert registry.names() == ["a"]


def test_dispatch_validates_and_reports_clearly() -> None:
    failures: list[tuple[str, Any, str]] = []
    registry = ToolRegistry(
        [Tool("echo", "", SCHEMA, echo), Tool("broken", "", {"type": "object"}, failing)],
        on_failure=lambda *args: failures.append(args),
    )
    assert registry.dispatch("echo", '{"word": "hi"}').output == "echo hi"
    unknown = registry.dispatch("nope", "{}")
    assert not unknown.ok and "unknown tool 'nope'; available tools: echo, broken" in unknown.output
    bad_json = registry.dispatch("echo", "{word: hi}")
    assert bad_json.output.startswith("ERROR: arguments for echo are not a valid JSON object")
    missing = registry.dispatch("echo", "{}")
    assert missing.output == "ERROR: invalid arguments for echo: 'word' is a required property"
    wrong_type = registry.dispatch("echo", '{"word": 3}')
    assert "3 is not of type 'string' (at 'word')" in wrong_type.output
    broken = registry.dispatch("broken", "{}")
    assert broken.output == "ERROR: broken failed: the thing is broken"
    assert [f[0] for f in failures] == ["nope", "echo", "echo", "echo", "broken"]


def test_long_output_is_clipped_with_a_notice() -> None:
    registry = ToolRegistry([Tool("big", "", {"type": "object"}, lambda _a: "x" * 100)], max_output_chars=10)
    output = registry.dispatch("big", None).output
    assert output.startswith("x" * 10) and "output cut: 10 of 100 characters shown" in output


def test_every_builtin_tool_of_a_worker_has_a_valid_schema(harness: HarnessFactory) -> None:
    """The registry checks only schemas from outside the runtime; the runtime's own, the peer
    tools' included, are checked here."""
    registry = harness(lambda request: Reply("ok")).worker.registry
    builtin = [tool for tool in registry.tools() if tool.source == "builtin"]
    peer = [tool for tool in registry.tools() if tool.source == "peer"]
    assert len(builtin) >= 8 and len(peer) == 4
    for tool in builtin + peer:
        jsonschema.validators.validator_for(tool.parameters).check_schema(tool.parameters)
