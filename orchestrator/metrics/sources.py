"""Running totals over other subsystems' tables, advanced incrementally between scrapes.

The usage ledger, the run records and the event log only grow (ledger rows change once, from
'reserved' to their final status). Each reader keeps totals up to a row id it has fully
counted and, on each scrape, reads only the rows after it, so a scrape costs the rows written
since the previous one rather than the whole history. A table or column that does not exist
(yet) reads as empty: the subsystem owning it may not be running.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from orchestrator.state.db import Database


def columns_of(db: Database, table: str) -> set[str]:
    """The table's column names; empty when it does not exist."""
    try:
        rows = db.query(f"PRAGMA table_info({table})")
    except sqlite3.Error:
        return set()
    return {str(row["name"]) for row in rows}


def safe_query(db: Database, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
    try:
        return db.query(sql, list(params))
    except sqlite3.OperationalError:
        return []


def _max_id(db: Database, table: str, key: str) -> int:
    rows = safe_query(db, f"SELECT COALESCE(MAX({key}), 0) AS top FROM {table}")
    return int(rows[0]["top"]) if rows else 0


# ------------------------------------------------------------------------------ usage ledger

LEDGER_COLUMNS = frozenset({"id", "agent", "status", "tokens_in", "tokens_out", "cost_usd"})


@dataclass
class UsageTotals:
    """Per agent: tokens in/out/cached and dollars of settled calls; calls by (agent, status)."""

    tokens: dict[str, Counter[str]] = field(default_factory=dict)
    cost: dict[str, float] = field(default_factory=dict)
    calls: Counter[tuple[str, str]] = field(default_factory=Counter)

    def copy(self) -> UsageTotals:
        return UsageTotals(
            {a: Counter(t) for a, t in self.tokens.items()}, dict(self.cost), Counter(self.calls)
        )


class LedgerReader:
    """Totals of the gateway's `gateway_usage` table. Reserved (in-flight) calls add no tokens."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._settled_upto = 0
        self._totals = UsageTotals()

    def read(self, db: Database) -> UsageTotals:
        cols = columns_of(db, "gateway_usage")
        if not cols >= LEDGER_COLUMNS:
            return UsageTotals()
        cached = "SUM(cached_tokens)" if "cached_tokens" in cols else "0"
        with self._lock:
            top = _max_id(db, "gateway_usage", "id")
            # Rows up to the first one still reserved are final: fold them into the totals.
            first_open = safe_query(
                db,
                "SELECT MIN(id) AS id FROM gateway_usage WHERE id > ? AND id <= ? AND status = 'reserved'",
                [self._settled_upto, top],
            )
            open_id = first_open[0]["id"] if first_open else None
            settled = top if open_id is None else int(open_id) - 1
            if settled > self._settled_upto:
                self._add(db, cached, self._settled_upto, settled, self._totals)
                self._settled_upto = settled
            current = self._totals.copy()
            if top > self._settled_upto:
                self._add(db, cached, self._settled_upto, top, current)
            return current

    @staticmethod
    def _add(db: Database, cached: str, low: int, high: int, into: UsageTotals) -> None:
        for row in safe_query(
            db,
            f"SELECT agent, status, COUNT(*) AS n, SUM(tokens_in) AS t_in, SUM(tokens_out) AS t_out, "
            f"{cached} AS t_cached, SUM(cost_usd) AS cost FROM gateway_usage "
            "WHERE id > ? AND id <= ? GROUP BY agent, status",
            [low, high],
        ):
            agent, status = str(row["agent"]), str(row["status"])
            into.calls[(agent, status)] += int(row["n"])
            if status == "reserved":
                continue
            tokens = into.tokens.setdefault(agent, Counter())
            tokens["in"] += int(row["t_in"] or 0)
            tokens["out"] += int(row["t_out"] or 0)
            tokens["cached"] += int(row["t_cached"] or 0)
            into.cost[agent] = into.cost.get(agent, 0.0) + float(row["cost"] or 0.0)


# ------------------------------------------------------------------------------ run records

RunKey = tuple[str, str, str, str]  # agent, kind, trigger, outcome


class RunReader:
    """Counts of the scheduler's `runs` table by (agent, kind, trigger, outcome)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._upto = 0
        self._counts: Counter[RunKey] = Counter()

    def read(self, db: Database) -> tuple[Counter[RunKey], bool]:
        """The counts, and whether the table tells ticks from turns (a `kind` column)."""
        cols = columns_of(db, "runs")
        if not {"agent", "seq"} <= cols:
            return Counter(), False
        select = ", ".join(key if key in cols else "''" for key in ("kind", "trigger", "outcome"))
        with self._lock:
            top = _max_id(db, "runs", "seq")
            for row in safe_query(
                db,
                f"SELECT agent, {select}, COUNT(*) AS n FROM runs WHERE seq > ? AND seq <= ? "
                "GROUP BY 1, 2, 3, 4",
                [self._upto, top],
            ):
                key = (str(row[0]), str(row[1] or ""), str(row[2] or ""), str(row[3] or ""))
                self._counts[key] += int(row["n"])
            self._upto = max(self._upto, top)
            return Counter(self._counts), "kind" in cols


# ------------------------------------------------------------------------------ event log


class EventReader:
    """Counts of selected event types in the `events` table by (agent, type)."""

    def __init__(self, types: Iterable[str]) -> None:
        self._types = sorted(set(types))
        self._lock = threading.Lock()
        self._upto = 0
        self._counts: Counter[tuple[str, str]] = Counter()

    def read(self, db: Database) -> Counter[tuple[str, str]]:
        marks = ", ".join("?" for _ in self._types)
        with self._lock:
            top = _max_id(db, "events", "seq")
            for row in safe_query(
                db,
                "SELECT agent, type, COUNT(*) AS n FROM events WHERE seq > ? AND seq <= ? "
                f"AND type IN ({marks}) AND agent IS NOT NULL GROUP BY agent, type",
                [self._upto, top, *self._types],
            ):
                self._counts[(str(row["agent"]), str(row["type"]))] += int(row["n"])
            self._upto = max(self._upto, top)
            return Counter(self._counts)


def queue_depths(db: Database) -> Counter[tuple[str, str]]:
    """Inbox items waiting, being worked on or dead-lettered, by (agent, state)."""
    depths: Counter[tuple[str, str]] = Counter()
    if not {"agent", "state"} <= columns_of(db, "inbox"):
        return depths
    for row in safe_query(
        db,
        "SELECT agent, state, COUNT(*) AS n FROM inbox WHERE state IN ('queued', 'claimed', 'dead')"
        " GROUP BY agent, state",
    ):
        depths[(str(row["agent"]), str(row["state"]))] = int(row["n"])
    return depths
