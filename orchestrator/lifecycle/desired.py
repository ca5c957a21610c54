"""Each agent's desired state, kept in one table: awake, or asleep until work arrives (the
hibernation and admission policies move it; fleet.yaml's `always_on` keeps it awake).

What the engine runs is the actual state (`orchestrator.lifecycle.machine.state_of`); the fleet
reads both through this package."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from orchestrator.state.db import Database

Desired = Literal["awake", "asleep"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS agent_lifecycle (
    agent TEXT PRIMARY KEY,
    desired TEXT NOT NULL DEFAULT 'awake' CHECK (desired IN ('awake', 'asleep')),
    desired_since TEXT
);
"""


class DesiredStates:
    def __init__(self, db: Database) -> None:
        self._db = db
        db.ensure_schema(SCHEMA)

    def asleep(self) -> frozenset[str]:
        """Every agent whose desired state is asleep."""
        rows = self._db.query("SELECT agent FROM agent_lifecycle WHERE desired = 'asleep'")
        return frozenset(str(row["agent"]) for row in rows)

    def awake_since(self) -> dict[str, datetime]:
        """When each agent that was woken last woke: its idle time counts from then at the
        earliest, whatever its last activity."""
        rows = self._db.query(
            "SELECT agent, desired_since FROM agent_lifecycle WHERE desired = 'awake' AND desired_since IS NOT NULL"
        )
        return {str(row["agent"]): datetime.fromisoformat(row["desired_since"]) for row in rows}

    def is_asleep(self, agent: str) -> bool:
        return self.of(agent)[0] == "asleep"

    def of(self, agent: str) -> tuple[Desired, datetime | None]:
        """`agent`'s desired state and since when (awake, since never, for an agent not seen)."""
        row = self._db.query_one(
            "SELECT desired, desired_since FROM agent_lifecycle WHERE agent = ?", (agent,)
        )
        if row is None:
            return "awake", None
        since = row["desired_since"]
        return ("asleep" if row["desired"] == "asleep" else "awake"), (
            datetime.fromisoformat(since) if since is not None else None
        )

    def set(self, agent: str, desired: Desired, at: datetime) -> bool:
        """Make `agent`'s desired state `desired`; True only for the caller that changed it, so
        of two policies asking at once exactly one acts."""
        if desired == "asleep":
            cursor = self._db.execute(
                "INSERT INTO agent_lifecycle(agent, desired, desired_since) VALUES (?, 'asleep', ?)"
                " ON CONFLICT(agent) DO UPDATE SET desired = 'asleep', desired_since = excluded.desired_since"
                " WHERE desired = 'awake'",
                (agent, at.isoformat()),
            )
        else:
            cursor = self._db.execute(
                "UPDATE agent_lifecycle SET desired = 'awake', desired_since = ?"
                " WHERE agent = ? AND desired = 'asleep'",
                (at.isoformat(), agent),
            )
        return cursor.rowcount == 1
