"""A state.db of version 8 with the supervisor's restart counts in their own table comes up
the same after migration 9: every count, last reason and moment is in the agent's row of the
lifecycle's table, beside its desired state and hold, `ps` reads the same counts, and the old
table is gone so nothing reads a stale copy."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from orchestrator.backends.process import ProcessBackend
from orchestrator.config.loader import load_fleet
from orchestrator.lifecycle import ActualStates, DesiredStates, Restarts
from orchestrator.running_agents.supervisor import Supervisor
from orchestrator.state.db import Database
from orchestrator.state.migrations import CURRENT_VERSION, migrate_state, user_version
from orchestrator.state.paths import StatePaths
from orchestrator.wiring import reconciling_services

FLEET = "version: 1\nfleet: crashers\nagents:\n  sleepy:\n    role: one\n  crashy:\n    role: two\n"
SLEPT_AT = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
SLEPT_RESTART = datetime(2026, 11, 29, 23, 15, 2, 250000, tzinfo=UTC)
CRASHY_RESTART = datetime(2026, 12, 1, 9, 30, 0, 500000, tzinfo=UTC)
RESTARTS_V8 = (
    "CREATE TABLE agent_restarts (agent TEXT PRIMARY KEY, restarts INTEGER NOT NULL DEFAULT 0,"
    " last_reason TEXT NOT NULL DEFAULT '', last_at REAL)"
)
LIFECYCLE_V8 = (
    "CREATE TABLE agent_lifecycle (agent TEXT PRIMARY KEY,"
    " desired TEXT NOT NULL DEFAULT 'awake' CHECK (desired IN ('awake', 'asleep')),"
    " desired_since TEXT, hold TEXT CHECK (hold IN ('stopped', 'paused')), hold_since TEXT)"
)


def _version_8_state(db: Path, *, with_lifecycle: bool) -> None:
    """As version 8 wrote them: `sleepy` restarted twice, then put to sleep and held stopped;
    `crashy` restarted five times; the whole fleet paused; `gone` restarted once, no longer in
    the fleet."""
    with sqlite3.connect(db) as conn:
        conn.execute(RESTARTS_V8)
        conn.executemany(
            "INSERT INTO agent_restarts VALUES (?, ?, ?, ?)",
            [
                ("sleepy", 2, "its unit is exited (exit code 1)", SLEPT_RESTART.timestamp()),
                ("crashy", 5, "it stopped checking in", CRASHY_RESTART.timestamp()),
                ("gone", 1, "its unit is missing", None),
            ],
        )
        if with_lifecycle:
            conn.execute(LIFECYCLE_V8)
            conn.execute(
                "INSERT INTO agent_lifecycle VALUES ('sleepy', 'asleep', ?, 'stopped', ?), ('*', 'awake', NULL, 'paused', ?)",
                (SLEPT_AT.isoformat(), SLEPT_AT.isoformat(), SLEPT_AT.isoformat()),
            )
        conn.execute("PRAGMA user_version = 8")
    conn.close()


def _fleet_paths(tmp_path: Path) -> tuple[Path, StatePaths]:
    fleet_file = tmp_path / "fleet" / "fleet.yaml"
    fleet_file.parent.mkdir()
    fleet_file.write_text(FLEET)
    paths = StatePaths.for_fleet_file(fleet_file)
    paths.ensure()
    return fleet_file, paths


def _row(db: Database, agent: str) -> tuple[int, str, datetime | None]:
    """The agent's restarts, last reason and moment (kept to the millisecond) in the lifecycle's table."""
    found = db.query_one(
        "SELECT restarts, restart_reason, restarted_at FROM agent_lifecycle WHERE agent = ?", (agent,)
    )
    assert found is not None, f"{agent} has no row in the lifecycle's table"
    at = found["restarted_at"]
    return int(found["restarts"]), str(found["restart_reason"]), datetime.fromisoformat(at) if at else None


@pytest.mark.parametrize("with_lifecycle", [True, False], ids=["beside-desired-states", "restarts-only"])
def test_restart_counts_of_version_8_are_the_lifecycles_after_the_migration(
    tmp_path: Path, with_lifecycle: bool
) -> None:
    fleet_file, paths = _fleet_paths(tmp_path)
    _version_8_state(paths.db, with_lifecycle=with_lifecycle)

    core, manager = reconciling_services(
        load_fleet(fleet_file), ProcessBackend(paths.root / "process"), paths
    )
    try:
        supervisor = Supervisor(
            core.db, core.fleet_view, manager, core.backend, core.controls, core.health, core.events
        )
        assert supervisor.all_restarts() == {"sleepy": 2, "crashy": 5, "gone": 1}
        assert supervisor.restarts("crashy") == 5 and supervisor.restarts("never") == 0
        assert _row(core.db, "sleepy") == (2, "its unit is exited (exit code 1)", SLEPT_RESTART)
        assert _row(core.db, "crashy") == (5, "it stopped checking in", CRASHY_RESTART)
        assert _row(core.db, "gone") == (1, "its unit is missing", None)
        desired = DesiredStates(core.db)
        if with_lifecycle:
            assert desired.of("sleepy") == ("asleep", SLEPT_AT)
            assert desired.holds() == {"sleepy": "stopped", "*": "paused"}
        else:
            assert desired.of("sleepy") == ("awake", None) and desired.holds() == {}
        assert desired.of("crashy") == ("awake", None) and "crashy" not in desired.asleep()
        assert ActualStates(core.db).of("crashy") is None  # nothing reported by an engine yet
        assert not core.db.query("SELECT name FROM sqlite_master WHERE name LIKE 'agent_restarts%'")
        assert not core.db.query("SELECT name FROM sqlite_master WHERE name = 'agent_lifecycle_v8'")
    finally:
        core.db.close()
    with sqlite3.connect(paths.db) as conn:
        assert user_version(conn) == CURRENT_VERSION
    conn.close()


def test_a_restart_after_the_migration_adds_to_the_count_it_carried(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    _version_8_state(db, with_lifecycle=True)
    migrate_state(db, tmp_path / "backups")
    restarts = Restarts(Database(db))
    later = datetime(2026, 12, 2, 7, 0, tzinfo=UTC)
    restarts.record("sleepy", "its health check fails", later)
    restarts.record("fresh", "its unit is missing", later)
    assert restarts.all() == {"sleepy": 3, "crashy": 5, "gone": 1, "fresh": 1}
    assert DesiredStates(Database(db)).of("sleepy") == ("asleep", SLEPT_AT)


def test_an_agent_with_a_desired_state_and_no_restart_counts_none(tmp_path: Path) -> None:
    db = Database(tmp_path / "state.db")
    DesiredStates(db).set("quiet", "asleep", SLEPT_AT)
    restarts = Restarts(db)
    assert restarts.all() == {} and restarts.of("quiet") == 0
