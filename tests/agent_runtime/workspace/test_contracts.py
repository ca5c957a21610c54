"""INTERFACE.md contracts: parsing, every refusal with its reason, payload validation."""

from __future__ import annotations

import pytest

from agent_runtime.workspace.contracts import (
    ContractError,
    parse_interface,
    validate_interface_text,
    validate_payload,
)

VALID = """\
---
operations:
  - name: summarize
    description: |
      Summarize a text.
    input:
      type: object
      properties:
        text: {type: string, minLength: 1}
        max_words: {type: integer, minimum: 1}
      required: [text]
    output:
      type: object
      properties: {summary: {type: string}}
      required: [summary]
  - name: ping
---
# Summarizer

Send me long texts.
"""


def test_parses_operations_and_body() -> None:
    interface = parse_interface(VALID)

    assert interface.operation_names == ["summarize", "ping"]
    summarize = interface.operation("summarize")
    assert summarize is not None
    assert summarize.description == "Summarize a text."
    assert summarize.input_schema["required"] == ["text"]
    assert summarize.output_schema["required"] == ["summary"]
    ping = interface.operation("ping")
    assert ping is not None
    assert ping.input_schema == {"type": "object"}
    assert ping.output_schema == {"type": "object"}
    assert interface.body.startswith("# Summarizer")
    assert interface.operation("missing") is None


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Just free text about me.\n\nNo contract here.",
        "Text first\n---\noperations: []\n---\n",
        "---\n---\nbody only",
        "---\noperations: []\n---\n",
    ],
)
def test_text_without_operations_is_valid(text: str) -> None:
    validate_interface_text(text)
    assert parse_interface(text).operations == []


def test_text_without_front_matter_is_kept_whole_as_body() -> None:
    text = "Text first\n---\noperations: []\n---\n"
    assert parse_interface(text).body == text


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("---\noperations: [\n---\n", "not valid YAML"),
        ("---\noperations:\n  - name: a\n", "never closed"),
        ("---\n- a\n- b\n---\n", "must be a mapping"),
        ("---\nversion: 2\noperations: []\n---\n", "unknown key(s) version"),
        ("---\noperations: a\n---\n", "'operations' must be a list, or a mapping keyed by operation name"),
        ("---\noperations: {name: a}\n---\n", "operation 'name': must be a mapping"),
        ("---\noperations:\n  a: {name: b}\n---\n", "operation 'a': its 'name' says 'b'"),
        ("---\noperations:\n  - just-a-string\n---\n", "operation #1: must be a mapping"),
        ("---\noperations:\n  - description: nameless\n---\n", "operation #1: missing 'name'"),
        ("---\noperations:\n  - name: do-it\n---\n", "operation 'do-it': name must be an identifier"),
        ("---\noperations:\n  - name: 2fast\n---\n", "operation '2fast': name must be an identifier"),
        ("---\noperations:\n  - name: a\n  - name: a\n---\n", "operation 'a': duplicate operation name"),
        ("---\noperations:\n  - name: a\n    inputs: {}\n---\n", "operation 'a': unknown key(s) inputs"),
        (
            "---\noperations:\n  - name: a\n    input: [1]\n---\n",
            "operation 'a': 'input' must be a JSON Schema",
        ),
        (
            "---\noperations:\n  - name: a\n    input: {type: object, properties: {x: {type: strin}}}\n---\n",
            "operation 'a': 'input' is not a valid JSON Schema at properties/x/type",
        ),
        (
            "---\noperations:\n  - name: a\n    output: {type: object, required: yes}\n---\n",
            "operation 'a': 'output' is not a valid JSON Schema at required",
        ),
        ("---\noperations:\n  - name: a\n    input: {type: string}\n---\n", "must describe a JSON object"),
        ("---\noperations:\n  - name: a\n    description: [1, 2]\n---\n", "'description' must be text"),
    ],
)
def test_broken_contracts_are_refused_with_a_reason(text: str, reason: str) -> None:
    with pytest.raises(ContractError) as refused:
        validate_interface_text(text)
    assert reason in str(refused.value)
    assert isinstance(refused.value, ValueError)


def test_yaml_errors_name_the_line_in_the_file() -> None:
    text = "---\noperations:\n  - name: a\n    input: {type: object\n---\n"
    with pytest.raises(ContractError, match=r"on line \d+"):
        parse_interface(text)


def test_validate_payload_lists_every_problem_with_its_path() -> None:
    schema = parse_interface(VALID).operations[0].input_schema

    assert validate_payload(schema, {"text": "hello", "max_words": 3}) == []
    problems = validate_payload(schema, {"text": "", "max_words": 0})
    assert len(problems) == 2
    assert any(p.startswith("max_words:") for p in problems)
    assert any(p.startswith("text:") for p in problems)
    assert validate_payload(schema, {}) == ["(root): 'text' is a required property"]
    assert validate_payload(schema, "not an object") != []


def test_validate_payload_checks_nested_paths() -> None:
    schema = {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "integer"}}},
    }
    assert validate_payload(schema, {"items": [1, "two", 3]}) == ["items/1: 'two' is not of type 'integer'"]


def test_operations_may_be_a_mapping_keyed_by_name() -> None:
    listed = parse_interface(
        "---\noperations:\n  - name: summarise\n    description: Sum up.\n"
        "    input: {type: object, required: [text], properties: {text: {type: string}}}\n---\nBody\n"
    )
    keyed = parse_interface(
        "---\noperations:\n  summarise:\n    description: Sum up.\n"
        "    input: {type: object, required: [text], properties: {text: {type: string}}}\n  ping:\n---\nBody\n"
    )
    assert keyed.operations[0] == listed.operations[0]
    assert [op.name for op in keyed.operations] == ["summarise", "ping"]
