"""Each agent's desired state, kept in the lifecycle's table (`orchestrator.lifecycle.table`):
awake, or asleep until work arrives (the hibernation and admission policies move it;
fleet.yaml's `always_on` keeps it awake), and the operator's hold on it, stopped or paused
(`orchestrator.lifecycle.holds` keeps it in memory).

What the engine runs is the actual state (`orchestrator.lifecycle.machine.state_of`, recorded by
`orchestrator.lifecycle.actual`); the fleet reads both through this package."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Literal

from orchestrator.lifecycle.table import SCHEMA
from orchestrator.state.db import Database

Desired = Literal["awake", "asleep"]
Hold = Literal["stopped", "paused"]


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

    def holds(self) -> dict[str, Hold]:
        """Every hold the operator placed, by agent (or by the whole fleet's row)."""
        rows = self._db.query("SELECT agent, hold FROM agent_lifecycle WHERE hold IS NOT NULL")
        return {str(row["agent"]): "stopped" if row["hold"] == "stopped" else "paused" for row in rows}

    def set_hold(self, agent: str, hold: Hold | None, at: datetime) -> None:
        """Place the operator's hold on `agent`; None lifts it."""
        if hold is None:
            self._db.execute(
                "UPDATE agent_lifecycle SET hold = NULL, hold_since = NULL WHERE agent = ?", (agent,)
            )
            return
        self._db.execute(
            "INSERT INTO agent_lifecycle(agent, hold, hold_since) VALUES (?, ?, ?)"
            " ON CONFLICT(agent) DO UPDATE SET hold = excluded.hold, hold_since = excluded.hold_since",
            (agent, hold, at.isoformat()),
        )


def stopped_in_file(db_path: Path) -> frozenset[str]:
    """The agents held stopped in a fleet's state.db, read without opening it for writing (for
    `flotilla doctor`, with or without a running orchestrator); none when it has no holds."""
    try:
        conn = sqlite3.connect(f"{db_path.as_uri()}?mode=ro", uri=True, timeout=10)
    except sqlite3.Error:
        return frozenset()
    try:
        return _stopped_agents(conn)
    finally:
        conn.close()


def _stopped_agents(conn: sqlite3.Connection) -> frozenset[str]:
    # A state.db that no orchestrator of this version opened yet keeps its holds in the table
    # that migration 8 folds into the lifecycle's.
    for query in (
        "SELECT agent FROM agent_lifecycle WHERE hold = 'stopped'",
        "SELECT agent FROM agent_controls WHERE hold = 'stopped'",
    ):
        try:
            return frozenset(str(row[0]) for row in conn.execute(query).fetchall())
        except sqlite3.Error:
            continue
    return frozenset()
