"""Faults in an agent's own storage on the real Docker daemon: a damaged memory.db and a
leftover temporary file, found when the agent starts."""

from __future__ import annotations

import json
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.images.build import ImageBuildResult
from orchestrator.testing.cli import fleet_status, free_port, run_flotilla, wait_for

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[3]
DAMAGE = """
import os
path = "/data/memory.db"
size = os.path.getsize(path)
with open(path, "r+b") as db:
    db.truncate(size // 3)
for name in ("memory.db-wal", "memory.db-shm"):
    if os.path.exists("/data/" + name):
        os.unlink("/data/" + name)
open("/data/workspace/.MEMORY.md.cut.tmp", "wb").close()
"""


def flotilla(folder: Path, *args: str) -> str:
    result = run_flotilla(folder, *args, timeout=300)
    assert result.returncode == 0, f"flotilla {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def in_agent(folder: Path, agent: str, *command: str) -> str:
    result = run_flotilla(
        folder, "exec", "--file", str(folder / "fleet.yaml"), agent, "--", *command, file=None
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def fleet(agent_image: ImageBuildResult, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("faults")
    name = f"flt-test-faults-{secrets.token_hex(3)}"
    shutil.copytree(REPO / "examples", folder / "examples")
    (folder / "fleet.yaml").write_text(
        (REPO / "fleet.yaml").read_text().replace("fleet: demo", f"fleet: {name}")
    )
    try:
        flotilla(
            folder, "up", "-d", "--runtime", "docker", "--port", str(free_port()), "--image", agent_image.tag
        )
        yield folder
    finally:
        run_flotilla(folder, "down", "-v")


def test_a_damaged_memory_db_is_set_aside_reported_and_replaced_by_a_fresh_store(fleet: Path) -> None:
    flotilla(fleet, "memory", "add", "writer", "The ferry leaves at 7:15 from pier 3")
    in_agent(fleet, "writer", "python3", "-c", DAMAGE)

    flotilla(fleet, "restart", "writer")

    wait_for(lambda: bool(fleet_status(fleet)["writer"].get("memory_problem")), "ps to show the damage", 120)
    problem = fleet_status(fleet)["writer"]["memory_problem"]
    assert "kept as damaged/memory-" in problem
    assert "fresh store" in flotilla(fleet, "ps")
    events = json.loads(flotilla(fleet, "events", "--json", "--agent", "writer"))
    (damaged,) = [e for e in events if e["type"] == "memory.damaged"]
    kept = damaged["data"]["kept_aside"]
    listing = in_agent(fleet, "writer", "ls", "-a", "/data/damaged", "/data/workspace")
    assert Path(kept).name in listing and ".MEMORY.md.cut.tmp" not in listing
    flotilla(fleet, "memory", "add", "writer", "The lighthouse is painted green")
    found = flotilla(fleet, "memory", "search", "writer", "lighthouse ferry", "--json")
    assert "lighthouse" in found and "ferry" not in found
    status = flotilla(fleet, "memory", "status", "writer")
    assert "mode: keyword" in status and "fresh store: memory.db damaged at" in status
    assert "accept-fresh writer" in status  # what the operator can do

    flotilla(fleet, "restart", "writer")  # a later start: still the fresh store, still said
    wait_for(lambda: bool(fleet_status(fleet)["writer"].get("memory_problem")), "ps to keep the note", 120)
    flotilla(fleet, "memory", "accept-fresh", "writer")
    wait_for(
        lambda: not fleet_status(fleet)["writer"].get("memory_problem"),
        "ps to drop the note once accepted",
        120,
    )
    assert "fresh store" not in flotilla(fleet, "memory", "status", "writer")
    assert "lighthouse" in flotilla(fleet, "memory", "search", "writer", "lighthouse", "--json")
    events = json.loads(flotilla(fleet, "events", "--json", "--agent", "writer"))
    assert len([e for e in events if e["type"] == "memory.damaged"]) == 1
