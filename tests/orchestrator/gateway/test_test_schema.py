"""The test model answers typed peer requests with JSON that satisfies the output schema."""

from __future__ import annotations

import json

import jsonschema

from agent_runtime.work.prompt import OUTPUT_SCHEMA_MARKER
from orchestrator.gateway.providers.schema_sample import sample
from orchestrator.gateway.providers.script import schema_answer

SCHEMA = {
    "type": "object",
    "properties": {
        "facts": {"type": "array", "items": {"type": "string"}, "minItems": 3},
        "count": {"type": "integer", "minimum": 2},
        "status": {"enum": ["ok", "failed"]},
        "title": {"type": "string", "minLength": 40},
        "nested": {"type": "object", "properties": {"flag": {"type": "boolean"}}, "required": ["flag"]},
    },
    "required": ["facts", "count", "status", "title", "nested"],
}


def test_sample_satisfies_the_schema() -> None:
    value = sample(SCHEMA, "tides")
    jsonschema.validate(value, SCHEMA)
    assert len(value["facts"]) == 3 and all("tides" in fact for fact in value["facts"])


def test_schema_answer_reads_the_request_and_its_schema() -> None:
    text = f'Input:\n{{"topic": "tides"}}\n{OUTPUT_SCHEMA_MARKER}, and nothing else:\n{json.dumps(SCHEMA)}'
    answer = json.loads(schema_answer(text) or "null")
    jsonschema.validate(answer, SCHEMA)
    assert "tides" in answer["title"]


def test_no_marker_no_schema_answer() -> None:
    assert schema_answer('Input: {"topic": "tides"}') is None
