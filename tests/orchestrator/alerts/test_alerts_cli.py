"""`flotilla alerts` and GET /api/v1/alerts against a real orchestrator API over HTTP."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi import FastAPI
from fastapi.testclient import TestClient

from orchestrator.alerts import AlertStore
from orchestrator.cli.alerts import alerts
from orchestrator.services import Services
from orchestrator.state.endpoint import Endpoint, write_endpoint
from orchestrator.testing.server import serve_app


@pytest.fixture
def running(app: FastAPI, services: Services, fleet_file: Path) -> Iterator[Path]:
    with serve_app(app) as url:
        write_endpoint(services.paths, Endpoint(url=url, token=services.operator_token, pid=os.getpid()))
        yield fleet_file
        services.paths.endpoint_file.unlink(missing_ok=True)


def _record(services: Services, agent: str, summary: str) -> None:
    AlertStore(services.db).record(
        key=f"0:budget_warning:{agent}",
        webhook="ops",
        title="budget_warning",
        agent=agent,
        summary=summary,
        payload={"summary": summary},
        now=datetime.now(UTC),
        repeat_after=timedelta(hours=1),
    )


def test_the_alert_log_is_for_the_operator_only(
    services: Services, operator: TestClient, agent_client: TestClient, anonymous: TestClient
) -> None:
    _record(services, "alpha", "alpha has used 80% of its daily_usd budget")
    response = operator.get("/api/v1/alerts")
    assert response.status_code == 200
    (alert,) = response.json()
    assert (alert["agent"], alert["status"], alert["webhook"]) == ("alpha", "pending", "ops")
    assert agent_client.get("/api/v1/alerts").status_code == 403
    assert anonymous.get("/api/v1/alerts").status_code == 401


def test_cli_lists_alerts_newest_first_and_as_json(services: Services, running: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(alerts, ["-f", str(running)], catch_exceptions=False)
    assert result.exit_code == 0
    assert "no alerts" in result.output
    _record(services, "alpha", "first")
    _record(services, "beta", "second")
    result = runner.invoke(alerts, ["-f", str(running)], catch_exceptions=False)
    lines = result.output.strip().splitlines()
    assert "beta" in lines[0] and "second" in lines[0]
    assert "alpha" in lines[1] and "pending" in lines[1]
    result = runner.invoke(alerts, ["-f", str(running), "--json", "-n", "1"], catch_exceptions=False)
    (only,) = json.loads(result.output)
    assert only["agent"] == "beta"
