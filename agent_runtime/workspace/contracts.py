"""INTERFACE.md as a contract: operations with JSON Schemas in YAML front matter.

    ---
    operations:
      - name: summarize
        description: Summarize a text in a few sentences.
        input:
          type: object
          properties: {text: {type: string}}
          required: [text]
        output:
          type: object
          properties: {summary: {type: string}}
          required: [summary]
    ---
    Free markdown for models: when to call me, what I am good at.

A file without front matter is valid: free text and no operations. Both sides use this module:
the agent runtime refuses a broken rewrite of its own INTERFACE.md, the broker validates every
ask and answer against the callee's schemas.
"""

from __future__ import annotations

import functools
import json
import re
import threading
from collections import OrderedDict
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agent_runtime.safety.safe_yaml import YamlRefused, load_yaml
from agent_runtime.workspace.wire import OperationSpec

FRONT_MATTER_FENCE = "---"
TOP_LEVEL_KEYS = frozenset({"operations"})
OPERATION_KEYS = frozenset({"name", "description", "input", "output"})
OPERATION_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
DEFAULT_SCHEMA: dict[str, Any] = {"type": "object"}
MAX_FRONT_MATTER_VALUES = 10_000


class ContractError(ValueError):
    """An INTERFACE.md that cannot be enforced; the message says which operation and why."""


class Interface(BaseModel):
    """A parsed INTERFACE.md: the typed operations and the free text for models."""

    model_config = ConfigDict(frozen=True)

    operations: list[OperationSpec] = Field(default_factory=list)
    body: str = ""

    def operation(self, name: str) -> OperationSpec | None:
        for op in self.operations:
            if op.name == name:
                return op
        return None

    @property
    def operation_names(self) -> list[str]:
        return [op.name for op in self.operations]


def split_front_matter(text: str) -> tuple[str | None, str]:
    """(front matter YAML or None, body). Front matter must open on the very first line.

    Kept rather than python-frontmatter, which parses the YAML itself with PyYAML's unbounded
    loader: INTERFACE.md comes from agents, so its YAML goes through the bounded reader
    (`agent_runtime.safety.safe_yaml`), and the agent image stays without another dependency."""
    stripped = text.removeprefix("\ufeff")
    lines = stripped.splitlines(keepends=True)
    if not lines or lines[0].rstrip() != FRONT_MATTER_FENCE:
        return None, text
    for index in range(1, len(lines)):
        if lines[index].rstrip() in (FRONT_MATTER_FENCE, "..."):
            return "".join(lines[1:index]), "".join(lines[index + 1 :]).lstrip("\n")
    raise ContractError("front matter opened with '---' on line 1 is never closed by a '---' line")


def parse_interface(text: str) -> Interface:
    """Parse and check an INTERFACE.md. Raises ContractError naming what is wrong and where."""
    return _parse_interface(text)


# Checking schemas costs milliseconds; the orchestrator parses each peer's contract for every
# agent that talks to it. Interfaces are frozen, so a parsed one can be handed out again.
@functools.lru_cache(maxsize=512)
def _parse_interface(text: str) -> Interface:
    front, body = split_front_matter(text)
    if front is None:
        return Interface(body=text)
    data = _load_yaml(front)
    if data is None:
        return Interface(body=body)
    if not isinstance(data, dict):
        raise ContractError("front matter must be a mapping with an 'operations' list")
    unknown = sorted(str(k) for k in data if k not in TOP_LEVEL_KEYS)
    if unknown:
        raise ContractError(f"front matter: unknown key(s) {', '.join(unknown)} (allowed: operations)")
    raw_ops = _operation_list(data.get("operations") or [])
    operations: list[OperationSpec] = []
    seen: set[str] = set()
    for index, raw in enumerate(raw_ops):
        op = _parse_operation(index, raw)
        if op.name in seen:
            raise ContractError(f"operation '{op.name}': duplicate operation name")
        seen.add(op.name)
        operations.append(op)
    return Interface(operations=operations, body=body)


def _operation_list(raw: Any) -> list[Any]:
    """`operations` as a list of mappings with a `name`, or as a mapping keyed by name (each value
    then the operation without its name)."""
    if isinstance(raw, list):
        return raw
    if not isinstance(raw, dict):
        raise ContractError("front matter: 'operations' must be a list, or a mapping keyed by operation name")
    listed = []
    for name, given in raw.items():
        spec = {} if given is None else given
        if not isinstance(spec, dict):
            raise ContractError(f"operation '{name}': must be a mapping with description, input, output")
        if "name" in spec and spec["name"] != name:
            raise ContractError(
                f"operation '{name}': its 'name' says {spec['name']!r}; keyed by name, leave it out"
            )
        listed.append({**spec, "name": name})
    return listed


