"""Read views of the inbox: what the scheduler, the gateway, the API, the CLI and the dashboard
ask of it. Nothing here writes."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from agent_runtime.protocol import InboxItem, ItemKind, WorkResult
from orchestrator.broker.items import ROW_BYTES_SQL, to_item
from orchestrator.state.db import Database, columns_of, safe_query


@dataclass(frozen=True)
class InboxCounts:
    """Unfinished inbox items of one agent."""

    queued: int = 0
    queued_heartbeats: int = 0
    claimed: int = 0

    @property
    def busy(self) -> bool:
        """Working on an item, or a heartbeat still waits: a new tick would overlap."""
        return self.claimed > 0 or self.queued_heartbeats > 0

    @property
    def unfinished(self) -> int:
        return self.queued + self.queued_heartbeats + self.claimed


@dataclass(frozen=True)
class FailedItem:
    id: str
    kind: str
    sender: str
    reasons: str
    """The item's heartbeat reasons, as stored (JSON)."""
    error: str


class InboxViews:
    """Queries on one fleet's inbox table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def get(self, item_id: str) -> InboxItem | None:
        row = self._db.query_one("SELECT * FROM inbox WHERE id = ?", (item_id,))
        return to_item(row) if row else None

    def by_key(self, agent: str, key: str) -> InboxItem | None:
        """The agent's item queued with this idempotency key, if any."""
        row = self._db.query_one("SELECT * FROM inbox WHERE agent = ? AND idempotency_key = ?", (agent, key))
        return to_item(row) if row else None

    def result(self, item_id: str) -> WorkResult | None:
        row = self._db.query_one("SELECT result FROM inbox WHERE id = ?", (item_id,))
        if row is None or row["result"] is None:
            return None
        return WorkResult.model_validate_json(row["result"])

    def state(self, item_id: str) -> str | None:
        row = self._db.query_one("SELECT state FROM inbox WHERE id = ?", (item_id,))
        return str(row["state"]) if row else None

    def owner(self, item_id: str) -> str | None:
        row = self._db.query_one("SELECT agent FROM inbox WHERE id = ?", (item_id,))
        return str(row["agent"]) if row else None

    def payer_of_item(self, item_id: str) -> str | None:
        """The agent paying for the work on this item (who asks pays), or None: its recipient."""
        row = self._db.query_one("SELECT payer FROM inbox WHERE id = ?", (item_id,))
        return str(row["payer"]) if row is not None and row["payer"] else None

    def payer_of_work(self, agent: str) -> str | None:
        """Who pays for what the agent does now: the payer of the item it claimed most recently
        and has not acknowledged, or None (its own budget)."""
        row = self._db.query_one(
            "SELECT payer FROM inbox WHERE agent = ? AND state = 'claimed' ORDER BY claimed_at DESC LIMIT 1",
            (agent,),
        )
        return str(row["payer"]) if row is not None and row["payer"] else None

    def latest_claimed(self, agent: str) -> InboxItem | None:
        """The item this agent claimed most recently and has not acknowledged yet."""
        row = self._db.query_one(
            "SELECT * FROM inbox WHERE agent = ? AND state = 'claimed' ORDER BY claimed_at DESC LIMIT 1",
            (agent,),
        )
        return to_item(row) if row else None

    def counts(self, agent: str) -> InboxCounts:
        rows = self._db.query(
            "SELECT kind, state, COUNT(*) AS n FROM inbox WHERE agent = ? AND state IN ('queued', 'claimed')"
            " GROUP BY kind, state",
            (agent,),
        )
        queued = heartbeats = claimed = 0
        for row in rows:
            if row["state"] == "claimed":
                claimed += row["n"]
            elif row["kind"] == ItemKind.HEARTBEAT.value:
                heartbeats += row["n"]
            else:
                queued += row["n"]
        return InboxCounts(queued, heartbeats, claimed)

    def held_periods(self, agent: str, limit: int) -> list[tuple[str, str | None]]:
        """When the agent held items, most recent first: (claimed_at, finished_at), wall-clock ISO."""
        rows = self._db.query(
            "SELECT claimed_at, finished_at FROM inbox WHERE agent = ? AND claimed_at IS NOT NULL"
            " ORDER BY claimed_at DESC LIMIT ?",
            (agent, limit),
        )
        return [(str(row["claimed_at"]), row["finished_at"]) for row in rows]

    def failed_items(self, agent: str) -> list[FailedItem]:
        rows = self._db.query(
            "SELECT id, kind, sender, reasons, result FROM inbox WHERE agent = ? AND state = 'failed'",
            (agent,),
        )
        found = []
        for row in rows:
            result: dict[str, Any] = json.loads(row["result"]) if row["result"] else {}
            error = str(result.get("error") or "")
            found.append(FailedItem(row["id"], row["kind"], row["sender"], row["reasons"] or "[]", error))
        return found

    def waiting_since(self) -> dict[str, str]:
        """Agents with queued items, each with its oldest item's creation time (ISO, sortable)."""
        rows = self._db.query(
            "SELECT agent, MIN(created_at) AS oldest FROM inbox WHERE state = 'queued' GROUP BY agent"
        )
        return {str(row["agent"]): str(row["oldest"]) for row in rows}

    def pending(self, agent: str) -> int:
        row = self._db.query_one(
            "SELECT COUNT(*) AS n FROM inbox WHERE agent = ? AND state IN ('queued', 'claimed')", (agent,)
        )
        return int(row["n"]) if row else 0

    def pending_from(self, agent: str, sender: str) -> int:
        """Unfinished items `sender` has in `agent`'s inbox."""
        row = self._db.query_one(
            "SELECT COUNT(*) AS n FROM inbox WHERE agent = ? AND state IN ('queued', 'claimed') AND sender = ?",
            (agent, sender),
        )
        return int(row["n"]) if row else 0

    def list(self, agent: str, limit: int = 100, include_done: bool = False) -> list[InboxItem]:
        where = "" if include_done else " AND state IN ('queued', 'claimed')"
        rows = self._db.query(
            f"SELECT * FROM inbox WHERE agent = ?{where} ORDER BY created_at DESC LIMIT ?", (agent, limit)
        )
        return [to_item(row) for row in rows]

    def stored_bytes(self) -> dict[str, int]:
        """What each agent's inbox takes, finished or not, counted as retention counts it."""
        rows = self._db.query(f"SELECT agent, SUM({ROW_BYTES_SQL}) AS size FROM inbox GROUP BY agent")
        return {str(row["agent"]): int(row["size"]) for row in rows}


