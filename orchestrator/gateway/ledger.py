"""The usage ledger: one SQLite row per model call, which is also the budget state.

A call is first written as a `reserved` row carrying its estimated tokens and cost (so that
concurrent calls see each other), then settled with the provider's figures. Spend in a
window is the sum over the rows of that window, reserved ones included; restarting the
orchestrator therefore loses nothing.

Budget checks read a per-day rollup (`gateway_spend_daily`, one row per agent and day plus
one for the whole fleet under the empty name) kept in step with every ledger write in the
same transaction, so a check costs the same with a month of history as with none. The
rollup is derived data: it is rebuilt from the ledger when the gateway starts.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from orchestrator.gateway.models import UsageBucket
from orchestrator.state.db import Database, columns_of, max_id, safe_query

SCHEMA = """
CREATE TABLE IF NOT EXISTS gateway_usage (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    agent TEXT NOT NULL,
    kind TEXT NOT NULL,
    requested_model TEXT NOT NULL,
    model TEXT NOT NULL,
    provider TEXT NOT NULL,
    tokens_in INTEGER NOT NULL DEFAULT 0,
    tokens_out INTEGER NOT NULL DEFAULT 0,
    cached_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    latency_ms INTEGER,
    status TEXT NOT NULL,
    estimated INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    run_id TEXT
);
CREATE INDEX IF NOT EXISTS gateway_usage_agent_at ON gateway_usage(agent, at);
CREATE INDEX IF NOT EXISTS gateway_usage_at ON gateway_usage(at);
CREATE TABLE IF NOT EXISTS gateway_spend_daily (
    subject TEXT NOT NULL,
    day TEXT NOT NULL,
    usd REAL NOT NULL DEFAULT 0,
    tokens INTEGER NOT NULL DEFAULT 0,
    calls INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (subject, day)
);
-- The fleet view reads one day for every agent at once.
CREATE INDEX IF NOT EXISTS gateway_spend_by_day ON gateway_spend_daily(day);
"""
# Columns added after the first release, with their definitions (added to older databases).
ADDED_COLUMNS = {"run_id": "TEXT", "payer": "TEXT"}
RUN_INDEX = "CREATE INDEX IF NOT EXISTS gateway_usage_run ON gateway_usage(agent, run_id)"
FLEET_SUBJECT = ""  # agent names are DNS labels, never empty
# Who asks pays: a call made for a peer's item is charged to the peer (its payer), not to the
# agent that made it. The daily rollup keeps, besides each agent's own spend, what each payer
# paid for work done in other agents (`paid:NAME`) and what each agent did for payers
# (`worked:NAME`, shown against it, charged to no budget of its own). Names hold no ':'.
PAID_BY = "paid:"
WORKED_FOR = "worked:"
# Days before the ledger's oldest row were rolled up and their calls pruned: their totals stay.
_REBUILD_ROLLUP = """
DELETE FROM gateway_spend_daily
    WHERE day >= (SELECT COALESCE(MIN(substr(at, 1, 10)), '9999') FROM gateway_usage);
INSERT INTO gateway_spend_daily(subject, day, usd, tokens, calls)
    SELECT agent, substr(at, 1, 10), SUM(cost_usd), SUM(tokens_in + tokens_out), COUNT(*)
    FROM gateway_usage WHERE payer IS NULL GROUP BY agent, substr(at, 1, 10);
INSERT INTO gateway_spend_daily(subject, day, usd, tokens, calls)
    SELECT 'paid:' || payer, substr(at, 1, 10), SUM(cost_usd), SUM(tokens_in + tokens_out), COUNT(*)
    FROM gateway_usage WHERE payer IS NOT NULL GROUP BY payer, substr(at, 1, 10);
INSERT INTO gateway_spend_daily(subject, day, usd, tokens, calls)
    SELECT 'worked:' || agent, substr(at, 1, 10), SUM(cost_usd), SUM(tokens_in + tokens_out), COUNT(*)
    FROM gateway_usage WHERE payer IS NOT NULL GROUP BY agent, substr(at, 1, 10);
INSERT INTO gateway_spend_daily(subject, day, usd, tokens, calls)
    SELECT '', substr(at, 1, 10), SUM(cost_usd), SUM(tokens_in + tokens_out), COUNT(*)
    FROM gateway_usage GROUP BY substr(at, 1, 10);
"""

CallKind = Literal["chat", "embeddings"]
CallStatus = Literal["reserved", "ok", "error", "interrupted"]


def timestamp(moment: datetime) -> str:
    """Fixed-width UTC text, so that windows are plain string comparisons in SQL."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_timestamp(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


@dataclass(frozen=True)
class Charge:
    """Tokens and dollars of one call, estimated or final."""

    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    cached_tokens: int = 0

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out


