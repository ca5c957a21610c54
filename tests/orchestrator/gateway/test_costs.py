"""Operator views of spend: GET /api/v1/costs, GET /api/v1/usage and `flotilla costs`."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner
from gateway_harness import Launch

from orchestrator.cli.costs import costs
from orchestrator.gateway.models import CostsReport, UsageSeries
from orchestrator.state.endpoint import Endpoint, write_endpoint

FLEET = """\
budget: {monthly_usd: 5}
agents:
  alice:
    budget: {daily_tokens: 100000}
  bob: {}
  carol: {}
"""
HI = [{"role": "user", "content": "hi"}]


def test_costs_report_per_agent_and_fleet(launch: Launch) -> None:
    orch = launch(FLEET)
    for _ in range(3):
        orch.client("alice").chat.completions.create(model="test", messages=HI)  # type: ignore[arg-type]
    orch.client("bob").chat.completions.create(model="test", messages=HI)  # type: ignore[arg-type]
    operator = orch.http(orch.tokens["operator"])
    response = operator.get("/api/v1/costs")
    assert response.status_code == 200
    report = CostsReport.model_validate(response.json())
    by_agent = {a.agent: a for a in report.agents}
    assert set(by_agent) == {"alice", "bob", "carol"}
    rows = orch.gateway.ledger.rows()
    alice_rows = [r for r in rows if r.agent == "alice"]
    assert by_agent["alice"].calls_today == 3 == by_agent["alice"].calls_month
    assert by_agent["alice"].today_tokens == sum(r.tokens_in + r.tokens_out for r in alice_rows)
    assert by_agent["alice"].today_usd == pytest.approx(sum(r.cost_usd for r in alice_rows))
    assert [w.kind for w in by_agent["alice"].budget] == ["daily_tokens"]
    assert by_agent["carol"].calls_today == 0 and by_agent["carol"].can_spend
    assert report.fleet.calls_today == 4
    assert report.fleet.month_usd == pytest.approx(sum(r.cost_usd for r in rows))
    assert [(w.scope, w.kind) for w in report.fleet_budget] == [("fleet", "monthly_usd")]
    assert orch.http(orch.tokens["alice"]).get("/api/v1/costs").status_code == 403


def test_usage_series_in_time_buckets(launch: Launch) -> None:
    orch = launch(FLEET)
    alice = orch.client("alice")
    alice.chat.completions.create(model="test", messages=HI)  # type: ignore[arg-type]
    orch.clock.now += timedelta(hours=2)
    alice.chat.completions.create(model="test", messages=HI)  # type: ignore[arg-type]
    alice.chat.completions.create(model="test", messages=HI)  # type: ignore[arg-type]
    orch.client("bob").chat.completions.create(model="test", messages=HI)  # type: ignore[arg-type]
    operator = orch.http(orch.tokens["operator"])
    since = (orch.clock.now - timedelta(hours=5)).isoformat()
    series = UsageSeries.model_validate(operator.get("/api/v1/usage", params={"since": since}).json())
    slots = [(b.start, b.agent, b.calls) for b in series.buckets]
    assert slots == [
        (datetime(2030, 5, 17, 12, tzinfo=UTC), "alice", 1),
        (datetime(2030, 5, 17, 14, tzinfo=UTC), "alice", 2),
        (datetime(2030, 5, 17, 14, tzinfo=UTC), "bob", 1),
    ]
    only_alice = operator.get("/api/v1/usage", params={"since": since, "agent": "alice", "bucket": "day"})
    daily = UsageSeries.model_validate(only_alice.json())
    assert [(b.agent, b.calls) for b in daily.buckets] == [("alice", 3)]
    assert daily.buckets[0].tokens_in > 0 and daily.buckets[0].cost_usd > 0
    assert operator.get("/api/v1/usage", params={"bucket": "week"}).status_code == 422


def test_cli_costs_prints_a_table_and_json(launch: Launch) -> None:
    orch = launch(FLEET)
    orch.client("alice").chat.completions.create(model="test", messages=HI)  # type: ignore[arg-type]
    paths = orch.services.paths
    write_endpoint(paths, Endpoint(url=orch.url, token=orch.tokens["operator"], pid=os.getpid()))
    fleet_file = str(orch.services.fleet.path)
    runner = CliRunner()
    table = runner.invoke(costs, ["-f", fleet_file], env={"COLUMNS": "160"})
    assert table.exit_code == 0, table.output
    lines = table.output.splitlines()
    cells = [[cell.strip() for cell in line.split("│")[1:-1]] for line in lines if line.startswith("│")]
    by_agent = {row[0]: row for row in cells}
    assert by_agent["alice"][5] == "1" and by_agent["alice"][6] == "daily_tokens 0%"
    [row] = orch.gateway.ledger.rows("alice")
    assert by_agent["alice"][1] == f"${row.cost_usd:.6f}"
    assert by_agent["alice"][3] == str(row.tokens_in + row.tokens_out)
    assert by_agent["fleet"][6] == "monthly_usd 0%"
    as_json = runner.invoke(costs, ["-f", fleet_file, "--json"])
    assert as_json.exit_code == 0, as_json.output
    report = json.loads(as_json.output)
    assert {a["agent"]: a["calls_today"] for a in report["agents"]} == {"alice": 1, "bob": 0, "carol": 0}
