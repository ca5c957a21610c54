"""Every answered item has its run record through orchestrator kills: 200 operator messages to
one agent while the orchestrator is killed with SIGKILL at random points and started again;
then every item that is done has exactly one run record, and no run record is there twice."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from orchestrator.state.endpoint import read_endpoint
from orchestrator.state.paths import StatePaths
from orchestrator.testing.cli import free_port, run_flotilla, wait_for

pytestmark = pytest.mark.chaos

ITEMS = int(os.environ.get("RUN_RECORD_ITEMS", "200"))
KILLS = int(os.environ.get("RUN_RECORD_KILLS", "3"))
SETTLE_S = 180.0
FLEET = """\
version: 1
fleet: runrecords
defaults:
  always_on: true
agents:
  worker:
    role: answers every message
"""


class Orchestrator:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.paths = StatePaths.for_fleet_file(folder / "fleet.yaml")
        self.port = free_port()

    def up(self) -> None:
        started = run_flotilla(self.folder, "up", "-d", "--runtime", "process", "--port", str(self.port))
        assert started.returncode == 0, started.stdout + started.stderr

    def kill(self) -> None:
        endpoint = read_endpoint(self.paths)
        assert endpoint is not None
        os.kill(endpoint.pid, signal.SIGKILL)
        wait_for(lambda: not Path(f"/proc/{endpoint.pid}").exists() or _zombie(endpoint.pid), "the kill", 30)

    def post(self, text: str) -> str | None:
        endpoint = read_endpoint(self.paths)
        if endpoint is None:
            return None
        headers = {"authorization": f"Bearer {endpoint.token}"}
        try:
            response = httpx.post(
                f"{endpoint.url}/api/v1/agents/worker/messages",
                json={"text": text},
                headers=headers,
                timeout=5,
            )
        except httpx.HTTPError:
            return None
        return str(response.json()["item_id"]) if response.status_code == 200 else None


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] == "Z"
    except OSError:
        return True


@pytest.fixture
def orchestrator(tmp_path: Path) -> Iterator[Orchestrator]:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    running = Orchestrator(tmp_path)
    try:
        running.up()
        yield running
    finally:
        run_flotilla(tmp_path, "down")


def _done_and_runs(db: Path, item_ids: list[str]) -> tuple[set[str], list[str], set[str]]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        marks = ",".join("?" * len(item_ids))
        states = dict(conn.execute(f"SELECT id, state FROM inbox WHERE id IN ({marks})", item_ids).fetchall())
        runs = [
            row[0] for row in conn.execute(f"SELECT item_id FROM runs WHERE item_id IN ({marks})", item_ids)
        ]
    done = {item for item, state in states.items() if state == "done"}
    unfinished = {item for item in item_ids if states.get(item) not in {"done", "failed", "dead", "expired"}}
    return done, runs, unfinished


def test_done_items_equal_run_records_through_orchestrator_kills(orchestrator: Orchestrator) -> None:
    rng = random.Random(int(os.environ.get("CHAOS_SEED", "39")))
    kill_at = sorted(rng.sample(range(10, ITEMS - 10), KILLS))
    accepted: list[str] = []
    kills_done = 0
    for n in range(ITEMS):
        if kill_at and n == kill_at[0]:
            kill_at.pop(0)
            time.sleep(rng.uniform(0.0, 0.5))  # somewhere in the work of the items just sent
            orchestrator.kill()
            kills_done += 1
            orchestrator.up()
        item = orchestrator.post(f"message {n}")
        if item is not None:
            accepted.append(item)
    assert kills_done == KILLS and len(accepted) >= ITEMS - KILLS

    def settled() -> bool:
        done, runs, unfinished = _done_and_runs(orchestrator.paths.db, accepted)
        return not unfinished and set(runs) >= done

    try:
        wait_for(settled, "every item to end with its run record", SETTLE_S, 1.0)
    finally:
        done, runs, unfinished = _done_and_runs(orchestrator.paths.db, accepted)
        missing = sorted(done - set(runs))
        duplicated = sorted({item for item in runs if runs.count(item) > 1})
        print(
            f"\nrun records: {len(accepted)} accepted, {len(done)} done, {len(runs)} run records, "
            f"{len(missing)} missing, {len(duplicated)} duplicated, {len(unfinished)} unfinished, {KILLS} kills"
        )
    assert not missing and not duplicated and not unfinished
    assert set(runs) <= set(accepted) - unfinished
