"""The agent's own storage, checked when the agent starts (standard library only).

- Temporary files (`*.tmp`) left by writes that a kill cut short are removed, as is a snapshot
  folder left by a backup that never finished: every write here is temp-file-then-rename, so a
  `.tmp` at start is never the only copy of anything.
- memory.db gets SQLite's quick check. A damaged one is moved aside (with its WAL) into
  `damaged/`, so the agent starts a fresh store and keeps working; the operator is told by an
  event (`memory.damaged`) and in `flotilla ps`, and decides what to do with the kept file.

The fresh store carries a note of why it is fresh (a row of its `meta` table), so that every
later start knows it too: the agent searches it by keyword only, and `ps` and `memory status`
say so, until the operator acts. Restoring a backup replaces memory.db, note and all; accepting
the fresh store removes the note.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from agent_runtime import sqlite_driver

log = logging.getLogger("agent_runtime")

MEMORY_DB = "memory.db"
DAMAGED_FOLDER = "damaged"
SNAPSHOT_FOLDER = Path(".runtime") / "snapshot"
TEMP_SUFFIX = ".tmp"
MEMORY_DAMAGED_EVENT = "memory.damaged"
FRESH_STORE_KEY = "fresh_after_damage"


@dataclass(frozen=True)
class FreshStore:
    """memory.db was found damaged and set aside; this store started empty."""

    problem: str
    kept_aside: str
    at: str

    def describe(self) -> str:
        return (
            f"damaged at {self.at} ({self.problem}), kept as {self.kept_aside}; keyword-only "
            "until the operator restores a backup or accepts the fresh store"
        )


@dataclass
class StorageCheck:
    removed_temp_files: list[str] = field(default_factory=list)
    memory_problem: str | None = None
    """What SQLite found wrong with memory.db, when it was damaged."""
    kept_aside: str | None = None
    """Where the damaged memory.db now is (relative to /data)."""
    fresh_store: FreshStore | None = None
    """Set while the agent runs on the store that replaced a damaged one (this start or an earlier)."""


def check_own_storage(data_dir: Path) -> StorageCheck:
    check = StorageCheck(removed_temp_files=remove_leftover_temp_files(data_dir))
    problem = memory_db_problem(data_dir / MEMORY_DB)
    if problem is not None:
        check.memory_problem = problem
        check.kept_aside = set_memory_db_aside(data_dir)
        start_fresh_store(data_dir / MEMORY_DB, problem, check.kept_aside)
        log.error(
            "memory.db is damaged (%s): kept aside as %s; starting a fresh store", problem, check.kept_aside
        )
    check.fresh_store = fresh_store_of(data_dir / MEMORY_DB)
    if check.fresh_store is not None and problem is None:
        log.warning("memory.db %s", check.fresh_store.describe())
    if check.removed_temp_files:
        log.warning(
            "removed %d leftover temporary file(s): %s",
            len(check.removed_temp_files),
            check.removed_temp_files[:5],
        )
    return check


def remove_leftover_temp_files(data_dir: Path, older_than_s: float | None = None) -> list[str]:
    """`older_than_s`: while the agent runs, only files no write can still be making (a write in
    flight renames its temporary file within seconds); at start, every one."""
    removed: list[str] = []
    snapshot = data_dir / SNAPSHOT_FOLDER
    if older_than_s is None and snapshot.is_dir() and not snapshot.is_symlink():
        shutil.rmtree(snapshot, ignore_errors=True)
        removed.append(SNAPSHOT_FOLDER.as_posix() + "/")
    for dirpath, dirnames, filenames in os.walk(data_dir):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if not (here / d).is_symlink() and d != DAMAGED_FOLDER]
        for name in filenames:
            path = here / name
            if name.endswith(TEMP_SUFFIX) and not path.is_symlink() and path.is_file():
                if older_than_s is not None and time.time() - path.stat().st_mtime < older_than_s:
                    continue
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
        conn = sqlite_driver.connect(path, timeout=30.0)
        try:
            rows = conn.execute("PRAGMA quick_check").fetchall()
        finally:
            conn.close()
    except sqlite_driver.DatabaseError as failed:
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


def start_fresh_store(path: Path, problem: str, kept_aside: str) -> None:
    """A new memory.db holding only the note of why it is fresh (the store adds its tables)."""
    note = {
        "problem": problem,
        "kept_aside": kept_aside,
        "at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }
    conn = sqlite_driver.connect(path)
    try:
        with conn:
            conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            conn.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (FRESH_STORE_KEY, json.dumps(note))
            )
    finally:
        conn.close()


def fresh_store_of(path: Path) -> FreshStore | None:
    """The note of a store that replaced a damaged one, or None (no note, no store, unreadable)."""
    if not path.is_file() or path.is_symlink():
        return None
    try:
        conn = sqlite_driver.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (FRESH_STORE_KEY,)).fetchone()
        finally:
            conn.close()
    except sqlite_driver.Error:
        return None
    if row is None:
        return None
    try:
        note = json.loads(row[0])
        return FreshStore(
            problem=str(note["problem"]), kept_aside=str(note["kept_aside"]), at=str(note["at"])
        )
    except (ValueError, KeyError, TypeError):
        return FreshStore(problem="unknown", kept_aside=DAMAGED_FOLDER, at="unknown")


def accept_fresh_store(path: Path) -> bool:
    """The operator keeps the fresh store: its note goes (the next start searches it in full).
    False when there was no note."""
    if fresh_store_of(path) is None:
        return False
    conn = sqlite_driver.connect(path, timeout=30.0)
    try:
        with conn:
            conn.execute("DELETE FROM meta WHERE key = ?", (FRESH_STORE_KEY,))
    finally:
        conn.close()
    return True