@dataclass(frozen=True)
class Spend:
    usd: float = 0.0
    tokens: int = 0
    calls: int = 0


@dataclass(frozen=True)
class RunSpend:
    """The settled calls one agent tagged with one run id."""

    calls: int
    tokens_in: int
    tokens_out: int
    cost_usd: float
    model: str | None  # the model that answered the run's last chat call
    estimated: bool  # some figure was counted by the gateway, not reported by the provider


@dataclass(frozen=True)
class LedgerRow:
    id: int
    at: datetime
    agent: str
    kind: str
    requested_model: str
    model: str
    provider: str
    tokens_in: int
    tokens_out: int
    cached_tokens: int
    cost_usd: float
    latency_ms: int | None
    status: str
    estimated: bool
    error: str | None
    run_id: str | None = None

    @property
    def latency_s(self) -> float:
        return (self.latency_ms or 0) / 1000.0

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> LedgerRow:
        return cls(
            id=row["id"],
            at=parse_timestamp(row["at"]),
            agent=row["agent"],
            kind=row["kind"],
            requested_model=row["requested_model"],
            model=row["model"],
            provider=row["provider"],
            tokens_in=row["tokens_in"],
            tokens_out=row["tokens_out"],
            cached_tokens=row["cached_tokens"],
            cost_usd=row["cost_usd"],
            latency_ms=row["latency_ms"],
            status=row["status"],
            estimated=bool(row["estimated"]),
            error=row["error"],
            run_id=row["run_id"],
        )


