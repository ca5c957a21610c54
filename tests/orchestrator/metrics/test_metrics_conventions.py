"""/metrics follows Prometheus conventions: sums are true totals, no family repeats another,
latency histograms, budget gauges, the standard process metrics, and promtool finds nothing."""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from agent_runtime.protocol import RunOutcome
from orchestrator.broker import MessageKind, MessageLog, MessageState
from orchestrator.gateway.ledger import Charge, Ledger
from orchestrator.scheduler.runs import RunStore
from orchestrator.services import Services
from orchestrator.telemetry.histograms import LatencyCollector
from tests.orchestrator.conftest import LOOKUP_INTERFACE
from tests.orchestrator.metrics.test_metrics import Samples, scrape, tick, turn, value

BUDGET_FLEET = """\
version: 1
fleet: optest
budget: { daily_usd: 10.0 }
defaults:
  budget: { daily_usd: 1.0, monthly_tokens: 1000 }
agents:
  alpha:
    role: researcher
    interface: lookup.md
  beta:
    role: writer
    budget: { daily_usd: 2.0 }
"""


@pytest.fixture
def fleet_file(tmp_path: Path) -> Path:
    root = tmp_path / "fleet"
    root.mkdir()
    (root / "lookup.md").write_text(LOOKUP_INTERFACE)
    path = root / "fleet.yaml"
    path.write_text(textwrap.dedent(BUDGET_FLEET))
    return path


def settled_call(
    services: Services, agent: str, tokens_in: int, cached: int, tokens_out: int, latency_ms: int
) -> None:
    ledger = Ledger(services.db)
    estimate = Charge(tokens_in=tokens_in, tokens_out=tokens_out, cost_usd=0.1)
    with services.db.transaction() as conn:
        row = Ledger.reserve(
            conn,
            at=datetime.now(UTC),
            agent=agent,
            kind="chat",
            model="test",
            provider="test",
            estimate=estimate,
        )
    ledger.settle(
        row,
        model="test",
        provider="test",
        charge=Charge(tokens_in=tokens_in, tokens_out=tokens_out, cost_usd=0.1, cached_tokens=cached),
        status="ok",
        latency_ms=latency_ms,
    )


def families(text: str) -> dict[str, str]:
    return {family.name: family.type for family in text_string_to_metric_families(text)}


def summed(samples: Samples, name: str, **labels: str) -> float:
    wanted = set(labels.items())
    return sum(v for (sample, found), v in samples.items() if sample == name and wanted <= found)


def test_token_types_do_not_overlap_so_their_sum_is_every_token(
    operator: TestClient, services: Services
) -> None:
    settled_call(services, "alpha", tokens_in=1000, cached=600, tokens_out=50, latency_ms=80)
    settled_call(services, "alpha", tokens_in=200, cached=0, tokens_out=10, latency_ms=900)
    samples = scrape(operator)
    assert value(samples, "flotilla_llm_tokens_total", agent="alpha", type="input") == 400 + 200
    assert value(samples, "flotilla_llm_tokens_total", agent="alpha", type="input_cached") == 600
    assert value(samples, "flotilla_llm_tokens_total", agent="alpha", type="output") == 60
    assert summed(samples, "flotilla_llm_tokens_total", agent="alpha") == 1000 + 200 + 50 + 10


def test_turns_and_ticks_are_separate_families_counted_once(operator: TestClient, services: Services) -> None:
    store = RunStore(services.db)
    turn(store, "r1", "alpha", RunOutcome.OK)
    tick(store, "t1", "alpha", "run")
    tick(store, "t2", "alpha", "idle")
    response = operator.get("/metrics")
    kinds = families(response.text)
    assert "flotilla_runs" not in kinds and "flotilla_agent_turns" not in kinds
    samples = scrape(operator)
    assert summed(samples, "flotilla_turns_total", agent="alpha") == 1
    assert summed(samples, "flotilla_heartbeats_total", agent="alpha") == 2
    assert value(samples, "flotilla_heartbeats_total", agent="alpha", outcome="run") == 1


