"""`/api/v1/budgets` and `/api/v1/attention`: budget gauges with their reset time, and the
agents that need the operator (budget-blocked, dead letters, crash loop, unhealthy)."""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from agent_runtime.protocol import CheckIn, ItemKind
from orchestrator.api.app import create_app
from orchestrator.config.loader import load_fleet
from orchestrator.events import EventType
from orchestrator.gateway.ledger import Charge, Ledger
from orchestrator.services import Services
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.wiring import build_services

FLEET = """\
version: 1
fleet: attention
defaults:
  always_on: true
budget:
  monthly_usd: 50
agents:
  alpha:
    budget:
      daily_usd: 0.10
      daily_tokens: 100000
  beta: {}
  gamma: {}
"""


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    (tmp_path / "fleet.yaml").write_text(textwrap.dedent(FLEET))
    built = build_services(load_fleet(tmp_path / "fleet.yaml"), FakeBackend())
    assert all(result.ok for result in built.manager.apply())
    for agent in ("alpha", "beta", "gamma"):
        built.health.record(agent, CheckIn(state="idle", pid=1, uptime_s=60, rss_bytes=1, turns=0))
    yield built
    built.db.close()


@pytest.fixture
def operator(services: Services) -> Iterator[TestClient]:
    with TestClient(
        create_app(services), headers={"authorization": f"Bearer {services.operator_token}"}
    ) as client:
        yield client


def spend(services: Services, agent: str, usd: float) -> None:
    cost = Charge(tokens_in=1000, tokens_out=200, cost_usd=usd)
    with services.db.transaction() as conn:
        row = Ledger.reserve(
            conn, at=datetime.now(UTC), agent=agent, kind="chat", model="test", provider="test", estimate=cost
        )
    Ledger(services.db).settle(row, model="test", provider="test", charge=cost, status="ok", latency_ms=5)


def test_budget_gauges_carry_spend_remaining_and_reset_time(operator: TestClient, services: Services) -> None:
    spend(services, "alpha", 0.04)
    report = operator.get("/api/v1/budgets").json()
    gauges = {(g["agent"], g["period"], g["unit"]): g for g in report["gauges"]}
    assert set(gauges) == {("alpha", "daily", "usd"), ("alpha", "daily", "tokens"), (None, "monthly", "usd")}
    daily = gauges[("alpha", "daily", "usd")]
    assert daily["limit"] == 0.10 and daily["spent"] == pytest.approx(0.04)
    assert daily["remaining"] == pytest.approx(0.06) and daily["fraction"] == pytest.approx(0.4)
    midnight = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)
    assert datetime.fromisoformat(daily["resets_at"]) == midnight
    assert gauges[("alpha", "daily", "tokens")]["spent"] == 1200
    assert gauges[(None, "monthly", "usd")]["spent"] == pytest.approx(0.04)
    assert report["blocked"] == []
    assert operator.get("/api/v1/attention").json() == {"count": 0, "agents": []}


def test_attention_names_each_agent_and_why(operator: TestClient, services: Services) -> None:
    spend(services, "alpha", 0.12)  # past alpha's daily cap: its calls are refused
    poison = services.inbox.submit("beta", ItemKind.OPERATOR_MESSAGE, "operator", "this crashes beta")
    for _ in range(services.fleet.config.limits.delivery_attempts):
        assert asyncio.run(services.inbox.next("beta", 0)) is not None
        services.inbox.requeue_claimed("beta")
    assert asyncio.run(services.inbox.next("beta", 0)) is None
    assert services.inbox.state(poison.id) == "dead"
    for _ in range(3):
        services.events.publish(EventType.AGENT_RESTARTED, agent="beta", reason="exited")

    units = services.manager.units_by_agent()
    services.backend.stop(units["gamma"].id)  # exited by itself: not held by the operator

    assert operator.get("/api/v1/budgets").json()["blocked"] == ["alpha"]
    attention = operator.get("/api/v1/attention").json()
    assert attention == {
        "count": 3,
        "agents": [
            {"agent": "alpha", "reasons": ["budget_blocked"]},
            {"agent": "beta", "reasons": ["dead_letters", "crash_loop"]},
            {"agent": "gamma", "reasons": ["unhealthy"]},
        ],
    }
    # An agent the operator stopped is held, not in trouble.
    assert operator.post("/api/v1/agents/gamma/stop").status_code == 200
    reasons = {a["agent"]: a["reasons"] for a in operator.get("/api/v1/attention").json()["agents"]}
    assert "gamma" not in reasons and reasons["alpha"] == ["budget_blocked"]


def test_the_routes_need_the_operator(services: Services) -> None:
    with TestClient(create_app(services)) as client:
        assert client.get("/api/v1/budgets").status_code == 401
        assert client.get("/api/v1/attention").status_code == 401
