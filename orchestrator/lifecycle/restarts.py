"""How often the supervisor restarted each agent, why last and when: part of the agent's
lifecycle state, kept in the lifecycle's table so that it survives orchestrator restarts."""

from __future__ import annotations

from datetime import datetime

from orchestrator.lifecycle.table import SCHEMA
from orchestrator.state.db import Database


class Restarts:
    def __init__(self, db: Database) -> None:
        self._db = db
        db.ensure_schema(SCHEMA)

    def all(self) -> dict[str, int]:
        """Restarts of every agent restarted at least once, in one query."""
        rows = self._db.query("SELECT agent, restarts FROM agent_lifecycle WHERE restarts > 0")
        return {str(row["agent"]): int(row["restarts"]) for row in rows}

    def of(self, agent: str) -> int:
        row = self._db.query_one("SELECT restarts FROM agent_lifecycle WHERE agent = ?", (agent,))
        return int(row["restarts"]) if row else 0

    def record(self, agent: str, reason: str, at: datetime) -> None:
        """One more restart of `agent`, for `reason`."""
        self._db.execute(
            "INSERT INTO agent_lifecycle(agent, restarts, restart_reason, restarted_at) VALUES (?, 1, ?, ?)"
            " ON CONFLICT(agent) DO UPDATE SET restarts = restarts + 1,"
            " restart_reason = excluded.restart_reason, restarted_at = excluded.restarted_at",
            (agent, reason, at.isoformat()),
        )
