"""For the `test` model: a deterministic JSON value that satisfies a JSON Schema.

Peers answer typed operations with a JSON object matching the operation's output schema; the
test model builds one from the schema alone, so contracts can be exercised offline.
"""

from __future__ import annotations

from typing import Any

MAX_DEPTH = 6


def sample(schema: dict[str, Any], hint: str, depth: int = 0) -> Any:
    """A value of the schema's type; strings mention `hint` so answers can be traced."""
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if depth >= MAX_DEPTH:
        return None
    if kind == "object":
        properties = schema.get("properties", {})
        required = schema.get("required", list(properties))
        return {name: sample(properties.get(name, {}), f"{hint} {name}", depth + 1) for name in required}
    if kind == "array":
        count = max(1, int(schema.get("minItems", 2)))
        items = schema.get("items", {"type": "string"})
        return [sample(items, f"{hint} #{i + 1}", depth + 1) for i in range(count)]
    return _scalar(kind, schema, hint)


def _scalar(kind: str, schema: dict[str, Any], hint: str) -> Any:
    if kind == "string":
        text = f"[test model] {hint.strip()}"
        return text.ljust(int(schema.get("minLength", 0)), ".")
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return True
    return None
