"""Dead letters: items handed out too many times without an answer, set aside by the queue's
claim until the operator queues them again (`retry`) or gives them up (`drop`)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from orchestrator.broker.items import PREVIEW_CHARS
from orchestrator.broker.queue import DurableQueue
from orchestrator.broker.views import InboxViews
from orchestrator.state.db import Database


class DeadLetter(BaseModel):
    """An inbox item that was handed out too many times without an answer."""

    id: str
    agent: str
    kind: str
    sender: str
    operation: str | None
    preview: str
    attempts: int
    created_at: datetime
    dead_at: datetime | None


class DeadLetters:
    """The operator's view of dead letters and what they may do with them."""

    def __init__(self, db: Database, queue: DurableQueue, views: InboxViews) -> None:
        self._db = db
        self._queue = queue
        self._views = views

    def list(self, agent: str | None = None) -> list[DeadLetter]:
        where, params = ("AND agent = ?", (agent,)) if agent else ("", ())
        rows = self._db.query(
            f"SELECT * FROM inbox WHERE state = 'dead' {where} ORDER BY finished_at", params
        )
        return [
            DeadLetter(
                id=row["id"],
                agent=row["agent"],
                kind=row["kind"],
                sender=row["sender"],
                operation=row["operation"],
                preview=(row["input"] if row["operation"] else row["text"])[:PREVIEW_CHARS],
                attempts=row["attempt"],
                created_at=datetime.fromisoformat(row["created_at"]),
                dead_at=datetime.fromisoformat(row["finished_at"]) if row["finished_at"] else None,
            )
            for row in rows
        ]

    def count(self, agent: str) -> int:
        row = self._db.query_one(
            "SELECT COUNT(*) AS n FROM inbox WHERE agent = ? AND state = 'dead'", (agent,)
        )
        return int(row["n"]) if row else 0

    def retry(self, agent: str, item_id: str) -> bool:
        """Queue a dead letter again with a fresh count of attempts. False when there is none."""
        cursor = self._db.execute(
            "UPDATE inbox SET state = 'queued', attempt = 0, result = NULL, finished_at = NULL,"
            " claimed_at = NULL WHERE id = ? AND agent = ? AND state = 'dead'",
            (item_id, agent),
        )
        if cursor.rowcount == 0:
            return False
        item = self._views.get(item_id)
        if item is not None:
            self._queue.arrived(agent, item)
        return True

    def drop(self, agent: str, item_id: str) -> bool:
        """Give a dead letter up for good (it stays in the log as `dropped`). False when there is none."""
        with self._db.transaction() as conn:
            cursor = conn.execute(
                "UPDATE inbox SET state = 'dropped' WHERE id = ? AND agent = ? AND state = 'dead'",
                (item_id, agent),
            )
            if cursor.rowcount:
                self._queue.mask_delivered(conn, item_id)
        return cursor.rowcount > 0
