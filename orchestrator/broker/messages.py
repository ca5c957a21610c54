"""The broker's message log: every ask and tell, refused or delivered, with its place in a chain.

A message names the inbox item it was delivered as (`item_id`) and the message whose item its
sender was working on when it asked (`parent_id`), so the path of a request through the fleet
can be rebuilt from any message of the chain.
"""

from __future__ import annotations

import json
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from agent_runtime.protocol import BrokerError, utcnow
from orchestrator.state.db import Database

SCHEMA = """
CREATE TABLE IF NOT EXISTS broker_messages (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    sender TEXT NOT NULL,
    recipient TEXT NOT NULL,
    operation TEXT,
    parent_item TEXT,
    parent_id TEXT,
    item_id TEXT,
    idempotency_key TEXT,
    hop INTEGER NOT NULL DEFAULT 0,
    trace TEXT NOT NULL DEFAULT '[]',
    state TEXT NOT NULL,
    error_code TEXT,
    error_message TEXT,
    created_at TEXT NOT NULL,
    finished_at TEXT
);
CREATE INDEX IF NOT EXISTS broker_messages_item ON broker_messages(item_id);
CREATE INDEX IF NOT EXISTS broker_messages_parent ON broker_messages(parent_id);
CREATE INDEX IF NOT EXISTS broker_messages_key ON broker_messages(sender, recipient, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
"""
# What a row takes, counted for retention by size: its texts and a fixed part for the rest.
_ROW_BYTES = (
    "length(id) + length(trace) + COALESCE(length(error_message), 0) + COALESCE(length(item_id), 0)"
    " + COALESCE(length(idempotency_key), 0) + 200"
)
# How deep a trace query follows a chain; the broker's hop limit keeps real chains far shorter.
MAX_TRACE_DEPTH = 64


class MessageKind(StrEnum):
    ASK = "ask"
    TELL = "tell"


class MessageState(StrEnum):
    REFUSED = "refused"
    PENDING = "pending"
    SENT = "sent"
    ANSWERED = "answered"
    FAILED = "failed"


class MessageRecord(BaseModel):
    id: str
    kind: MessageKind
    sender: str
    recipient: str
    operation: str | None = None
    parent_item: str | None = None
    parent_id: str | None = None
    item_id: str | None = None
    hop: int = 0
    trace: list[str] = Field(default_factory=list)
    state: MessageState
    error_code: str | None = None
    error_message: str | None = None
    created_at: datetime
    finished_at: datetime | None = None
    item_state: str | None = Field(default=None, description="The delivered inbox item's state")
    item_attempts: int | None = None
    claimed_at: datetime | None = None
    depth: int = 0


class MessageTrace(BaseModel):
    """A chain of messages: `path` is the route to the asked message, `messages` the whole tree."""

    message_id: str
    root_id: str
    path: list[str]
    messages: list[MessageRecord]


