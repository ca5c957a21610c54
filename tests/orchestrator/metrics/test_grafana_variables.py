"""The Grafana dashboard's `fleet` and `agent` variables: every panel's query filters by them, the
queries stay valid PromQL once Grafana fills them in, and choosing an agent does narrow a panel."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.orchestrator.metrics.test_deploy_files import DEPLOY, needs_promtool

DASHBOARD = DEPLOY / "grafana" / "flotilla-dashboard.json"
# A metric selector as the dashboard writes it: the name, then its label matchers.
SELECTOR = re.compile(r"((?:flotilla|process)_\w+)\{([^}]*)\}")
FLEET = 'fleet=~"$fleet"'
AGENT = 'agent=~"$agent"'


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def filled(expr: str, fleet: str = ".*", agent: str = ".*") -> str:
    """The query as Grafana sends it to Prometheus."""
    return expr.replace("$__rate_interval", "5m").replace("$fleet", fleet).replace("$agent", agent)


def test_the_dashboard_has_fleet_and_agent_variables_and_the_agent_list_follows_the_fleet() -> None:
    variables = {v["name"]: v for v in dashboard()["templating"]["list"]}
    fleet, agent = variables["fleet"], variables["agent"]
    assert fleet["query"]["query"] == 'label_values(flotilla_agent_info{job="flotilla"}, fleet)'
    assert agent["query"]["query"] == f'label_values(flotilla_agent_info{{job="flotilla", {FLEET}}}, agent)'
    for variable in (fleet, agent):
        assert variable["type"] == "query" and variable["includeAll"] and variable["allValue"] == ".*"


def test_every_panel_filters_by_fleet_and_by_agent_wherever_its_metric_has_agents() -> None:
    for panel in dashboard()["panels"]:
        selectors = [SELECTOR.findall(target["expr"]) for target in panel["targets"]]
        assert selectors and all(selectors), panel["title"]
        for name, matchers in (found for group in selectors for found in group):
            assert FLEET in matchers, (panel["title"], name)
            if name.startswith("flotilla_"):  # the orchestrator's own process_* metrics have no agent
                assert AGENT in matchers, (panel["title"], name)


@needs_promtool
def test_every_query_is_valid_promql_once_the_variables_are_filled_in(tmp_path: Path) -> None:
    rules = [
        {
            "record": f"dashboard:panel_{panel['id']}:{index}",
            "expr": filled(target["expr"], "my-fleet", "alpha|beta"),
        }
        for panel in dashboard()["panels"]
        for index, target in enumerate(panel["targets"])
    ]
    path = tmp_path / "dashboard-queries.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    checked = subprocess.run(
        ["promtool", "check", "rules", str(path)], check=False, capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


@needs_promtool
def test_choosing_a_fleet_and_an_agent_narrows_a_panel_to_them(tmp_path: Path) -> None:
    [panel] = [p for p in dashboard()["panels"] if p["title"] == "Agents checking in"]
    expr = panel["targets"][0]["expr"]
    series = [
        'flotilla_agent_checking_in{job="flotilla",fleet="harbour",agent="pilot"}',
        'flotilla_agent_checking_in{job="flotilla",fleet="harbour",agent="clerk"}',
        'flotilla_agent_checking_in{job="flotilla",fleet="quay",agent="pilot"}',
    ]
    cases = [(".*", ".*", 3), ("harbour", ".*", 2), ("harbour", "pilot", 1), ("quay", "clerk", None)]
    expected = [
        {
            "expr": filled(expr, fleet, agent),
            "eval_time": "1m",
            "exp_samples": [{"labels": "{}", "value": value}] if value else [],
        }
        for fleet, agent, value in cases
    ]
    tests = yaml.safe_dump(
        {
            "rule_files": [],
            "evaluation_interval": "1m",
            "tests": [
                {
                    "interval": "1m",
                    "input_series": [{"series": s, "values": "1 1 1"} for s in series],
                    "promql_expr_test": expected,
                }
            ],
        }
    )
    path = tmp_path / "narrowing.test.yml"
    path.write_text(tests)
    checked = subprocess.run(
        ["promtool", "test", "rules", str(path)], check=False, capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0, tests + checked.stdout + checked.stderr
