"""Start N agents with the Docker runtime: from the command to every agent answering a first
message, beside bare `docker run -d` of N containers from the same base image.

Three starts for N = 1 and 10 (their median, with the spread), one for N = 50; each start:
- `flotilla up -d` starts in the background; as soon as the orchestrator's API answers, one
  operator message is queued for every agent (the built-in `test` model answers it through the
  gateway). Counted by wall clock from the moment the command starts: when `up -d` printed that
  every agent had checked in and that every agent takes messages (runtime loaded), when `up -d`
  returned, and when the last agent had answered its message (the item's result is stored).
- The baseline: `docker run -d` of N containers from the base image the agent image is built
  on (`sleep`, no network), one after the other as a shell loop would, until the last returns.
- CPU: what the agents' containers (their cgroups), the orchestrator and the engine's daemons
  used until the last answer; their sum over the machine's cores is the shortest start this
  work allows here, whatever the order.
- Pace: before each start, the CPU time of a fixed pure-Python loop; the machine's pace moves
  by the hour, and a CPU-bound start's time with it.
- Memory: what `docker stats` reports per agent container once all have answered (the worker,
  model client and memory store are loaded then; see bench_idle for what an agent gives back).
- What the engine alone needs: N containers made like the agents' (an internal network without
  traffic between containers, the same limits, read-only root), created and started through its
  API as the orchestrator does (16 at a time), each running `sleep`. With the CPU the whole
  machine spent during the start (/proc/stat: runc, the shims and the kernel's threads included),
  it shows how much of the start is the engine's and how close the start is to the machine's
  limit (its busy CPU over its cores).
"""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import docker

from bench.fleet_run import (
    READY_LINE,
    TIMEOUT_S,
    Answers,
    agent_names,
    compile_bytecode,
    container_memory,
    cpu_seconds,
    docker_container_cpu_s,
    engine_cpu_s,
    fleet_yaml,
    machine_cpu_s,
    machine_pace_ms,
    send,
    start_up,
    wait_endpoint,
)
from orchestrator.backends.docker import ICC_OPTION, connect_docker
from orchestrator.cli.client import ApiClient
from orchestrator.fleet.reconcile import PARALLEL_STARTS
from orchestrator.testing.cli import run_flotilla

Row = dict[str, str]
CORES = os.cpu_count() or 1


@dataclass(frozen=True)
class StartCpu:
    """CPU seconds spent from the command until every agent answered. The engine's figure is all
    of its work on this machine in that time (other containers' included), the runc and hook
    processes it starts are not counted."""

    agents: float
    orchestrator: float
    engine: float

    @property
    def total(self) -> float:
        return self.agents + self.orchestrator + self.engine


BASE_IMAGE = "flotilla/base:bookworm"
TARGETS = {1: "", 10: "<= 4 s", 50: "<= 20 s"}
# Starts per size: the machine's pace moves from one start to the next by a tenth of the time,
# so the smaller fleets are started three times and their median is reported with the spread.
ROUNDS = {1: 3, 10: 3}


def bare_docker_run(n: int, tag: str) -> float:
    """Seconds for `docker run -d` of n containers from the base image, one after the other."""
    names = [f"flt-bench-bare-{tag}-{i}" for i in range(n)]
    started = time.monotonic()
    try:
        for name in names:
            subprocess.run(
                ["docker", "run", "-d", "--name", name, "--network", "none", BASE_IMAGE, "sleep", "600"],
                capture_output=True,
                check=True,
            )
        return time.monotonic() - started
    finally:
        subprocess.run(["docker", "rm", "-f", *names], capture_output=True, check=False)


def engine_alone(n: int, tag: str) -> tuple[float, float]:
    """Wall seconds and machine CPU seconds for the engine to create and start n containers like
    the agents' (see the module's docstring), 16 at a time through its API."""
    client = connect_docker()
    network = client.networks.create(
        f"flt-bench-engine-{tag}", driver="bridge", internal=True, options={ICC_OPTION: "false"}
    )
    names = [f"flt-bench-engine-{tag}-{i}" for i in range(n)]

    def start(name: str) -> None:
        client.containers.create(
            BASE_IMAGE,
            ["sleep", "600"],
            name=name,
            network=network.name,
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges:true"],
            mem_limit="128m",
            nano_cpus=int(0.5e9),
            pids_limit=64,
        ).start()

    busy_before, started = machine_cpu_s(), time.monotonic()
    try:
        with ThreadPoolExecutor(max_workers=PARALLEL_STARTS) as pool:
            list(pool.map(start, names))
        return time.monotonic() - started, machine_cpu_s() - busy_before
    finally:
        for name in names:
            with contextlib.suppress(docker.errors.NotFound):
                client.containers.get(name).remove(force=True)
        network.remove()
        client.close()


@dataclass(frozen=True)
class StartRun:
    """One start of N agents, from the command to every agent's first answer."""

    checked_in_s: float
    taking_s: float
    answered_s: float
    cpu: StartCpu
    machine_s: float
    memory_mib: list[float]
    pace_ms: float


