"""The operator surface: /metrics scrape time over a busy database, event delivery over SSE,
direct-edit detection by the workspace watcher, and the workspace listing.

Everything runs on loopback against a fleet on the in-memory test backend.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from agent_runtime import FileVersion, Workspace
from orchestrator.api.app import create_app
from orchestrator.config.loader import load_fleet
from orchestrator.events import EventType
from orchestrator.gateway.ledger import timestamp
from orchestrator.scheduler.runs import RunStore
from orchestrator.services import Services
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.testing.server import serve_app
from orchestrator.wiring import build_services
from orchestrator.workspaces.watcher import WorkspaceWatcher

Row = dict[str, str]


def _row(metric: str, value: str, target: str = "") -> Row:
    return {"benchmark": "operator", "metric": metric, "value": value, "target": target}


def _fleet(root: Path, agents: int) -> Services:
    # Every cap set, so that a scrape computes each agent's and the fleet's budget gauges.
    caps = "{daily_usd: 100, monthly_usd: 1000, daily_tokens: 100000000, monthly_tokens: 1000000000}"
    lines = ["version: 1", "fleet: benchops", f"budget: {caps}", "defaults:", f"  budget: {caps}", "agents:"]
    lines += [f"  agent-{i}:\n    role: worker {i}" for i in range(agents)]
    path = root / "fleet.yaml"
    path.write_text("\n".join(lines) + "\n")
    services = build_services(load_fleet(path), FakeBackend())
    services.manager.apply()
    return services


def _fill(services: Services, agents: int, usage_rows: int, events: int) -> None:
    names = [f"agent-{i}" for i in range(agents)]
    start = datetime.now(UTC) - timedelta(days=30)
    step = timedelta(days=30) / max(usage_rows, 1)
    with services.db.transaction() as conn:
        conn.executemany(
            "INSERT INTO gateway_usage(at, agent, kind, requested_model, model, provider, tokens_in, "
            "tokens_out, cost_usd, status, latency_ms) "
            "VALUES (?, ?, 'chat', 'test', 'test', 'test', 900, 120, 0.002, 'ok', 800)",
            [(timestamp(start + step * i), names[i % agents]) for i in range(usage_rows)],
        )
        conn.executemany(
            "INSERT INTO events(type, agent, at, data) VALUES (?, ?, ?, '{}')",
            [(EventType.HEARTBEAT_IDLE.value, names[i % agents], start.isoformat()) for i in range(events)],
        )
    store = RunStore(services.db)
    now = datetime.now(UTC)
    for i in range(usage_rows // 10):
        store.add_tick(
            run_id=f"tick-{i}",
            agent=names[i % agents],
            trigger="heartbeat",
            outcome="idle",
            detail="",
            scheduled_at=now,
            started_at=now,
            finished_at=now,
        )


def _median_ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:.2f} ms"


def _p95_ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    return f"{ordered[int(0.95 * (len(ordered) - 1))] * 1000:.2f} ms"


def _scrapes(client: httpx.Client, count: int) -> tuple[float, list[float]]:
    """The first scrape (which reads every stored row once), then the steady-state ones."""
    started = time.perf_counter()
    client.get("/metrics").raise_for_status()
    first = time.perf_counter() - started
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        client.get("/metrics").raise_for_status()
        samples.append(time.perf_counter() - started)
    return first, samples


def _sse_latencies(url: str, services: Services, count: int) -> list[float]:
    sent: dict[int, float] = {}
    received: list[float] = []
    ready = threading.Event()

    def listen() -> None:
        headers = {"authorization": f"Bearer {services.operator_token}"}
        with httpx.stream("GET", f"{url}/api/v1/events", headers=headers, timeout=30) as response:
            for line in response.iter_lines():
                if line.startswith(": connected"):
                    ready.set()
                if line.startswith("data: "):
                    seq = json.loads(line[6:])["seq"]
                    if seq in sent:
                        received.append(time.perf_counter() - sent[seq])
                    if len(received) == count:
                        return

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    ready.wait(10)
    for _ in range(count):
        started = time.perf_counter()
        event = services.events.publish(EventType.AGENT_REPORTED, agent="agent-0")
        sent[event.seq] = started
        time.sleep(0.002)
    listener.join(30)
    return received


def _watcher_latencies(services: Services, count: int) -> list[float]:
    path = services.paths.workspace("agent-0") / "USER.md"
    samples = []
    with WorkspaceWatcher(services.fleet_view, services.paths, services.events, services.workspaces):
        for i in range(count):
            before = len(watcher_history(services))
            started = time.perf_counter()
            path.write_text(f"edit number {i}\n")
            deadline = started + 10
            while len(watcher_history(services)) == before and time.perf_counter() < deadline:
                time.sleep(0.005)
            samples.append(time.perf_counter() - started)
    return samples


def watcher_history(services: Services) -> list[FileVersion]:
    return Workspace(services.paths.agent_dir("agent-0")).history("USER.md")


def run(quick: bool) -> list[Row]:
    agents, usage_rows, events = (5, 20_000, 20_000) if quick else (20, 200_000, 200_000)
    with tempfile.TemporaryDirectory(prefix="flt-bench-operator-") as tmp:
        services = _fleet(Path(tmp), agents)
        _fill(services, agents, usage_rows, events)
        rows: list[Row] = []
        with serve_app(create_app(services)) as url:
            headers = {"authorization": f"Bearer {services.operator_token}"}
            with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
                first, scrapes = _scrapes(client, 5 if quick else 20)
                size = f"{agents} agents, {usage_rows} ledger rows, {events} events"
                rows.append(_row(f"/metrics first scrape ({size})", f"{first * 1000:.0f} ms", "< 2 s"))
                rows.append(_row(f"/metrics scrape, steady state ({size})", _median_ms(scrapes), "< 100 ms"))
                listing = []
                for _ in range(20):
                    started = time.perf_counter()
                    client.get("/api/v1/agents/agent-0/workspace").raise_for_status()
                    listing.append(time.perf_counter() - started)
                rows.append(_row("workspace listing (median)", _median_ms(listing), "< 50 ms"))
            latencies = _sse_latencies(url, services, 100 if quick else 500)
            rows.append(_row("event publish -> SSE client (median)", _median_ms(latencies), "< 20 ms"))
            rows.append(_row("event publish -> SSE client (p95)", _p95_ms(latencies), ""))
        detections = _watcher_latencies(services, 5 if quick else 20)
        rows.append(
            _row("direct edit -> new version (median, 0.4 s debounce)", _median_ms(detections), "< 1 s")
        )
        services.db.close()
    return rows


if __name__ == "__main__":
    for result in run(quick=True):
        print(result)
