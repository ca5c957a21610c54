"""A state.db of version 7 with a hibernated agent and operator holds comes up the same after
migration 8: the agent is still asleep (since the same moment), the awake one still awake, the
holds still held, and the old columns and table are gone so nothing reads a stale copy."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from orchestrator.backends.process import ProcessBackend
from orchestrator.config.loader import load_fleet
from orchestrator.lifecycle import DesiredStates, stopped_in_file
from orchestrator.scheduler.store import SchedulerStore
from orchestrator.state.db import Database
from orchestrator.state.migrations import CURRENT_VERSION, migrate_state, user_version
from orchestrator.state.paths import StatePaths
from orchestrator.wiring import reconciling_services

FLEET = "version: 1\nfleet: sleepers\nagents:\n  sleepy:\n    role: one\n  busy:\n    role: two\n"
SLEPT_AT = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
BUSY_AT = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)


def _version_7_state(db: Path) -> None:
    """The tables as version 7 wrote them: `sleepy` hibernated and held stopped, `busy` awake
    and paused, and the whole fleet paused."""
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
        conn.execute(
            "CREATE TABLE agent_controls (agent TEXT PRIMARY KEY,"
            " hold TEXT NOT NULL CHECK (hold IN ('stopped', 'paused')), since TEXT NOT NULL)"
        )
        conn.execute(
            "INSERT INTO agent_controls VALUES ('sleepy', 'stopped', ?), ('busy', 'paused', ?), ('*', 'paused', ?)",
            (SLEPT_AT.isoformat(), BUSY_AT.isoformat(), BUSY_AT.isoformat()),
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
        assert manager.asleep() == {"sleepy"}
        desired = DesiredStates(core.db)
        assert desired.of("sleepy") == ("asleep", SLEPT_AT)
        assert desired.of("busy") == ("awake", None)
        heartbeats = SchedulerStore(core.db)
        assert heartbeats.desired.asleep() == {"sleepy"}
        assert heartbeats.idle_since() == {"sleepy": (SLEPT_AT, True), "busy": (BUSY_AT, False)}
        columns = {str(row["name"]) for row in core.db.query("PRAGMA table_info(heartbeat_state)")}
        assert "hibernated" not in columns and "hibernated_at" not in columns
        assert core.controls.own_hold("sleepy") == "stopped" and core.controls.own_hold("busy") == "paused"
        assert core.controls.fleet_paused and core.controls.stopped() == {"sleepy"}
        assert desired.holds() == {"sleepy": "stopped", "busy": "paused", "*": "paused"}
        assert not core.db.query("SELECT name FROM sqlite_master WHERE name = 'agent_controls'")
    finally:
        core.db.close()
    with sqlite3.connect(paths.db) as conn:
        assert user_version(conn) == CURRENT_VERSION
    conn.close()


def test_the_doctor_reads_stopped_agents_before_and_after_the_migration(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    _version_7_state(db)
    assert stopped_in_file(db) == {"sleepy"}
    migrate_state(db, tmp_path / "backups")
    assert stopped_in_file(db) == {"sleepy"}


def test_the_migration_runs_once(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    _version_7_state(db)
    first = migrate_state(db, tmp_path / "backups")
    assert "an agent's desired state (asleep or awake, the operator's hold) in the lifecycle's table" in (
        first.applied
    )
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


def test_a_hold_placed_and_lifted_is_kept_in_the_one_table(tmp_path: Path) -> None:
    desired = DesiredStates(Database(tmp_path / "state.db"))
    at = datetime(2026, 12, 3, tzinfo=UTC)
    desired.set("a", "asleep", at)
    desired.set_hold("a", "stopped", at)
    assert desired.holds() == {"a": "stopped"} and desired.of("a") == ("asleep", at)
    desired.set_hold("a", None, at)
    assert desired.holds() == {} and desired.is_asleep("a")
