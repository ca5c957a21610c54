"""Approval items: a tool call an agent may make only once an operator approved it.

Owns the tables `approvals` and `approval_uses` (which action an approved item carried, when
the orchestrator checks it: `orchestrator.approvals.enforce`). An item is created by the agent (the same idempotency key finds the
same item, so an agent that retries after an orchestrator restart waits on the item it made),
decided by an operator (`approve`, `deny`), and denied as `expired` once its timeout passes
undecided. Expiry is applied whenever items are read, so no timer has to survive a restart.
Decided items leave with the retention of events (`prune`); an agent may have at most
`limits.pending_approvals` undecided at once (checked by the agent's route).
"""

from __future__ import annotations

import json
import secrets
from datetime import datetime, timedelta
from typing import Any, Literal

from agent_runtime.protocol import ApprovalItem, ApprovalRequest, ApprovalState, utcnow
from orchestrator.events import EventBus
from orchestrator.state.db import Database

SCHEMA = """
CREATE TABLE IF NOT EXISTS approvals (
    id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    key TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    item_id TEXT,
    run_id TEXT,
    state TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    decided_at TEXT,
    UNIQUE(agent, key)
);
CREATE INDEX IF NOT EXISTS approvals_state ON approvals(state, expires_at);
CREATE TABLE IF NOT EXISTS approval_uses (
    approval_id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    used_at TEXT NOT NULL
);
"""

APPROVAL_REQUESTED = "approval.requested"
APPROVAL_DECIDED = "approval.decided"
APPROVAL_REFUSED = "approval.refused"
Decision = Literal["approved", "denied"]


class UnknownApproval(LookupError):
    """No approval item by that id (for that agent)."""


class AlreadyDecided(ValueError):
    """The item was decided (or expired) before this decision."""


def _iso(moment: datetime) -> str:
    return moment.isoformat()


