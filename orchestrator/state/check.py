"""state.db is checked before the orchestrator opens it: a damaged file stops the start with
one paragraph that says which file, what is wrong and how to get the fleet back.

The check opens the file read-only and runs `PRAGMA quick_check`, which reads every page once
(a fraction of a second for the tens of MiB a fleet's state holds) without the index checks of
`integrity_check`. A missing file is a new fleet; an existing empty one is damage: its fleet's
runs, inbox and spend would otherwise start over without a word.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from orchestrator.state.paths import StatePaths

EXIT_STATE_DAMAGED = 4
"""The exit code of a command refused because state.db is damaged or unreadable."""
BACKUP_PATTERN = "flotilla-backup-*.tar"
QUICK_CHECK_ERRORS = 3
"""How many of quick_check's findings the paragraph quotes."""


@dataclass(frozen=True)
class LastBackup:
    path: Path
    taken_at: datetime

    @property
    def age_hours(self) -> float:
        return (datetime.now(UTC) - self.taken_at).total_seconds() / 3600


class StateDamaged(Exception):
    """state.db exists but cannot be used; `str()` is the paragraph for the operator."""

    exit_code = EXIT_STATE_DAMAGED

    def __init__(self, path: Path, problem: str, backup: LastBackup | None) -> None:
        self.path = path
        self.problem = problem
        self.backup = backup
        super().__init__(self.explain())

    def explain(self) -> str:
        lines = [
            f"the fleet's state database {self.path} is damaged: {self.problem}.",
            "The orchestrator does not start on it, so that nothing in it is overwritten.",
        ]
        if self.backup is not None:
            taken = f"{self.backup.taken_at:%Y-%m-%d %H:%M} UTC"
            lines.append(
                f"The last backup found is {self.backup.path} (taken {taken}): with the fleet down, "
                f"`flotilla restore {self.backup.path} --into {self.path.parent.parent} --force` "
                "brings the fleet back as it was then, and `flotilla up` starts it."
            )
        else:
            lines.append(
                f"No backup was found next to the fleet ({BACKUP_PATTERN}): restore one you keep "
                f"elsewhere with `flotilla restore ARCHIVE --into {self.path.parent.parent} --force`, "
                f"or move {self.path} aside to start the fleet with a new, empty state."
            )
        lines.append(f"(exit code {EXIT_STATE_DAMAGED}: state damaged)")
        return " ".join(lines)


def is_state_damage(failed: BaseException) -> bool:
    """True for SQLite's word that the file is damaged (corrupt, or not a database); False for
    any other database error (a constraint, a bad parameter, a full disk, a lock)."""
    import sqlite3

    if not isinstance(failed, sqlite3.DatabaseError):
        return False
    code = getattr(failed, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)
    text = str(failed)
    return "malformed" in text or "not a database" in text


def last_backup(paths: StatePaths, *elsewhere: Path) -> LastBackup | None:
    """The newest `flotilla backup` archive in the fleet's folder (where `flotilla backup` run
    there writes it) or in the other folders given."""
    folders = {paths.root.parent.resolve(), *(folder.resolve() for folder in elsewhere)}
    found: list[LastBackup] = []
    for folder in folders:
        for archive in folder.glob(BACKUP_PATTERN):
            try:
                mtime = archive.stat().st_mtime
            except OSError:
                continue
            found.append(LastBackup(archive, datetime.fromtimestamp(mtime, UTC)))
    return max(found, key=lambda backup: backup.taken_at, default=None)


def state_problem(db: Path) -> str | None:
    """What is wrong with an existing state.db, or None when it reads as a whole database."""
    import sqlite3  # here: the CLI imports this module for its exception on every command

    try:
        size = db.stat().st_size
    except FileNotFoundError:
        return None
    except OSError as failed:
        return f"it cannot be read ({failed.strerror or failed})"
    wal = db.with_name(db.name + "-wal")
    if size == 0 and not (wal.exists() and wal.stat().st_size > 0):
        return "it is empty (0 bytes), where a fleet's state was kept"
    try:
        conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=10)
    except sqlite3.Error as failed:
        return f"it cannot be opened ({failed})"
    try:
        rows = conn.execute(f"PRAGMA quick_check({QUICK_CHECK_ERRORS})").fetchall()
    except sqlite3.DatabaseError as failed:
        code = getattr(failed, "sqlite_errorcode", 0) & 0xFF
        if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            return None  # a running orchestrator holds it a moment: busy is not damage
        return f"SQLite refuses it: {failed}"
    finally:
        conn.close()
    findings = [str(row[0]) for row in rows]
    if findings == ["ok"]:
        return None
    return "SQLite's quick_check found: " + "; ".join(findings)


def check_state(paths: StatePaths, *backup_folders: Path) -> None:
    """Raise `StateDamaged` when the fleet's state.db exists and cannot be used."""
    problem = state_problem(paths.db)
    if problem is not None:
        raise StateDamaged(paths.db, problem, last_backup(paths, *backup_folders))
