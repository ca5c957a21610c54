"""`flotilla schema`: every property described, a dialect and an id, examples that validate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from orchestrator.cli.main import cli
from orchestrator.config.models import FleetConfig
from orchestrator.config.safe_yaml import load_yaml
from orchestrator.config.schema import (
    EDITOR_MODELINE,
    EXAMPLE_FLEET,
    JSON_SCHEMA_DIALECT,
    SCHEMA_FILE_NAME,
    SCHEMA_ID,
    fleet_schema,
    undescribed_properties,
)

REPO = Path(__file__).resolve().parents[3]


def printed_schema() -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["schema"])
    assert result.exit_code == 0, result.output
    schema: dict[str, Any] = json.loads(result.output)
    return schema


def test_every_property_has_a_description() -> None:
    schema = printed_schema()
    assert undescribed_properties(schema) == []
    # The walk does reach the nested models: a definition stripped of a description is caught.
    schema["$defs"]["AgentConfig"]["properties"]["role"].pop("description")
    assert undescribed_properties(schema) == ["#/$defs/AgentConfig/properties/role"]


def test_every_model_is_described() -> None:
    schema = fleet_schema()
    assert schema["description"]
    assert {name for name, body in schema["$defs"].items() if not body.get("description")} == set()


def test_schema_names_its_dialect_and_id_and_is_valid() -> None:
    schema = printed_schema()
    assert schema["$schema"] == JSON_SCHEMA_DIALECT
    assert schema["$id"] == SCHEMA_ID
    assert schema["additionalProperties"] is False
    jsonschema.Draft202012Validator.check_schema(schema)


def _with_examples(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    found = []
    sections = {"#": schema, **schema["$defs"]}
    for where, section in sections.items():
        for name, prop in section.get("properties", {}).items():
            if "examples" in prop:
                found.append((f"{where}.{name}", prop))
    return found


def test_examples_validate_against_their_own_schema() -> None:
    schema = fleet_schema()
    with_examples = _with_examples(schema)
    assert len(with_examples) >= 15
    for where, prop in with_examples:
        standalone = {"$defs": schema["$defs"], **prop}
        for example in prop["examples"]:
            errors = list(jsonschema.Draft202012Validator(standalone).iter_errors(example))
            assert not errors, f"{where}: example {example!r}: {errors[0].message}"
    jsonschema.validate(EXAMPLE_FLEET, schema)
    assert schema["examples"] == [EXAMPLE_FLEET]
    FleetConfig.model_validate(EXAMPLE_FLEET)


@pytest.mark.parametrize("fleet_file", ["fleet.yaml"])
def test_the_example_fleet_is_valid_for_editors_too(fleet_file: str) -> None:
    """What yaml-language-server checks agrees with what the loader accepts."""
    document = load_yaml((REPO / fleet_file).read_text(encoding="utf-8")).data
    jsonschema.validate(document, fleet_schema())
    FleetConfig.model_validate(document)


def test_schema_written_to_a_file_and_the_editor_line(tmp_path: Path) -> None:
    target = tmp_path / SCHEMA_FILE_NAME
    result = CliRunner().invoke(cli, ["schema", "-o", str(target)])
    assert result.exit_code == 0, result.output
    assert json.loads(target.read_text()) == fleet_schema()
    assert f"# yaml-language-server: $schema={target}" in result.output


def test_init_points_editors_at_the_schema(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["init", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "fleet.yaml").read_text().splitlines()[0] == EDITOR_MODELINE
    assert json.loads((tmp_path / SCHEMA_FILE_NAME).read_text())["$id"] == SCHEMA_ID
    document = load_yaml((tmp_path / "fleet.yaml").read_text()).data
    jsonschema.validate(document, fleet_schema())