class ApprovalStore:
    def __init__(self, db: Database, events: EventBus) -> None:
        self._db = db
        self._events = events
        db.ensure_schema(SCHEMA)

    def request(self, agent: str, body: ApprovalRequest) -> ApprovalItem:
        """The item for this request: a new one, or the one this key made before."""
        now = utcnow()
        approval_id = f"ap-{secrets.token_hex(5)}"
        cursor = self._db.execute(
            "INSERT INTO approvals(id, agent, key, tool, arguments, item_id, run_id, state, created_at, expires_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?) ON CONFLICT(agent, key) DO NOTHING",
            (
                approval_id,
                agent,
                body.key,
                body.tool,
                json.dumps(body.arguments, sort_keys=True),
                body.item_id,
                body.run_id,
                _iso(now),
                _iso(now + timedelta(seconds=body.timeout_s)),
            ),
        )
        row = self._db.query_one("SELECT * FROM approvals WHERE agent = ? AND key = ?", (agent, body.key))
        if row is None:
            raise UnknownApproval(f"approval for key {body.key!r} vanished")
        item = _item(row)
        if cursor.rowcount == 1:
            self._events.publish(
                APPROVAL_REQUESTED,
                agent,
                id=item.id,
                tool=item.tool,
                arguments=item.arguments,
                expires_at=_iso(item.expires_at),
            )
        return self._expire_if_due(item)

    def get(self, approval_id: str, agent: str | None = None) -> ApprovalItem:
        row = self._db.query_one("SELECT * FROM approvals WHERE id = ?", (approval_id,))
        if row is None or (agent is not None and row["agent"] != agent):
            raise UnknownApproval(f"there is no approval item {approval_id!r}")
        return self._expire_if_due(_item(row))

    def find(self, agent: str, key: str) -> ApprovalItem | None:
        """The item this agent asked for under `key`, if any."""
        row = self._db.query_one("SELECT * FROM approvals WHERE agent = ? AND key = ?", (agent, key))
        return self._expire_if_due(_item(row)) if row is not None else None

    def approved(self, agent: str, tool: str) -> list[ApprovalItem]:
        """This agent's approved items for `tool` (as asked: a tool or PEER.OPERATION), oldest first."""
        rows = self._db.query(
            "SELECT * FROM approvals WHERE agent = ? AND tool = ? AND state = 'approved' ORDER BY created_at",
            (agent, tool),
        )
        return [_item(row) for row in rows]

    def refused(self, agent: str, tool: str, reason: str) -> None:
        """Publishes that an action of `agent` was refused for want of an approved item."""
        self._events.publish(APPROVAL_REFUSED, agent, tool=tool, reason=reason)

    def uses(self, approval_ids: list[str]) -> dict[str, str]:
        """The fingerprint of the action each of these items carried, for those that carried one."""
        if not approval_ids:
            return {}
        marks = ",".join("?" for _ in approval_ids)
        rows = self._db.query(
            f"SELECT approval_id, fingerprint FROM approval_uses WHERE approval_id IN ({marks})",
            tuple(approval_ids),
        )
        return {row["approval_id"]: row["fingerprint"] for row in rows}

    def claim(self, item: ApprovalItem, fingerprint: str) -> bool:
        """Records that `item` carries the action `fingerprint`; False when it already carried one."""
        cursor = self._db.execute(
            "INSERT INTO approval_uses(approval_id, agent, fingerprint, used_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT(approval_id) DO NOTHING",
            (item.id, item.agent, fingerprint, _iso(utcnow())),
        )
        return cursor.rowcount == 1

    def pending_count(self, agent: str) -> int:
        """This agent's undecided items (those past their timeout expired first)."""
        self.expire_due()
        count = self._db.query_one(
            "SELECT COUNT(*) AS n FROM approvals WHERE agent = ? AND state = 'pending'", (agent,)
        )
        return int(count["n"]) if count is not None else 0

    def prune(self, before: datetime, /) -> int:
        """Drop the items decided (or expired) before `before`, and the record of their use."""
        with self._db.transaction() as conn:
            conn.execute(
                "DELETE FROM approval_uses WHERE approval_id IN "
                "(SELECT id FROM approvals WHERE state != 'pending' AND decided_at < ?)",
                (_iso(before),),
            )
            cursor = conn.execute(
                "DELETE FROM approvals WHERE state != 'pending' AND decided_at < ?", (_iso(before),)
            )
        return int(cursor.rowcount)

    def list(self, state: ApprovalState | None = None, limit: int = 100) -> list[ApprovalItem]:
        """Newest first; pending items past their timeout are expired before they are listed."""
        self.expire_due()
        if state is None:
            rows = self._db.query("SELECT * FROM approvals ORDER BY created_at DESC LIMIT ?", (limit,))
        else:
            rows = self._db.query(
                "SELECT * FROM approvals WHERE state = ? ORDER BY created_at DESC LIMIT ?", (state, limit)
            )
        return [_item(row) for row in rows]

    def decide(self, approval_id: str, decision: Decision, reason: str = "") -> ApprovalItem:
        item = self.get(approval_id)
        if item.state != "pending":
            raise AlreadyDecided(f"approval {approval_id} is already {item.state}")
        return self._settle(item, decision, reason)

    def expire_due(self) -> int:
        rows = self._db.query(
            "SELECT * FROM approvals WHERE state = 'pending' AND expires_at <= ?", (_iso(utcnow()),)
        )
        for row in rows:
            self._expire_if_due(_item(row))
        return len(rows)

    def _expire_if_due(self, item: ApprovalItem) -> ApprovalItem:
        if item.state != "pending" or item.expires_at > utcnow():
            return item
        return self._settle(item, "expired", "no decision before the timeout: denied")

    def _settle(self, item: ApprovalItem, state: ApprovalState, reason: str) -> ApprovalItem:
        now = utcnow()
        cursor = self._db.execute(
            "UPDATE approvals SET state = ?, reason = ?, decided_at = ? WHERE id = ? AND state = 'pending'",
            (state, reason, _iso(now), item.id),
        )
        if cursor.rowcount != 1:
            current = self.get(item.id)
            if state != "expired":
                raise AlreadyDecided(f"approval {item.id} is already {current.state}")
            return current
        settled = item.model_copy(update={"state": state, "reason": reason, "decided_at": now})
        self._events.publish(
            APPROVAL_DECIDED, item.agent, id=item.id, tool=item.tool, state=state, reason=reason
        )
        return settled


def _item(row: Any) -> ApprovalItem:
    return ApprovalItem(
        id=row["id"],
        agent=row["agent"],
        tool=row["tool"],
        arguments=json.loads(row["arguments"]),
        item_id=row["item_id"],
        run_id=row["run_id"],
        state=row["state"],
        reason=row["reason"],
        created_at=row["created_at"],
        expires_at=row["expires_at"],
        decided_at=row["decided_at"],
    )
