"""state.db carries a schema version: release 0.1.0's database is migrated once (after a backup)
and loses nothing; a newer one is refused untouched; a failed migration changes nothing."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import pytest

from orchestrator.backends.process import ProcessBackend
from orchestrator.config.loader import load_fleet
from orchestrator.state.migrations import (
    CURRENT_VERSION,
    MIGRATIONS,
    Migration,
    StateTooNew,
    add_column,
    migrate_state,
    user_version,
)
from orchestrator.state.paths import StatePaths
from orchestrator.testing.cli import run_flotilla
from orchestrator.wiring import core_services

RELEASE_0_1 = Path(__file__).resolve().parents[2] / "fixtures" / "release-0.1.0"
FOLDED = {"agent_restarts": "agent_lifecycle"}
"""Release 0.1.0's tables whose rows a migration moved into another table, and that table."""


@pytest.fixture
def old_fleet(tmp_path: Path) -> Path:
    """A copy of release 0.1.0's fleet folder, its state as `.flotilla/`."""
    folder = tmp_path / "fleet"
    shutil.copytree(RELEASE_0_1, folder, ignore=shutil.ignore_patterns("state", "README.md"))
    shutil.copytree(RELEASE_0_1 / "state", folder / ".flotilla")
    return folder


def _counts(db: Path) -> dict[str, int]:
    conn = sqlite3.connect(db)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: conn.execute(f"SELECT COUNT(*) FROM [{t}]").fetchone()[0] for t in tables}
    finally:
        conn.close()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_release_0_1_state_is_migrated_once_after_a_backup(old_fleet: Path) -> None:
    paths = StatePaths.for_fleet_file(old_fleet / "fleet.yaml")
    before = _counts(paths.db)
    assert before["inbox"] == 4 and before["gateway_usage"] == 7 and before["events"] == 12
    report = migrate_state(paths.db, paths.backups)
    assert (report.from_version, report.to_version) == (0, CURRENT_VERSION)
    assert report.backup is not None and report.backup.parent == paths.backups
    assert _counts(report.backup) == before  # the backup is the database as it was
    after = _counts(paths.db)
    kept = {t: n for t, n in before.items() if t not in FOLDED}
    assert {t: n for t, n in after.items() if t in before} == kept
    for folded, into in FOLDED.items():
        assert folded not in after and after[into] >= before[folded]
    with sqlite3.connect(paths.db) as conn:
        assert user_version(conn) == CURRENT_VERSION
    assert "gateway_settled_answers" in after  # the ledger's fleet keeps answers by idempotency key
    again = migrate_state(paths.db, paths.backups)
    assert again.applied == () and again.backup is None
    assert len(list(paths.backups.iterdir())) == 1


def test_todays_code_opens_the_migrated_state(old_fleet: Path) -> None:
    fleet = load_fleet(old_fleet / "fleet.yaml")
    paths = StatePaths.for_fleet_file(fleet.path)
    services = core_services(fleet, ProcessBackend(paths.root / "process"), paths)
    try:
        migrated = services.events.recent(limit=1)[-1]
        assert migrated.type == "state.migrated" and migrated.data["from_version"] == 0
        kinds = {e.type for e in services.events.recent(limit=100)}
        assert "message.delivered" in kinds or "run.finished" in kinds  # the old history is still there
    finally:
        services.db.close()


def test_a_database_from_a_newer_release_is_refused_untouched(old_fleet: Path) -> None:
    paths = StatePaths.for_fleet_file(old_fleet / "fleet.yaml")
    with sqlite3.connect(paths.db) as conn:
        conn.execute(f"PRAGMA user_version = {CURRENT_VERSION + 1}")
    digest = _digest(paths.db)
    with pytest.raises(StateTooNew, match="newer Flotilla") as raised:
        migrate_state(paths.db, paths.backups)
    assert "Nothing was changed" in str(raised.value)
    assert _digest(paths.db) == digest
    assert not paths.backups.exists()


def test_up_refuses_a_newer_database_with_a_clear_message(old_fleet: Path) -> None:
    paths = StatePaths.for_fleet_file(old_fleet / "fleet.yaml")
    with sqlite3.connect(paths.db) as conn:
        conn.execute(f"PRAGMA user_version = {CURRENT_VERSION + 7}")
    result = run_flotilla(old_fleet, "up", "-d", "--runtime", "process", "--port", "0", file=None)
    assert result.returncode == 1
    assert "written by a newer Flotilla" in result.stderr and "Traceback" not in result.stderr
    assert not paths.endpoint_file.exists()


def test_a_failing_migration_leaves_the_database_as_it_was(old_fleet: Path) -> None:
    paths = StatePaths.for_fleet_file(old_fleet / "fleet.yaml")
    before = _counts(paths.db)

    def add_then_fail(conn: sqlite3.Connection) -> None:
        add_column(conn, "inbox", "extra", "TEXT")
        conn.execute("DELETE FROM events")
        raise RuntimeError("disk on fire")

    broken = (*MIGRATIONS, Migration(CURRENT_VERSION + 1, "breaks halfway", add_then_fail))
    with pytest.raises(RuntimeError, match="disk on fire"):
        migrate_state(paths.db, paths.backups, broken)
    with sqlite3.connect(paths.db) as conn:
        assert user_version(conn) == 0
        columns = {row[1] for row in conn.execute("PRAGMA table_info(inbox)")}
    assert "extra" not in columns
    assert _counts(paths.db) == before


def test_a_new_database_is_stamped_without_a_backup(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    report = migrate_state(db, tmp_path / "backups")
    assert report.to_version == CURRENT_VERSION and report.backup is None
    with sqlite3.connect(db) as conn:
        assert user_version(conn) == CURRENT_VERSION


def test_add_column_skips_missing_tables_and_existing_columns(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "x.db")
    conn.execute("CREATE TABLE t (a TEXT)")
    add_column(conn, "t", "b", "INTEGER NOT NULL DEFAULT 0")
    add_column(conn, "t", "b", "INTEGER NOT NULL DEFAULT 0")
    add_column(conn, "absent", "b", "TEXT")
    assert [row[1] for row in conn.execute("PRAGMA table_info(t)")] == ["a", "b"]
    conn.close()
