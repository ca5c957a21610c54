"""The checks of the fleet's own files: state.db and the backups next to the fleet."""

from __future__ import annotations

from pathlib import Path

from orchestrator.doctor.models import Finding
from orchestrator.state.check import StateDamaged, last_backup, state_problem
from orchestrator.state.paths import StatePaths

BACKUP_STALE_HOURS = 24.0
"""A fleet whose last backup is older than this is warned about."""


def check_state_db(paths: StatePaths, backup_folders: tuple[Path, ...]) -> Finding:
    problem = state_problem(paths.db)
    if problem is not None:
        damaged = StateDamaged(paths.db, problem, last_backup(paths, *backup_folders))
        backup = damaged.backup
        fix = (
            f"flotilla down; flotilla restore {backup.path} --into {paths.root.parent} --force"
            if backup is not None
            else f"flotilla down; flotilla restore ARCHIVE --into {paths.root.parent} --force"
        )
        return Finding(check="state_db", severity="error", summary=damaged.explain(), fix=fix)
    if not paths.db.exists():
        return Finding(
            check="state_db", severity="ok", summary=f"{paths.db} does not exist yet (a new fleet)"
        )
    size = paths.db.stat().st_size
    return Finding(check="state_db", severity="ok", summary=f"{paths.db} ({size} bytes) passes quick_check")


def check_backups(paths: StatePaths, backup_folders: tuple[Path, ...]) -> Finding:
    backup = last_backup(paths, *backup_folders)
    if backup is None:
        return Finding(
            check="backups",
            severity="warning",
            summary=f"no backup found in {paths.root.parent} (flotilla-backup-*.tar)",
            fix="flotilla backup",
        )
    age = backup.age_hours
    if age > BACKUP_STALE_HOURS:
        return Finding(
            check="backups",
            severity="warning",
            summary=f"the last backup, {backup.path}, is {age:.0f} hours old",
            fix="flotilla backup",
        )
    return Finding(
        check="backups", severity="ok", summary=f"the last backup, {backup.path}, is {age:.1f} hours old"
    )
