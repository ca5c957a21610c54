"""The operator's hold on agents, kept across orchestrator restarts.

- stopped: the agent's unit is stopped and stays so; the supervisor and `apply` leave it down
  until `flotilla start`.
- paused: the unit keeps running and checking in, but is handed no inbox item, allowed no model
  call and given no heartbeat tick; its inbox keeps what arrives. Pausing the whole fleet
  (`flotilla pause --all`) is the kill switch for spend.

Reads come from memory (the inbox and the gateway ask on every claim and call); writes go to
SQLite first. Owns the table `agent_controls`.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Literal

from agent_runtime.protocol import utcnow
from orchestrator.state.db import Database

SCHEMA = """
CREATE TABLE IF NOT EXISTS agent_controls (
    agent TEXT PRIMARY KEY,
    hold TEXT NOT NULL CHECK (hold IN ('stopped', 'paused')),
    since TEXT NOT NULL
);
"""
Hold = Literal["stopped", "paused"]
WHOLE_FLEET = "*"
"""The row that pauses every agent (agent names are DNS labels, never `*`)."""


class Controls:
    def __init__(self, db: Database) -> None:
        self._db = db
        db.ensure_schema(SCHEMA)
        self._lock = threading.Lock()
        rows = db.query("SELECT agent, hold FROM agent_controls")
        self._holds: dict[str, Hold] = {row["agent"]: row["hold"] for row in rows}

    def hold_of(self, agent: str) -> Hold | None:
        """The agent's own hold, or `paused` when the whole fleet is."""
        with self._lock:
            own = self._holds.get(agent)
            return own or ("paused" if self._holds.get(WHOLE_FLEET) == "paused" else None)

    def own_hold(self, agent: str) -> Hold | None:
        """The agent's own hold, whatever the fleet's."""
        with self._lock:
            return self._holds.get(agent)

    def is_paused(self, agent: str) -> bool:
        return self.hold_of(agent) == "paused"

    def is_held(self, agent: str) -> bool:
        return self.hold_of(agent) is not None

    def stopped(self) -> frozenset[str]:
        with self._lock:
            return frozenset(agent for agent, hold in self._holds.items() if hold == "stopped")

    @property
    def fleet_paused(self) -> bool:
        with self._lock:
            return self._holds.get(WHOLE_FLEET) == "paused"

    def set(self, agent: str, hold: Hold | None) -> None:
        """Hold an agent (or, with WHOLE_FLEET, pause them all); None releases it."""
        if hold is None:
            self._db.execute("DELETE FROM agent_controls WHERE agent = ?", (agent,))
        else:
            self._db.execute(
                "INSERT INTO agent_controls(agent, hold, since) VALUES (?, ?, ?) "
                "ON CONFLICT(agent) DO UPDATE SET hold = excluded.hold, since = excluded.since",
                (agent, hold, utcnow().isoformat()),
            )
        with self._lock:
            if hold is None:
                self._holds.pop(agent, None)
            else:
                self._holds[agent] = hold


def stopped_in_file(db_path: Path) -> frozenset[str]:
    """The agents held stopped in a fleet's state.db, read without opening it for writing (for
    `flotilla doctor`, with or without a running orchestrator); none when it has no holds."""
    import sqlite3

    try:
        conn = sqlite3.connect(f"{db_path.as_uri()}?mode=ro", uri=True, timeout=10)
    except sqlite3.Error:
        return frozenset()
    try:
        rows = conn.execute("SELECT agent FROM agent_controls WHERE hold = 'stopped'").fetchall()
    except sqlite3.Error:
        return frozenset()
    finally:
        conn.close()
    return frozenset(str(row[0]) for row in rows)
