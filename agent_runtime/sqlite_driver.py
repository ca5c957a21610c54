"""The one SQLite library this process opens the agent's databases with.

The standard library's sqlite3 is used when the interpreter can load extensions (Debian's
python3 in the agent image can); interpreters built without that (some hosts) use `pysqlite3`,
which bundles its own SQLite. Every connection to memory.db in one process must go through the
same library: SQLite coordinates connections with POSIX locks and a memory-mapped WAL index, and
POSIX locks never conflict within one process, so a second library opening the file believes it
is alone, resets the WAL index under the first one's mapping (a SIGBUS) and, when it closes,
drops the first one's locks.

The exception classes of the library picked are exported: a `pysqlite3` error is not a subclass
of the standard library's.
"""

from __future__ import annotations

import sqlite3
from types import ModuleType
from typing import Any, cast


def _pick_driver() -> ModuleType:
    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return sqlite3
    try:
        import pysqlite3.dbapi2 as bundled
    except ImportError:
        return sqlite3
    return cast(ModuleType, bundled)


driver: ModuleType = _pick_driver()
loads_extensions: bool = hasattr(driver.Connection, "enable_load_extension")
Error: type[Exception] = driver.Error
DatabaseError: type[Exception] = driver.DatabaseError
OperationalError: type[Exception] = driver.OperationalError
IntegrityError: type[Exception] = driver.IntegrityError
SQLITE_FULL: int = sqlite3.SQLITE_FULL


def connect(database: str | Any, **options: Any) -> sqlite3.Connection:
    """`connect` of the library picked (the standard library's signature)."""
    return cast(sqlite3.Connection, driver.connect(str(database), **options))
