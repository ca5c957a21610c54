"""The `inbox` table and its rows: the schema every inbox module reads and writes, and how a row
becomes the `InboxItem` an agent is handed."""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from agent_runtime.protocol import HeartbeatReason, InboxItem, ItemKind

SCHEMA = """
CREATE TABLE IF NOT EXISTS inbox (
    id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    kind TEXT NOT NULL,
    sender TEXT NOT NULL,
    principal TEXT,
    text TEXT NOT NULL DEFAULT '',
    operation TEXT,
    input TEXT,
    correlation_id TEXT,
    hop INTEGER NOT NULL DEFAULT 0,
    trace TEXT NOT NULL DEFAULT '[]',
    reasons TEXT NOT NULL DEFAULT '[]',
    priority INTEGER NOT NULL DEFAULT 0,
    idempotency_key TEXT,
    created_at TEXT NOT NULL,
    expires_at TEXT,
    state TEXT NOT NULL DEFAULT 'queued',
    attempt INTEGER NOT NULL DEFAULT 0,
    claimed_at TEXT,
    finished_at TEXT,
    result TEXT,
    payer TEXT
);
CREATE INDEX IF NOT EXISTS inbox_queue ON inbox(agent, state, priority DESC, created_at);
-- Fleet-wide questions (which agents have work waiting) read the unfinished items only.
CREATE INDEX IF NOT EXISTS inbox_state ON inbox(state, agent, created_at);
CREATE UNIQUE INDEX IF NOT EXISTS inbox_idem ON inbox(agent, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
"""

PREVIEW_CHARS = 200
FINISHED_STATES = ("done", "failed", "expired", "dropped")
# What a row costs besides its texts (ids, times, index entries), for retention by size.
ROW_OVERHEAD_BYTES = 256
ROW_BYTES_SQL = (
    "length(text) + COALESCE(length(input), 0) + COALESCE(length(result), 0) + length(trace)"
    f" + length(reasons) + {ROW_OVERHEAD_BYTES}"
)


class NewItem(BaseModel):
    """An item a producer submits: what the queue stores as a new row."""

    agent: str = Field(min_length=1)
    kind: ItemKind
    sender: str = Field(min_length=1)
    text: str = ""
    operation: str | None = None
    input: dict[str, Any] | None = None
    correlation_id: str | None = None
    hop: int = Field(default=0, ge=0)
    trace: list[str] = Field(default_factory=list)
    reasons: list[HeartbeatReason] = Field(default_factory=list)
    priority: int = 0
    ttl_s: float | None = None
    """Seconds the item may wait to be claimed; None or 0: no deadline."""
    idempotency_key: str | None = None
    principal: str | None = None
    """Who it came from; None: told by its kind and sender (`default_principal`)."""
    item_id: str | None = None
    """The id to give it, when its producer had to name it first (`new_item_id`)."""
    payer: str | None = None
    """The agent whose budget pays for the work on it (who asks pays); None: the recipient's."""


def new_item_id() -> str:
    return uuid.uuid4().hex


def default_principal(kind: ItemKind, sender: str) -> str:
    """Who an item came from when its producer did not say: peers are `agent:NAME`."""
    if kind in (ItemKind.PEER_ASK, ItemKind.PEER_TELL):
        return f"agent:{sender}"
    return sender


def to_item(row: Any) -> InboxItem:
    kind = ItemKind(row["kind"])
    return InboxItem(
        id=row["id"],
        kind=kind,
        created_at=datetime.fromisoformat(row["created_at"]),
        sender=row["sender"],
        principal=row["principal"] or default_principal(kind, row["sender"]),
        text=row["text"],
        operation=row["operation"],
        input=json.loads(row["input"]) if row["input"] else None,
        correlation_id=row["correlation_id"],
        hop=row["hop"],
        trace=json.loads(row["trace"]),
        reasons=[HeartbeatReason.model_validate(r) for r in json.loads(row["reasons"])],
        attempt=max(1, row["attempt"]),
        deadline=datetime.fromisoformat(row["expires_at"]) if row["expires_at"] else None,
    )
