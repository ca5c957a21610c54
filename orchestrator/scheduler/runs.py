"""Run records: one row per heartbeat tick (kind "tick"), per agent turn (kind "turn") and per
notification sent or given up (kind "notify", trigger `tool` or `rule`).

Ticks are written by the scheduler: `idle` (nothing to do, zero tokens), `skipped` (busy,
budget, missed) or `run` (a heartbeat item was queued, or queued work was woken). Turns are the
RunRecords agents post after each model-driven run, with files changed. Their tokens, cost and
model are the gateway ledger's settled figures for the calls the agent tagged with the run's id
(what the provider reported, or what the gateway counted), not the agent's own guess.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from agent_runtime.protocol import RunRecord, ToolCallRecord
from orchestrator.gateway.ledger import run_spend
from orchestrator.scheduler.store import iso
from orchestrator.state.db import Database, TextRewrite, columns_of, max_id, rewrite_agent_texts, safe_query
from orchestrator.state.redaction import NO_REDACTION, Redaction

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    agent TEXT NOT NULL,
    kind TEXT NOT NULL,
    trigger TEXT NOT NULL,
    item_id TEXT,
    model TEXT,
    scheduled_at TEXT,
    started_at TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    duration_s REAL NOT NULL,
    tokens_in INTEGER NOT NULL DEFAULT 0,
    tokens_out INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    outcome TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT '',
    files_changed TEXT NOT NULL DEFAULT '[]',
    tool_calls TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX IF NOT EXISTS runs_agent ON runs(agent, seq);
"""

# What a row takes, counted for retention by size: its texts and a fixed part for the rest.
_ROW_BYTES = "length(detail) + length(files_changed) + length(tool_calls) + length(id) + 160"

RunKind = Literal["tick", "turn", "notify"]
TickOutcome = Literal["idle", "skipped", "run"]


class RunView(BaseModel):
    """A run record as the API and CLI show it."""

    seq: int
    id: str
    agent: str
    kind: RunKind
    trigger: str
    item_id: str | None = None
    model: str | None = None
    scheduled_at: datetime | None = None
    started_at: datetime
    finished_at: datetime
    duration_s: float
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    outcome: str
    detail: str = ""
    files_changed: list[str] = Field(default_factory=list)
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)


class AgentTurn(BaseModel):
    """The part of an agent's turn records the pre-checks need: what it wrote, and when."""

    seq: int
    started_at: datetime
    finished_at: datetime
    files_changed: list[str]


