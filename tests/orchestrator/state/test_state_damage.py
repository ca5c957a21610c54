"""A damaged state.db at start: `flotilla up` refuses with one paragraph that names the file,
what is wrong, the last backup and the restore command, exit code 4 and no traceback; an
existing empty file is damage, not a new fleet."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.state.check import EXIT_STATE_DAMAGED, check_state, state_problem
from orchestrator.state.migrations import migrate_state
from orchestrator.state.paths import StatePaths
from orchestrator.testing.cli import free_port, run_flotilla

FLEET = """\
version: 1
fleet: damaged-state
agents:
  writer:
    role: an agent whose fleet's state is damaged
"""


def _fleet_with_state(folder: Path) -> StatePaths:
    (folder / "fleet.yaml").write_text(FLEET)
    paths = StatePaths.for_fleet_file(folder / "fleet.yaml")
    paths.ensure()
    migrate_state(paths.db, paths.backups)
    conn = sqlite3.connect(paths.db)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE runs_kept (id INTEGER PRIMARY KEY, text TEXT)")
    conn.execute("CREATE INDEX runs_kept_text ON runs_kept (text)")
    conn.executemany("INSERT INTO runs_kept (text) VALUES (?)", [(f"run {n} " * 40,) for n in range(2000)])
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    assert state_problem(paths.db) is None
    return paths


def _truncate_to_half(db: Path) -> None:
    os.truncate(db, db.stat().st_size // 2)


def _random_bytes(db: Path) -> None:
    db.write_bytes(os.urandom(db.stat().st_size))


def _empty(db: Path) -> None:
    os.truncate(db, 0)


def _overwrite_a_middle_page(db: Path) -> None:
    with db.open("r+b") as file:
        file.seek(4096 * 20)
        file.write(b"\xff" * 4096)


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (_truncate_to_half, "malformed"),
        (_random_bytes, "not a database"),
        (_empty, "empty (0 bytes)"),
        (_overwrite_a_middle_page, "SQLite"),
    ],
)
def test_up_on_a_damaged_state_db_refuses_with_the_restore_command(
    tmp_path: Path, damage: Callable[[Path], None], said: str
) -> None:
    paths = _fleet_with_state(tmp_path)
    backup = tmp_path / "flotilla-backup-fleet-20261206T2300.tar"
    backup.write_bytes(b"an archive")
    damage(paths.db)
    damaged = paths.db.read_bytes()

    started = run_flotilla(tmp_path, "up", "-d", "--runtime", "process", "--port", str(free_port()))

    assert started.returncode == EXIT_STATE_DAMAGED, started.stdout + started.stderr
    assert "Traceback" not in started.stdout + started.stderr
    message = started.stderr
    assert f"{paths.db} is damaged" in message and said in message
    assert f"flotilla restore {backup} --into {tmp_path} --force" in message
    assert paths.db.read_bytes() == damaged  # nothing was written over it
    assert not paths.endpoint_file.exists()


def test_without_a_backup_the_paragraph_says_so_and_how_to_start_anew(tmp_path: Path) -> None:
    paths = _fleet_with_state(tmp_path)
    _empty(paths.db)
    with pytest.raises(Exception) as refused:
        check_state(paths)
    text = str(refused.value)
    assert "No backup was found" in text and f"move {paths.db} aside" in text
    assert f"exit code {EXIT_STATE_DAMAGED}" in text


def test_a_new_fleet_and_a_whole_state_db_pass(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    fresh = StatePaths.for_fleet_file(tmp_path / "fleet.yaml")
    check_state(fresh)  # no state.db yet: a new fleet
    check_state(_fleet_with_state(tmp_path))
