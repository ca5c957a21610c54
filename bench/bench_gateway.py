"""LLM gateway overhead, budget charging rate, token counting, and the cost of the cl100k table.

The orchestrator app is served by uvicorn on 127.0.0.1 in this process; calls are made with
the official `openai` client, one at a time, so latencies are per call and not queueing:
- the built-in `test` model (the gateway's whole path, no upstream);
- a fake OpenAI-compatible upstream called directly, then through the gateway: the
  difference is what the gateway adds (auth, allowlist, budget reservation and settlement,
  ledger row, forwarding);
- `POST /v1/tokens/count` for a ~1,000-token text (what agents call instead of loading cl100k).
Budget reserve+settle pairs are timed without HTTP. The table's memory is measured in a fresh
interpreter: RSS before and after the first count.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import httpx
import openai

from orchestrator.api.app import create_app
from orchestrator.config.loader import load_fleet
from orchestrator.gateway.ledger import Charge, timestamp
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.testing.fake_upstream import FakeUpstream
from orchestrator.testing.server import serve_app
from orchestrator.wiring import build_services

Row = dict[str, str]
KEY_ENV = "FLT_BENCH_GATEWAY_KEY"
FLEET = """\
version: 1
fleet: benchgateway
llm:
  providers:
    fake: {{base_url: "{upstream}", api_key_env: {key_env}}}
  models:
    fake:fake-model: {{input_per_mtok: 1, output_per_mtok: 2}}
agents:
  worker:
    models: [fake:fake-model]
    budget: {{daily_usd: 1000, daily_tokens: 1000000000, monthly_usd: 100000}}
budget: {{monthly_usd: 1000000, monthly_tokens: 100000000000}}
"""
MESSAGES = [
    {"role": "system", "content": "You are a benchmark agent. " * 40},
    {"role": "user", "content": "hello, how are you today?"},
]
RSS_SCRIPT = """
import resource, sys
def rss():
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) * 1024
    return 0
from orchestrator.gateway.tokens import token_counter
before = rss()
token_counter().count('warm up')
print(before, rss())
"""


def _timed(call: Callable[[], object], count: int) -> list[float]:
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def _p(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _row(metric: str, value: str, target: str = "") -> Row:
    return {"benchmark": "gateway", "metric": metric, "value": value, "target": target}


def _table_rss() -> Row:
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", RSS_SCRIPT], cwd=root, capture_output=True, text=True, check=True
    ).stdout.split()
    before, after = int(out[0]), int(out[1])
    return _row(
        "cl100k table, RSS added to the orchestrator (once per fleet)", f"{(after - before) / 2**20:.1f} MiB"
    )


def run(quick: bool) -> list[Row]:
    calls = 150 if quick else 1000
    rows: list[Row] = []
    os.environ[KEY_ENV] = "sk-bench-not-a-real-key"
    upstream = FakeUpstream()
    with tempfile.TemporaryDirectory(prefix="flt-bench-gateway-") as tmp, upstream.serve() as upstream_url:
        fleet_file = Path(tmp) / "fleet.yaml"
        fleet_file.write_text(FLEET.format(upstream=upstream_url, key_env=KEY_ENV))
        services = build_services(load_fleet(fleet_file), FakeBackend())
        token = services.tokens.mint("worker")
        with serve_app(create_app(services)) as url:
            client = openai.OpenAI(base_url=url + "/v1", api_key=token, max_retries=0)
            direct = openai.OpenAI(base_url=upstream_url, api_key="direct", max_retries=0)
            http = httpx.Client(base_url=url, headers={"authorization": f"Bearer {token}"})
            try:
                rows += _calls(client, direct, http, calls)
            finally:
                client.close()
                direct.close()
                http.close()
        pairs = 500 if quick else 5000
        rows.append(_charging_rate(services, pairs, "empty ledger"))
        _seed_history(services, 100_000)
        rows.append(_charging_rate(services, pairs, "100,000 calls this month"))
        services.db.close()
    rows.append(_table_rss())
    return rows


def _calls(client: openai.OpenAI, direct: openai.OpenAI, http: httpx.Client, calls: int) -> list[Row]:
    def test_model() -> object:
        return client.chat.completions.create(model="test", messages=MESSAGES)  # type: ignore[arg-type]

    def via_gateway() -> object:
        return client.chat.completions.create(model="fake:fake-model", messages=MESSAGES)  # type: ignore[arg-type]

    def upstream_direct() -> object:
        return direct.chat.completions.create(model="fake-model", messages=MESSAGES)  # type: ignore[arg-type]

    text = "Flotilla agents count tokens through the gateway. " * 110
    body = {"model": "test", "texts": [text]}

    def count() -> object:
        return http.post("/v1/tokens/count", json=body).raise_for_status()

    for warm in (test_model, via_gateway, upstream_direct, count):
        _timed(warm, 10)
    test_ms = _timed(test_model, calls)
    # Interleaved, so a change in the machine's load falls on both sides of the difference.
    gateway_ms: list[float] = []
    direct_ms: list[float] = []
    for _ in range(calls):
        gateway_ms += _timed(via_gateway, 1)
        direct_ms += _timed(upstream_direct, 1)
    count_ms = _timed(count, calls)
    overhead = statistics.median(gateway_ms) - statistics.median(direct_ms)
    return [
        _row(
            "test model call, wall clock p50 / p99 (ms)", f"{_p(test_ms, 0.5):.2f} / {_p(test_ms, 0.99):.2f}"
        ),
        _row("fake upstream called directly, wall clock p50 (ms)", f"{_p(direct_ms, 0.5):.2f}"),
        _row(
            "fake upstream via gateway, wall clock p50 / p99 (ms)",
            f"{_p(gateway_ms, 0.5):.2f} / {_p(gateway_ms, 0.99):.2f}",
        ),
        _row("gateway overhead: via gateway p50 - direct p50 (ms)", f"{overhead:.2f}", "< 10"),
        _row("tokens/count of ~1,000 tokens, wall clock p50 (ms)", f"{_p(count_ms, 0.5):.2f}"),
    ]


def _seed_history(services: object, count: int) -> None:
    """A month of other agents' calls, written straight into the ledger, then a rebuilt rollup."""
    gateway = services.gateway  # type: ignore[attr-defined]
    now = gateway.budgets._clock()
    start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    step = max((now - start) / count, timedelta(microseconds=1))
    rows = [
        (
            timestamp(start + i * step),
            f"agent-{i % 100}",
            "chat",
            "test",
            "test",
            "test",
            100,
            50,
            0.00015,
            "ok",
        )
        for i in range(count)
    ]
    with services.db.transaction() as conn:  # type: ignore[attr-defined]
        conn.executemany(
            "INSERT INTO gateway_usage(at, agent, kind, requested_model, model, provider, tokens_in, tokens_out, "
            "cost_usd, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
    gateway.ledger.recover()


def _charging_rate(services: object, pairs: int, history: str) -> Row:
    gateway = services.gateway  # type: ignore[attr-defined]
    started = time.perf_counter()
    for _ in range(pairs):
        reservation = gateway.budgets.reserve(
            "worker", kind="chat", model="test", provider="test", estimate=Charge(100, 100, 0.0002)
        )
        gateway.ledger.settle(
            reservation.row_id,
            model="test",
            provider="test",
            charge=Charge(90, 20, 0.00011),
            status="ok",
            latency_ms=1,
        )
    rate = pairs / (time.perf_counter() - started)
    return _row(f"budget reserve + settle per second ({history})", f"{rate:,.0f}")


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(f"{row['metric']}: {row['value']}" + (f" (target {row['target']})" if row["target"] else ""))
