"""The agent's daily request budget, counted from its recorded requests of the UTC day (the
`sent` of its `http.requested` and `http.refused` events), so that an orchestrator restart
forgets nothing, plus the requests still in flight.

The first count of a day reads the agent's events once; later ones read only the events since
the previous count (the events table is indexed by agent and sequence number).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

from orchestrator.egress.records import HTTP_REFUSED, HTTP_REQUESTED
from orchestrator.state.db import Database

_in_flight: Counter[str] = Counter()
_lock = threading.Lock()


@dataclass
class _Tally:
    day: str
    upto: int = 0
    used: int = 0


_tallies: dict[tuple[str, str], _Tally] = {}


class BudgetSpent(Exception):
    pass


def sent_today(db: Database, agent: str) -> int:
    """Requests sent for `agent` since midnight UTC (call under `_lock`)."""
    midnight = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0).isoformat()
    key = (str(db.path), agent)
    tally = _tallies.get(key)
    if tally is None or tally.day != midnight:
        tally = _tallies[key] = _Tally(midnight)
    row = db.query_one(
        "SELECT COALESCE(SUM(COALESCE(json_extract(data, '$.sent'), type = ?)), 0) AS n, "
        "COALESCE(MAX(seq), ?) AS top FROM events "
        "WHERE agent = ? AND seq > ? AND type IN (?, ?) AND at >= ?",
        (HTTP_REQUESTED, tally.upto, agent, tally.upto, HTTP_REQUESTED, HTTP_REFUSED, midnight),
    )
    if row is not None:
        tally.used += int(row["n"])
        tally.upto = int(row["top"])
    return tally.used


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
