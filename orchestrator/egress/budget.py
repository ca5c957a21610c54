"""The agent's daily request budget, counted from its `http.requested` events of the UTC day
and the requests that went out before a refused redirect (so an orchestrator restart forgets
nothing), plus the requests still in flight."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime

from orchestrator.egress.records import HTTP_REFUSED, HTTP_REQUESTED
from orchestrator.state.db import Database

_in_flight: Counter[str] = Counter()
_lock = threading.Lock()


class BudgetSpent(Exception):
    pass


def sent_today(db: Database, agent: str) -> int:
    midnight = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0).isoformat()
    row = db.query_one(
        "SELECT COALESCE(SUM(COALESCE(json_extract(data, '$.sent'), type = ?)), 0) AS n "
        "FROM events WHERE agent = ? AND type IN (?, ?) AND at >= ?",
        (HTTP_REQUESTED, agent, HTTP_REQUESTED, HTTP_REFUSED, midnight),
    )
    return int(row["n"]) if row else 0


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
