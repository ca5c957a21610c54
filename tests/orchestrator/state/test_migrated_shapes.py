"""A migration creates a table with its own copy of the shape (state imports nothing above it);
that copy and the owner's schema of today must give the same table, or the owner's change
needs a migration of its own."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from orchestrator.control.auth import SCHEMA as PRINCIPAL_TOKENS
from orchestrator.gateway.settled_answers import SCHEMA as SETTLED_ANSWERS
from orchestrator.lifecycle.table import SCHEMA as AGENT_LIFECYCLE
from orchestrator.scheduler.store import SCHEMA as HEARTBEATS
from orchestrator.state.migrations import migrate_state

CREATED_BY_MIGRATIONS = (
    "principal_tokens",
    "gateway_settled_answers",
    "gateway_settled_answers_at",
    "agent_lifecycle",
    "heartbeat_state",
)

# The scheduler's table as version 7 left it, with the hibernated flag that migration 8 moves.
_HEARTBEAT_STATE_V7 = """
CREATE TABLE heartbeat_state (
    agent TEXT PRIMARY KEY,
    cadence TEXT,
    next_run TEXT,
    last_tick TEXT,
    last_activity TEXT NOT NULL,
    hibernated INTEGER NOT NULL DEFAULT 0,
    hibernated_at TEXT,
    runs_seq INTEGER NOT NULL DEFAULT 0,
    scanned_wall REAL,
    rules_digest TEXT NOT NULL DEFAULT ''
);
"""


def _shapes(conn: sqlite3.Connection) -> dict[str, str]:
    names = ", ".join("?" for _ in CREATED_BY_MIGRATIONS)
    rows = conn.execute(f"SELECT name, sql FROM sqlite_master WHERE name IN ({names})", CREATED_BY_MIGRATIONS)
    return {name: " ".join(sql.split()) for name, sql in rows}


def test_migrated_tables_have_the_shape_their_owners_create(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    with sqlite3.connect(db) as conn:
        # Release 0.1.0's token table and ledger: what the migrations start from.
        conn.execute("CREATE TABLE tokens (principal TEXT PRIMARY KEY, digest TEXT NOT NULL)")
        conn.execute("INSERT INTO tokens VALUES ('operator', 'a'), ('writer', 'b')")
        conn.execute("CREATE TABLE gateway_usage (id INTEGER PRIMARY KEY)")
        conn.executescript(_HEARTBEAT_STATE_V7)
    conn.close()
    migrate_state(db, tmp_path / "backups")
    migrated = sqlite3.connect(db)
    fresh = sqlite3.connect(":memory:")
    try:
        fresh.executescript(PRINCIPAL_TOKENS + SETTLED_ANSWERS + AGENT_LIFECYCLE + HEARTBEATS)
        assert _shapes(migrated) == _shapes(fresh)
        assert len(_shapes(migrated)) == len(CREATED_BY_MIGRATIONS)
        tokens = migrated.execute("SELECT kind, name FROM principal_tokens ORDER BY name").fetchall()
        assert tokens == [("operator", "operator"), ("agent", "writer")]
    finally:
        migrated.close()
        fresh.close()
