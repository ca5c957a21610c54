"""Each agent's actual state as the engine last reported it, and since when, kept beside its
desired state in the lifecycle's table: written when a transition succeeds and whenever the
fleet manager lists the units (the supervisor's passes, an apply, a read of the fleet).

It is a record for people and for the next start, not a cache for decisions: a policy that acts
on a unit reads the engine first (see docs/architecture.md)."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Collection, Iterable, Mapping
from datetime import datetime

from orchestrator.backends.base import UnitInfo
from orchestrator.lifecycle.machine import AgentState, state_of
from orchestrator.lifecycle.table import SCHEMA
from orchestrator.state.db import Database

log = logging.getLogger(__name__)

# Under SQLite's smallest limit on the parameters of one statement.
_ROWS_PER_QUERY = 500
_RANK = {AgentState.ABSENT: 0, AgentState.STOPPED: 1, AgentState.RUNNING: 2}


def reported(units: Iterable[UnitInfo], agents: Collection[str]) -> dict[str, AgentState]:
    """Each agent's state in what the engine listed: `absent` for each of `agents` without a
    unit; of an agent with several units, the most alive one."""
    states = dict.fromkeys(agents, AgentState.ABSENT)
    for unit in units:
        state = state_of(unit)
        if _RANK[state] >= _RANK[states.get(unit.agent, AgentState.ABSENT)]:
            states[unit.agent] = state
    return states


class ActualStates:
    def __init__(self, db: Database) -> None:
        self._db = db
        db.ensure_schema(SCHEMA)

    def of(self, agent: str) -> tuple[AgentState, datetime] | None:
        """`agent`'s state as the engine last reported it, and since when; None before any report."""
        row = self._db.query_one(
            "SELECT actual, actual_since FROM agent_lifecycle WHERE agent = ? AND actual IS NOT NULL",
            (agent,),
        )
        if row is None:
            return None
        return AgentState(row["actual"]), datetime.fromisoformat(row["actual_since"])

    def _known(self, agents: list[str]) -> dict[str, str]:
        """The recorded state of each of `agents` that has one: only their rows are read, as a
        supervisor's pass lists the awake agents alone."""
        known: dict[str, str] = {}
        for start in range(0, len(agents), _ROWS_PER_QUERY):
            chunk = agents[start : start + _ROWS_PER_QUERY]
            marks = ", ".join("?" for _ in chunk)
            rows = self._db.query(
                f"SELECT agent, actual FROM agent_lifecycle WHERE actual IS NOT NULL AND agent IN ({marks})",
                tuple(chunk),
            )
            known.update((str(row["agent"]), str(row["actual"])) for row in rows)
        return known

    def record(self, states: Mapping[str, AgentState], at: datetime) -> None:
        """Note what the engine reported at `at`; only a changed state is written, with `at` as
        the moment it changed."""
        known = self._known(list(states))
        changed = [
            (agent, state.value, at.isoformat())
            for agent, state in states.items()
            if known.get(agent) != state
        ]
        if not changed:
            return
        try:
            with self._db.transaction() as conn:
                conn.executemany(
                    "INSERT INTO agent_lifecycle(agent, actual, actual_since) VALUES (?, ?, ?)"
                    " ON CONFLICT(agent) DO UPDATE SET actual = excluded.actual,"
                    " actual_since = excluded.actual_since",
                    changed,
                )
        except sqlite3.Error as failed:
            # A record of what was seen must not stop the policy that saw it (a full disk, a
            # busy database); the next listing compares with the table and writes it again.
            log.warning("could not record the engine's states of %s: %s", sorted(states), failed)
