"""/metrics: values computed from the SQLite tables of the gateway, scheduler, inbox and events."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from agent_runtime.protocol import ItemKind, RunOutcome, RunRecord
from orchestrator.events import EventType
from orchestrator.gateway.ledger import Charge, Ledger
from orchestrator.scheduler.runs import RunStore
from orchestrator.services import Services

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(client: TestClient) -> Samples:
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    samples: Samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


def charge(
    services: Services, agent: str, tokens_in: int, tokens_out: int, cost: float, settle: bool
) -> None:
    ledger = Ledger(services.db)
    with services.db.transaction() as conn:
        row = Ledger.reserve(
            conn,
            at=datetime.now(UTC),
            agent=agent,
            kind="chat",
            model="test",
            provider="test",
            estimate=Charge(tokens_in=tokens_in, tokens_out=tokens_out, cost_usd=cost),
        )
    if settle:
        ledger.settle(
            row,
            model="test",
            provider="test",
            charge=Charge(tokens_in=tokens_in, tokens_out=tokens_out, cost_usd=cost, cached_tokens=7),
            status="ok",
            latency_ms=12,
        )


def turn(store: RunStore, run_id: str, agent: str, outcome: RunOutcome) -> None:
    now = datetime.now(UTC)
    store.add_turn(
        RunRecord(
            id=run_id,
            agent=agent,
            trigger="operator",
            started_at=now - timedelta(seconds=2),
            finished_at=now,
            outcome=outcome,
        )
    )


def tick(store: RunStore, run_id: str, agent: str, outcome: str) -> None:
    now = datetime.now(UTC)
    store.add_tick(
        run_id=run_id,
        agent=agent,
        trigger="heartbeat",
        outcome=outcome,  # type: ignore[arg-type]
        detail="",
        scheduled_at=now,
        started_at=now,
        finished_at=now,
    )


def test_metrics_before_any_subsystem_wrote_anything(operator: TestClient) -> None:
    samples = scrape(operator)
    assert value(samples, "flotilla_agent_info", agent="alpha", role="researcher", model="test") == 1
    assert value(samples, "flotilla_agent_checking_in", agent="beta") == 0
    assert value(samples, "flotilla_llm_tokens_total", agent="alpha", type="input") == 0
    assert value(samples, "flotilla_inbox_depth", agent="alpha", state="queued") == 0
    assert value(samples, "flotilla_agent_restarts_total", agent="alpha") == 0
    assert value(samples, "flotilla_heartbeats_total", agent="alpha", outcome="idle") == 0


def test_metrics_reflect_usage_runs_queue_and_restarts(operator: TestClient, services: Services) -> None:
    charge(services, "alpha", 100, 20, 0.5, settle=True)
    charge(services, "alpha", 50, 5, 0.25, settle=True)
    charge(services, "alpha", 999, 999, 9.0, settle=False)  # still in flight: not counted yet
    charge(services, "beta", 10, 1, 0.01, settle=True)
    store = RunStore(services.db)
    turn(store, "r1", "alpha", RunOutcome.OK)
    turn(store, "r2", "alpha", RunOutcome.ERROR)
    tick(store, "t1", "beta", "idle")
    tick(store, "t2", "beta", "idle")
    tick(store, "t3", "beta", "run")
    services.inbox.submit("beta", ItemKind.OPERATOR_MESSAGE, "operator", "one")
    services.inbox.submit("beta", ItemKind.OPERATOR_MESSAGE, "operator", "two")
    services.events.publish(EventType.AGENT_RESTARTED, agent="alpha", exit_code=1)
    services.events.publish(EventType.AGENT_RESTARTED, agent="alpha", exit_code=1)

    samples = scrape(operator)
    assert value(samples, "flotilla_llm_tokens_total", agent="alpha", type="input") == 150 - 14
    assert value(samples, "flotilla_llm_tokens_total", agent="alpha", type="output") == 25
    assert value(samples, "flotilla_llm_tokens_total", agent="alpha", type="input_cached") == 14
    assert value(samples, "flotilla_llm_cost_usd_total", agent="alpha") == pytest.approx(0.75)
    assert value(samples, "flotilla_llm_cost_usd_total", agent="beta") == 0.01
    assert value(samples, "flotilla_llm_calls_total", agent="alpha", status="ok") == 2
    assert value(samples, "flotilla_llm_calls_total", agent="alpha", status="reserved") == 1
    assert value(samples, "flotilla_turns_total", agent="alpha", trigger="operator", outcome="ok") == 1
    assert value(samples, "flotilla_turns_total", agent="alpha", trigger="operator", outcome="error") == 1
    assert value(samples, "flotilla_heartbeats_total", agent="beta", outcome="idle") == 2
    assert value(samples, "flotilla_heartbeats_total", agent="beta", outcome="run") == 1
    assert value(samples, "flotilla_heartbeats_total", agent="beta", outcome="skipped") == 0
    assert value(samples, "flotilla_inbox_depth", agent="beta", state="queued") == 2
    assert value(samples, "flotilla_inbox_depth", agent="beta", state="dead") == 0
    assert value(samples, "flotilla_agent_restarts_total", agent="alpha") == 2
    assert value(samples, "flotilla_agent_restarts_total", agent="beta") == 0

    # Counters carried between scrapes only grow with new events.
    services.events.publish(EventType.AGENT_RESTARTED, agent="alpha", exit_code=137)
    assert value(scrape(operator), "flotilla_agent_restarts_total", agent="alpha") == 3


def test_metrics_need_the_operator_token(anonymous: TestClient, agent_client: TestClient) -> None:
    assert anonymous.get("/metrics").status_code == 401
    assert agent_client.get("/metrics").status_code == 403


def test_metrics_can_be_made_public(app: FastAPI, anonymous: TestClient) -> None:
    app.state.metrics_public = True
    response = anonymous.get("/metrics")
    assert response.status_code == 200
    assert "flotilla_agent_info" in response.text


def test_calls_settled_between_scrapes_are_counted_once(operator: TestClient, services: Services) -> None:
    ledger = Ledger(services.db)
    with services.db.transaction() as conn:
        open_row = Ledger.reserve(
            conn,
            at=datetime.now(UTC),
            agent="alpha",
            kind="chat",
            model="test",
            provider="test",
            estimate=Charge(tokens_in=500, tokens_out=500, cost_usd=1.0),
        )
    charge(services, "alpha", 10, 1, 0.1, settle=True)  # after the open one
    first = scrape(operator)
    assert value(first, "flotilla_llm_tokens_total", agent="alpha", type="input") == 10 - 7
    assert value(first, "flotilla_llm_calls_total", agent="alpha", status="reserved") == 1
    ledger.settle(
        open_row,
        model="test",
        provider="test",
        charge=Charge(tokens_in=300, tokens_out=40, cost_usd=0.5),
        status="ok",
        latency_ms=5,
    )
    charge(services, "alpha", 1, 1, 0.01, settle=True)
    for _ in range(2):  # the second scrape must not count anything twice
        samples = scrape(operator)
        assert value(samples, "flotilla_llm_tokens_total", agent="alpha", type="input") == 311 - 14
        assert value(samples, "flotilla_llm_cost_usd_total", agent="alpha") == pytest.approx(0.61)
        assert value(samples, "flotilla_llm_calls_total", agent="alpha", status="ok") == 3
        assert (
            ("flotilla_llm_calls_total", frozenset({("agent", "alpha"), ("status", "reserved")}))
        ) not in samples
