"""Scheduler routes over real HTTP, and the `runs` / `heartbeat` CLI commands against them."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from scheduler_helpers import START, build_all_services, fleet_yaml, scaffold_agent, write_fleet

from agent_runtime.protocol import RunRecord
from orchestrator.api.app import create_app
from orchestrator.cli.scheduler import heartbeat, runs
from orchestrator.scheduler.clock import ManualClock
from orchestrator.services import Services
from orchestrator.state.endpoint import Endpoint, write_endpoint
from orchestrator.testing.server import serve_app

MakeServices = Callable[[str], Services]
RULES = "## Rules\n- every 2h: check the build status\n- daily 9am: broken\n"


@pytest.fixture
def services(fleet_root: Path, clock: ManualClock) -> Iterator[Services]:
    fleet_file = write_fleet(fleet_root, fleet_yaml("heartbeat: {every: 15m}", "heartbeat_model: test"))
    services = build_all_services(fleet_file, clock)
    scaffold_agent(services, "worker", RULES)
    yield services
    services.db.close()


@pytest.fixture
def client(services: Services) -> Iterator[TestClient]:
    with TestClient(create_app(services)) as test_client:
        yield test_client


def operator(services: Services) -> dict[str, str]:
    return {"authorization": f"Bearer {services.operator_token}"}


def turn(agent: str = "worker", **extra: object) -> dict[str, object]:
    record = RunRecord(
        id=uuid.uuid4().hex,
        agent=agent,
        trigger="operator",
        model="test",
        started_at=START,
        finished_at=START + timedelta(seconds=3),
        tokens_in=1200,
        tokens_out=300,
        cost_usd=0.0021,
        outcome="ok",
        files_changed=["notes.md"],
    )
    return record.model_copy(update=extra).model_dump(mode="json")


def test_agent_posts_its_run_record_once(client: TestClient, services: Services) -> None:
    token = services.tokens.mint("worker")
    body = turn()
    for _ in range(2):  # a retried post is stored once
        response = client.post("/agent/v1/runs", json=body, headers={"authorization": f"Bearer {token}"})
        assert response.status_code == 204
    listed = client.get("/api/v1/runs", params={"agent": "worker"}, headers=operator(services)).json()
    assert len(listed) == 1
    assert listed[0]["kind"] == "turn"
    assert (listed[0]["tokens_in"], listed[0]["duration_s"], listed[0]["files_changed"]) == (
        1200,
        3.0,
        ["notes.md"],
    )
    finished = [e for e in services.events.recent(50) if e.type == "run.finished"]
    assert len(finished) == 1 and finished[0].data["cost_usd"] == 0.0021


def test_an_agent_cannot_post_for_another_or_use_operator_routes(
    client: TestClient, services: Services
) -> None:
    headers = {"authorization": f"Bearer {services.tokens.mint('worker')}"}
    refused = client.post("/agent/v1/runs", json=turn(agent="someone-else"), headers=headers)
    assert refused.status_code == 403
    assert refused.json()["error"] == "forbidden"
    assert client.get("/api/v1/runs", headers=headers).status_code == 403
    assert client.post("/agent/v1/runs", json=turn()).status_code == 401
    bad = client.post("/agent/v1/runs", json={"id": "x"}, headers=headers)
    assert bad.status_code == 422 and bad.json()["error"] == "invalid_request"


def test_heartbeat_now_and_status(client: TestClient, services: Services) -> None:
    first = client.post("/api/v1/agents/worker/heartbeat", headers=operator(services))
    assert first.status_code == 200
    body = first.json()
    assert (body["outcome"], body["trigger"]) == ("run", "manual")
    assert body["item_id"] == services.inbox.list("worker")[0].id
    second = client.post("/api/v1/agents/worker/heartbeat", headers=operator(services)).json()
    assert (second["outcome"], second["skipped"]) == ("skipped", "busy")

    status = client.get("/api/v1/agents/worker/heartbeat", headers=operator(services)).json()
    assert status["schedule"] == "every 900s"
    assert status["heartbeat_model"] == "test"
    assert [r["when"] for r in status["rules"]] == ["every 2h"]
    assert status["errors"][0]["line"] == 3

    listed = client.get("/api/v1/runs", params={"kind": "tick"}, headers=operator(services)).json()
    assert [r["outcome"] for r in listed] == ["skipped", "run"]
    assert listed[1]["model"] == "test"


def test_unknown_agent_is_a_clear_404(client: TestClient, services: Services) -> None:
    for response in (
        client.post("/api/v1/agents/nobody/heartbeat", headers=operator(services)),
        client.get("/api/v1/agents/nobody/heartbeat", headers=operator(services)),
        client.get("/api/v1/runs", params={"agent": "nobody"}, headers=operator(services)),
    ):
        assert response.status_code == 404
        assert response.json()["message"].startswith("no agent 'nobody' in fleet hbtest")
    too_many = client.get("/api/v1/runs", params={"limit": 5000}, headers=operator(services))
    assert too_many.status_code == 422


def test_cli_heartbeat_and_runs(services: Services, fleet_root: Path) -> None:
    with serve_app(create_app(services)) as url:
        write_endpoint(services.paths, Endpoint(url=url, token=services.operator_token, pid=os.getpid()))
        cli = CliRunner(env={"COLUMNS": "200"})
        fleet_file = str(fleet_root / "fleet.yaml")

        ran = cli.invoke(heartbeat, ["-f", fleet_file, "worker"])
        assert ran.exit_code == 0, ran.output
        assert "worker: run: queued heartbeat item" in ran.output
        assert "rule: every 2h: check the build status" in ran.output

        again = cli.invoke(heartbeat, ["-f", fleet_file, "worker"])
        assert "worker: skipped: busy (a heartbeat is still queued)" in again.output

        checked = cli.invoke(heartbeat, ["-f", fleet_file, "--check", "worker"])
        assert checked.exit_code == 1
        assert "check the build status" in checked.output
        assert "line 3: 'daily 9am: broken': invalid time '9am'" in checked.output

        listed = cli.invoke(runs, ["-f", fleet_file, "worker"])
        assert listed.exit_code == 0, listed.output
        assert "skipped" in listed.output and "run" in listed.output and "tick" in listed.output

        missing = cli.invoke(heartbeat, ["-f", fleet_file, "nobody"])
        assert missing.exit_code != 0
