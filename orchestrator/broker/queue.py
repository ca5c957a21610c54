"""The durable queue of each agent's inbox and its claims.

Delivery is at-least-once: `next` claims an item, `complete` acknowledges it. An item claimed
by an agent process that then died is handed out again (`requeue_claimed`, called when an
agent starts), with its attempt count raised so the agent can recognise a redelivery.

An item handed out `limits.delivery_attempts` times without an answer is a poison item (it
crashes its agent, or cannot reach it): instead of a further delivery it is set aside as a dead
letter (state `dead`, an event, a failed result for whoever waits on it) until the operator
retries or drops it (`dead_letters`).

Producers do not call `put`: they submit through the `Inbox` facade, the one entry to the queue.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from agent_runtime.protocol import InboxItem, ItemKind, WorkResult, utcnow
from orchestrator.broker.items import SCHEMA, NewItem, default_principal, new_item_id
from orchestrator.broker.views import InboxViews
from orchestrator.broker.wakeups import Arrivals
from orchestrator.events import EventBus, EventType
from orchestrator.fleet.view import FleetView
from orchestrator.lifecycle import Controls
from orchestrator.state.db import Database

# What people send (the operator, paired people, hooks) may carry a credential pasted by mistake.
MASKED_ON_ARRIVAL = frozenset({ItemKind.OPERATOR_MESSAGE, ItemKind.HOOK})

ArrivalHook = Callable[[str, InboxItem], None]
FinishedHook = Callable[[str, WorkResult], None]


class DurableQueue:
    """Queued and claimed items in state.db; `finished` is told each result that lands."""

    def __init__(
        self,
        db: Database,
        events: EventBus,
        controls: Controls,
        fleet: FleetView,
        *,
        views: InboxViews,
        arrivals: Arrivals,
        finished: FinishedHook,
    ) -> None:
        self._db = db
        self._db.ensure_schema(SCHEMA)
        self._events = events
        self._controls = controls
        self._fleet = fleet
        self._views = views
        self._arrivals = arrivals
        self._finished = finished
        self.on_put: list[ArrivalHook] = []
        self.dead_letter_cause: Callable[[str], str | None] = _no_cause
        self.mask: Callable[[str], str] = _unmasked

    # --- producing -------------------------------------------------------------------------

    def put(self, new: NewItem) -> InboxItem:
        """Queue an item. With an idempotency key already used for this agent, return that item."""
        agent, key = new.agent, new.idempotency_key
        if key and (existing := self._views.by_key(agent, key)):
            return existing
        now = utcnow()
        item_id = new.item_id or new_item_id()
        expires = (now + timedelta(seconds=new.ttl_s)).isoformat() if new.ttl_s else None
        text, input = new.text, new.input
        if new.kind in MASKED_ON_ARRIVAL:
            text = self.mask(text)
            input = _masked_input(input, self.mask)
        self._db.execute(
            "INSERT INTO inbox(id, agent, kind, sender, principal, text, operation, input, correlation_id,"
            " hop, trace, reasons, priority, idempotency_key, created_at, expires_at, payer)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                item_id,
                agent,
                new.kind.value,
                new.sender,
                new.principal or default_principal(new.kind, new.sender),
                text,
                new.operation,
                json.dumps(input) if input is not None else None,
                new.correlation_id,
                new.hop,
                json.dumps(new.trace),
                json.dumps([r.model_dump() for r in new.reasons]),
                new.priority,
                key,
                now.isoformat(),
                expires,
                new.payer,
            ),
        )
        item = self._views.get(item_id)
        assert item is not None
        self.arrived(agent, item)
        return item

    def arrived(self, agent: str, item: InboxItem) -> None:
        """Work is waiting for the agent: its long-poll looks again, and the hooks hear of it."""
        self._arrivals.signal(agent)
        for hook in list(self.on_put):
            hook(agent, item)

    # --- consuming -------------------------------------------------------------------------

    async def next(self, agent: str, wait_s: float) -> InboxItem | None:
        """Claim the most urgent queued item, waiting up to wait_s for one to arrive."""
        deadline = asyncio.get_running_loop().time() + wait_s
        while True:
            arrival = self._arrivals.event(agent)
            arrival.clear()
            item = self.claim(agent)
            if item is not None:
                return item
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0 or self._arrivals.closed:
                return None
            try:
                await asyncio.wait_for(arrival.wait(), timeout=remaining)
            except TimeoutError:
                return None

    def claim(self, agent: str) -> InboxItem | None:
        """The most urgent queued item, now claimed; expired and poison items are set aside first."""
        if self._controls.is_held(agent):
            return None  # paused or stopped by the operator: items wait in the inbox
        now = utcnow().isoformat()
        allowed = self._fleet.current().config.limits.delivery_attempts
        cause = self.dead_letter_cause(agent)
        with self._db.transaction() as conn:
            conn.execute(
                "UPDATE inbox SET state = 'expired', finished_at = ? WHERE agent = ? AND state = 'queued'"
                " AND expires_at IS NOT NULL AND expires_at < ?",
                (now, agent, now),
            )
            poisoned = _dead_letter_in(conn, agent, allowed, now, cause)
            row = conn.execute(
                "SELECT id FROM inbox WHERE agent = ? AND state = 'queued'"
                " ORDER BY priority DESC, created_at LIMIT 1",
                (agent,),
            ).fetchone()
            if row is not None:
                conn.execute(
                    "UPDATE inbox SET state = 'claimed', claimed_at = ?, attempt = attempt + 1 WHERE id = ?",
                    (now, row["id"]),
                )
        self._announce_dead(agent, poisoned, allowed, cause)
        return self._views.get(row["id"]) if row is not None else None

    def _announce_dead(
        self, agent: str, poisoned: list[tuple[str, int]], allowed: int, cause: str | None
    ) -> None:
        for item_id, attempts in poisoned:
            error = f"dead-lettered after {attempts} deliveries without an answer (limits.delivery_attempts = {allowed})"
            if cause is not None:
                error += f"; {cause}"
            self._finished(item_id, WorkResult(ok=False, error=error))
            self._events.publish(
                EventType.MESSAGE_DEAD_LETTERED, agent=agent, item_id=item_id, attempts=attempts, error=error
            )

    # --- handing out again -----------------------------------------------------------------

    def requeue_claimed(self, agent: str) -> int:
        """Hand out again what a previous incarnation of the agent claimed but never acknowledged."""
        cursor = self._db.execute(
            "UPDATE inbox SET state = 'queued' WHERE agent = ? AND state = 'claimed'", (agent,)
        )
        if cursor.rowcount:
            self._arrivals.signal(agent)
        return cursor.rowcount

    def requeue_stale_claims(self, agent: str, older_than_s: float) -> int:
        """Hand out again items claimed long ago by an agent that says it is idle.

        A long-poll whose connection died can still claim an item on the server side; the agent
        never sees it, and its next idle check-in releases it.
        """
        cutoff = (utcnow() - timedelta(seconds=older_than_s)).isoformat()
        cursor = self._db.execute(
            "UPDATE inbox SET state = 'queued' WHERE agent = ? AND state = 'claimed' AND claimed_at < ?",
            (agent, cutoff),
        )
        if cursor.rowcount:
            self._arrivals.signal(agent)
        return cursor.rowcount

    def release(self, item_id: str) -> None:
        """Put a claimed item back in the queue (its claimant went away before receiving it)."""
        owner = self._views.owner(item_id)
        self._db.execute(
            "UPDATE inbox SET state = 'queued', attempt = MAX(0, attempt - 1) WHERE id = ? AND state = 'claimed'",
            (item_id,),
        )
        if owner is not None:
            self._arrivals.signal(owner)

    # --- finishing -------------------------------------------------------------------------

    def complete(self, agent: str, item_id: str, result: WorkResult) -> bool:
        """Acknowledge an item. Returns False when it is unknown or not this agent's."""
        state = "done" if result.ok else "failed"
        with self._db.transaction() as conn:
            updated = conn.execute(
                "UPDATE inbox SET state = ?, finished_at = ?, result = ? WHERE id = ? AND agent = ?"
                " AND state IN ('claimed', 'queued') RETURNING kind",
                (state, utcnow().isoformat(), result.model_dump_json(), item_id, agent),
            ).fetchone()
            if updated is not None and updated["kind"] == ItemKind.OPERATOR_MESSAGE.value:
                self.mask_delivered(conn, item_id)
        if updated is None:
            return self._views.owner(item_id) == agent
        self._finished(item_id, result)
        return True

    def fail(self, item_id: str, error: str) -> None:
        """Close an item the agent will never answer (expired, cancelled, refused)."""
        result = WorkResult(ok=False, error=error)
        with self._db.transaction() as conn:
            cursor = conn.execute(
                "UPDATE inbox SET state = 'failed', finished_at = ?, result = ? WHERE id = ?"
                " AND state IN ('queued', 'claimed')",
                (utcnow().isoformat(), result.model_dump_json(), item_id),
            )
            if cursor.rowcount:
                self.mask_delivered(conn, item_id)
        self._finished(item_id, result)

    def mask_delivered(self, conn: Any, item_id: str) -> None:
        """An operator's message keeps no credential once it is finished (answered, failed or
        given up)."""
        row = conn.execute(
            "SELECT text, result FROM inbox WHERE id = ? AND kind = ?",
            (item_id, ItemKind.OPERATOR_MESSAGE.value),
        ).fetchone()
        if row is None:
            return
        result = WorkResult.model_validate_json(row["result"]) if row["result"] else None
        if result is not None:
            result = result.model_copy(
                update={
                    "text": self.mask(result.text),
                    "error": self.mask(result.error) if result.error else None,
                }
            )
        conn.execute(
            "UPDATE inbox SET text = ?, result = ? WHERE id = ?",
            (self.mask(row["text"]), result.model_dump_json() if result else None, item_id),
        )


def _dead_letter_in(
    conn: Any, agent: str, allowed: int, now: str, cause: str | None = None
) -> list[tuple[str, int]]:
    """Within the claim's transaction: set aside queued items already handed out `allowed` times."""
    rows = conn.execute(
        "SELECT id, attempt FROM inbox WHERE agent = ? AND state = 'queued' AND attempt >= ?",
        (agent, allowed),
    ).fetchall()
    for row in rows:
        error = f"dead-lettered after {row['attempt']} deliveries without an answer"
        failure = WorkResult(ok=False, error=f"{error}; {cause}" if cause is not None else error)
        conn.execute(
            "UPDATE inbox SET state = 'dead', finished_at = ?, result = ? WHERE id = ?",
            (now, failure.model_dump_json(), row["id"]),
        )
    return [(row["id"], int(row["attempt"])) for row in rows]


def _masked_input(value: Any, mask: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, dict):
        return {key: _masked_input(item, mask) for key, item in value.items()}
    if isinstance(value, list):
        return [_masked_input(item, mask) for item in value]
    return value


def _unmasked(text: str) -> str:
    return text


def _no_cause(agent: str) -> str | None:
    return None