class MessageLog:
    def __init__(self, db: Database) -> None:
        self._db = db
        db.ensure_schema(SCHEMA)

    def record(
        self,
        message_id: str,
        kind: MessageKind,
        sender: str,
        recipient: str,
        *,
        operation: str | None,
        parent_item: str | None,
        hop: int,
        trace: list[str],
        state: MessageState,
        item_id: str | None = None,
        idempotency_key: str | None = None,
        error: BrokerError | None = None,
    ) -> MessageRecord:
        at = utcnow()
        now = at.isoformat()
        parent_id = self._message_of_item(parent_item) if parent_item else None
        finished = now if state in (MessageState.REFUSED, MessageState.FAILED) else None
        self._db.execute(
            "INSERT INTO broker_messages(id, kind, sender, recipient, operation, parent_item, parent_id,"
            " item_id, idempotency_key, hop, trace, state, error_code, error_message, created_at,"
            " finished_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                message_id,
                kind.value,
                sender,
                recipient,
                operation,
                parent_item,
                parent_id,
                item_id,
                idempotency_key,
                hop,
                json.dumps(trace),
                state.value,
                error.code if error else None,
                error.message if error else None,
                now,
                finished,
            ),
        )
        return MessageRecord(
            id=message_id,
            kind=kind,
            sender=sender,
            recipient=recipient,
            operation=operation,
            parent_item=parent_item,
            parent_id=parent_id,
            item_id=item_id,
            hop=hop,
            trace=trace,
            state=state,
            error_code=error.code if error else None,
            error_message=error.message if error else None,
            created_at=at,
            finished_at=at if finished else None,
        )

    def finish(self, message_id: str, state: MessageState, error: BrokerError | None = None) -> None:
        self._db.execute(
            "UPDATE broker_messages SET state = ?, error_code = ?, error_message = ?, finished_at = ?"
            " WHERE id = ?",
            (
                state.value,
                error.code if error else None,
                error.message if error else None,
                utcnow().isoformat(),
                message_id,
            ),
        )

    def repair_finished(self) -> int:
        """Asks still `pending` whose inbox item has ended (their waiter was in an orchestrator
        that was killed) take the item's outcome: answered when it is done, failed otherwise.
        A live waiter closes its own ask first, or finds it closed with the same outcome and
        records its own. The number of asks repaired."""
        now = utcnow().isoformat()
        cursor = self._db.execute(
            "UPDATE broker_messages SET"
            " state = CASE (SELECT i.state FROM inbox i WHERE i.id = item_id)"
            "   WHEN 'done' THEN 'answered' ELSE 'failed' END,"
            " error_code = CASE (SELECT i.state FROM inbox i WHERE i.id = item_id)"
            "   WHEN 'done' THEN NULL ELSE 'failed' END,"
            " error_message = CASE (SELECT i.state FROM inbox i WHERE i.id = item_id)"
            "   WHEN 'done' THEN NULL"
            "   ELSE 'the request ended (' || (SELECT i.state FROM inbox i WHERE i.id = item_id)"
            "     || ') while the orchestrator was restarting' END,"
            " finished_at = ?"
            " WHERE state = 'pending' AND item_id IN"
            " (SELECT id FROM inbox WHERE state IN ('done', 'failed', 'expired', 'dropped'))",
            (now,),
        )
        return cursor.rowcount

    def prune(self, before: datetime, size_per_sender: int) -> int:
        """Drop messages older than `before`, then each sender's oldest past `size_per_sender`
        bytes. Asks still waiting for their answer stay. The number dropped."""
        with self._db.transaction() as conn:
            aged = conn.execute(
                "DELETE FROM broker_messages WHERE state != 'pending' AND created_at < ?",
                (before.isoformat(),),
            ).rowcount
            sized = conn.execute(
                f"DELETE FROM broker_messages WHERE id IN (SELECT id FROM (SELECT id, SUM({_ROW_BYTES}) OVER"
                " (PARTITION BY sender ORDER BY created_at DESC, id ROWS UNBOUNDED PRECEDING) AS kept"
                " FROM broker_messages WHERE state != 'pending') WHERE kept > ?)",
                (size_per_sender,),
            ).rowcount
        return int(aged) + int(sized)

    def stored_bytes(self) -> dict[str, int]:
        rows = self._db.query(
            f"SELECT sender, SUM({_ROW_BYTES}) AS size FROM broker_messages GROUP BY sender"
        )
        return {str(row["sender"]): int(row["size"]) for row in rows}

    def by_key(self, sender: str, recipient: str, key: str) -> MessageRecord | None:
        """The delivered message an idempotency key already produced, if any."""
        row = self._db.query_one(
            f"{_SELECT} WHERE m.sender = ? AND m.recipient = ? AND m.idempotency_key = ?"
            " AND m.item_id IS NOT NULL ORDER BY m.created_at LIMIT 1",
            (sender, recipient, key),
        )
        return _to_record(row) if row else None

    def get(self, message_id: str) -> MessageRecord | None:
        """A message by its id, or by the id of the inbox item it was delivered as."""
        row = self._db.query_one(f"{_SELECT} WHERE m.id = ?", (message_id,))
        if row is None:
            row = self._db.query_one(f"{_SELECT} WHERE m.item_id = ?", (message_id,))
        return _to_record(row) if row else None

    def trace(self, message_id: str) -> MessageTrace | None:
        message = self.get(message_id)
        if message is None:
            return None
        root = message
        for _ in range(MAX_TRACE_DEPTH):
            if root.parent_id is None or (parent := self.get(root.parent_id)) is None:
                break
            root = parent
        tree = self._descendants(root)
        return MessageTrace(
            message_id=message.id,
            root_id=root.id,
            path=[*message.trace, message.recipient],
            messages=tree,
        )

    def _descendants(self, root: MessageRecord) -> list[MessageRecord]:
        """The tree under root, depth first, children in the order they were sent."""
        ordered: list[MessageRecord] = []
        stack = [root]
        while stack and len(ordered) < 1000:
            node = stack.pop()
            ordered.append(node)
            if node.depth >= MAX_TRACE_DEPTH:
                continue
            rows = self._db.query(f"{_SELECT} WHERE m.parent_id = ? ORDER BY m.created_at DESC", (node.id,))
            stack.extend(_to_record(row).model_copy(update={"depth": node.depth + 1}) for row in rows)
        return ordered

    def _message_of_item(self, item_id: str) -> str | None:
        row = self._db.query_one("SELECT id FROM broker_messages WHERE item_id = ?", (item_id,))
        return str(row["id"]) if row else None


