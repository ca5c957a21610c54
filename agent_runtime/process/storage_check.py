"""The agent's own storage, checked when the agent starts (standard library only).

- Temporary files (`*.tmp`) left by writes that a kill cut short are removed, as is a snapshot
  folder left by a backup that never finished: every write here is temp-file-then-rename, so a
  `.tmp` at start is never the only copy of anything.
- memory.db gets SQLite's quick check. A damaged one is moved aside (with its WAL) into
  `damaged/`, so the agent starts a fresh store and keeps working; the operator is told by an
  event (`memory.damaged`) and in `flotilla ps`, and decides what to do with the kept file.
"""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

log = logging.getLogger("agent_runtime")

MEMORY_DB = "memory.db"
DAMAGED_FOLDER = "damaged"
SNAPSHOT_FOLDER = Path(".runtime") / "snapshot"
TEMP_SUFFIX = ".tmp"
MEMORY_DAMAGED_EVENT = "memory.damaged"


@dataclass
class StorageCheck:
    removed_temp_files: list[str] = field(default_factory=list)
    memory_problem: str | None = None
    """What SQLite found wrong with memory.db, when it was damaged."""
    kept_aside: str | None = None
    """Where the damaged memory.db now is (relative to /data)."""


def check_own_storage(data_dir: Path) -> StorageCheck:
    check = StorageCheck(removed_temp_files=remove_leftover_temp_files(data_dir))
    problem = memory_db_problem(data_dir / MEMORY_DB)
    if problem is not None:
        check.memory_problem = problem
        check.kept_aside = set_memory_db_aside(data_dir)
        log.error(
            "memory.db is damaged (%s): kept aside as %s; starting a fresh store", problem, check.kept_aside
        )
    if check.removed_temp_files:
        log.warning(
            "removed %d leftover temporary file(s): %s",
            len(check.removed_temp_files),
            check.removed_temp_files[:5],
        )
    return check


def remove_leftover_temp_files(data_dir: Path) -> list[str]:
    removed: list[str] = []
    snapshot = data_dir / SNAPSHOT_FOLDER
    if snapshot.is_dir() and not snapshot.is_symlink():
        shutil.rmtree(snapshot, ignore_errors=True)
        removed.append(SNAPSHOT_FOLDER.as_posix() + "/")
    for dirpath, dirnames, filenames in os.walk(data_dir):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if not (here / d).is_symlink() and d != DAMAGED_FOLDER]
        for name in filenames:
            path = here / name
            if name.endswith(TEMP_SUFFIX) and not path.is_symlink() and path.is_file():
                try:
                    path.unlink()
                except OSError as failed:
                    log.warning("cannot remove %s: %s", path, failed)
                    continue
                removed.append(path.relative_to(data_dir).as_posix())
    return removed


def memory_db_problem(path: Path) -> str | None:
    """None when memory.db is absent or passes SQLite's quick check; else what is wrong."""
    if not path.exists() or path.is_symlink():
        return None
    try:
        conn = sqlite3.connect(path, timeout=30.0)
        try:
            rows = conn.execute("PRAGMA quick_check").fetchall()
        finally:
            conn.close()
    except sqlite3.DatabaseError as failed:
        return str(failed)
    found = [str(row[0]) for row in rows]
    return None if found == ["ok"] else "; ".join(found[:3])


def set_memory_db_aside(data_dir: Path) -> str:
    """Moves memory.db (and its WAL and shared-memory files) into damaged/; the new name."""
    folder = data_dir / DAMAGED_FOLDER
    folder.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    target = folder / f"memory-{stamp}.db"
    for suffix in ("", "-wal", "-shm"):
        source = data_dir / (MEMORY_DB + suffix)
        if source.exists():
            source.replace(folder / (target.name + suffix))
    return target.relative_to(data_dir).as_posix()
