"""One SQLite database in WAL mode, shared by the orchestrator's subsystems.

Each subsystem owns its tables and declares them with `Database.ensure_schema`. Writes are
serialized by one lock so that a check-and-charge (budgets) or a claim (inbox) is atomic.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

Params = Sequence[Any] | dict[str, Any]


class Database:
    def __init__(self, path: Path | str) -> None:
        self.path = Path(path) if str(path) != ":memory:" else path
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30)
        self._conn.row_factory = sqlite3.Row
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        # What is masked or pruned is overwritten, not left in free pages (some builds default
        # to this, not all).
        self._conn.execute("PRAGMA secure_delete=ON")
        self._schemas: set[str] = set()

    def ensure_schema(self, ddl: str) -> None:
        """Run a subsystem's CREATE ... IF NOT EXISTS statements once per process."""
        with self._lock:
            if ddl in self._schemas:
                return
            self._conn.executescript(ddl)
            self._schemas.add(ddl)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT under the write lock; rolls back on error."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def execute(self, sql: str, params: Params = ()) -> sqlite3.Cursor:
        with self._lock:
            return self._conn.execute(sql, params)

    def query(self, sql: str, params: Params = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def query_one(self, sql: str, params: Params = ()) -> sqlite3.Row | None:
        with self._lock:
            row: sqlite3.Row | None = self._conn.execute(sql, params).fetchone()
            return row

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def columns_of(db: Database, table: str) -> set[str]:
    """The table's column names; empty when it does not exist."""
    try:
        rows = db.query(f"PRAGMA table_info({table})")
    except sqlite3.Error:
        return set()
    return {str(row["name"]) for row in rows}


def safe_query(db: Database, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
    """The rows, or none when a table or column does not exist (yet)."""
    try:
        return db.query(sql, list(params))
    except sqlite3.OperationalError:
        return []


def max_id(db: Database, table: str, key: str) -> int:
    rows = safe_query(db, f"SELECT COALESCE(MAX({key}), 0) AS top FROM {table}")
    return int(rows[0]["top"]) if rows else 0
