"""Start N idle agents with the Docker runtime: time until all are healthy, idle memory each.

Time is measured from running `flotilla up -d` (orchestrator start, reconcile, container
creation) until every agent has checked in. Memory is what `docker stats` reports per agent
container once the fleet idles. Peer figure on this machine (OpenLegion, 0.15 CPU, 384 MiB):
ten agents answer after 4.9 s (median), each idles at 45.5 MiB.
"""

from __future__ import annotations

import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
Row = dict[str, str]
TARGETS = {1: "", 10: "<= 3 s", 50: "<= 15 s"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _fleet_yaml(n: int, name: str) -> str:
    agents = "".join(f"  a{i:03d}:\n    role: idle agent {i}\n" for i in range(n))
    return f"version: 1\nfleet: {name}\nagents:\n{agents}"


def _flotilla(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli.main", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def _mem_mib(text: str) -> float:
    value = text.split("/", maxsplit=1)[0].strip()
    for unit, factor in (("GiB", 1024.0), ("MiB", 1.0), ("KiB", 1 / 1024), ("B", 1 / 1024 / 1024)):
        if value.endswith(unit):
            return float(value[: -len(unit)]) * factor
    raise ValueError(f"unexpected docker stats value {text!r}")


def _idle_memory(prefix: str) -> list[float]:
    out = subprocess.run(
        ["docker", "stats", "--no-stream", "--format", "{{.Name}}\t{{.MemUsage}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [_mem_mib(line.split("\t")[1]) for line in out.splitlines() if line.startswith(prefix)]


def measure(n: int) -> list[Row]:
    name = f"bench-start-{n}"
    with tempfile.TemporaryDirectory(prefix="flotilla-bench-") as tmp:
        folder = Path(tmp)
        (folder / "fleet.yaml").write_text(_fleet_yaml(n, name))
        started = time.monotonic()
        result = _flotilla(
            "up", "-d", "-f", "fleet.yaml", "--runtime", "docker", "--port", str(_free_port()), cwd=folder
        )
        elapsed = time.monotonic() - started
        try:
            if result.returncode != 0:
                raise RuntimeError(f"up failed: {result.stderr.strip() or result.stdout.strip()}")
            time.sleep(10)  # let start-up work settle before reading idle memory
            memory = _idle_memory(f"flotilla-{name}-")
        finally:
            _flotilla("down", "-v", "-f", "fleet.yaml", cwd=folder)
    bench = f"startup N={n}"
    return [
        {
            "benchmark": bench,
            "metric": "time until all healthy",
            "value": f"{elapsed:.2f} s",
            "target": TARGETS[n],
        },
        {
            "benchmark": bench,
            "metric": "idle memory per agent (median)",
            "value": f"{statistics.median(memory):.1f} MiB",
            "target": "<= 40 MiB",
        },
        {
            "benchmark": bench,
            "metric": "idle memory per agent (max)",
            "value": f"{max(memory):.1f} MiB",
            "target": "<= 40 MiB",
        },
    ]


def run(quick: bool) -> list[Row]:
    sizes = (1, 10) if quick else (1, 10, 50)
    return [row for n in sizes for row in measure(n)]
