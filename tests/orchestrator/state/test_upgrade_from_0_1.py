"""A fleet folder written by release 0.1.0, started with today's code: nothing is lost.

The fixture (tests/fixtures/release-0.1.0) is the example fleet after a few turns on the process
runtime: facts in two agents' memories, a ledger, run records, workspaces with history. Today's
code migrates state.db (after a backup), moves each agent's old shared folder aside, takes its
workspace into the operator's copy and carries the agent's own files (memory, history) into
its new storage.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.state.migrations import CURRENT_VERSION
from orchestrator.testing.cli import free_port, run_flotilla

RELEASE_0_1 = Path(__file__).resolve().parents[2] / "fixtures" / "release-0.1.0"


@pytest.fixture(scope="module")
def upgraded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("upgrade") / "fleet"
    shutil.copytree(RELEASE_0_1, folder, ignore=shutil.ignore_patterns("state", "README.md"))
    shutil.copytree(RELEASE_0_1 / "state", folder / ".flotilla")
    started = run_flotilla(folder, "up", "-d", "--runtime", "process", "--port", str(free_port()))
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        yield folder
    finally:
        run_flotilla(folder, "down")


def test_state_db_is_migrated_with_a_backup_and_keeps_its_rows(upgraded: Path) -> None:
    state = upgraded / ".flotilla"
    (backup,) = (state / "backups").iterdir()
    with sqlite3.connect(state / "state.db") as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == CURRENT_VERSION
        assert conn.execute("SELECT COUNT(*) FROM gateway_usage").fetchone()[0] >= 7
        assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] >= 6
    with sqlite3.connect(backup) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 0


def test_agents_recall_what_they_knew_before_the_upgrade(upgraded: Path) -> None:
    found = run_flotilla(upgraded, "memory", "search", "writer", "ferry", "--json")
    assert found.returncode == 0, found.stderr
    assert "The ferry leaves at 7:15 from pier 3" in found.stdout
    reply = run_flotilla(upgraded, "send", "researcher", 'call memory_search {"query": "harbour master"}')
    assert reply.returncode == 0, reply.stderr
    assert "Ines Duarte" in reply.stdout


def test_workspaces_and_their_history_are_kept(upgraded: Path) -> None:
    listing = run_flotilla(upgraded, "workspace", "ls", "coordinator")
    assert listing.returncode == 0, listing.stderr
    soul = run_flotilla(upgraded, "workspace", "cat", "coordinator", "SOUL.md")
    assert "coordinator of a small team" in soul.stdout


def test_the_ledger_continues(upgraded: Path) -> None:
    before = 7
    run_flotilla(upgraded, "send", "writer", "one more turn")
    with sqlite3.connect(upgraded / ".flotilla" / "state.db") as conn:
        rows = conn.execute("SELECT COUNT(*) FROM gateway_usage").fetchone()[0]
    assert rows > before
    costs = json.loads(run_flotilla(upgraded, "costs", "--json").stdout)
    assert {a["agent"] for a in costs["agents"]} == {"coordinator", "researcher", "writer"}
