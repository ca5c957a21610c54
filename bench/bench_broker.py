"""Broker round trip: one agent asks another an operation and gets the validated answer.

The orchestrator app is served by uvicorn on 127.0.0.1 (in this process). Two simulated agents
run in their own processes, with no model:
- the callee consumes its inbox with the agent's own client (`OrchestratorClient.next_item` and
  `.done`, over the agent channel, a WebSocket);
- the caller calls the `ask_agent` tool (agent_runtime.tools.peers) at a fixed rate.

Latency is measured by the caller from each ask's scheduled start to its answer (so a backlog
shows up as latency instead of silently lowering the rate). A closed-loop phase asks as fast as
answers come back, with a few asks in flight, to find the throughput; a light phase shows the
latency of the path when the CPUs are not the bottleneck. CPU seconds per ask are reported for
each process, and for the broker and inbox alone (no HTTP), which tells where the time goes.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path

from agent_runtime.protocol import AskRequest, WorkResult
from agent_runtime.tools.peers import PeerClient, peer_tools
from agent_runtime.tools.registry import ToolRegistry
from agent_runtime.transport.client import OrchestratorClient
from orchestrator.api.app import create_app
from orchestrator.config.loader import load_fleet
from orchestrator.services import Services
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.testing.server import serve_app
from orchestrator.wiring import build_services

Row = dict[str, str]
RATE_PER_S = 200
# A light load too: the path's own latency when the CPUs are not the bottleneck.
LIGHT_RATE_PER_S = 20
TARGET_P99_MS = 25.0
# The broker's own throughput is measured, far past any agent's default fair share: the rates
# are lifted (the checks still run on every ask).
FLEET = """\
version: 1
fleet: benchbroker
limits:
  rates: {asks: 1000/s, pair: 1000/s, intake: 1000/s, pending: 1000}
agents:
  caller:
    talks_to: [callee]
  callee:
    interface: |
      ---
      operations:
        - name: lookup
          description: Look a key up.
          input:
            type: object
            properties: {key: {type: string, minLength: 1}, n: {type: integer}}
            required: [key]
          output:
            type: object
            properties: {value: {type: string}}
            required: [value]
      ---
      I look things up.
"""


def _row(metric: str, value: str, target: str = "") -> Row:
    return {"benchmark": "broker", "metric": metric, "value": value, "target": target}


@dataclass(frozen=True)
class Phase:
    name: str
    rate_per_s: float | None  # None: closed loop
    duration_s: float
    in_flight: int


@dataclass
class PhaseResult:
    latencies: list[float] = field(default_factory=list)
    failures: int = 0
    elapsed_s: float = 0.0


@dataclass
class CallerReport:
    phases: dict[str, PhaseResult]
    cpu_s: float


# --- the simulated agents (child processes) -------------------------------------------------


def callee_main(url: str, token_file: Path, stop: Connection, out: Connection) -> None:
    """Answer every ask as an agent does: the agent's client, one item at a time."""
    client = OrchestratorClient(url, token_file)
    answered = 0
    try:
        while not stop.poll():
            item = client.next_item(1.0)
            if item is None:
                continue
            key = (item.input or {}).get("key", "")
            client.done(item.id, WorkResult(output={"value": f"value-of-{key}"}))
            answered += 1
    finally:
        client.close()
        out.send((answered, time.process_time()))


def caller_main(url: str, token: str, phases: list[Phase], out: Connection) -> None:
    client = PeerClient(url, token)
    tools = ToolRegistry(peer_tools(client))
    results = {}
    try:
        for phase in phases:
            results[phase.name] = _run_phase(tools, phase)
    finally:
        client.close()
    out.send(CallerReport(results, time.process_time()))


def _ask(tools: ToolRegistry, n: int) -> bool:
    outcome = tools.dispatch(
        "ask_agent", {"agent": "callee", "operation": "lookup", "input": {"key": f"k{n}", "n": n}}
    )
    return outcome.ok and json.loads(outcome.output) == {"value": f"value-of-k{n}"}


def _run_phase(tools: ToolRegistry, phase: Phase) -> PhaseResult:
    result = PhaseResult()
    lock = threading.Lock()

    def one(n: int, scheduled: float) -> None:
        ok = _ask(tools, n)
        took = time.perf_counter() - scheduled
        with lock:
            result.latencies.append(took)
            result.failures += 0 if ok else 1

    started = time.perf_counter()
    with ThreadPoolExecutor(phase.in_flight) as pool:
        if phase.rate_per_s is not None:
            for n in range(int(phase.duration_s * phase.rate_per_s)):
                scheduled = started + n / phase.rate_per_s
                delay = scheduled - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                pool.submit(one, n, scheduled)
        else:
            deadline = started + phase.duration_s

            def worker(offset: int) -> None:
                n = offset
                while time.perf_counter() < deadline:
                    one(n, time.perf_counter())
                    n += phase.in_flight

            for offset in range(phase.in_flight):
                pool.submit(worker, offset)
    result.elapsed_s = time.perf_counter() - started
    return result


