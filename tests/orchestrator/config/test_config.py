"""fleet.yaml loading: valid files, and every kind of problem reported with file, line and path."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator.cli.main import cli
from orchestrator.config.fleet import ConfigError
from orchestrator.config.loader import NOT_FOUND, load_fleet
from orchestrator.config.settings import container_hash, runtime_hash
from orchestrator.config.units import parse_duration, parse_memory

REPO = Path(__file__).resolve().parents[3]

MINIMAL = """\
version: 1
fleet: demo
agents:
  alpha:
    role: first
    talks_to: [beta]
  beta:
    role: second
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def problems_of(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_fleet(path)
    return [str(p) for p in info.value.problems]


def test_example_fleet_is_valid() -> None:
    fleet = load_fleet(REPO / "fleet.yaml")
    assert len(fleet.config.agents) == 3
    assert all(fleet.interfaces[name].startswith("---") for name in fleet.config.agents)
    assert fleet.project_md is not None
    assert fleet.config.model_of("writer") == "test"


def test_defaults_merge_into_agents(tmp_path: Path) -> None:
    fleet = load_fleet(write(tmp_path, MINIMAL))
    assert fleet.config.resources_of("alpha").memory_bytes == 128 * 1024 * 1024
    assert fleet.config.allowed_models("alpha") == ["test"]


def test_unknown_field_is_refused_with_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL.replace("    role: second\n", "    role: second\n    colour: blue\n"))
    found = problems_of(path)
    assert found == [f"{path}:9: agents.beta.colour: unknown field 'colour'"]


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        version: 1
        fleet: demo
        agents:
          alpha:
            heartbeat: { every: 15 minutes }
            resources: { memory: 4m, pids: 2 }
          beta:
            heartbeat: { cron: "every day" }
        """,
    )
    found = problems_of(path)
    joined = "\n".join(found)
    assert len(found) == 4
    assert f"{path}:5: agents.alpha.heartbeat.every: invalid duration '15 minutes'" in joined
    assert "agents.alpha.resources.memory: memory '4m' is below the floor of 32m" in joined
    assert "agents.alpha.resources.pids: pids 2 is below the floor of 16" in joined
    assert f"{path}:8: agents.beta.heartbeat.cron: invalid cron expression 'every day'" in joined


def test_cross_field_checks(tmp_path: Path) -> None:
    outside = tmp_path.parent / "outside.md"
    outside.write_text("x")
    path = write(
        tmp_path,
        """\
        version: 1
        fleet: demo
        agents:
          Alpha_1:
            talks_to: [ghost]
          beta:
            interface: ../outside.md
            model: nowhere:gpt
        """,
    )
    joined = "\n".join(problems_of(path))
    assert "agents.Alpha_1: invalid agent name 'Alpha_1'" in joined
    assert "agents.Alpha_1.talks_to.0: unknown agent 'ghost' in talks_to" in joined
    assert "agents.beta.interface: path '../outside.md' escapes the fleet folder" in joined
    assert "agents.beta.model: model 'nowhere:gpt' uses unknown provider 'nowhere'" in joined


def test_bad_yaml_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "version: 1\nfleet: demo\nagents:\n  a: [unclosed\n")
    (problem,) = problems_of(path)
    assert problem.startswith(f"{path}:5:") and "invalid YAML" in problem


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    assert problems_of(write(tmp_path, "- just\n- a list\n")) == [
        f"{tmp_path / 'fleet.yaml'}:1: the top level must be a mapping"
    ]


def test_missing_file(tmp_path: Path) -> None:
    assert problems_of(tmp_path / "nope.yaml") == [f"{tmp_path / 'nope.yaml'}: {NOT_FOUND}"]


def test_config_hash_changes_only_with_the_agent(tmp_path: Path) -> None:
    before = load_fleet(write(tmp_path, MINIMAL))
    after = load_fleet(write(tmp_path, MINIMAL.replace("role: second", "role: changed")))
    # A role is served to the agent, which reloads it: its container stays.
    assert runtime_hash(before, "beta") != runtime_hash(after, "beta")
    assert container_hash(before, "beta") == container_hash(after, "beta")
    assert runtime_hash(before, "alpha") == runtime_hash(after, "alpha")
    assert container_hash(before, "alpha") == container_hash(after, "alpha")


def test_units() -> None:
    assert parse_duration("15m") == 900
    assert parse_duration("1.5h") == 5400
    assert parse_memory("128Mi") == parse_memory("128m") == 128 * 1024 * 1024
    assert parse_memory("1g") == 1024**3
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration("0s")


def test_validate_command_exit_codes(tmp_path: Path) -> None:
    runner = CliRunner()
    good = write(tmp_path, MINIMAL)
    result = runner.invoke(cli, ["validate", "-f", str(good)])
    assert result.exit_code == 0, result.output
    assert "is valid (2 agents)" in result.output
    bad = tmp_path / "bad.yaml"
    bad.write_text(MINIMAL.replace("talks_to: [beta]", "talks_to: [gamma]"))
    result = runner.invoke(cli, ["validate", "-f", str(bad)])
    assert result.exit_code == 2
    assert "unknown agent 'gamma' in talks_to" in result.output
    assert "Traceback" not in result.output


def test_schema_command_prints_json_schema() -> None:
    result = CliRunner().invoke(cli, ["schema"])
    assert result.exit_code == 0
    schema = json.loads(result.output)
    assert "agents" in schema["properties"]
    assert schema["additionalProperties"] is False