class RunStore:
    def __init__(self, db: Database) -> None:
        self._db = db
        db.ensure_schema(SCHEMA)
        self.redaction: Redaction = NO_REDACTION
        """The secret values no run record may hold: taken out of its texts before it is stored
        (handed over by whoever knows the secrets, `use_redaction`)."""

    def use_redaction(self, redaction: Redaction) -> None:
        self.redaction = redaction

    def rewrite_texts(self, agent: str, probe: str, rewrite: TextRewrite) -> int:
        """Rewrite what the agent's rows say (a forgotten fact leaves them); rows changed."""
        return rewrite_agent_texts(self._db, "runs", ("detail",), agent, probe, rewrite)

    def add_tick(
        self,
        *,
        run_id: str,
        agent: str,
        trigger: str,
        outcome: TickOutcome,
        detail: str,
        scheduled_at: datetime,
        started_at: datetime,
        finished_at: datetime,
        model: str | None = None,
        item_id: str | None = None,
        files_changed: list[str] | None = None,
    ) -> None:
        self._insert(
            {
                "id": run_id,
                "agent": agent,
                "kind": "tick",
                "trigger": trigger,
                "item_id": item_id,
                "model": model,
                "scheduled_at": iso(scheduled_at),
                "started_at": iso(started_at),
                "finished_at": iso(finished_at),
                "duration_s": max(0.0, (finished_at - started_at).total_seconds()),
                "outcome": outcome,
                "detail": detail,
                "files_changed": json.dumps(files_changed or []),
            }
        )

    def add_notification(
        self,
        *,
        run_id: str,
        agent: str,
        trigger: str,
        outcome: str,
        detail: str,
        started_at: datetime,
        finished_at: datetime,
        item_id: str | None = None,
    ) -> None:
        """A notification's end (`sent` or `failed`), from its first attempt to its last."""
        self._insert(
            {
                "id": run_id,
                "agent": agent,
                "kind": "notify",
                "trigger": trigger,
                "item_id": item_id,
                "started_at": iso(started_at),
                "finished_at": iso(finished_at),
                "duration_s": max(0.0, (finished_at - started_at).total_seconds()),
                "outcome": outcome,
                "detail": detail,
            }
        )

    def settled(self, record: RunRecord) -> RunRecord:
        """The record with the ledger's tokens, cost and answering model for its calls (as sent,
        when the gateway recorded no call for it)."""
        spend = run_spend(self._db, record.agent, record.id)
        if spend is None:
            return record
        return record.model_copy(
            update={
                "tokens_in": spend.tokens_in,
                "tokens_out": spend.tokens_out,
                "cost_usd": spend.cost_usd,
                "model": spend.model or record.model,
            }
        )

    def add_turn(self, record: RunRecord) -> bool:
        """Store an agent's RunRecord. Returns False when this id was stored already (a retry)."""
        return self._insert(
            {
                "id": record.id,
                "agent": record.agent,
                "kind": "turn",
                "trigger": record.trigger,
                "item_id": record.item_id,
                "model": record.model,
                "scheduled_at": None,
                "started_at": iso(record.started_at),
                "finished_at": iso(record.finished_at),
                "duration_s": max(0.0, (record.finished_at - record.started_at).total_seconds()),
                "tokens_in": record.tokens_in,
                "tokens_out": record.tokens_out,
                "cost_usd": record.cost_usd,
                "outcome": record.outcome.value,
                "detail": record.detail,
                "files_changed": json.dumps(record.files_changed),
                "tool_calls": json.dumps([call.model_dump(mode="json") for call in record.tool_calls]),
            }
        )

    def _insert(self, values: dict[str, Any]) -> bool:
        values = self.redaction.redact_data(values)
        columns = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        cursor = self._db.execute(
            f"INSERT INTO runs({columns}) VALUES ({marks}) ON CONFLICT(id) DO NOTHING", list(values.values())
        )
        return cursor.rowcount == 1

    def recent(self, agent: str | None = None, limit: int = 50, kind: RunKind | None = None) -> list[RunView]:
        """Newest first."""
        where, params = [], []
        if agent is not None:
            where.append("agent = ?")
            params.append(agent)
        if kind is not None:
            where.append("kind = ?")
            params.append(kind)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self._db.query(f"SELECT * FROM runs{clause} ORDER BY seq DESC LIMIT ?", [*params, limit])
        return [_to_view(row) for row in rows]

    def prune(self, before: datetime, size_per_agent: int) -> int:
        """Drop run records older than `before`, then each agent's oldest past `size_per_agent`
        bytes. The number dropped."""
        with self._db.transaction() as conn:
            aged = conn.execute("DELETE FROM runs WHERE finished_at < ?", (iso(before),)).rowcount
            sized = conn.execute(
                f"DELETE FROM runs WHERE seq IN (SELECT seq FROM (SELECT seq, SUM({_ROW_BYTES}) OVER"
                " (PARTITION BY agent ORDER BY seq DESC ROWS UNBOUNDED PRECEDING) AS kept FROM runs)"
                " WHERE kept > ?)",
                (size_per_agent,),
            ).rowcount
        return int(aged) + int(sized)

    def stored_bytes(self) -> dict[str, int]:
        rows = self._db.query(f"SELECT agent, SUM({_ROW_BYTES}) AS size FROM runs GROUP BY agent")
        return {str(row["agent"]): int(row["size"]) for row in rows}

    def count(self, agent: str | None = None) -> int:
        row = (
            self._db.query_one("SELECT COUNT(*) AS n FROM runs WHERE agent = ?", (agent,))
            if agent
            else self._db.query_one("SELECT COUNT(*) AS n FROM runs")
        )
        return int(row["n"]) if row else 0

    def turns_since(self, agent: str, seq: int) -> list[AgentTurn]:
        rows = self._db.query(
            "SELECT seq, started_at, finished_at, files_changed FROM runs"
            " WHERE agent = ? AND kind = 'turn' AND seq > ? ORDER BY seq",
            (agent, seq),
        )
        return [
            AgentTurn(
                seq=row["seq"],
                started_at=row["started_at"],
                finished_at=row["finished_at"],
                files_changed=json.loads(row["files_changed"]),
            )
            for row in rows
        ]

    def last_seq(self) -> int:
        row = self._db.query_one("SELECT MAX(seq) AS n FROM runs")
        return int(row["n"] or 0) if row else 0


def _to_view(row: Any) -> RunView:
    return RunView(
        seq=row["seq"],
        id=row["id"],
        agent=row["agent"],
        kind=row["kind"],
        trigger=row["trigger"],
        item_id=row["item_id"],
        model=row["model"],
        scheduled_at=row["scheduled_at"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        duration_s=row["duration_s"],
        tokens_in=row["tokens_in"],
        tokens_out=row["tokens_out"],
        cost_usd=row["cost_usd"],
        outcome=row["outcome"],
        detail=row["detail"],
        files_changed=json.loads(row["files_changed"]),
        tool_calls=json.loads(row["tool_calls"]),
    )


# ------------------------------------------------------------------------------ running totals
# Read at scrape time by the metrics: each reader keeps totals up to a row id it has fully
# counted and reads only the rows after it. A table or column that does not exist (yet) reads
# as empty.


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
            top = max_id(db, "runs", "seq")
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


def turn_durations_after(db: Database, after_seq: int) -> tuple[int, list[tuple[str, str, float]]]:
    """(agent, trigger, seconds) of each turn stored after `after_seq`, and the newest seq read.

    A run is stored once it has finished, so every row past a seq is final.
    """
    rows = db.query(
        "SELECT seq, agent, kind, trigger, duration_s FROM runs WHERE seq > ? ORDER BY seq", (after_seq,)
    )
    top = int(rows[-1]["seq"]) if rows else after_seq
    turns = [
        (str(r["agent"]), str(r["trigger"]), float(r["duration_s"])) for r in rows if r["kind"] == "turn"
    ]
    return top, turns


def turns_for_items(db: Database, item_ids: list[str]) -> list[RunView]:
    """The turn records of these inbox items, oldest first."""
    if not item_ids:
        return []
    marks = ", ".join("?" for _ in item_ids)
    rows = db.query(
        f"SELECT * FROM runs WHERE kind = 'turn' AND item_id IN ({marks}) ORDER BY seq", list(item_ids)
    )
    return [_to_view(row) for row in rows]