# The inbox lives in this package; joining its table shows what became of each delivery.
_SELECT = (
    "SELECT m.*, i.state AS item_state, i.attempt AS item_attempts, i.claimed_at AS claimed_at"
    " FROM broker_messages m LEFT JOIN inbox i ON i.id = m.item_id"
)


def _to_record(row: Any) -> MessageRecord:
    return MessageRecord(
        id=row["id"],
        kind=MessageKind(row["kind"]),
        sender=row["sender"],
        recipient=row["recipient"],
        operation=row["operation"],
        parent_item=row["parent_item"],
        parent_id=row["parent_id"],
        item_id=row["item_id"],
        hop=row["hop"],
        trace=json.loads(row["trace"]),
        state=MessageState(row["state"]),
        error_code=row["error_code"],
        error_message=row["error_message"],
        created_at=datetime.fromisoformat(row["created_at"]),
        finished_at=datetime.fromisoformat(row["finished_at"]) if row["finished_at"] else None,
        item_state=row["item_state"],
        item_attempts=row["item_attempts"],
        claimed_at=datetime.fromisoformat(row["claimed_at"]) if row["claimed_at"] else None,
    )


class FinishedAsk(BaseModel):
    """An ask that has an outcome, for latency figures."""

    rowid: int
    recipient: str
    state: MessageState
    created_at: datetime
    finished_at: datetime
    cursor: tuple[str, int] = Field(description="(finished_at as stored, rowid): where a later read resumes")

    @property
    def seconds(self) -> float:
        return max(0.0, (self.finished_at - self.created_at).total_seconds())


def asks_finished_between(
    db: Database, after: tuple[str, int], before: datetime, limit: int = 10_000
) -> list[FinishedAsk]:
    """Asks finished after the (finished_at, rowid) cursor `after` and before `before`, oldest first."""
    rows = db.query(
        "SELECT rowid, recipient, state, created_at, finished_at FROM broker_messages "
        "WHERE kind = 'ask' AND finished_at IS NOT NULL AND finished_at < ? "
        "AND (finished_at > ? OR (finished_at = ? AND rowid > ?)) ORDER BY finished_at, rowid LIMIT ?",
        (before.isoformat(), after[0], after[0], after[1], limit),
    )
    return [
        FinishedAsk(
            rowid=row["rowid"],
            recipient=row["recipient"],
            state=MessageState(row["state"]),
            created_at=datetime.fromisoformat(row["created_at"]),
            finished_at=datetime.fromisoformat(row["finished_at"]),
            cursor=(row["finished_at"], row["rowid"]),
        )
        for row in rows
    ]


def message_ids_like(db: Database, prefix: str, limit: int = 10) -> list[str]:
    """Ids of the messages whose id, or whose delivered item's id, starts with `prefix`."""
    pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    rows = db.query(
        "SELECT id FROM broker_messages WHERE id LIKE ? ESCAPE '\\' OR item_id LIKE ? ESCAPE '\\' LIMIT ?",
        (pattern, pattern, limit),
    )
    return [str(row["id"]) for row in rows]


def first_messages_of_item(db: Database, item_id: str) -> list[str]:
    """Ids of the messages sent while an item that was not itself a message (an operator's
    message, a heartbeat) was being worked, oldest first."""
    rows = db.query(
        "SELECT id FROM broker_messages WHERE parent_item = ? AND parent_id IS NULL ORDER BY created_at",
        (item_id,),
    )
    return [str(row["id"]) for row in rows]
