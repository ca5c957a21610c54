"""Open an SQLite database with sqlite-vec loaded, in WAL mode.

The standard library's sqlite3 is used when the interpreter can load extensions (Debian's
python3 in the agent image can). Interpreters built without that (some hosts) fall back to
`pysqlite3`, which bundles its own SQLite. Both speak the DB-API, so callers see one
`Connection` type; the exception classes of whichever driver was picked are re-exported here,
because a `pysqlite3` error is not a subclass of the standard library's.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import ModuleType
from typing import cast

DEFAULT_CACHE_MB = 16
DEFAULT_MMAP_MB = 256
BUSY_TIMEOUT_MS = 10_000
# The writer's own checkpoint threshold (pages), a backstop: checkpoints normally run on a
# thread of their own (see checkpointer.py), so no COMMIT pays for copying the WAL.
WAL_CHECKPOINT_PAGES = 8192


class SqliteVecUnavailable(RuntimeError):
    """No SQLite driver that can load sqlite-vec is installed."""


def _pick_driver() -> ModuleType:
    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return sqlite3
    try:
        import pysqlite3.dbapi2 as bundled
    except ImportError:
        raise SqliteVecUnavailable(
            "this Python's sqlite3 cannot load extensions and pysqlite3 is not installed: "
            "install pysqlite3-binary (or use a Python built with loadable SQLite extensions)"
        ) from None
    return cast(ModuleType, bundled)


driver: ModuleType = _pick_driver()
Error: type[Exception] = driver.Error
DatabaseError: type[Exception] = driver.DatabaseError
OperationalError: type[Exception] = driver.OperationalError
IntegrityError: type[Exception] = driver.IntegrityError
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
        driver.connect(target, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000),
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
