"""fleet.yaml's checks that need packages above config are registered with config: loading
without them is refused, registering again changes nothing, and a registered check's problems
are reported with the file's line like any other."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.config.fleet import ConfigError, Problems
from orchestrator.config.fleet_checks import FLEET_CHECKS, CheckedFleet, ChecksNotRegistered, FleetChecks
from orchestrator.config.loader import load_fleet
from orchestrator.fleet.validation import register_fleet_checks

FLEET = """\
fleet: demo
llm:
  default_model: test
agents:
  writer:
    role: writes
    heartbeat:
      every: 1h
      rules:
        - "every nope: write"
"""


def test_a_fleet_is_not_loaded_before_the_checks_are_registered(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    script = (
        "import sys\n"
        "from orchestrator.config.fleet_checks import ChecksNotRegistered\n"
        "from orchestrator.config.loader import load_fleet\n"
        "try:\n"
        f"    load_fleet({str(tmp_path / 'fleet.yaml')!r})\n"
        "except ChecksNotRegistered as refused:\n"
        "    print(refused)\n"
        "    sys.exit(3)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 3, done.stderr
    assert "register_fleet_checks()" in done.stdout


def test_an_empty_registry_refuses() -> None:
    with pytest.raises(ChecksNotRegistered, match="no check of the packages above config"):
        FleetChecks().require()


def test_registering_again_changes_nothing() -> None:
    before = (list(FLEET_CHECKS.references), list(FLEET_CHECKS.models), list(FLEET_CHECKS.fleet))
    register_fleet_checks()
    after = (list(FLEET_CHECKS.references), list(FLEET_CHECKS.models), list(FLEET_CHECKS.fleet))
    assert after == before
    assert "heartbeat rules" in FLEET_CHECKS.fleet and "budgeted prices" in FLEET_CHECKS.models


def test_a_registered_checks_problem_names_its_line(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    with pytest.raises(ConfigError) as refused:
        load_fleet(tmp_path / "fleet.yaml")
    [problem] = refused.value.problems
    assert problem.line == 10
    assert problem.path == "agents.writer.heartbeat.rules.0"
    assert problem.message.startswith("rule 'every nope: write'")


def test_a_check_registered_by_another_package_runs_in_the_pass(tmp_path: Path) -> None:
    def no_writer(checked: CheckedFleet, problems: Problems) -> None:
        if "writer" in checked.fleet.config.agents:
            problems.add(("agents", "writer", "role"), "writer is not wanted here")

    (tmp_path / "fleet.yaml").write_text(FLEET.replace("every nope", "every 2h"))
    FLEET_CHECKS.add_fleet_check("test: no writer", no_writer)
    try:
        with pytest.raises(ConfigError) as refused:
            load_fleet(tmp_path / "fleet.yaml")
    finally:
        del FLEET_CHECKS.fleet["test: no writer"]
    assert [(p.line, p.message) for p in refused.value.problems] == [(6, "writer is not wanted here")]
