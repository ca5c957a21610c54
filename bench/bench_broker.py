"""Broker round trip: one agent asks another an operation and gets the validated answer.

The orchestrator app is served by uvicorn on 127.0.0.1 (in this process). Two simulated agents
run in their own processes, with no model:
- the callee long-polls its inbox (GET /agent/v1/inbox/next) and posts each answer (.../done);
- the caller calls the `ask_agent` tool (agent_runtime.tools.peers) at a fixed rate.

Latency is measured by the caller from each ask's scheduled start to its answer (so a backlog
shows up as latency instead of silently lowering the rate). A second, closed-loop phase asks as
fast as answers come back, with a few asks in flight, to find the throughput.
"""

from __future__ import annotations

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

import httpx

from agent_runtime.protocol import InboxItem, WorkResult
from agent_runtime.tools.peers import PeerClient, no_delay_transport, peer_tools
from agent_runtime.tools.registry import ToolRegistry
from orchestrator.api.app import create_app
from orchestrator.config.loader import load_fleet
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.testing.server import serve_app
from orchestrator.wiring import build_services

Row = dict[str, str]
RATE_PER_S = 200
TARGET_P99_MS = 25.0
FLEET = """\
version: 1
fleet: benchbroker
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


def callee_main(url: str, token: str, stop: Connection, out: Connection) -> None:
    """Answer every ask: long-poll the inbox, post the result; one item at a time, like an agent."""
    http = httpx.Client(
        base_url=url,
        headers={"authorization": f"Bearer {token}"},
        timeout=30,
        transport=no_delay_transport(),
    )
    answered = 0
    try:
        while not stop.poll():
            response = http.get("/agent/v1/inbox/next", params={"wait": 1.0})
            if response.status_code == 204:
                continue
            response.raise_for_status()
            item = InboxItem.model_validate_json(response.content)
            key = (item.input or {}).get("key", "")
            result = WorkResult(output={"value": f"value-of-{key}"})
            done = http.post(
                f"/agent/v1/inbox/{item.id}/done",
                content=result.model_dump_json(),
                headers={"content-type": "application/json"},
            )
            done.raise_for_status()
            answered += 1
    finally:
        http.close()
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


def run(quick: bool) -> list[Row]:
    phases = [
        Phase("warmup", RATE_PER_S, 1.0, 32),
        Phase("fixed", RATE_PER_S, 5.0 if quick else 30.0, 32),
        Phase("closed", None, 3.0 if quick else 10.0, 4),
    ]
    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="flt-bench-broker-") as tmp:
        root = Path(tmp)
        (root / "fleet.yaml").write_text(FLEET)
        services = build_services(load_fleet(root / "fleet.yaml"), FakeBackend())
        caller_token = services.tokens.mint("caller")
        callee_token = services.tokens.mint("callee")
        with serve_app(create_app(services)) as url:
            stop_recv, stop_send = ctx.Pipe(duplex=False)
            caller_recv, caller_send = ctx.Pipe(duplex=False)
            callee_recv, callee_send = ctx.Pipe(duplex=False)
            callee = ctx.Process(
                target=callee_main, args=(url, callee_token, stop_recv, callee_send), daemon=True
            )
            caller = ctx.Process(
                target=caller_main, args=(url, caller_token, phases, caller_send), daemon=True
            )
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
        services.db.close()
    return _rows(
        report, phases, answered, {"orchestrator": server_cpu, "caller": report.cpu_s, "callee": callee_cpu}
    )


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
    for who, seconds in cpu.items():
        rows.append(_row(f"CPU per ask, {who} process", f"{seconds / max(answered, 1) * 1000:.2f} ms"))
    return rows


if __name__ == "__main__":
    for row in run(quick=True):
        print(f"{row['metric']}: {row['value']}  {row['target']}")
