"""`flotilla memory jobs` and `flotilla memory run`, and their routes: asked of the agent over
its real channel, against its own storage (the orchestrator never opens it)."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from agent_runtime.workspace.history import HistoryLog, Turn
from orchestrator.api.app import create_app
from orchestrator.cli.memory import memory
from orchestrator.config.loader import load_fleet
from orchestrator.services import Services
from orchestrator.state.endpoint import Endpoint, write_endpoint
from orchestrator.testing.agent_link import connect_agent
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.testing.server import serve_app
from orchestrator.wiring import attach_subsystems, core_services, fleet_manager

FLEET = """\
version: 1
fleet: jobs
agents:
  alpha:
    role: researcher
  beta:
    role: writer
    context: {strategy: checkpoint}
"""


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    (tmp_path / "fleet.yaml").write_text(textwrap.dedent(FLEET))
    core = core_services(load_fleet(tmp_path / "fleet.yaml"), FakeBackend())
    core.operator_token = core.tokens.mint_operator()
    built = attach_subsystems(core, fleet_manager(core))
    yield built
    built.db.close()


def _operator(services: Services, url: str) -> httpx.Client:
    return httpx.Client(
        base_url=url, headers={"authorization": f"Bearer {services.operator_token}"}, timeout=60
    )


def test_jobs_are_listed_and_run_through_the_agent(services: Services) -> None:
    storage = services.paths.agent_storage("beta")
    history = HistoryLog(storage)
    history.append(Turn("user", "[2026-03-02 12:00:00 UTC · message from operator]\nDraft the Q3 report"))
    history.append(Turn("assistant", "Outline started."))
    base = "/api/v1/agents/beta/memory/jobs"
    with (
        serve_app(create_app(services)) as url,
        connect_agent(services, url, "beta"),
        _operator(services, url) as op,
    ):
        empty = op.get(base).json()
        assert empty["strategy"] == "checkpoint" and empty["runs"] == []
        assert "cognition/consolidation" in empty["jobs"] and "maintenance/decay" in empty["jobs"]

        ran = op.post(f"{base}/run", json={"job": "consolidation"}).json()
        assert ran["family"] == "cognition" and ran["outcome"] == "ok" and ran["trigger"] == "manual"
        assert ran["changes"] == ["workspace/cognition/WORKING_MEMORY.md"]
        assert (
            "Draft the Q3 report" in (storage / "workspace" / "cognition" / "WORKING_MEMORY.md").read_text()
        )
        decay = op.post(f"{base}/run", json={"job": "maintenance/decay"}).json()
        assert decay["family"] == "maintenance" and decay["outcome"] == "ok"

        listed = op.get(base).json()
        assert [(r["family"], r["job"]) for r in listed["runs"]] == [
            ("maintenance", "decay"),
            ("cognition", "consolidation"),
        ]
        checkpoints = {(c["family"], c["job"]) for c in listed["checkpoints"]}
        assert {("cognition", "consolidation"), ("maintenance", "decay")} <= checkpoints

        unknown = op.post(f"{base}/run", json={"job": "dreaming"})
        assert unknown.status_code == 404 and "cognition/review" in unknown.json()["message"]
        assert op.post(f"{base}/run", json={}).status_code == 422
        # The compact strategy has no cognition jobs.
        with connect_agent(services, url, "alpha"):
            refused = op.post("/api/v1/agents/alpha/memory/jobs/run", json={"job": "cognition/review"})
            assert refused.status_code == 404

        write_endpoint(services.paths, Endpoint(url=url, token=services.operator_token, pid=os.getpid()))
        fleet = ["-f", str(services.fleet.path)]
        cli = CliRunner()
        shown = cli.invoke(memory, ["jobs", *fleet, "beta"])
        assert shown.exit_code == 0, shown.output
        assert "context strategy: checkpoint" in shown.output
        assert "cognition/consolidation manual   ok" in shown.output
        assert "checkpoint cognition/consolidation:" in shown.output
        ran_now = cli.invoke(memory, ["run", *fleet, "beta", "review"])
        assert ran_now.exit_code == 0, ran_now.output
        assert "cognition/review" in ran_now.output and "cognition/review.json" in ran_now.output
