"""A state.db of version 7 with a hibernated agent comes up the same after migration 8: the
agent is still asleep (since the same moment), the awake one still awake, and the flag's old
columns are gone so nothing reads a stale copy."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from orchestrator.backends.process import ProcessBackend
from orchestrator.config.loader import load_fleet
from orchestrator.lifecycle import DesiredStates
from orchestrator.scheduler.store import SchedulerStore
from orchestrator.state.db import Database
from orchestrator.state.migrations import CURRENT_VERSION, migrate_state, user_version
from orchestrator.state.paths import StatePaths
from orchestrator.wiring import reconciling_services

FLEET = "version: 1\nfleet: sleepers\nagents:\n  sleepy:\n    role: one\n  busy:\n    role: two\n"
SLEPT_AT = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
BUSY_AT = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)


def _version_7_state(db: Path) -> None:
    """The scheduler's table as version 7 wrote it: `sleepy` hibernated, `busy` awake."""
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TABLE heartbeat_state (agent TEXT PRIMARY KEY, cadence TEXT, next_run TEXT,"
            " last_tick TEXT, last_activity TEXT NOT NULL, hibernated INTEGER NOT NULL DEFAULT 0,"
            " hibernated_at TEXT, runs_seq INTEGER NOT NULL DEFAULT 0, scanned_wall REAL,"
            " rules_digest TEXT NOT NULL DEFAULT '')"
        )
        conn.execute(
            "INSERT INTO heartbeat_state(agent, last_activity, hibernated, hibernated_at) VALUES"
            " ('sleepy', ?, 1, ?), ('busy', ?, 0, NULL)",
            (SLEPT_AT.isoformat(), SLEPT_AT.isoformat(), BUSY_AT.isoformat()),
        )
        conn.execute("PRAGMA user_version = 7")
    conn.close()


def test_a_hibernated_agent_of_version_7_is_still_asleep_after_the_migration(tmp_path: Path) -> None:
    fleet_file = tmp_path / "fleet" / "fleet.yaml"
    fleet_file.parent.mkdir()
    fleet_file.write_text(FLEET)
    paths = StatePaths.for_fleet_file(fleet_file)
    paths.ensure()
    _version_7_state(paths.db)

    core, manager = reconciling_services(
        load_fleet(fleet_file), ProcessBackend(paths.root / "process"), paths
    )
    try:
        assert manager.hibernated() == {"sleepy"}
        desired = DesiredStates(core.db)
        assert desired.of("sleepy") == ("asleep", SLEPT_AT)
        assert desired.of("busy") == ("awake", None)
        heartbeats = SchedulerStore(core.db)
        assert heartbeats.is_hibernated("sleepy") and not heartbeats.is_hibernated("busy")
        assert heartbeats.idle_since() == {"sleepy": (SLEPT_AT, True), "busy": (BUSY_AT, False)}
        columns = {str(row["name"]) for row in core.db.query("PRAGMA table_info(heartbeat_state)")}
        assert "hibernated" not in columns and "hibernated_at" not in columns
    finally:
        core.db.close()
    with sqlite3.connect(paths.db) as conn:
        assert user_version(conn) == CURRENT_VERSION == 8
    conn.close()


def test_the_migration_runs_once(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    _version_7_state(db)
    first = migrate_state(db, tmp_path / "backups")
    assert first.applied and first.applied[-1].startswith("an agent's desired state")
    assert migrate_state(db, tmp_path / "backups").applied == ()


def test_a_wake_and_a_sleep_are_each_acted_on_by_one_caller(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    _version_7_state(db)
    migrate_state(db, tmp_path / "backups")
    desired = DesiredStates(Database(db))
    later = datetime(2026, 12, 2, tzinfo=UTC)
    assert desired.set("sleepy", "awake", later) and not desired.set("sleepy", "awake", later)
    assert desired.of("sleepy") == ("awake", later)
    assert desired.set("new", "asleep", later) and not desired.set("new", "asleep", later)
    assert desired.asleep() == {"new"}
