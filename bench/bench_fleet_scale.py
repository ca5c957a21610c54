"""A large fleet that sleeps by default, on the Docker runtime: what declaring N agents costs,
and how fast a sleeping one answers.

    python -m bench.bench_fleet_scale --agents 100 [--awake 20] [--wakes 50]

One run, one fresh fleet of N agents (the built-in `test` model, every agent asleep until it has
work), printing each figure with the machine's load average beside it:
- `up -d`: wall clock of the command (it makes every agent's container and storage and starts
  none of them);
- `--awake M`: one message to each of M random agents at once, until all have answered (they
  stay awake for `hibernate_after`, 10 minutes);
- idle: `IDLE_SETTLE_S` later (once the woken agents have given their worker back, 30 s after
  their last item), the orchestrator's RSS and its CPU over `IDLE_WINDOW_S`;
- `ps` (the `flotilla ps` command, start to end), the fleet view the dashboard reads
  (`GET /api/v1/fleet`) and `/metrics`: wall clock of each, best and worst of `READS`;
- wake to answer: one message at a time to a sleeping agent picked at random, from the request
  to its answer (container start, runtime start, check-in, the item, the model call, the stored
  result), over `--wakes` agents: p50 and p95;
- bare `docker start` of the containers of `BARE_STARTS` other sleeping agents, through the
  engine's API as the orchestrator calls it, until the engine answers (the container's process
  runs): the floor a wake cannot go under. One after each of the first wakes, so that both see
  the same load; each is stopped again afterwards;
- `down -v`: wall clock of the command (every container, volume and disk of the fleet removed).

Exits with status 1 when a target is missed (listed at the end). The machine here is shared:
wall-clock figures carry the load average written beside them.
"""

from __future__ import annotations

import argparse
import random
import resource
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import docker

from bench.fleet_run import (
    Answers,
    agent_names,
    compile_bytecode,
    cpu_seconds,
    free_port,
    load_average,
    send,
    wait_endpoint,
)
from orchestrator.backends.docker import connect_docker
from orchestrator.cli.client import ApiClient
from orchestrator.state.endpoint import Endpoint
from orchestrator.state.paths import StatePaths
from orchestrator.testing.cli import run_flotilla

IDLE_SETTLE_S = 40.0
IDLE_WINDOW_S = 20.0
READS = 3
BARE_STARTS = 20
ANSWER_TIMEOUT_S = 120.0
UP_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class Target:
    limit: float
    unit: str

    def met(self, value: float) -> bool:
        return value <= self.limit


TARGETS = {
    "wake p50": Target(1.0, "s"),
    "wake p95": Target(1.5, "s"),
    "orchestrator RSS": Target(1024.0, "MiB"),
    "orchestrator idle CPU": Target(5.0, "% of a core"),
    "ps": Target(1.0, "s"),
    "fleet view": Target(1.0, "s"),
    "/metrics": Target(1.0, "s"),
    "down": Target(120.0, "s"),
}


@dataclass
class Report:
    agents: int
    rows: list[tuple[str, str, str, str]] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)

    def add(self, metric: str, value: str, target: str = "") -> None:
        row = (metric, value, target, load_average())
        self.rows.append(row)
        print(f"{metric:64} {value:>24}  {target:>14}  load {row[3]}", flush=True)

    def check(self, name: str, metric: str, value: float, shown: str) -> None:
        target = TARGETS[name]
        self.add(metric, shown, f"<= {target.limit:g} {target.unit}")
        if not target.met(value):
            self.missed.append(f"{metric}: {shown} (target <= {target.limit:g} {target.unit})")


