"""Open an SQLite database with sqlite-vec loaded, in WAL mode.

The library is the one `agent_runtime.sqlite_driver` picks for the whole process (the standard
library's sqlite3, or `pysqlite3` where the interpreter cannot load extensions); its exception
classes are re-exported here.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import ModuleType
from typing import cast

from agent_runtime import sqlite_driver

DEFAULT_CACHE_MB = 16
DEFAULT_MMAP_MB = 256
BUSY_TIMEOUT_MS = 10_000
# The writer's own checkpoint threshold (pages), a backstop: checkpoints normally run on a
# thread of their own (see checkpointer.py), so no COMMIT pays for copying the WAL.
WAL_CHECKPOINT_PAGES = 8192


class SqliteVecUnavailable(RuntimeError):
    """No SQLite driver that can load sqlite-vec is installed."""


def _require_extensions() -> ModuleType:
    if not sqlite_driver.loads_extensions:
        raise SqliteVecUnavailable(
            "this Python's sqlite3 cannot load extensions and pysqlite3 is not installed: "
            "install pysqlite3-binary (or use a Python built with loadable SQLite extensions)"
        )
    return sqlite_driver.driver


driver: ModuleType = sqlite_driver.driver
Error = sqlite_driver.Error
DatabaseError = sqlite_driver.DatabaseError
OperationalError = sqlite_driver.OperationalError
IntegrityError = sqlite_driver.IntegrityError
Connection = sqlite3.Connection
Row = sqlite3.Row


def connect(
    path: Path | str,
    *,
    cache_mb: int = DEFAULT_CACHE_MB,
    mmap_mb: int = DEFAULT_MMAP_MB,
) -> Connection:
    """A connection in autocommit mode (transactions are explicit), sqlite-vec loaded, WAL on.

    `check_same_thread` is off: callers serialize access with their own lock.
    """
    target = str(path)
    if target != ":memory:":
        Path(target).parent.mkdir(parents=True, exist_ok=True)
    conn = cast(
        Connection,
        _require_extensions().connect(
            target, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
        ),
    )
    conn.row_factory = driver.Row
    # Imported here, when a store opens: sqlite_vec imports numpy when it is installed, which
    # the orchestrator would otherwise pay at start-up for a route few requests use.
    import sqlite_vec

    conn.enable_load_extension(True)
    try:
        sqlite_vec.load(conn)
    finally:
        conn.enable_load_extension(False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")
    conn.execute("PRAGMA foreign_keys=ON")
    # Deleted and overwritten content is zeroed on its page, so a forgotten fact's text does
    # not linger in free space of the file (see forgetting.py).
    conn.execute("PRAGMA secure_delete=ON")
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    conn.execute(f"PRAGMA cache_size=-{int(cache_mb) * 1024}")
    conn.execute(f"PRAGMA mmap_size={int(mmap_mb) * 1024 * 1024}")
    return conn


def sqlite_version() -> str:
    version: str = driver.sqlite_version
    return version
