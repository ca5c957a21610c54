"""Conditions (`when`) and input mappings of workflow steps: JMESPath expressions.

An expression reads one JSON document, the run's context: `{"input": <the run's input>,
"steps": {NAME: {"state": ..., "output": ..., "text": ...}}}`. JMESPath evaluates without any
code of ours deciding what an expression may do (no eval), and an expression's AST tells at
validate time which fields it reads (`root_paths`), so a misspelt step or field is refused before
any run.
"""

from __future__ import annotations

from typing import Any

import jmespath
import jmespath.exceptions

ROOTS = ("input", "steps")
STEP_FIELDS = ("state", "output", "text")
# Nodes whose every child is evaluated against the same current node as the node itself.
_SAME_NODE = frozenset(
    {
        "comparator",
        "function_expression",
        "and_expression",
        "or_expression",
        "not_expression",
        "multi_select_list",
        "multi_select_dict",
        "key_val_pair",
    }
)
# Nodes whose first child only is evaluated against the current node (the rest against its result).
_LEFT_ONLY = frozenset(
    {"projection", "value_projection", "filter_projection", "flatten", "pipe", "index_expression", "slice"}
)


class ExpressionError(ValueError):
    """An expression that does not parse, or fails on the run's context."""


def compile_expression(text: str) -> Any:
    """The parsed expression; ExpressionError naming what is wrong with it."""
    try:
        return jmespath.compile(text)
    except jmespath.exceptions.JMESPathError as bad:
        first_line = str(bad).strip().splitlines()[0] if str(bad).strip() else type(bad).__name__
        raise ExpressionError(f"invalid JMESPath expression {text!r}: {first_line}") from None


def evaluate(text: str, context: dict[str, Any]) -> Any:
    try:
        return compile_expression(text).search(context)
    except jmespath.exceptions.JMESPathError as bad:
        raise ExpressionError(f"expression {text!r} failed: {bad}") from None


def is_true(value: Any) -> bool:
    """JMESPath's own truth: false, null, empty strings, lists and objects are false."""
    return value not in (None, False, "", [], {})


def root_paths(text: str) -> list[tuple[str, ...]]:
    """The field paths an expression reads from the context's root, e.g. ('steps', 'a', 'output')."""
    return _paths(compile_expression(text).parsed)


def _paths(node: dict[str, Any]) -> list[tuple[str, ...]]:
    kind = node["type"]
    children: list[dict[str, Any]] = node.get("children", [])
    if kind == "field":
        return [(str(node["value"]),)]
    if kind == "subexpression":
        return _chain(children)
    if kind in _LEFT_ONLY:
        return _paths(children[0]) if children else []
    if kind in _SAME_NODE:
        return [path for child in children for path in _paths(child)]
    return []


def _chain(children: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """A dotted chain: the fields it walks from the root, as far as they are plain fields."""
    first = children[0]
    if first["type"] != "field":
        return _paths(first)
    path = [str(first["value"])]
    for child in children[1:]:
        if child["type"] == "field":
            path.append(str(child["value"]))
            continue
        if child["type"] == "index_expression" and child["children"][0]["type"] == "field":
            path.append(str(child["children"][0]["value"]))
        break
    return [tuple(path)]
