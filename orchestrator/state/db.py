"""One SQLite database in WAL mode, shared by the orchestrator's subsystems.

Each subsystem owns its tables and declares them with `Database.ensure_schema`. Writes are
serialized by one lock so that a check-and-charge (budgets) or a claim (inbox) is atomic.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
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
        # What is masked, pruned or forgotten is overwritten, not left in free pages (some builds
        # default to this, not all).
        self._conn.execute("PRAGMA secure_delete=ON")
        self._schemas: set[str] = set()
        self.damage: str | None = None
        """What SQLite said when a request met damage in this file while running (None: none seen)."""

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

    def truncate_wal(self) -> bool:
        """Copy the WAL into the database and empty it (old page images leave the disk with it);
        False when a reader held it back (a later checkpoint does it)."""
        try:
            with self._lock:
                busy = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        except sqlite3.Error:
            return False
        return not busy

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


TextRewrite = Callable[[str], str]


def rewrite_agent_texts(
    db: Database,
    table: str,
    columns: Sequence[str],
    agent: str,
    probe: str,
    rewrite: TextRewrite,
    *,
    kinds: tuple[str, Sequence[str]] | None = None,
) -> int:
    """Apply `rewrite` to these text columns of the agent's rows holding `probe` (a word, case
    folded as LIKE does); for the table's owner, which names its own table. `kinds` (a column
    and its values) keeps to those rows. Rows changed."""
    like = " OR ".join(f"{column} LIKE ?" for column in columns)
    where, params = f"agent = ? AND ({like})", [agent, *([f"%{probe}%"] * len(columns))]
    if kinds is not None:
        column, values = kinds
        where += f" AND {column} IN ({', '.join('?' * len(values))})"
        params += list(values)
    rows = safe_query(db, f"SELECT rowid AS row_id, {', '.join(columns)} FROM {table} WHERE {where}", params)
    changed = 0
    with db.transaction() as conn:
        for row in rows:
            updates = {}
            for column in columns:
                if row[column] is None:
                    continue
                new = rewrite(str(row[column]))
                if new != str(row[column]):
                    updates[column] = new
            if updates:
                assignments = ", ".join(f"{column} = ?" for column in updates)
                conn.execute(
                    f"UPDATE {table} SET {assignments} WHERE rowid = ?", [*updates.values(), row["row_id"]]
                )
                changed += 1
    return changed
