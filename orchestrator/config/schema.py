"""The JSON Schema of fleet.yaml, for editors (yaml-language-server) and other tools.

Descriptions and examples are written once, on the config models' fields, so that the schema,
`flotilla schema` and the validation errors speak of the same things.
"""

from __future__ import annotations

from typing import Any

from orchestrator.config.models import FleetConfig

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
# A name, not an address: the schema ships with the CLI and is written next to fleet.yaml.
SCHEMA_ID = "urn:flotilla:schema:fleet-yaml:1"
SCHEMA_FILE_NAME = "fleet.schema.json"
EDITOR_MODELINE = f"# yaml-language-server: $schema={SCHEMA_FILE_NAME}"

EXAMPLE_FLEET: dict[str, Any] = {
    "version": 1,
    "fleet": "research-team",
    "defaults": {"model": "test", "budget": {"daily_usd": 1.0}},
    "agents": {
        "researcher": {
            "role": "finds facts and cites them",
            "heartbeat": {"every": "15m"},
            "talks_to": ["writer"],
        },
        "writer": {"role": "writes short briefs", "model": "test"},
    },
}


def fleet_schema() -> dict[str, Any]:
    """fleet.yaml's schema with its dialect, identifier, title and an example fleet."""
    generated = FleetConfig.model_json_schema()
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "$id": SCHEMA_ID,
        "title": "Flotilla fleet.yaml",
        **generated,
        "examples": [EXAMPLE_FLEET],
    }


def undescribed_properties(schema: dict[str, Any]) -> list[str]:
    """Paths of the properties (in the root and every definition) that carry no description."""
    found: list[str] = []
    sections = {"#": schema, **{f"#/$defs/{name}": body for name, body in schema.get("$defs", {}).items()}}
    for where, section in sections.items():
        for name, prop in section.get("properties", {}).items():
            if not isinstance(prop, dict) or not prop.get("description"):
                found.append(f"{where}/properties/{name}")
    return found