# --- the orchestrator side (this process) ---------------------------------------------------


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def broker_cpu_per_round_trip(services: Services, count: int) -> float:
    """The broker and inbox alone, without HTTP: CPU seconds per ask and answer, in one loop."""

    async def scenario() -> None:
        async def answer() -> None:
            for _ in range(count):
                item = await services.inbox.next("callee", 5)
                assert item is not None
                services.inbox.complete("callee", item.id, WorkResult(output={"value": "v"}))

        answering = asyncio.ensure_future(answer())
        for n in range(count):
            request = AskRequest(to="callee", operation="lookup", input={"key": f"k{n}"})
            result = await services.broker.ask("caller", request)
            assert result.ok, result.error
        await answering

    started = time.process_time()
    asyncio.run(scenario())
    return (time.process_time() - started) / count


def run(quick: bool) -> list[Row]:
    phases = [
        Phase("warmup", RATE_PER_S, 1.0, 32),
        Phase("fixed", RATE_PER_S, 5.0 if quick else 30.0, 32),
        Phase("closed", None, 3.0 if quick else 10.0, 4),
        Phase("light", LIGHT_RATE_PER_S, 3.0 if quick else 10.0, 8),
    ]
    with tempfile.TemporaryDirectory(prefix="flt-bench-broker-") as tmp:
        # Separate state for the in-process measurement: inbox wake-ups belong to one event loop.
        alone = _services(Path(tmp) / "alone")
        in_process_cpu = broker_cpu_per_round_trip(alone, 500 if quick else 3000)
        alone.db.close()
        services = _services(Path(tmp) / "served")
        report, answered, cpu = _serve_and_ask(services, phases, Path(tmp))
        services.db.close()
    rows = _rows(report, phases, answered, cpu)
    rows.append(_row("CPU per ask, broker + inbox alone (no HTTP)", f"{in_process_cpu * 1000:.2f} ms"))
    return rows


def _services(root: Path) -> Services:
    root.mkdir(parents=True)
    (root / "fleet.yaml").write_text(FLEET)
    return build_services(load_fleet(root / "fleet.yaml"), FakeBackend())


def _serve_and_ask(
    services: Services, phases: list[Phase], token_folder: Path
) -> tuple[CallerReport, int, dict[str, float]]:
    """Serve the app, run both agents to the end of the phases; CPU seconds per process."""
    ctx = multiprocessing.get_context("spawn")
    caller_token = services.tokens.mint("caller")
    callee_token = services.tokens.mint("callee")
    with serve_app(create_app(services)) as url:
        stop_recv, stop_send = ctx.Pipe(duplex=False)
        caller_recv, caller_send = ctx.Pipe(duplex=False)
        callee_recv, callee_send = ctx.Pipe(duplex=False)
        callee_token_file = token_folder / "callee.token"
        callee_token_file.write_text(callee_token)
        callee = ctx.Process(
            target=callee_main, args=(url, callee_token_file, stop_recv, callee_send), daemon=True
        )
        caller = ctx.Process(target=caller_main, args=(url, caller_token, phases, caller_send), daemon=True)
        callee.start()
        caller.start()
        server_cpu = time.process_time()
        try:
            report: CallerReport = caller_recv.recv()
        finally:
            server_cpu = time.process_time() - server_cpu
            stop_send.send(True)
            answered, callee_cpu = callee_recv.recv()
            caller.join(30)
            callee.join(30)
    return report, answered, {"orchestrator": server_cpu, "caller": report.cpu_s, "callee": callee_cpu}


def _rows(report: CallerReport, phases: list[Phase], answered: int, cpu: dict[str, float]) -> list[Row]:
    fixed, closed = phases[1], phases[2]
    at_rate, flat_out = report.phases["fixed"], report.phases["closed"]
    p99 = _percentile(at_rate.latencies, 0.99) * 1000
    rate = f"@ {fixed.rate_per_s:g}/s"
    rows = [
        _row(f"ask round trip p50 {rate}", f"{statistics.median(at_rate.latencies) * 1000:.1f} ms"),
        _row(
            f"ask round trip p99 {rate}",
            f"{p99:.1f} ms",
            f"<= {TARGET_P99_MS:g} ms ({'met' if p99 <= TARGET_P99_MS else 'MISSED'})",
        ),
        _row(f"ask round trip max {rate}", f"{max(at_rate.latencies) * 1000:.1f} ms"),
        _row(
            f"asks answered {rate}",
            f"{len(at_rate.latencies)} in {at_rate.elapsed_s:.1f} s"
            f" ({len(at_rate.latencies) / at_rate.elapsed_s:.0f}/s), {at_rate.failures} failed",
            "0 failed",
        ),
        _row(
            f"throughput, closed loop, {closed.in_flight} asks in flight",
            f"{len(flat_out.latencies) / flat_out.elapsed_s:.0f} asks/s"
            f" (p50 {statistics.median(flat_out.latencies) * 1000:.1f} ms), {flat_out.failures} failed",
        ),
    ]
    light = report.phases["light"]
    rows.append(
        _row(
            f"ask round trip p50 / p99 @ {LIGHT_RATE_PER_S}/s",
            f"{statistics.median(light.latencies) * 1000:.1f} ms / {_percentile(light.latencies, 0.99) * 1000:.1f} ms",
        )
    )
    for who, seconds in cpu.items():
        rows.append(_row(f"CPU per ask, {who} process", f"{seconds / max(answered, 1) * 1000:.2f} ms"))
    return rows


if __name__ == "__main__":
    for row in run(quick=True):
        print(f"{row['metric']}: {row['value']}  {row['target']}")
