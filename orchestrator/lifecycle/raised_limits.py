"""The CPU limits raised for a woken unit's start, kept until they are put back: part of each
agent's lifecycle state, so that an orchestrator that died with a limit raised puts it back when
it starts again (the wake boost policy, `orchestrator.scheduler.wake_boost`, raises them)."""

from __future__ import annotations

from orchestrator.state.db import Database

SCHEMA = """
CREATE TABLE IF NOT EXISTS wake_boosts (
    unit_id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    cpus REAL NOT NULL
);
"""


class RaisedLimits:
    def __init__(self, db: Database) -> None:
        self._db = db
        db.ensure_schema(SCHEMA)

    def record(self, unit_id: str, agent: str, own_cpus: float) -> None:
        """Note, before raising it, the limit of `agent`'s unit to put back."""
        self._db.execute(
            "INSERT OR REPLACE INTO wake_boosts(unit_id, agent, cpus) VALUES (?, ?, ?)",
            (unit_id, agent, own_cpus),
        )

    def own_limit(self, unit_id: str) -> tuple[str, float] | None:
        """The agent of a raised unit and the limit to put back; None when it is not raised."""
        row = self._db.query_one("SELECT agent, cpus FROM wake_boosts WHERE unit_id = ?", (unit_id,))
        return None if row is None else (str(row["agent"]), float(row["cpus"]))

    def units(self) -> list[str]:
        """Every unit whose limit is still raised."""
        return [str(row["unit_id"]) for row in self._db.query("SELECT unit_id FROM wake_boosts")]

    def forget(self, unit_id: str) -> None:
        self._db.execute("DELETE FROM wake_boosts WHERE unit_id = ?", (unit_id,))