def _day(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d")


def _add_spend(
    conn: sqlite3.Connection,
    agent: str,
    day: str,
    usd: float,
    tokens: int,
    calls: int,
    payer: str | None = None,
) -> None:
    own = (agent,) if payer is None else (PAID_BY + payer, WORKED_FOR + agent)
    for subject in (*own, FLEET_SUBJECT):
        conn.execute(
            "INSERT INTO gateway_spend_daily(subject, day, usd, tokens, calls) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT(subject, day) DO UPDATE SET usd = usd + excluded.usd, "
            "tokens = tokens + excluded.tokens, calls = calls + excluded.calls",
            (subject, day, usd, tokens, calls),
        )


class Ledger:
    def __init__(self, db: Database) -> None:
        self._db = db
        db.ensure_schema(SCHEMA)
        ensure_columns(db)

    def recover(self) -> int:
        """At start-up: reservations left by a previous process keep their estimate as their
        charge (status `interrupted`), and the daily rollup is rebuilt from the ledger."""
        with self._db.transaction() as conn:
            cursor = conn.execute(
                "UPDATE gateway_usage SET status = 'interrupted', estimated = 1 WHERE status = 'reserved'"
            )
            for statement in filter(str.strip, _REBUILD_ROLLUP.split(";")):
                conn.execute(statement)
        return cursor.rowcount

    def prune_detail(self, before: datetime) -> int:
        """Drop the per-call rows of whole UTC days before `before`, and before the current month
        (the longest budget window reads only the daily totals, which stay). The number dropped."""
        start = before.astimezone(UTC)
        month = datetime.now(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        cutoff = min(start.replace(hour=0, minute=0, second=0, microsecond=0), month)
        cursor = self._db.execute(
            "DELETE FROM gateway_usage WHERE at < ? AND status != 'reserved'", (timestamp(cutoff),)
        )
        return int(cursor.rowcount)

    @staticmethod
    def spend(
        source: sqlite3.Connection | Database, agent: str | None, start: datetime, end: datetime
    ) -> Spend:
        """Spend of the UTC days from `start` up to `end` (exclusive), for one agent or
        (agent=None) the whole fleet. An agent's spend is what its budget is charged: its own
        calls and the calls peers made for its items, not the calls it made for theirs."""
        subjects = (FLEET_SUBJECT, FLEET_SUBJECT) if agent is None else (agent, PAID_BY + agent)
        return Ledger.spend_of(source, subjects, start, end)

    @staticmethod
    def spend_of(
        source: sqlite3.Connection | Database, subjects: tuple[str, ...], start: datetime, end: datetime
    ) -> Spend:
        """The rollup's spend of these subjects (distinct) over the UTC days from `start` to `end`."""
        subjects = tuple(dict.fromkeys(subjects))
        marks = ", ".join("?" for _ in subjects)
        sql = (
            "SELECT COALESCE(SUM(usd), 0), COALESCE(SUM(tokens), 0), COALESCE(SUM(calls), 0) "
            f"FROM gateway_spend_daily WHERE subject IN ({marks}) AND day >= ? AND day < ?"
        )
        params = (*subjects, _day(start), _day(end))
        if isinstance(source, Database):
            row = source.query_one(sql, params)
        else:
            row = source.execute(sql, params).fetchone()
        assert row is not None  # an aggregate always yields one row
        return Spend(usd=float(row[0]), tokens=int(row[1]), calls=int(row[2]))

    @staticmethod
    def usd_by_agent(db: Database, start: datetime, end: datetime) -> dict[str, float]:
        """Dollars charged to each agent over the UTC days from `start` up to `end` (as `spend`
        counts them), in one query."""
        rows = db.query(
            "SELECT CASE WHEN subject LIKE 'paid:%' THEN substr(subject, 6) ELSE subject END AS who,"
            " COALESCE(SUM(usd), 0) AS usd FROM gateway_spend_daily"
            " WHERE day >= ? AND day < ? AND subject != ? AND subject NOT LIKE 'worked:%' GROUP BY who",
            (_day(start), _day(end), FLEET_SUBJECT),
        )
        return {str(row["who"]): float(row["usd"]) for row in rows}

    @staticmethod
    def reserve(
        conn: sqlite3.Connection,
        *,
        at: datetime,
        agent: str,
        kind: CallKind,
        model: str,
        provider: str,
        estimate: Charge,
        run_id: str | None = None,
        payer: str | None = None,
    ) -> int:
        """Write a reservation inside the caller's transaction; returns the row id. `payer`: the
        peer whose item the call works on, charged instead of `agent`."""
        cursor = conn.execute(
            "INSERT INTO gateway_usage(at, agent, kind, requested_model, model, provider, tokens_in, "
            "tokens_out, cost_usd, status, estimated, run_id, payer) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'reserved', 1, ?, ?)",
            (
                timestamp(at),
                agent,
                kind,
                model,
                model,
                provider,
                estimate.tokens_in,
                estimate.tokens_out,
                estimate.cost_usd,
                run_id,
                payer,
            ),
        )
        _add_spend(conn, agent, _day(at), estimate.cost_usd, estimate.tokens, 1, payer)
        return int(cursor.lastrowid or 0)

    def settle(
        self,
        row_id: int,
        *,
        model: str,
        provider: str,
        charge: Charge,
        status: CallStatus,
        latency_ms: int | None,
        estimated: bool = False,
        error: str | None = None,
        also: Callable[[sqlite3.Connection], None] | None = None,
    ) -> None:
        """Replace a reservation's estimate with the call's real figures; `also` writes what must
        be kept with the settlement (the answer, for a call made again) in the same transaction."""
        with self._db.transaction() as conn:
            before = conn.execute(
                "SELECT at, agent, payer, tokens_in + tokens_out AS tokens, cost_usd FROM gateway_usage"
                " WHERE id = ?",
                (row_id,),
            ).fetchone()
            if before is None:
                return
            conn.execute(
                "UPDATE gateway_usage SET model = ?, provider = ?, tokens_in = ?, tokens_out = ?, "
                "cached_tokens = ?, cost_usd = ?, status = ?, latency_ms = ?, estimated = ?, error = ? "
                "WHERE id = ?",
                (
                    model,
                    provider,
                    charge.tokens_in,
                    charge.tokens_out,
                    charge.cached_tokens,
                    charge.cost_usd,
                    status,
                    latency_ms,
                    int(estimated),
                    error,
                    row_id,
                ),
            )
            usd_delta = charge.cost_usd - before["cost_usd"]
            _add_spend(
                conn,
                before["agent"],
                before["at"][:10],
                usd_delta,
                charge.tokens - before["tokens"],
                0,
                before["payer"],
            )
            if also is not None:
                also(conn)

    def rows(self, agent: str | None = None, limit: int = 100) -> list[LedgerRow]:
        """The most recent calls, newest first."""
        where, params = ("WHERE agent = ?", [agent]) if agent else ("", [])
        found = self._db.query(
            f"SELECT * FROM gateway_usage {where} ORDER BY id DESC LIMIT ?", [*params, limit]
        )
        return [LedgerRow.from_row(row) for row in found]

    def agents(self) -> list[str]:
        return [row["agent"] for row in self._db.query("SELECT DISTINCT agent FROM gateway_usage")]

    def series(
        self, since: datetime, bucket: Literal["hour", "day"], agent: str | None = None
    ) -> list[UsageBucket]:
        """Calls, tokens and dollars per agent and time bucket since a moment, oldest first."""
        width = 13 if bucket == "hour" else 10
        sql = (
            f"SELECT substr(at, 1, {width}) AS slot, agent, COUNT(*) AS calls, SUM(tokens_in) AS tin, "
            "SUM(tokens_out) AS tout, SUM(cost_usd) AS cost FROM gateway_usage WHERE at >= ?"
        )
        params = [timestamp(since)]
        if agent:
            sql += " AND agent = ?"
            params.append(agent)
        sql += " GROUP BY slot, agent ORDER BY slot, agent"
        suffix = ":00:00.000000Z" if bucket == "hour" else "T00:00:00.000000Z"
        return [
            UsageBucket(
                start=parse_timestamp(row["slot"] + suffix),
                agent=row["agent"],
                calls=row["calls"],
                tokens_in=row["tin"],
                tokens_out=row["tout"],
                cost_usd=row["cost"],
            )
            for row in self._db.query(sql, params)
        ]


def ensure_columns(db: Database) -> None:
    """Add the columns a database made by an older version lacks."""
    with db.transaction() as conn:
        present = {row[1] for row in conn.execute("PRAGMA table_info(gateway_usage)")}
        for column, definition in ADDED_COLUMNS.items():
            if column not in present:
                conn.execute(f"ALTER TABLE gateway_usage ADD COLUMN {column} {definition}")
        conn.execute(RUN_INDEX)


def run_spend(db: Database, agent: str, run_id: str) -> RunSpend | None:
    """What the ledger settled for the calls `agent` tagged with `run_id`; None when there are none
    (or when this orchestrator has no gateway, and so no ledger)."""
    if db.query_one("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'gateway_usage'") is None:
        return None
    row = db.query_one(
        "SELECT COUNT(*) AS calls, COALESCE(SUM(tokens_in), 0) AS tin, COALESCE(SUM(tokens_out), 0) AS tout, "
        "COALESCE(SUM(cost_usd), 0) AS cost, COALESCE(MAX(estimated), 0) AS estimated "
        "FROM gateway_usage WHERE agent = ? AND run_id = ?",
        (agent, run_id),
    )
    if row is None or not row["calls"]:
        return None
    last = db.query_one(
        "SELECT model FROM gateway_usage WHERE agent = ? AND run_id = ? AND kind = 'chat' "
        "AND status != 'error' ORDER BY id DESC LIMIT 1",
        (agent, run_id),
    )
    return RunSpend(
        calls=int(row["calls"]),
        tokens_in=int(row["tin"]),
        tokens_out=int(row["tout"]),
        cost_usd=float(row["cost"]),
        model=last["model"] if last is not None else None,
        estimated=bool(row["estimated"]),
    )


# ------------------------------------------------------------------------------ running totals
# Read at scrape time by the metrics: each reader keeps totals up to a row id it has fully
# counted and reads only the rows after it. A table or column that does not exist (yet) reads
# as empty.


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
            top = max_id(db, "gateway_usage", "id")
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


def ledger_top_id(db: Database) -> int:
    """The newest usage row's id (0 for an empty ledger)."""
    row = db.query_one("SELECT COALESCE(MAX(id), 0) AS top FROM gateway_usage")
    return int(row["top"]) if row is not None else 0


def first_reserved_id(db: Database, after_id: int, upto_id: int) -> int | None:
    """The oldest call still in flight in (after_id, upto_id]: rows before it are final."""
    row = db.query_one(
        "SELECT MIN(id) AS id FROM gateway_usage WHERE id > ? AND id <= ? AND status = 'reserved'",
        (after_id, upto_id),
    )
    return int(row["id"]) if row is not None and row["id"] is not None else None


@dataclass(frozen=True)
class LatencyCounts:
    """Settled calls of one (agent, model): how many took at most each bound, their count and sum."""

    agent: str
    model: str
    at_most: tuple[int, ...]
    count: int
    total_s: float


def settled_latency_counts(
    db: Database, after_id: int, upto_id: int, bounds_s: tuple[float, ...]
) -> list[LatencyCounts]:
    """How long the settled calls in (after_id, upto_id] took upstream, counted per bound."""
    columns = "".join(
        f", SUM(latency_ms <= {round(bound * 1000)}) AS b{i}" for i, bound in enumerate(bounds_s)
    )
    rows = db.query(
        f"SELECT agent, model, COUNT(*) AS n, SUM(latency_ms) AS total{columns} FROM gateway_usage"
        " WHERE id > ? AND id <= ? AND status != 'reserved' AND latency_ms IS NOT NULL GROUP BY agent, model",
        (after_id, upto_id),
    )
    return [
        LatencyCounts(
            agent=str(r["agent"]),
            model=str(r["model"]),
            at_most=tuple(int(r[f"b{i}"] or 0) for i in range(len(bounds_s))),
            count=int(r["n"]),
            total_s=int(r["total"] or 0) / 1000.0,
        )
        for r in rows
    ]


def calls_of_runs(db: Database, agent: str, run_ids: list[str]) -> list[LedgerRow]:
    """The settled calls an agent made during these runs, oldest first (as a trace shows them)."""
    if not run_ids:
        return []
    marks = ", ".join("?" for _ in run_ids)
    rows = db.query(
        f"SELECT * FROM gateway_usage WHERE agent = ? AND run_id IN ({marks}) AND status != 'reserved' ORDER BY id",
        (agent, *run_ids),
    )
    return [LedgerRow.from_row(row) for row in rows]
