"""Capacity of one orchestrator on this machine: what N agents cost it, at N = 10, 50, 100, 200.

One run per N, each a fresh fleet of N agents (`flotilla up -d`, the built-in `test` model):
- start: wall clock from the command to every agent checked in / taking messages (printed by
  `up -d`) and to every agent having answered a first operator message;
- orchestrator: CPU seconds it spent from the command until every agent had answered, and its
  RSS then (read from /proc, the orchestrator's own process with all its threads);
- broker throughput: at least `MESSAGES_AT_LEAST` operator messages (two or more per agent),
  queued for every agent at once from `QUEUE_CLIENTS` concurrent API clients (over the HTTP API,
  as `flotilla send` does), until the last is answered: messages per second through queue ->
  delivery over the agent channel -> the agent's model call through the gateway -> stored
  result, and the orchestrator's CPU seconds per message. Completion is read
  by polling only the last message queued to each agent (an agent takes its inbox in order),
  so the poll costs N small requests per sweep, not one per message;
- idle: `IDLE_SETTLE_S` after the last answer (agents have released their worker by then),
  the orchestrator's and the agents' CPU over `IDLE_WINDOW_S`, as CPU seconds per second; the
  orchestrator's RSS; the agents' RSS and PSS (PSS shares the pages agents have in common
  fairly, RSS counts them in every agent) per agent.
The machine's load average is recorded beside each row: 2 cores shared with other work here,
so CPU figures are CPU seconds (what a process used), wall-clock figures carry the load.

The runtime is `process` for every N: 200 containers with their own Python do not fit in this
machine's share of memory and CPU next to other work, and one runtime for every N keeps the
figures comparable. `--runtime docker` measures the container runtime for the sizes given.

    python -m bench.bench_capacity 10 50 100 200
    python -m bench.bench_capacity --runtime docker 10 50
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from bench.fleet_run import (
    READY_LINE,
    Answers,
    agent_names,
    cpu_seconds,
    docker_container_cpu_s,
    fleet_yaml,
    load_average,
    send,
    start_up,
    stat_fields,
    wait_endpoint,
)
from orchestrator.cli.client import ApiClient
from orchestrator.state.endpoint import Endpoint
from orchestrator.testing.cli import run_flotilla

Row = dict[str, str]
SIZES = (10, 50, 100, 200)
QUICK_SIZES = (10, 50)
MESSAGES_AT_LEAST = 300
IDLE_SETTLE_S = 40.0
IDLE_WINDOW_S = 30.0
SWEEP_S = 0.2
QUEUE_CLIENTS = 8
TIMEOUT_S = 900.0


# --- /proc readings --------------------------------------------------------------------------


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def pss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) / 1024
    return 0.0


def descendants(root: int) -> list[int]:
    """Every process below `root` (agents of the process runtime are the orchestrator's children)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parents[int(entry.name)] = int(stat_fields(int(entry.name))[1])
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            continue
    found: list[int] = []
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        found += children
        frontier += children
    return found


def _sum_alive(pids: list[int], read: Callable[[int], float]) -> float:
    total = 0.0
    for pid in pids:
        try:
            total += read(pid)
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


# --- one fleet ---------------------------------------------------------------------------------


@dataclass
class Fleet:
    folder: Path
    name: str
    runtime: str
    orchestrator: int = 0

    def agent_pids(self) -> list[int]:
        return descendants(self.orchestrator)

    def agents_cpu_s(self) -> float:
        if self.runtime == "docker":
            return docker_container_cpu_s(f"flotilla-{self.name}-")
        return _sum_alive(self.agent_pids(), cpu_seconds)


def _wait_last(client: ApiClient, last: dict[str, str], deadline: float) -> None:
    """Until the last message queued to every agent has its result."""
    pending = dict(last)
    while pending and time.monotonic() < deadline:
        for agent, item_id in list(pending.items()):
            if client.get(f"/api/v1/items/{item_id}")["result"] is not None:
                del pending[agent]
        if pending:
            time.sleep(SWEEP_S)
    if pending:
        raise RuntimeError(f"{len(pending)} agents did not answer in time, e.g. {sorted(pending)[:3]}")


def _queue_all(endpoint: Endpoint, agents: list[str], per_agent: int) -> dict[str, str]:
    """Queue `per_agent` messages for every agent from QUEUE_CLIENTS clients at once, each agent's
    messages in order from one client; the id of the last message queued to each agent."""
    groups = [agents[i::QUEUE_CLIENTS] for i in range(QUEUE_CLIENTS)]

    def queue(group: list[str]) -> dict[str, str]:
        last: dict[str, str] = {}
        with closing(ApiClient(endpoint)) as own:
            for i in range(per_agent):
                for agent in group:
                    last[agent] = send(own, agent, f"message {i} to {agent}")
        return last

    with ThreadPoolExecutor(QUEUE_CLIENTS) as pool:
        return {agent: item for found in pool.map(queue, groups) for agent, item in found.items()}


def measure(n: int, runtime: str = "process") -> list[Row]:
    name = f"bench-cap-{n}"
    agents = agent_names(n)
    bench = f"capacity N={n} ({runtime})"
    rows: list[Row] = []

    def row(metric: str, value: str) -> None:
        rows.append(
            {"benchmark": bench, "metric": metric, "value": value, "target": f"load {load_average()}"}
        )

    with tempfile.TemporaryDirectory(prefix="flotilla-bench-") as tmp:
        fleet = Fleet(Path(tmp), name, runtime)
        (fleet.folder / "fleet.yaml").write_text(fleet_yaml(n, name))
        started = time.monotonic()
        deadline = started + TIMEOUT_S
        up = start_up(fleet.folder, runtime)
        try:
            endpoint = wait_endpoint(fleet.folder, deadline)
            fleet.orchestrator = endpoint.pid
            with closing(ApiClient(endpoint)) as client:
                items = {agent: send(client, agent, f"hello {agent}") for agent in agents}
                answers = Answers(started)
                answers.wait(client, items, deadline)
                answered_s = max(answers.at.values())
                start_cpu = cpu_seconds(fleet.orchestrator)
                out, err = up.communicate(timeout=TIMEOUT_S)
                if up.returncode != 0:
                    raise RuntimeError(f"up failed: {err.strip() or out.strip()}")
                ready = READY_LINE.search(out)
                if ready:
                    row(
                        "start: command -> every agent checked in (printed by up -d)",
                        f"{float(ready.group(1)):.1f} s",
                    )
                    row(
                        "start: command -> every agent takes messages (printed by up -d)",
                        f"{float(ready.group(2)):.1f} s",
                    )
                row("start: command -> every agent answered a first message", f"{answered_s:.1f} s")
                row("orchestrator CPU from the command until every agent answered", f"{start_cpu:.1f} CPU s")
                row("orchestrator RSS once every agent answered", f"{rss_mib(fleet.orchestrator):.0f} MiB")

                per_agent = max(2, -(-MESSAGES_AT_LEAST // n))
                total = n * per_agent
                cpu_before = cpu_seconds(fleet.orchestrator)
                agents_before = fleet.agents_cpu_s()
                sent_at = time.monotonic()
                last = _queue_all(endpoint, agents, per_agent)
                queued_s = time.monotonic() - sent_at
                _wait_last(client, last, time.monotonic() + TIMEOUT_S)
                took_s = time.monotonic() - sent_at
                cpu_used = cpu_seconds(fleet.orchestrator) - cpu_before
                agents_used = fleet.agents_cpu_s() - agents_before
                row(
                    f"throughput: {total} messages ({per_agent} per agent) queued at once -> all answered",
                    f"{total / took_s:.1f} msg/s ({took_s:.1f} s; queueing took {queued_s:.1f} s)",
                )
                row("throughput: orchestrator CPU per message", f"{cpu_used / total * 1000:.1f} ms")
                row(
                    "throughput: agents' CPU per message (all agent processes)",
                    f"{agents_used / total * 1000:.1f} ms",
                )
                row("orchestrator RSS after the throughput run", f"{rss_mib(fleet.orchestrator):.0f} MiB")

                time.sleep(IDLE_SETTLE_S)
                cpu_before = cpu_seconds(fleet.orchestrator)
                agents_before = fleet.agents_cpu_s()
                time.sleep(IDLE_WINDOW_S)
                idle_cpu = (cpu_seconds(fleet.orchestrator) - cpu_before) / IDLE_WINDOW_S
                agents_idle = (fleet.agents_cpu_s() - agents_before) / IDLE_WINDOW_S
                row(f"idle: orchestrator CPU over {IDLE_WINDOW_S:.0f} s", f"{idle_cpu * 1000:.1f} ms CPU/s")
                row(f"idle: all agents' CPU over {IDLE_WINDOW_S:.0f} s", f"{agents_idle * 1000:.1f} ms CPU/s")
                row("idle: orchestrator RSS", f"{rss_mib(fleet.orchestrator):.0f} MiB")
                if runtime == "process":
                    pids = fleet.agent_pids()
                    row(
                        f"idle: per agent RSS / PSS ({len(pids)} agent processes)",
                        f"{_sum_alive(pids, rss_mib) / n:.1f} / {_sum_alive(pids, pss_mib) / n:.1f} MiB",
                    )
        finally:
            if up.poll() is None:
                up.kill()
            down_at = time.monotonic()
            run_flotilla(fleet.folder, "down", "-v", timeout=None)
            rows.append(
                {
                    "benchmark": bench,
                    "metric": "down -v",
                    "value": f"{time.monotonic() - down_at:.1f} s",
                    "target": f"load {load_average()}",
                }
            )
    return rows


def run(quick: bool) -> list[Row]:
    return [r for n in (QUICK_SIZES if quick else SIZES) for r in measure(n)]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("sizes", nargs="*", type=int, default=list(SIZES))
    parser.add_argument("--runtime", choices=("process", "docker"), default="process")
    args = parser.parse_args()
    for n in args.sizes:
        began = time.monotonic()
        for r in measure(n, args.runtime):
            print(f"{r['benchmark']:28} {r['metric']:96} {r['value']:>28}  {r['target']}", flush=True)
        print(f"# N={n} took {time.monotonic() - began:.0f} s", flush=True)


if __name__ == "__main__":
    main()
