"""An agent's memory through its life, and what its next message costs after it gave memory back.

One agent with the Docker runtime and the default settings (idle release after 30 s without
work). Memory is what `docker stats` reports for its container (the figure `docker stats`
users see; it counts the page cache of files the agent wrote, as the memory limit does):
- at boot: once `up -d` has returned (every agent takes messages), before any message; then
  its CPU over a minute of idling (the container's cgroup, so the engine's health checks,
  which run inside it, count);
- after the first message: the worker, model client and memory store are loaded;
- after idle: read every few seconds for 60 s after the last answer (the release comes 30 s
  after it); the first reading at or under the target, and the last reading.
Message times are wall clock from queueing an operator message to its stored result (the
built-in `test` model answers through the gateway): the first message (the worker loads), a
second one (warm), and the next one after the release (the worker loads again).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from contextlib import closing
from pathlib import Path

from bench.fleet_run import (
    container_memory,
    docker_container_cpu_s,
    fleet_yaml,
    free_port,
    timed_message,
)
from orchestrator.cli.client import ApiClient
from orchestrator.state.endpoint import read_endpoint
from orchestrator.state.paths import StatePaths
from orchestrator.testing.cli import run_flotilla

Row = dict[str, str]
TARGET_MIB = 40.0
WITHIN_S = 60.0
READ_EVERY_S = 3.0
SETTLE_S = 5.0
# Two health checks (one every 30 s) and six check-ins fall in this window.
IDLE_CPU_WINDOW_S = 60.0


def _memory(prefix: str) -> float:
    readings = container_memory(prefix)
    if len(readings) != 1:
        raise RuntimeError(f"expected one container named {prefix}*, found {len(readings)}")
    return readings[0]


def _watch_idle(prefix: str, last_answer: float) -> list[tuple[float, float]]:
    """(seconds after the last answer, MiB) every few seconds, for WITHIN_S seconds."""
    readings: list[tuple[float, float]] = []
    while time.monotonic() - last_answer < WITHIN_S:
        mib = _memory(prefix)
        readings.append((time.monotonic() - last_answer, mib))
        time.sleep(READ_EVERY_S)
    return readings


def measure() -> list[Row]:
    name = "bench-idle"
    prefix = f"flotilla-{name}-"
    with tempfile.TemporaryDirectory(prefix="flotilla-bench-") as tmp:
        folder = Path(tmp)
        (folder / "fleet.yaml").write_text(fleet_yaml(1, name))
        try:
            up = run_flotilla(
                folder, "up", "-d", "--runtime", "docker", "--port", str(free_port()), timeout=None
            )
            if up.returncode != 0:
                raise RuntimeError(f"up failed: {up.stderr.strip() or up.stdout.strip()}")
            endpoint = read_endpoint(StatePaths.for_fleet_file(folder / "fleet.yaml"))
            if endpoint is None:
                raise RuntimeError("the orchestrator wrote no endpoint")
            time.sleep(SETTLE_S)
            boot = _memory(prefix)
            cpu_before = docker_container_cpu_s(prefix)
            time.sleep(IDLE_CPU_WINDOW_S)
            idle_cpu_ms_per_s = (docker_container_cpu_s(prefix) - cpu_before) / IDLE_CPU_WINDOW_S * 1000
            with closing(ApiClient(endpoint)) as client:
                first_s = timed_message(client, "a000", "hello")
                warm_s = statistics.median(timed_message(client, "a000", f"again {i}") for i in range(3))
                last_answer = time.monotonic()
                time.sleep(SETTLE_S)
                after_first = _memory(prefix)
                readings = _watch_idle(prefix, last_answer)
                after_release_s = timed_message(client, "a000", "after the release")
                time.sleep(SETTLE_S)
                after_next = _memory(prefix)
        finally:
            run_flotilla(folder, "down", "-v", timeout=None)

    def row(metric: str, value: str, target: str = "") -> Row:
        return {"benchmark": "agent memory", "metric": metric, "value": value, "target": target}

    trace = ", ".join(f"{at:.0f}s {mib:.0f}" for at, mib in readings)
    under = [(at, mib) for at, mib in readings if mib <= TARGET_MIB]
    at_end = readings[-1]
    return [
        row("at boot, before any message (docker stats)", f"{boot:.1f} MiB"),
        row(
            f"CPU while idle before any message, {IDLE_CPU_WINDOW_S:.0f} s (its cgroup; health checks included)",
            f"{idle_cpu_ms_per_s:.2f} ms/s",
        ),
        row("after its first messages (docker stats)", f"{after_first:.1f} MiB"),
        row(
            "idle again: first reading at or under the target (s after the last answer)",
            f"{under[0][1]:.1f} MiB at {under[0][0]:.0f} s" if under else f"never within {WITHIN_S:.0f} s",
            f"<= {TARGET_MIB:.0f} MiB within {WITHIN_S:.0f} s",
        ),
        row(f"idle, {at_end[0]:.0f} s after the last answer (docker stats)", f"{at_end[1]:.1f} MiB"),
        row("readings after the last answer (s MiB)", trace),
        row("first message, worker loads (queue -> result, wall clock)", f"{first_s:.2f} s"),
        row("warm message, median of 3 (queue -> result, wall clock)", f"{warm_s:.2f} s"),
        row(
            "next message after the idle release, worker loads again (wall clock)", f"{after_release_s:.2f} s"
        ),
        row("after that message (docker stats)", f"{after_next:.1f} MiB"),
    ]


def run(quick: bool) -> list[Row]:
    return measure()


if __name__ == "__main__":
    for r in measure():
        print(f"{r['metric']:84} {r['value']:>20}  {r['target']}", flush=True)
