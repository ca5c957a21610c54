"""Backup, verify and restore of the example fleet on the Docker runtime.

The example fleet (3 agents, the built-in `test` model) is started, each agent is taught facts
through the operator's memory API (so memory.db has rows and vectors) and answers a few
messages; then, timed by wall clock around each command as an operator runs it:
`flotilla backup` (the fleet running), the same with the writer stopped (its files read by a
throwaway container of its image), `flotilla verify`, and, after `down -v`, `flotilla
restore` into an empty folder and `flotilla up` there until every agent takes messages.
The archive's size is reported, and that a fact is recalled after the restore.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path

import httpx

from orchestrator.images.names import DEFAULT_IMAGE
from orchestrator.state.endpoint import read_endpoint
from orchestrator.state.paths import StatePaths
from orchestrator.testing.cli import free_port, run_flotilla

REPO = Path(__file__).resolve().parents[1]
AGENTS = ("coordinator", "researcher", "writer")
Row = dict[str, str]


def _flotilla(folder: Path, *args: str) -> float:
    started = time.monotonic()
    result = run_flotilla(folder, *args, timeout=600)
    if result.returncode != 0:
        raise RuntimeError(f"flotilla {' '.join(args)} failed: {result.stderr or result.stdout}")
    return time.monotonic() - started


def _teach(folder: Path, facts_per_agent: int) -> None:
    endpoint = read_endpoint(StatePaths.for_fleet_file(folder / "fleet.yaml"))
    assert endpoint is not None
    with httpx.Client(base_url=endpoint.url, headers={"authorization": f"Bearer {endpoint.token}"}) as client:
        for agent in AGENTS:
            for n in range(facts_per_agent):
                text = f"Fact {n} of {agent}: the ferry number {n} leaves pier {n % 7} at {n % 24}:15"
                client.post(
                    f"/api/v1/agents/{agent}/memory/facts", json={"text": text}, timeout=60
                ).raise_for_status()


def run(quick: bool) -> list[Row]:
    facts = 20 if quick else 300
    image = os.environ.get("FLOTILLA_IMAGE", DEFAULT_IMAGE)
    name = f"bench-backup-{secrets.token_hex(3)}"
    with tempfile.TemporaryDirectory(prefix="bench-backup-") as scratch:
        old, new = Path(scratch) / "old", Path(scratch) / "new"
        old.mkdir()
        new.mkdir()
        shutil.copytree(REPO / "examples", old / "examples")
        (old / "fleet.yaml").write_text(
            (REPO / "fleet.yaml").read_text().replace("fleet: demo", f"fleet: {name}")
        )
        archive = Path(scratch) / "fleet.tar"
        up = ("up", "-d", "--runtime", "docker", "--port", str(free_port()), "--image", image)
        try:
            _flotilla(old, *up)
            _teach(old, facts)
            for agent in AGENTS:
                _flotilla(old, "send", agent, f"hello {agent}")
            backup_s = _flotilla(old, "backup", "-o", str(archive))
            verify_s = _verify(archive)
            _flotilla(old, "stop", "writer")
            stopped_archive = Path(scratch) / "stopped.tar"
            stopped_s = _flotilla(old, "backup", "-o", str(stopped_archive))
            _verify(stopped_archive)
            _flotilla(old, "down", "-v")
            restore_s = _flotilla(new, "restore", str(archive))
            up_s = _flotilla(new, *up)
            recalled = (
                "ferry number 3 " in run_flotilla(new, "memory", "search", "writer", "ferry number 3").stdout
            )
        finally:
            run_flotilla(old, "down", "-v")
            run_flotilla(new, "down", "-v")
        size = archive.stat().st_size
    label = f"example fleet, {facts} facts per agent"
    return [
        {
            "benchmark": "backup",
            "metric": f"flotilla backup ({label}, running)",
            "value": f"{backup_s:.2f} s",
            "target": "",
        },
        {
            "benchmark": "backup",
            "metric": "flotilla backup (the writer stopped)",
            "value": f"{stopped_s:.2f} s",
            "target": "",
        },
        {"benchmark": "backup", "metric": "flotilla verify", "value": f"{verify_s:.2f} s", "target": ""},
        {
            "benchmark": "backup",
            "metric": "flotilla restore (empty folder)",
            "value": f"{restore_s:.2f} s",
            "target": "",
        },
        {
            "benchmark": "backup",
            "metric": "flotilla up -d after restore",
            "value": f"{up_s:.2f} s",
            "target": "",
        },
        {
            "benchmark": "backup",
            "metric": "archive size",
            "value": f"{size / 1024 / 1024:.2f} MiB",
            "target": "",
        },
        {
            "benchmark": "backup",
            "metric": "a fact recalled after restore",
            "value": str(recalled),
            "target": "True",
        },
    ]


def _verify(archive: Path) -> float:
    """`flotilla verify` needs no fleet file."""
    started = time.monotonic()
    result = run_flotilla(archive.parent, "verify", str(archive), file=None, timeout=None)
    if result.returncode != 0:
        raise RuntimeError(f"verify failed: {result.stdout} {result.stderr}")
    return time.monotonic() - started


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(f"{row['metric']}: {row['value']}")