def test_latency_histograms_for_model_calls_turns_and_asks(services: Services) -> None:
    settled_call(services, "alpha", tokens_in=10, cached=0, tokens_out=1, latency_ms=80)
    settled_call(services, "alpha", tokens_in=10, cached=0, tokens_out=1, latency_ms=3000)
    turn(RunStore(services.db), "r1", "beta", RunOutcome.OK)  # two seconds long
    log = MessageLog(services.db)
    log.record(
        "m1",
        MessageKind.ASK,
        "alpha",
        "beta",
        operation="lookup",
        parent_item=None,
        hop=0,
        trace=[],
        state=MessageState.SENT,
    )
    log.finish("m1", MessageState.ANSWERED)
    log.record(
        "m2",
        MessageKind.ASK,
        "alpha",
        "beta",
        operation="lookup",
        parent_item=None,
        hop=0,
        trace=[],
        state=MessageState.SENT,
    )  # still waiting: not observed yet
    registry = CollectorRegistry(auto_describe=False)
    registry.register(LatencyCollector(services.db, ask_settle=timedelta(0)))

    def sample(name: str, **labels: str) -> float | None:
        found = registry.get_sample_value(name, labels)
        return found

    labels = {"agent": "alpha", "model": "test"}
    assert sample("flotilla_llm_call_duration_seconds_count", **labels) == 2
    assert sample("flotilla_llm_call_duration_seconds_sum", **labels) == pytest.approx(3.08)
    assert sample("flotilla_llm_call_duration_seconds_bucket", **labels, le="0.1") == 1
    assert sample("flotilla_llm_call_duration_seconds_bucket", **labels, le="5.0") == 2
    assert sample("flotilla_llm_call_duration_seconds_bucket", **labels, le="+Inf") == 2
    turn_labels = {"agent": "beta", "trigger": "operator"}
    assert sample("flotilla_turn_duration_seconds_count", **turn_labels) == 1
    assert sample("flotilla_turn_duration_seconds_bucket", **turn_labels, le="1.0") == 0
    assert sample("flotilla_turn_duration_seconds_bucket", **turn_labels, le="2.5") == 1
    ask_labels = {"agent": "beta", "outcome": "answered"}
    assert sample("flotilla_ask_duration_seconds_count", **ask_labels) == 1

    # Observations are folded in once: later scrapes see only what is new.
    log.finish("m2", MessageState.FAILED)
    generate_latest(registry)
    assert sample("flotilla_ask_duration_seconds_count", **ask_labels) == 1
    assert sample("flotilla_ask_duration_seconds_count", agent="beta", outcome="failed") == 1
    assert sample("flotilla_llm_call_duration_seconds_count", **labels) == 2


def test_budget_limit_and_remaining_per_agent_and_fleet(operator: TestClient, services: Services) -> None:
    settled_call(services, "alpha", tokens_in=100, cached=0, tokens_out=20, latency_ms=5)  # $0.10
    samples = scrape(operator)
    alpha_usd = {"agent": "alpha", "scope": "agent", "period": "daily", "unit": "usd"}
    assert value(samples, "flotilla_budget_limit", **alpha_usd) == 1.0
    assert value(samples, "flotilla_budget_remaining", **alpha_usd) == pytest.approx(0.9)
    alpha_tokens = {"agent": "alpha", "scope": "agent", "period": "monthly", "unit": "tokens"}
    assert value(samples, "flotilla_budget_remaining", **alpha_tokens) == 1000 - 120
    beta_usd = {"agent": "beta", "scope": "agent", "period": "daily", "unit": "usd"}
    assert value(samples, "flotilla_budget_limit", **beta_usd) == 2.0
    fleet_usd = {"agent": "", "scope": "fleet", "period": "daily", "unit": "usd"}
    assert value(samples, "flotilla_budget_remaining", **fleet_usd) == pytest.approx(9.9)
    tomorrow = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)
    assert value(samples, "flotilla_budget_reset_timestamp_seconds", **alpha_usd) == tomorrow.timestamp()


def test_process_metrics_use_the_standard_names(operator: TestClient) -> None:
    kinds = families(operator.get("/metrics").text)
    assert kinds["process_cpu_seconds"] == "counter"
    for gauge in ("process_resident_memory_bytes", "process_open_fds", "process_start_time_seconds"):
        assert kinds[gauge] == "gauge"
    samples = scrape(operator)
    assert value(samples, "process_resident_memory_bytes") > 0
    assert value(samples, "process_open_fds") > 0


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed (Debian: prometheus)")
def test_promtool_finds_no_problem(operator: TestClient, services: Services) -> None:
    settled_call(services, "alpha", tokens_in=10, cached=2, tokens_out=1, latency_ms=80)
    turn(RunStore(services.db), "r1", "beta", RunOutcome.OK)
    tick(RunStore(services.db), "t1", "beta", "idle")
    text = operator.get("/metrics").text
    checked = subprocess.run(
        ["promtool", "check", "metrics"], input=text, capture_output=True, text=True, check=False
    )
    assert (checked.returncode, checked.stdout + checked.stderr) == (0, "")
