"""The notification log: every notification, its attempts and its end. Owns `notifications`."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel

from orchestrator.state.db import Database

SCHEMA = """
CREATE TABLE IF NOT EXISTS notifications (
    id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    channel TEXT NOT NULL,
    origin TEXT NOT NULL,
    text TEXT NOT NULL,
    item_id TEXT,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_at TEXT,
    last_error TEXT,
    created_at TEXT NOT NULL,
    finished_at TEXT
);
CREATE INDEX IF NOT EXISTS notifications_due ON notifications(status, next_at);
CREATE INDEX IF NOT EXISTS notifications_rate ON notifications(agent, channel, created_at);
"""

NotificationStatus = Literal["sending", "retrying", "sent", "failed"]
Origin = Literal["tool", "rule"]


class NotificationRecord(BaseModel):
    id: str
    agent: str
    channel: str
    origin: Origin
    text: str
    item_id: str | None
    status: NotificationStatus
    attempts: int
    next_at: datetime | None
    last_error: str | None
    created_at: datetime
    finished_at: datetime | None


class NotificationStore:
    def __init__(self, db: Database) -> None:
        self._db = db
        db.ensure_schema(SCHEMA)

    def add(
        self, agent: str, channel: str, origin: Origin, text: str, item_id: str | None, now: datetime
    ) -> NotificationRecord:
        record_id = uuid.uuid4().hex
        self._db.execute(
            "INSERT INTO notifications(id, agent, channel, origin, text, item_id, status, next_at, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, 'sending', ?, ?)",
            (record_id, agent, channel, origin, text, item_id, now.isoformat(), now.isoformat()),
        )
        found = self.get(record_id)
        assert found is not None
        return found

    def get(self, record_id: str) -> NotificationRecord | None:
        row = self._db.query_one("SELECT * FROM notifications WHERE id = ?", (record_id,))
        return _record(row) if row else None

    def sent_since(self, agent: str, channel: str, since: datetime) -> int:
        row = self._db.query_one(
            "SELECT COUNT(*) AS n FROM notifications WHERE agent = ? AND channel = ? AND created_at >= ?",
            (agent, channel, since.isoformat()),
        )
        return int(row["n"]) if row else 0

    def oldest_since(self, agent: str, channel: str, since: datetime) -> datetime | None:
        row = self._db.query_one(
            "SELECT MIN(created_at) AS at FROM notifications WHERE agent = ? AND channel = ? AND created_at >= ?",
            (agent, channel, since.isoformat()),
        )
        return datetime.fromisoformat(row["at"]) if row and row["at"] else None

    def due(self, now: datetime, limit: int = 50) -> list[NotificationRecord]:
        """Notifications waiting for an attempt: retries whose time came, and rule notifications
        queued by the scheduler (or left `sending` by an orchestrator that stopped)."""
        rows = self._db.query(
            "SELECT * FROM notifications WHERE status IN ('sending', 'retrying') AND next_at <= ?"
            " ORDER BY next_at LIMIT ?",
            (now.isoformat(), limit),
        )
        return [_record(row) for row in rows]

    def take(self, record_id: str, now: datetime, lease: timedelta) -> bool:
        """Claim an attempt: its next time moves past the attempt, so no other pass makes it too."""
        cursor = self._db.execute(
            "UPDATE notifications SET next_at = ? WHERE id = ? AND status IN ('sending', 'retrying')"
            " AND (next_at IS NULL OR next_at <= ?)",
            ((now + lease).isoformat(), record_id, now.isoformat()),
        )
        return cursor.rowcount == 1

    def mark_sent(self, record_id: str, now: datetime) -> None:
        self._db.execute(
            "UPDATE notifications SET status = 'sent', attempts = attempts + 1, next_at = NULL,"
            " last_error = NULL, finished_at = ? WHERE id = ?",
            (now.isoformat(), record_id),
        )

    def mark_failed(self, record_id: str, error: str, retry_at: datetime | None, now: datetime) -> None:
        """One attempt failed: retried at `retry_at`, or failed for good when None."""
        status: NotificationStatus = "retrying" if retry_at is not None else "failed"
        self._db.execute(
            "UPDATE notifications SET status = ?, attempts = attempts + 1, next_at = ?, last_error = ?,"
            " finished_at = ? WHERE id = ?",
            (
                status,
                retry_at.isoformat() if retry_at else None,
                error,
                None if retry_at else now.isoformat(),
                record_id,
            ),
        )

    def prune(self, before: datetime) -> int:
        """Forget notifications that ended before `before`; how many."""
        cursor = self._db.execute(
            "DELETE FROM notifications WHERE status IN ('sent', 'failed') AND finished_at < ?",
            (before.isoformat(),),
        )
        return cursor.rowcount

    def recent(self, limit: int = 50, agent: str | None = None) -> list[NotificationRecord]:
        params: list[Any] = []
        where = ""
        if agent is not None:
            where, params = " WHERE agent = ?", [agent]
        rows = self._db.query(
            f"SELECT * FROM notifications{where} ORDER BY created_at DESC LIMIT ?", [*params, limit]
        )
        return [_record(row) for row in rows]


def _record(row: Any) -> NotificationRecord:
    return NotificationRecord.model_validate(dict(row))
