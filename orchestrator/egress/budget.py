"""The agent's daily request budget: the requests that went out on the UTC day (redirects
followed included), counted in a table of their own, plus the requests still in flight.

A table rather than the events: an orchestrator restart forgets nothing, and neither the
retention of events nor a flood of the agent's own events can give the agent its budget back.
Owns the table `http_request_days`.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime

from orchestrator.state.db import Database

SCHEMA = """
CREATE TABLE IF NOT EXISTS http_request_days (
    agent TEXT NOT NULL,
    day TEXT NOT NULL,
    requests INTEGER NOT NULL,
    PRIMARY KEY (agent, day)
);
"""

_in_flight: Counter[str] = Counter()
_lock = threading.Lock()


class BudgetSpent(Exception):
    pass


def _today() -> str:
    return datetime.now(UTC).date().isoformat()


def sent_today(db: Database, agent: str) -> int:
    """Requests that went out for `agent` since midnight UTC."""
    db.ensure_schema(SCHEMA)
    row = db.query_one(
        "SELECT requests FROM http_request_days WHERE agent = ? AND day = ?", (agent, _today())
    )
    return int(row["requests"]) if row else 0


def record_sent(db: Database, agent: str, requests: int) -> None:
    """`requests` more went out today for `agent` (one, plus each redirect followed)."""
    if requests <= 0:
        return
    db.ensure_schema(SCHEMA)
    db.execute(
        "INSERT INTO http_request_days (agent, day, requests) VALUES (?, ?, ?) "
        "ON CONFLICT (agent, day) DO UPDATE SET requests = requests + excluded.requests",
        (agent, _today(), requests),
    )


@asynccontextmanager
async def spending(db: Database, agent: str, per_day: int) -> AsyncIterator[None]:
    """Holds one request of the budget while it runs; BudgetSpent when none is left today."""
    with _lock:
        used = sent_today(db, agent) + _in_flight[agent]
        if used >= per_day:
            raise BudgetSpent(
                f"tools.http.requests_per_day: {per_day} requests a day are allowed and {used} "
                "were made today (UTC)"
            )
        _in_flight[agent] += 1
    try:
        yield
    finally:
        _in_flight[agent] -= 1