def validate_interface_text(text: str) -> None:
    """Raise ContractError when `text` is not an enforceable INTERFACE.md."""
    parse_interface(text)


def _load_yaml(front: str) -> Any:
    """Bounded: a few hundred bytes of aliases must not expand into a schema that takes hours to check."""
    try:
        return load_yaml(front, max_nodes=MAX_FRONT_MATTER_VALUES).data
    except YamlRefused as refused:
        problem = refused.problems[0]
        # +1 for the opening fence line (problem lines are 1-based already).
        where = f" on line {problem.line + 1}" if problem.line else ""
        message = problem.message.removeprefix("invalid YAML: ")
        raise ContractError(f"front matter is not valid YAML{where}: {message}") from None


def _parse_operation(index: int, raw: Any) -> OperationSpec:
    label = f"operation #{index + 1}"
    if not isinstance(raw, dict):
        raise ContractError(f"{label}: must be a mapping with name, description, input, output")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise ContractError(f"{label}: missing 'name'")
    if not OPERATION_NAME.match(name):
        raise ContractError(
            f"operation '{name}': name must be an identifier"
            " (letters, digits, '_', not starting with a digit)"
        )
    label = f"operation '{name}'"
    unknown = sorted(str(k) for k in raw if k not in OPERATION_KEYS)
    if unknown:
        raise ContractError(
            f"{label}: unknown key(s) {', '.join(unknown)} (allowed: name, description, input, output)"
        )
    description = raw.get("description", "")
    if description is None:
        description = ""
    if not isinstance(description, str):
        raise ContractError(f"{label}: 'description' must be text")
    return OperationSpec(
        name=name,
        description=description.strip(),
        input_schema=_check_schema(label, "input", raw.get("input")),
        output_schema=_check_schema(label, "output", raw.get("output")),
    )


def _check_schema(label: str, which: str, schema: Any) -> dict[str, Any]:
    if schema is None:
        return dict(DEFAULT_SCHEMA)
    if not isinstance(schema, dict):
        raise ContractError(f"{label}: '{which}' must be a JSON Schema object (a mapping)")
    # jsonschema (with referencing and rpds, about 30 ms) loads with the first schema to check:
    # a fleet without contracts, and `flotilla up` until one is met, never loads it.
    import jsonschema.exceptions
    import jsonschema.validators

    validator_cls = jsonschema.validators.validator_for(schema)
    try:
        validator_cls.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        raise ContractError(
            f"{label}: '{which}' is not a valid JSON Schema at {where}: {exc.message}"
        ) from None
    declared = schema.get("type")
    if declared is not None and "object" not in (declared if isinstance(declared, list) else [declared]):
        raise ContractError(
            f"{label}: '{which}' must describe a JSON object (type: object), not {declared!r}"
        )
    return schema


# --- payload validation --------------------------------------------------------------------

_CACHE_SIZE = 256
_validators: OrderedDict[str, Any] = OrderedDict()
_validators_lock = threading.Lock()


def _validator(schema: dict[str, Any]) -> Any:
    """A compiled validator per distinct schema; compiling one per message is wasted work."""
    key = json.dumps(schema, sort_keys=True, default=str)
    with _validators_lock:
        found = _validators.get(key)
        if found is not None:
            _validators.move_to_end(key)
            return found
    import jsonschema.validators

    validator_cls = jsonschema.validators.validator_for(schema)
    compiled = validator_cls(schema, format_checker=validator_cls.FORMAT_CHECKER)
    with _validators_lock:
        _validators[key] = compiled
        while len(_validators) > _CACHE_SIZE:
            _validators.popitem(last=False)
    return compiled


def validate_payload(schema: dict[str, Any], payload: Any) -> list[str]:
    """Every way `payload` breaks `schema`, as 'path: message' lines (empty when valid)."""
    errors = sorted(
        _validator(schema).iter_errors(payload), key=lambda e: "/".join(str(p) for p in e.absolute_path)
    )
    problems = []
    for error in errors:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        problems.append(f"{where}: {error.message}")
    return problems
