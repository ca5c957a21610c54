"""When each agent's next memory job is due, as its check-ins say: a sleeping agent is woken
for it, so its memory jobs run on time without traffic. Kept in state.db, so an orchestrator
restart still wakes a sleeping agent on time."""

from __future__ import annotations

import threading
from datetime import datetime

from orchestrator.state.db import Database

SCHEMA = """
CREATE TABLE IF NOT EXISTS memory_due (
    agent TEXT PRIMARY KEY,
    due_at TEXT NOT NULL
);
"""


class MemoryDue:
    def __init__(self, db: Database) -> None:
        self._db = db
        db.ensure_schema(SCHEMA)
        self._lock = threading.Lock()
        self._known: dict[str, datetime | None] = {
            str(row["agent"]): datetime.fromisoformat(str(row["due_at"]))
            for row in db.query("SELECT agent, due_at FROM memory_due")
        }

    def note(self, agent: str, due_at: datetime | None) -> None:
        """The agent's latest word on its next due job (None: none scheduled)."""
        with self._lock:
            if self._known.get(agent) == due_at:
                return
            self._known[agent] = due_at
        if due_at is None:
            self._db.execute("DELETE FROM memory_due WHERE agent = ?", (agent,))
        else:
            self._db.execute(
                "INSERT INTO memory_due(agent, due_at) VALUES (?, ?) "
                "ON CONFLICT(agent) DO UPDATE SET due_at = excluded.due_at",
                (agent, due_at.isoformat()),
            )

    def due_at(self, agent: str) -> datetime | None:
        with self._lock:
            return self._known.get(agent)