def start_once(n: int) -> StartRun:
    name = f"bench-start-{n}"
    pace_ms = machine_pace_ms()
    agents = agent_names(n)
    with tempfile.TemporaryDirectory(prefix="flotilla-bench-") as tmp:
        folder = Path(tmp)
        (folder / "fleet.yaml").write_text(fleet_yaml(n, name))
        engine_before, machine_before = engine_cpu_s(), machine_cpu_s()
        started = time.monotonic()
        deadline = started + TIMEOUT_S
        up = start_up(folder)
        try:
            endpoint = wait_endpoint(folder, deadline)
            with closing(ApiClient(endpoint)) as client:
                items = {agent: send(client, agent, f"hello {agent}") for agent in agents}
                answers = Answers(started)
                answers.wait(client, items, deadline)
            cpu = StartCpu(
                agents=docker_container_cpu_s(f"flotilla-{name}-"),
                orchestrator=cpu_seconds(endpoint.pid),
                engine=engine_cpu_s() - engine_before,
            )
            machine_s = machine_cpu_s() - machine_before
            out, err = up.communicate(timeout=TIMEOUT_S)
            if up.returncode != 0:
                raise RuntimeError(f"up failed: {err.strip() or out.strip()}")
            memory = container_memory(f"flotilla-{name}-")
        finally:
            if up.poll() is None:
                up.kill()
            run_flotilla(folder, "down", "-v", timeout=None)
    ready = READY_LINE.search(out)
    checked_in_s, taking_s = (float(ready.group(1)), float(ready.group(2))) if ready else (float("nan"),) * 2
    return StartRun(checked_in_s, taking_s, max(answers.at.values()), cpu, machine_s, memory, pace_ms)


def measure(n: int, rounds: int = 1) -> list[Row]:
    """`rounds` starts of n agents; the start with the median time to every first answer gives
    the other rows (its CPU, memory and `up -d` lines)."""
    runs = sorted((start_once(n) for _ in range(rounds)), key=lambda run: run.answered_s)
    median = runs[len(runs) // 2]
    cpu = median.cpu
    answered = f"{median.answered_s:.2f} s"
    if rounds > 1:
        spread = " / ".join(f"{run.answered_s:.2f}" for run in runs)
        answered = f"{answered} (median of {rounds}: {spread} s)"
    bare_s = bare_docker_run(n, str(n))
    engine_wall_s, engine_machine_s = engine_alone(n, str(n))
    bench = f"startup N={n}"

    def row(metric: str, value: str, target: str = "") -> Row:
        return {"benchmark": bench, "metric": metric, "value": value, "target": target}

    return [
        row(
            "command -> every agent checked in (wall clock, printed by up -d)", f"{median.checked_in_s:.2f} s"
        ),
        row(
            "command -> every agent takes messages (wall clock, printed by up -d)", f"{median.taking_s:.2f} s"
        ),
        row("command -> every agent answered a first message (wall clock)", answered, TARGETS[n]),
        row(f"bare `docker run -d` x{n} from {BASE_IMAGE}, one after the other", f"{bare_s:.2f} s"),
        row("every agent answered / bare docker run -d", f"{median.answered_s / bare_s:.1f}x"),
        row(
            "CPU until every agent answered: agents (cgroups) / orchestrator / engine (dockerd, containerd)",
            f"{cpu.agents:.1f} / {cpu.orchestrator:.1f} / {cpu.engine:.1f} CPU s",
        ),
        row(
            f"  per agent: its own / the orchestrator's / the engine's; all of it over {CORES} cores",
            f"{cpu.agents / n * 1000:.0f} / {cpu.orchestrator / n * 1000:.0f} / {cpu.engine / n * 1000:.0f} ms;"
            f" {cpu.total / CORES:.2f} s",
        ),
        row(
            "CPU of the whole machine until every agent answered (/proc/stat); over its cores",
            f"{median.machine_s:.1f} CPU s; {median.machine_s / CORES:.2f} s",
        ),
        row(
            f"engine alone: {n} containers like the agents', started 16 at a time: wall; machine CPU per container",
            f"{engine_wall_s:.2f} s; {engine_machine_s / n * 1000:.0f} ms",
        ),
        row(
            "machine pace before each start, in the order above: a fixed pure-Python loop (1M squares)",
            " / ".join(f"{run.pace_ms:.0f}" for run in runs) + " ms",
        ),
        row(
            "memory per agent after its first message, median / max (docker stats)",
            f"{statistics.median(median.memory_mib):.1f} / {max(median.memory_mib):.1f} MiB",
        ),
    ]


def run(quick: bool) -> list[Row]:
    sizes = (1, 10) if quick else (1, 10, 50)
    return [row for n in sizes for row in measure(n, ROUNDS.get(n, 1) if not quick else 1)]


if __name__ == "__main__":
    import sys

    compile_bytecode()
    for size in [int(a) for a in sys.argv[1:]] or [1, 10]:
        for r in measure(size, ROUNDS.get(size, 1)):
            print(f"{r['benchmark']:14} {r['metric']:72} {r['value']:>16}  {r['target']}", flush=True)