def fleet_yaml(n: int, name: str) -> str:
    agents = "".join(f"  {agent}:\n    role: agent {i}\n" for i, agent in enumerate(agent_names(n)))
    return f"version: 1\nfleet: {name}\nagents:\n{agents}"


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def children_cpu_s() -> float:
    """CPU seconds of this process's finished children (the CLI commands it ran)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(run: Callable[[], object]) -> float:
    started = time.monotonic()
    run()
    return time.monotonic() - started


def answer_seconds(client: ApiClient, agent: str) -> float:
    started = time.monotonic()
    answers = Answers(started)
    answers.wait(client, {agent: send(client, agent, f"wake up {agent}")}, started + ANSWER_TIMEOUT_S)
    return answers.at[agent]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class BareStarts:
    """`docker start` of sleeping agents' containers through the engine's API, as the orchestrator
    calls it, each timed until the engine answers, then stopped."""

    def __init__(self, prefix: str) -> None:
        self._client = connect_docker()
        self._prefix = prefix
        self._stopping = ThreadPoolExecutor(max_workers=2)
        self.seconds: list[float] = []

    def start(self, agent: str) -> None:
        container_id = self._client.api.inspect_container(f"{self._prefix}{agent}")["Id"]
        began = time.monotonic()
        self._client.api.start(container_id)
        self.seconds.append(time.monotonic() - began)
        # Stopped at once, in the background: its agent must not load the machine for the next wake.
        self._stopping.submit(self._client.api.stop, container_id, timeout=0)

    def close(self) -> None:
        self._stopping.shutdown(wait=True)
        self._client.close()


def read_times(run: Callable[[], object]) -> tuple[float, float]:
    times = [timed(run) for _ in range(READS)]
    return min(times), max(times)


def run_fleet(n: int, awake: int, wakes: int, report: Report) -> None:
    name = f"benchscale-{n}-{secrets.token_hex(2)}"
    prefix = f"flotilla-{name}-"
    agents = agent_names(n)
    rng = random.Random(n)
    with tempfile.TemporaryDirectory(prefix="flotilla-bench-scale-") as tmp:
        folder = Path(tmp)
        (folder / "fleet.yaml").write_text(fleet_yaml(n, name))
        started = time.monotonic()
        up = run_flotilla(
            folder, "up", "-d", "--runtime", "docker", "--port", str(free_port()), timeout=UP_TIMEOUT_S
        )
        up_s = time.monotonic() - started
        try:
            if up.returncode != 0:
                log = StatePaths.for_fleet_file(folder / "fleet.yaml").log_file
                tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:]) if log.exists() else ""
                raise RuntimeError(f"up -d failed: {up.stderr.strip() or up.stdout.strip()}\n{tail}")
            report.add(f"up -d of {n} agents (containers made, none started)", f"{up_s:.1f} s")
            endpoint = wait_endpoint(folder, time.monotonic() + 60)
            with closing(ApiClient(endpoint, timeout_s=60)) as client:
                measure_running(client, endpoint, folder, agents, awake, wakes, prefix, rng, report)
        finally:
            began = time.monotonic()
            down = run_flotilla(folder, "down", "-v", timeout=None)
            down_s = time.monotonic() - began
            report.check("down", f"down -v of {n} agents", down_s, f"{down_s:.1f} s")
            if down.returncode != 0:
                report.missed.append(f"down -v failed: {down.stderr.strip()[-400:]}")


def measure_running(
    client: ApiClient,
    endpoint: Endpoint,
    folder: Path,
    agents: list[str],
    awake: int,
    wakes: int,
    prefix: str,
    rng: random.Random,
    report: Report,
) -> None:
    shuffled = rng.sample(agents, len(agents))
    kept_awake, rest = shuffled[:awake], shuffled[awake:]
    woken, rest = rest[:wakes], rest[wakes:]
    bare = rest[:BARE_STARTS]
    if kept_awake:
        started = time.monotonic()
        items = {agent: send(client, agent, f"hello {agent}") for agent in kept_awake}
        Answers(started).wait(client, items, started + UP_TIMEOUT_S)
        report.add(f"{awake} agents woken at once, until all answered", f"{time.monotonic() - started:.1f} s")
    time.sleep(IDLE_SETTLE_S)
    cpu_before, window_start = cpu_seconds(endpoint.pid), time.monotonic()
    time.sleep(IDLE_WINDOW_S)
    idle_cpu = (cpu_seconds(endpoint.pid) - cpu_before) / (time.monotonic() - window_start) * 100
    rss = rss_mib(endpoint.pid)
    report.check("orchestrator RSS", f"orchestrator RSS ({awake} awake)", rss, f"{rss:.0f} MiB")
    report.check(
        "orchestrator idle CPU", f"orchestrator idle CPU ({awake} awake)", idle_cpu, f"{idle_cpu:.1f} %"
    )
    cpu_before = children_cpu_s()
    best, worst = read_times(lambda: run_flotilla(folder, "ps", timeout=None))
    ps_cpu = (children_cpu_s() - cpu_before) / READS
    report.check("ps", "flotilla ps (command), best / worst", worst, f"{best:.2f} / {worst:.2f} s")
    report.add("flotilla ps: CPU of the command (its interpreter start included)", f"{ps_cpu:.2f} s")
    best, worst = read_times(lambda: client.get("/api/v1/fleet"))
    report.check(
        "fleet view", "fleet view (GET /api/v1/fleet), best / worst", worst, f"{best:.2f} / {worst:.2f} s"
    )
    best, worst = read_times(lambda: client.get("/metrics"))
    report.check("/metrics", "GET /metrics, best / worst", worst, f"{best:.2f} / {worst:.2f} s")
    # Wakes and bare starts alternate, so that both see the same load on a shared machine.
    bare_starts = BareStarts(prefix)
    seconds = []
    try:
        for index, agent in enumerate(woken):
            seconds.append(answer_seconds(client, agent))
            if index < len(bare):
                bare_starts.start(bare[index])
    finally:
        bare_starts.close()
    p50, p95 = statistics.median(seconds), percentile(seconds, 0.95)
    report.check("wake p50", f"wake to answer p50 ({len(seconds)} wakes)", p50, f"{p50:.2f} s")
    report.check("wake p95", f"wake to answer p95 ({len(seconds)} wakes)", p95, f"{p95:.2f} s")
    report.add(f"wake to answer max ({len(seconds)} wakes)", f"{max(seconds):.2f} s")
    if bare_starts.seconds:
        starts = bare_starts.seconds
        report.add(
            f"bare docker start of the same fleet's containers, p50 ({len(starts)})",
            f"{statistics.median(starts):.2f} s",
        )
        report.add("wake to answer p50 / bare docker start p50", f"{p50 / statistics.median(starts):.1f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--agents", type=int, required=True, help="agents declared")
    parser.add_argument("--awake", type=int, default=0, help="agents woken and kept awake")
    parser.add_argument("--wakes", type=int, default=50, help="wakes measured, one at a time")
    args = parser.parse_args(argv)
    if args.awake + args.wakes > args.agents:
        parser.error("--awake plus --wakes must not exceed --agents")
    compile_bytecode()
    report = Report(args.agents)
    print(f"fleet of {args.agents} agents, {args.awake} kept awake; shared machine, load {load_average()}")
    try:
        run_fleet(args.agents, args.awake, args.wakes, report)
    except (RuntimeError, docker.errors.DockerException) as failed:
        print(f"error: {failed}", file=sys.stderr)
        return 2
    for missed in report.missed:
        print(f"missed: {missed}")
    return 1 if report.missed else 0


if __name__ == "__main__":
    sys.exit(main())
