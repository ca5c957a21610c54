"""What deploy/ ships for Prometheus, Grafana and systemd works with this orchestrator: the rules
pass `promtool check rules` and their unit tests, every metric the rules and the dashboard's
queries name is one the orchestrator's /metrics serves, and the unit starts a command that exists."""

from __future__ import annotations

import configparser
import json
import os
import re
import shlex
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from orchestrator.cli.main import cli

DEPLOY = Path(__file__).resolve().parents[3] / "deploy"
PROMETHEUS = DEPLOY / "prometheus"
# A metric name as written in PromQL, not part of a recording rule's `level:metric:operation` name.
METRIC = re.compile(r"(?<![\w:])((?:flotilla|process)_\w+)(?![\w:])")
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}

needs_promtool = pytest.mark.skipif(
    shutil.which("promtool") is None and not os.environ.get("CI"),
    reason="promtool is not installed (Debian: prometheus)",
)


@pytest.fixture
def fleet_file(tmp_path: Path) -> Path:
    """Budgets declared, so that the budget gauges are served too."""
    path = tmp_path / "fleet.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            version: 1
            fleet: deployed
            defaults:
              budget: {daily_usd: 1.0, monthly_tokens: 100000}
            agents:
              alpha:
                role: researcher
            """
        )
    )
    return path


def served_names(operator: TestClient) -> set[str]:
    """The sample names /metrics serves, from its `# TYPE` lines (present even before a first sample)."""
    response = operator.get("/metrics")
    assert response.status_code == 200
    names = set()
    for line in response.text.splitlines():
        if line.startswith("# TYPE "):
            _, _, family, kind = line.split(" ", 3)
            names |= {family.removesuffix("_total") + suffix for suffix in SUFFIXES.get(kind, ("",))}
    return names


def dashboard_queries() -> list[str]:
    dashboard = json.loads((DEPLOY / "grafana" / "flotilla-dashboard.json").read_text())
    queries = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    assert len(queries) == len(dashboard["panels"]) >= 10
    return queries


def rule_queries() -> list[str]:
    import yaml

    groups = yaml.safe_load((PROMETHEUS / "flotilla-rules.yml").read_text())["groups"]
    return [rule["expr"] for group in groups for rule in group["rules"]]


def test_every_metric_the_dashboard_and_the_rules_name_is_served(operator: TestClient) -> None:
    served = served_names(operator)
    named = {name for query in dashboard_queries() + rule_queries() for name in METRIC.findall(query)}
    assert named, "no metric found in the queries"
    assert sorted(named - served) == []


@needs_promtool
def test_promtool_accepts_the_rules_and_their_unit_tests_pass() -> None:
    for command in (
        ["promtool", "check", "rules", "flotilla-rules.yml"],
        ["promtool", "test", "rules", "flotilla-rules.test.yml"],
        ["promtool", "check", "config", "--syntax-only", "prometheus.yml"],
    ):
        checked = subprocess.run(
            command, cwd=PROMETHEUS, capture_output=True, text=True, check=False, timeout=60
        )
        assert checked.returncode == 0, " ".join(command) + "\n" + checked.stdout + checked.stderr


def test_the_systemd_unit_runs_a_command_flotilla_has() -> None:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read(DEPLOY / "systemd" / "flotilla.service")
    command = shlex.split(unit["Service"]["ExecStart"])
    assert command[0].endswith("/flotilla") and command[1] == "up"
    help_text = CliRunner().invoke(cli, ["up", "--help"]).output
    for option in (word for word in command[2:] if word.startswith("--")):
        assert option in help_text, option
    assert unit["Service"]["KillSignal"] == "SIGTERM"  # the orchestrator stops; agents keep running
    assert unit["Install"]["WantedBy"] == "multi-user.target"
