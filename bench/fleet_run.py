"""Helpers for the benchmarks that start a real fleet with the Docker runtime: `flotilla up -d`
in a subprocess, operator messages through the API, and `docker stats` readings."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.cli.client import ApiClient
from orchestrator.state.endpoint import Endpoint, read_endpoint
from orchestrator.state.paths import StatePaths
from orchestrator.testing.cli import start_flotilla

REPO = Path(__file__).resolve().parents[1]
POLL_S = 0.05
ITEM_WAIT_S = 20.0  # under the API client's 30 s timeout
TIMEOUT_S = 300.0
READY_LINE = re.compile(r"checked in after ([\d.]+)s, (?:all take|it takes) messages after ([\d.]+)s")


def compile_bytecode() -> None:
    """Bytecode for the product's modules, as `pip install` leaves it. A source checkout run with
    PYTHONDONTWRITEBYTECODE=1 (or whose cached bytecode is older than its sources) compiles every
    changed module anew in each process it starts, which start-up figures would count (about
    0.2 s of a 10-agent start). The agent image always carries its bytecode."""
    import compileall

    for package in ("orchestrator", "agent_runtime"):
        compileall.compile_dir(REPO / package, quiet=1)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def fleet_yaml(n: int, name: str) -> str:
    """N always-on agents: started by `up -d`, as start-up and capacity figures need."""
    agents = "".join(f"  a{i:03d}:\n    role: agent {i}\n" for i in range(n))
    return f"version: 1\nfleet: {name}\ndefaults:\n  always_on: true\nagents:\n{agents}"


def agent_names(n: int) -> list[str]:
    return [f"a{i:03d}" for i in range(n)]


def start_up(folder: Path, runtime: str = "docker") -> subprocess.Popen[str]:
    """`flotilla up -d` on `runtime` (Docker by default), in the background."""
    return start_flotilla(folder, "up", "-d", "--runtime", runtime, "--port", str(free_port()))


def wait_endpoint(folder: Path, deadline: float) -> Endpoint:
    paths = StatePaths.for_fleet_file(folder / "fleet.yaml")
    while time.monotonic() < deadline:
        endpoint = read_endpoint(paths)
        if endpoint is not None:
            return endpoint
        time.sleep(POLL_S)
    raise RuntimeError("the orchestrator did not write its endpoint in time")


def send(client: ApiClient, agent: str, text: str) -> str:
    return str(client.post(f"/api/v1/agents/{agent}/messages", {"text": text})["item_id"])


@dataclass
class Answers:
    """When each queued message was answered, in seconds from `started`."""

    started: float
    at: dict[str, float] = field(default_factory=dict)

    def wait(self, client: ApiClient, items: dict[str, str], deadline: float) -> None:
        """One waiting request per item, one item after the other: the fleet is not loaded with
        polls while it starts. An item answered while another was waited on is seen when its turn
        comes, so only the last answer's moment is exact (the one the benchmarks report)."""
        pending = dict(items)
        while pending and time.monotonic() < deadline:
            agent, item_id = next(iter(pending.items()))
            wait_s = min(ITEM_WAIT_S, max(deadline - time.monotonic(), 0.0))
            status = client.get(f"/api/v1/items/{item_id}", wait=wait_s)
            if status["result"] is not None:
                self.at[agent] = time.monotonic() - self.started
                del pending[agent]
        if pending:
            raise RuntimeError(f"no answer from {', '.join(sorted(pending))} in time")


def timed_message(client: ApiClient, agent: str, text: str) -> float:
    """Seconds from queueing one message to its answer."""
    answers = Answers(time.monotonic())
    answers.wait(client, {agent: send(client, agent, text)}, time.monotonic() + TIMEOUT_S)
    return answers.at[agent]


def mem_mib(text: str) -> float:
    value = text.split("/", maxsplit=1)[0].strip()
    for unit, factor in (
        ("GiB", 1024.0),
        ("MiB", 1.0),
        ("KiB", 1 / 1024),
        ("kB", 1 / 1024),
        ("B", 1 / 1024 / 1024),
    ):
        if value.endswith(unit):
            return float(value[: -len(unit)]) * factor
    raise ValueError(f"unexpected docker stats value {text!r}")


def container_memory(prefix: str) -> list[float]:
    """`docker stats` memory usage (MiB) of every container whose name starts with `prefix`."""
    out = subprocess.run(
        ["docker", "stats", "--no-stream", "--format", "{{.Name}}\t{{.MemUsage}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [mem_mib(line.split("\t")[1]) for line in out.splitlines() if line.startswith(prefix)]


def load_average() -> str:
    """The 1, 5 and 15-minute load averages."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def docker_container_cpu_s(prefix: str) -> float:
    """CPU seconds of every container named `prefix`*, from its cgroup (docker runtime)."""
    out = subprocess.run(
        ["docker", "ps", "-q", "--no-trunc", "--filter", f"name={prefix}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    total = 0.0
    for cid in out:
        for stat in Path("/sys/fs/cgroup").glob(f"**/*{cid}*/cpu.stat"):
            for line in stat.read_text().splitlines():
                if line.startswith("usage_usec"):
                    total += int(line.split()[1]) / 1e6
            break
    return total


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
ENGINE_PID_FILES = ("/var/run/docker.pid", "/var/run/docker/containerd/containerd.pid")


def stat_fields(pid: int) -> list[str]:
    """Fields of /proc/<pid>/stat after the command name (field 3 onwards)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process, all its threads (fields 14 and 15)."""
    fields = stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def machine_cpu_s() -> float:
    """CPU seconds the whole machine has been busy (user, nice, system, irq, softirq) from
    /proc/stat: every process, the engine's runc and shims and the kernel's threads included."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:8]
    user, nice, system, _idle, _iowait, irq, softirq = (int(value) for value in fields)
    return (user + nice + system + irq + softirq) / CLOCK_TICKS


def machine_pace_ms() -> float:
    """Milliseconds of CPU a fixed pure-Python loop takes here now, best of three: this machine's
    pace moves by a fifth from one hour to the next, and a start's time moves with it."""

    def once() -> float:
        started = time.process_time()
        sum(i * i for i in range(1_000_000))
        return (time.process_time() - started) * 1000

    return min(once() for _ in range(3))


def engine_cpu_s() -> float:
    """CPU seconds this machine's Docker engine daemons have used (their own threads, not the
    containers'), read from their pid files: engines nested in containers are not counted."""
    total = 0.0
    for pid_file in ENGINE_PID_FILES:
        try:
            total += cpu_seconds(int(Path(pid_file).read_text().strip()))
        except (OSError, ValueError):
            continue
    return total
