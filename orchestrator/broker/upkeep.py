"""Keeping the inbox table small and clean: retention of finished items, and rewriting what
items say when a fact is forgotten."""

from __future__ import annotations

from datetime import datetime

from orchestrator.broker.items import FINISHED_STATES, ROW_BYTES_SQL
from orchestrator.state.db import Database, TextRewrite, rewrite_agent_texts


def prune_finished(db: Database, before: datetime, size_per_agent: int) -> int:
    """Drop finished items older than `before`, then each agent's oldest past `size_per_agent`
    bytes of finished items. Unfinished items and dead letters stay. The number dropped."""
    states = ", ".join(f"'{state}'" for state in FINISHED_STATES)
    with db.transaction() as conn:
        aged = conn.execute(
            f"DELETE FROM inbox WHERE state IN ({states}) AND COALESCE(finished_at, created_at) < ?",
            (before.isoformat(),),
        ).rowcount
        sized = conn.execute(
            f"DELETE FROM inbox WHERE id IN (SELECT id FROM (SELECT id, SUM({ROW_BYTES_SQL}) OVER"
            " (PARTITION BY agent ORDER BY COALESCE(finished_at, created_at) DESC, id"
            f" ROWS UNBOUNDED PRECEDING) AS kept FROM inbox WHERE state IN ({states})) WHERE kept > ?)",
            (size_per_agent,),
        ).rowcount
    return int(aged) + int(sized)


def rewrite_texts(db: Database, agent: str, probe: str, rewrite: TextRewrite) -> int:
    """Rewrite what the agent's items and results say (a forgotten fact leaves them)."""
    return rewrite_agent_texts(db, "inbox", ("text", "input", "result"), agent, probe, rewrite)