def queue_depths(db: Database) -> Counter[tuple[str, str]]:
    """Inbox items waiting, being worked on or dead-lettered, by (agent, state); empty when the
    table does not exist (yet)."""
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


class ItemTiming(BaseModel):
    """An inbox item's delivery: who it was for, its state, and when it was queued, claimed, done."""

    id: str
    agent: str
    kind: ItemKind
    sender: str
    operation: str | None = None
    state: str
    attempt: int = 0
    created_at: datetime
    claimed_at: datetime | None = None
    finished_at: datetime | None = None


def _like_prefix(prefix: str) -> str:
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"


def item_ids_like(db: Database, prefix: str, limit: int = 10) -> list[str]:
    """Inbox item ids that start with `prefix`."""
    rows = db.query("SELECT id FROM inbox WHERE id LIKE ? ESCAPE '\\' LIMIT ?", (_like_prefix(prefix), limit))
    return [str(row["id"]) for row in rows]


def item_timing(db: Database, item_id: str) -> ItemTiming | None:
    row = db.query_one(
        "SELECT id, agent, kind, sender, operation, state, attempt, created_at, claimed_at, finished_at"
        " FROM inbox WHERE id = ?",
        (item_id,),
    )
    return ItemTiming.model_validate(dict(row)) if row is not None else None


def items_finished_between(
    db: Database, kinds: list[str], after: tuple[str, str], before: datetime, limit: int = 200
) -> list[tuple[tuple[str, str], ItemTiming]]:
    """Items of these kinds finished after the (finished_at, id) cursor `after` and before
    `before`, oldest first, each with the cursor a later read resumes from."""
    marks = ", ".join("?" for _ in kinds)
    rows = db.query(
        "SELECT id, agent, kind, sender, operation, state, attempt, created_at, claimed_at, finished_at"
        f" FROM inbox WHERE kind IN ({marks}) AND finished_at IS NOT NULL AND finished_at < ?"
        " AND (finished_at > ? OR (finished_at = ? AND id > ?)) ORDER BY finished_at, id LIMIT ?",
        (*kinds, before.isoformat(), after[0], after[0], after[1], limit),
    )
    return [((str(row["finished_at"]), str(row["id"])), ItemTiming.model_validate(dict(row))) for row in rows]
