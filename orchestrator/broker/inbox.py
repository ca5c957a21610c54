"""Durable per-agent inboxes in SQLite.

Delivery is at-least-once: `next` claims an item, `complete` acknowledges it. An item claimed
by an agent process that then died is handed out again (`requeue_claimed`, called when an
agent starts), with its attempt count raised so the agent can recognise a redelivery.

An item handed out `limits.delivery_attempts` times without an answer is a poison item (it
crashes its agent, or cannot reach it): instead of a further delivery it is dead-lettered
(state `dead`, an event, a failed result for whoever waits on it) until the operator retries
or drops it.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel

from agent_runtime.protocol import HeartbeatReason, InboxItem, ItemKind, WorkResult, utcnow
from orchestrator.control.holds import Controls
from orchestrator.events import EventBus, EventType
from orchestrator.fleet.view import FleetView
from orchestrator.loop_calls import call_in_loop
from orchestrator.state.db import Database, TextRewrite, columns_of, rewrite_agent_texts, safe_query

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

_DONE = object()
PREVIEW_CHARS = 200
FINISHED_STATES = ("done", "failed", "expired", "dropped")
# What a row costs besides its texts (ids, times, index entries), for retention by size.
ROW_OVERHEAD_BYTES = 256


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


class Inbox:
    def __init__(self, db: Database, events: EventBus, controls: Controls, fleet: FleetView) -> None:
        self._db = db
        self._db.ensure_schema(SCHEMA)
        self._events = events
        self._controls = controls
        self._fleet = fleet
        self._lock = threading.Lock()
        self._arrivals: dict[str, asyncio.Event] = {}
        self._results: dict[str, list[asyncio.Future[WorkResult]]] = {}
        self._progress: dict[str, list[asyncio.Queue[object]]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self.on_put: list[Callable[[str, InboxItem], None]] = []
        """Called with (agent, item) after a new item is queued, e.g. to wake a hibernated agent."""
        self.dead_letter_cause: Callable[[str], str | None] = _no_cause
        """What may keep an agent from answering (its full disk), added to its dead letters' reason."""
        self.mask: Callable[[str], str] = _unmasked
        """Applied to the text of an operator's, a person's or a hook's item before its row is
        first written (no credential of theirs ever reaches state.db or its WAL), and to an
        operator's message's answer once delivered (the waiting operator gets it as it came)."""

    def bind_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def rewrite_texts(self, agent: str, probe: str, rewrite: TextRewrite) -> int:
        """Rewrite what the agent's items and results say (a forgotten fact leaves them)."""
        return rewrite_agent_texts(self._db, "inbox", ("text", "input", "result"), agent, probe, rewrite)

    def close(self) -> None:
        """Release every waiting long-poll at once (the orchestrator is shutting down)."""
        self._closed = True
        with self._lock:
            events = list(self._arrivals.values())
        for event in events:
            call_in_loop(self._loop, event.set)

    # --- producing -------------------------------------------------------------------------

    def put(
        self,
        agent: str,
        kind: ItemKind,
        sender: str,
        text: str = "",
        *,
        operation: str | None = None,
        input: dict[str, Any] | None = None,
        correlation_id: str | None = None,
        hop: int = 0,
        trace: list[str] | None = None,
        reasons: list[HeartbeatReason] | None = None,
        priority: int = 0,
        ttl_s: float | None = None,
        idempotency_key: str | None = None,
        principal: str | None = None,
        item_id: str | None = None,
        payer: str | None = None,
    ) -> InboxItem:
        """Queue an item. With an idempotency key already used for this agent, return that item.
        `principal` says who the item came from (default: told by its kind and sender); `item_id`
        is the id to give it, when its producer had to name it first (`new_item_id`); `payer` is the
        agent whose budget pays for the work on it (who asks pays; None: the recipient's own)."""
        if idempotency_key and (existing := self._by_key(agent, idempotency_key)):
            return existing
        now = utcnow()
        item_id = item_id or new_item_id()
        expires = (now + timedelta(seconds=ttl_s)).isoformat() if ttl_s else None
        if kind in MASKED_ON_ARRIVAL:
            text = self.mask(text)
            input = _masked_input(input, self.mask)
        self._db.execute(
            "INSERT INTO inbox(id, agent, kind, sender, principal, text, operation, input, correlation_id,"
            " hop, trace, reasons, priority, idempotency_key, created_at, expires_at, payer)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                item_id,
                agent,
                kind.value,
                sender,
                principal or default_principal(kind, sender),
                text,
                operation,
                json.dumps(input) if input is not None else None,
                correlation_id,
                hop,
                json.dumps(trace or []),
                json.dumps([r.model_dump() for r in reasons or []]),
                priority,
                idempotency_key,
                now.isoformat(),
                expires,
                payer,
            ),
        )
        self._signal(agent)
        item = self.get(item_id)
        assert item is not None
        for hook in list(self.on_put):
            hook(agent, item)
        return item

    def _by_key(self, agent: str, key: str) -> InboxItem | None:
        row = self._db.query_one("SELECT * FROM inbox WHERE agent = ? AND idempotency_key = ?", (agent, key))
        return _to_item(row) if row else None

    # --- consuming -------------------------------------------------------------------------

    async def next(self, agent: str, wait_s: float) -> InboxItem | None:
        """Claim the most urgent queued item, waiting up to wait_s for one to arrive."""
        deadline = asyncio.get_running_loop().time() + wait_s
        while True:
            arrival = self._arrival_event(agent)
            arrival.clear()
            item = self._claim(agent)
            if item is not None:
                return item
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0 or self._closed:
                return None
            try:
                await asyncio.wait_for(arrival.wait(), timeout=remaining)
            except TimeoutError:
                return None

    def _claim(self, agent: str) -> InboxItem | None:
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
        return self.get(row["id"]) if row is not None else None

    def _announce_dead(
        self, agent: str, poisoned: list[tuple[str, int]], allowed: int, cause: str | None
    ) -> None:
        for item_id, attempts in poisoned:
            error = f"dead-lettered after {attempts} deliveries without an answer (limits.delivery_attempts = {allowed})"
            if cause is not None:
                error += f"; {cause}"
            self._resolve(item_id, WorkResult(ok=False, error=error))
            self._events.publish(
                EventType.MESSAGE_DEAD_LETTERED, agent=agent, item_id=item_id, attempts=attempts, error=error
            )

    # --- dead letters ----------------------------------------------------------------------

    def dead_letters(self, agent: str | None = None) -> list[DeadLetter]:
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

    def dead_count(self, agent: str) -> int:
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
        self._signal(agent)
        item = self.get(item_id)
        for hook in list(self.on_put):
            if item is not None:
                hook(agent, item)
        return True

    def drop(self, agent: str, item_id: str) -> bool:
        """Give a dead letter up for good (it stays in the log as `dropped`). False when there is none."""
        with self._db.transaction() as conn:
            cursor = conn.execute(
                "UPDATE inbox SET state = 'dropped' WHERE id = ? AND agent = ? AND state = 'dead'",
                (item_id, agent),
            )
            if cursor.rowcount:
                self._mask_delivered(conn, item_id)
        return cursor.rowcount > 0

    def requeue_claimed(self, agent: str) -> int:
        """Hand out again what a previous incarnation of the agent claimed but never acknowledged."""
        cursor = self._db.execute(
            "UPDATE inbox SET state = 'queued' WHERE agent = ? AND state = 'claimed'", (agent,)
        )
        if cursor.rowcount:
            self._signal(agent)
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
            self._signal(agent)
        return cursor.rowcount

    def release(self, item_id: str) -> None:
        """Put a claimed item back in the queue (its claimant went away before receiving it)."""
        row = self._db.query_one("SELECT agent FROM inbox WHERE id = ?", (item_id,))
        self._db.execute(
            "UPDATE inbox SET state = 'queued', attempt = MAX(0, attempt - 1) WHERE id = ? AND state = 'claimed'",
            (item_id,),
        )
        if row is not None:
            self._signal(row["agent"])

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
                self._mask_delivered(conn, item_id)
        if updated is None:
            return self.owner(item_id) == agent
        self._resolve(item_id, result)
        return True

    def _mask_delivered(self, conn: Any, item_id: str) -> None:
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
                self._mask_delivered(conn, item_id)
        self._resolve(item_id, result)

    # --- fair share ------------------------------------------------------------------------

    def pending_from(self, agent: str, sender: str) -> int:
        """Unfinished items `sender` has in `agent`'s inbox."""
        row = self._db.query_one(
            "SELECT COUNT(*) AS n FROM inbox WHERE agent = ? AND state IN ('queued', 'claimed') AND sender = ?",
            (agent, sender),
        )
        return int(row["n"]) if row else 0

    def prune_finished(self, before: datetime, size_per_agent: int) -> int:
        """Drop finished items older than `before`, then each agent's oldest past `size_per_agent`
        bytes of finished items. Unfinished items and dead letters stay. The number dropped."""
        states = ", ".join(f"'{state}'" for state in FINISHED_STATES)
        with self._db.transaction() as conn:
            aged = conn.execute(
                f"DELETE FROM inbox WHERE state IN ({states}) AND COALESCE(finished_at, created_at) < ?",
                (before.isoformat(),),
            ).rowcount
            sized = conn.execute(
                f"DELETE FROM inbox WHERE id IN (SELECT id FROM (SELECT id, SUM({_ROW_BYTES}) OVER"
                " (PARTITION BY agent ORDER BY COALESCE(finished_at, created_at) DESC, id"
                f" ROWS UNBOUNDED PRECEDING) AS kept FROM inbox WHERE state IN ({states})) WHERE kept > ?)",
                (size_per_agent,),
            ).rowcount
        return int(aged) + int(sized)

    def stored_bytes(self) -> dict[str, int]:
        """What each agent's inbox takes, finished or not, counted as `prune_finished` counts it."""
        rows = self._db.query(f"SELECT agent, SUM({_ROW_BYTES}) AS size FROM inbox GROUP BY agent")
        return {str(row["agent"]): int(row["size"]) for row in rows}

    # --- results and progress --------------------------------------------------------------

    async def wait_result(self, item_id: str, timeout_s: float) -> WorkResult | None:
        stored = self.result(item_id)
        if stored is not None:
            return stored
        future: asyncio.Future[WorkResult] = asyncio.get_running_loop().create_future()
        with self._lock:
            self._results.setdefault(item_id, []).append(future)
        try:
            # Re-check after registering: the result may have landed in between.
            stored = self.result(item_id)
            if stored is not None:
                return stored
            return await asyncio.wait_for(future, timeout=timeout_s)
        except TimeoutError:
            return None
        finally:
            with self._lock:
                waiters = self._results.get(item_id, [])
                if future in waiters:
                    waiters.remove(future)
                if not waiters:
                    self._results.pop(item_id, None)

    def result(self, item_id: str) -> WorkResult | None:
        row = self._db.query_one("SELECT result FROM inbox WHERE id = ?", (item_id,))
        if row is None or row["result"] is None:
            return None
        return WorkResult.model_validate_json(row["result"])

    def add_progress(self, item_id: str, delta: str) -> None:
        self._to_streams(item_id, delta)

    async def stream(self, item_id: str, timeout_s: float = 600.0) -> AsyncIterator[str]:
        """Reply text as the agent streams it, until the item is done or timeout_s passes."""
        queue: asyncio.Queue[object] = asyncio.Queue()
        with self._lock:
            self._progress.setdefault(item_id, []).append(queue)
        try:
            if self.result(item_id) is not None:
                return
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout_s
            while (remaining := deadline - loop.time()) > 0:
                try:
                    chunk = await asyncio.wait_for(queue.get(), timeout=remaining)
                except TimeoutError:
                    return
                if chunk is _DONE:
                    return
                assert isinstance(chunk, str)
                yield chunk
        finally:
            with self._lock:
                queues = self._progress.get(item_id, [])
                if queue in queues:
                    queues.remove(queue)
                if not queues:
                    self._progress.pop(item_id, None)

    # --- reading ---------------------------------------------------------------------------

    def get(self, item_id: str) -> InboxItem | None:
        row = self._db.query_one("SELECT * FROM inbox WHERE id = ?", (item_id,))
        return _to_item(row) if row else None

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
        return _to_item(row) if row else None

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

    def list(self, agent: str, limit: int = 100, include_done: bool = False) -> list[InboxItem]:
        where = "" if include_done else " AND state IN ('queued', 'claimed')"
        rows = self._db.query(
            f"SELECT * FROM inbox WHERE agent = ?{where} ORDER BY created_at DESC LIMIT ?", (agent, limit)
        )
        return [_to_item(row) for row in rows]

    # --- wake-ups across threads -----------------------------------------------------------

    def wake(self, agent: str) -> None:
        """Let the agent's waiting long-poll look again (it was resumed, say)."""
        self._signal(agent)

    def _arrival_event(self, agent: str) -> asyncio.Event:
        with self._lock:
            return self._arrivals.setdefault(agent, asyncio.Event())

    def _signal(self, agent: str) -> None:
        with self._lock:
            event = self._arrivals.get(agent)
        if event is not None:
            call_in_loop(self._loop, event.set)

    def _resolve(self, item_id: str, result: WorkResult) -> None:
        with self._lock:
            futures = list(self._results.get(item_id, []))
        for future in futures:
            call_in_loop(self._loop, _settle, future, result)
        self._to_streams(item_id, _DONE)

    def _to_streams(self, item_id: str, chunk: object) -> None:
        with self._lock:
            queues = list(self._progress.get(item_id, []))
        for queue in queues:
            call_in_loop(self._loop, queue.put_nowait, chunk)


_ROW_BYTES = (
    "length(text) + COALESCE(length(input), 0) + COALESCE(length(result), 0) + length(trace)"
    f" + length(reasons) + {ROW_OVERHEAD_BYTES}"
)


def _unmasked(text: str) -> str:
    return text


# What people send (the operator, paired people, hooks) may carry a credential pasted by mistake.
MASKED_ON_ARRIVAL = frozenset({ItemKind.OPERATOR_MESSAGE, ItemKind.HOOK})


def _masked_input(value: Any, mask: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, dict):
        return {key: _masked_input(item, mask) for key, item in value.items()}
    if isinstance(value, list):
        return [_masked_input(item, mask) for item in value]
    return value


def _no_cause(agent: str) -> str | None:
    return None


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


def _settle(future: asyncio.Future[WorkResult], result: WorkResult) -> None:
    if not future.done():
        future.set_result(result)


def new_item_id() -> str:
    return uuid.uuid4().hex


def default_principal(kind: ItemKind, sender: str) -> str:
    """Who an item came from when its producer did not say: peers are `agent:NAME`."""
    if kind in (ItemKind.PEER_ASK, ItemKind.PEER_TELL):
        return f"agent:{sender}"
    return sender


def _to_item(row: Any) -> InboxItem:
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
