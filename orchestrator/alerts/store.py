"""The alert log: every alert recorded, de-duplicated, and its delivery tracked until it is sent
or has failed for good. Owns the tables `alerts` and `alert_cursor`."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel

from agent_runtime.protocol import utcnow
from orchestrator.state.db import Database

SCHEMA = """
CREATE TABLE IF NOT EXISTS alerts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL,
    webhook TEXT NOT NULL,
    title TEXT NOT NULL,
    agent TEXT,
    summary TEXT NOT NULL,
    payload TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    repeats INTEGER NOT NULL DEFAULT 0,
    next_at TEXT NOT NULL,
    last_error TEXT,
    created_at TEXT NOT NULL,
    sent_at TEXT
);
CREATE INDEX IF NOT EXISTS alerts_due ON alerts(status, next_at);
CREATE INDEX IF NOT EXISTS alerts_key ON alerts(key, webhook, created_at);
CREATE TABLE IF NOT EXISTS alert_cursor (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    last_seq INTEGER NOT NULL
);
"""

AlertStatus = Literal["pending", "sent", "failed"]


class AlertRecord(BaseModel):
    id: int
    key: str
    webhook: str
    title: str
    agent: str | None
    summary: str
    payload: dict[str, Any]
    status: AlertStatus
    attempts: int
    repeats: int
    next_at: datetime
    last_error: str | None
    created_at: datetime
    sent_at: datetime | None


def _iso(moment: datetime) -> str:
    return moment.isoformat()


class AlertStore:
    def __init__(self, db: Database) -> None:
        self._db = db
        db.ensure_schema(SCHEMA)

    def cursor(self) -> int | None:
        row = self._db.query_one("SELECT last_seq FROM alert_cursor WHERE id = 1")
        return int(row["last_seq"]) if row else None

    def advance(self, seq: int) -> None:
        self._db.execute(
            "INSERT INTO alert_cursor(id, last_seq) VALUES (1, ?) "
            "ON CONFLICT(id) DO UPDATE SET last_seq = excluded.last_seq",
            (seq,),
        )

    def record(
        self,
        *,
        key: str,
        webhook: str,
        title: str,
        agent: str | None,
        summary: str,
        payload: dict[str, Any],
        now: datetime,
        repeat_after: timedelta,
    ) -> bool:
        """Queue an alert; False when the same one went to this webhook less than
        `repeat_after` ago (its repeat count goes up instead)."""
        with self._db.transaction() as conn:
            recent = conn.execute(
                "SELECT id FROM alerts WHERE key = ? AND webhook = ? AND created_at > ? "
                "ORDER BY id DESC LIMIT 1",
                (key, webhook, _iso(now - repeat_after)),
            ).fetchone()
            if recent is not None:
                conn.execute("UPDATE alerts SET repeats = repeats + 1 WHERE id = ?", (recent["id"],))
                return False
            conn.execute(
                "INSERT INTO alerts(key, webhook, title, agent, summary, payload, status, next_at, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?)",
                (key, webhook, title, agent, summary, json.dumps(payload, default=str), _iso(now), _iso(now)),
            )
            return True

    def due(self, now: datetime, limit: int = 50) -> list[AlertRecord]:
        rows = self._db.query(
            "SELECT * FROM alerts WHERE status = 'pending' AND next_at <= ? ORDER BY id LIMIT ?",
            (_iso(now), limit),
        )
        return [_record(row) for row in rows]

    def mark_sent(self, alert_id: int, now: datetime) -> None:
        self._db.execute(
            "UPDATE alerts SET status = 'sent', attempts = attempts + 1, sent_at = ?, last_error = NULL "
            "WHERE id = ?",
            (_iso(now), alert_id),
        )

    def mark_attempt_failed(self, alert_id: int, error: str, retry_at: datetime | None) -> None:
        """A failed attempt: retried at `retry_at`, or failed for good when it is None."""
        status = "failed" if retry_at is None else "pending"
        next_at = _iso(retry_at if retry_at is not None else utcnow())
        self._db.execute(
            "UPDATE alerts SET status = ?, attempts = attempts + 1, last_error = ?, next_at = ? WHERE id = ?",
            (status, error[:500], next_at, alert_id),
        )

    def prune(self, before: datetime) -> int:
        """Drop alerts created before `before` that were sent or given up; pending ones stay."""
        cursor = self._db.execute(
            "DELETE FROM alerts WHERE status != 'pending' AND created_at < ?", (_iso(before),)
        )
        return int(cursor.rowcount)

    def recent(self, limit: int = 50) -> list[AlertRecord]:
        rows = self._db.query("SELECT * FROM alerts ORDER BY id DESC LIMIT ?", (limit,))
        return [_record(row) for row in rows]


def _record(row: Any) -> AlertRecord:
    values = dict(row)
    values["payload"] = json.loads(values["payload"])
    return AlertRecord.model_validate(values)
