"""Typed events: stored in SQLite and fanned out to live subscribers (SSE, dashboard, CLI)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from agent_runtime.protocol import utcnow
from orchestrator.state.db import Database, TextRewrite, max_id, rewrite_agent_texts, safe_query
from orchestrator.state.redaction import NO_REDACTION, Redaction

SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    type TEXT NOT NULL,
    agent TEXT,
    at TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_agent ON events(agent, seq);
"""


# Whatever publishes it, an event's data is stored up to this size; past it only a summary is
# kept, so no event (an agent's included) can grow state.db by more than this.
MAX_EVENT_DATA_BYTES = 64 * 1024
SUMMARY_KEYS = 20
# What a row costs besides its text (key, agent, time, index entries), for retention by size.
ROW_OVERHEAD_BYTES = 96


class EventType(StrEnum):
    AGENT_STARTED = "agent.started"
    AGENT_CREATED = "agent.created"
    """Its unit was made and not started: it sleeps until it has work."""
    AGENT_STOPPED = "agent.stopped"
    AGENT_RESTARTED = "agent.restarted"
    AGENT_UNHEALTHY = "agent.unhealthy"
    AGENT_DISK_FULL = "agent.disk_full"
    """Its /data has no room left: it answers but keeps no record; once per episode."""
    AGENT_DISK_FREED = "agent.disk_freed"
    AGENT_HIBERNATED = "agent.hibernated"
    AGENT_QUEUED = "agent.queued"
    """It has work and waits for a place among the awake agents (`max_awake`)."""
    HEARTBEAT_RUN = "heartbeat.run"
    HEARTBEAT_IDLE = "heartbeat.idle"
    HEARTBEAT_SKIPPED = "heartbeat.skipped"
    MESSAGE_SENT = "message.sent"
    MESSAGE_DELIVERED = "message.delivered"
    MESSAGE_FAILED = "message.failed"
    MESSAGE_DEAD_LETTERED = "message.dead_lettered"
    BUDGET_WARNING = "budget.warning"
    BUDGET_EXHAUSTED = "budget.exhausted"
    MODEL_COOLING = "model.cooling"
    """A model failed after its retries: the fallback chains skip it for a while (docs/gateway.md)."""
    WORKSPACE_CHANGED = "workspace.changed"
    WORKSPACE_REFUSED = "workspace.refused"
    COMPACTION_DONE = "compaction.done"
    RUN_FINISHED = "run.finished"
    FLEET_APPLIED = "fleet.applied"
    AGENT_UPDATED = "agent.updated"
    AGENT_PAUSED = "agent.paused"
    WORKSPACE_SEED_CONFLICT = "workspace.seed_conflict"
    AGENT_RESUMED = "agent.resumed"
    AGENT_REPORTED = "agent.reported"
    STATE_MIGRATED = "state.migrated"
    STATE_DAMAGED = "orchestrator.state_damaged"
    """state.db met damage while running: writes are refused until it is restored."""
    LIMIT_EXCEEDED = "limit.exceeded"


class Event(BaseModel):
    seq: int = 0
    type: str
    agent: str | None = None
    at: datetime = Field(default_factory=utcnow)
    data: dict[str, Any] = Field(default_factory=dict)


class EventBus:
    """Publish from any thread; subscribe from the asyncio loop that serves HTTP."""

    def __init__(self, db: Database) -> None:
        self._db = db
        db.ensure_schema(SCHEMA)
        self._subscribers: set[asyncio.Queue[Event]] = set()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.redaction: Redaction = NO_REDACTION
        """The secret values no event may hold: taken out of every string of its data before it
        is capped, stored and fanned out. Handed over by whoever knows the secrets
        (`use_redaction`), so that publishing asks nobody."""

    def use_redaction(self, redaction: Redaction) -> None:
        self.redaction = redaction

    def bind_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def rewrite_texts(
        self, agent: str, probe: str, rewrite: TextRewrite, types: Sequence[str] | None = None
    ) -> int:
        """Rewrite what the agent's rows say (a forgotten fact leaves them), in events of these
        `types` only when given; rows changed."""
        kinds = ("type", types) if types is not None else None
        return rewrite_agent_texts(self._db, "events", ("data",), agent, probe, rewrite, kinds=kinds)

    def publish(self, type: EventType | str, agent: str | None = None, **data: Any) -> Event:
        return self.publish_data(type, agent, data)

    def publish_data(self, type: EventType | str, agent: str | None, data: dict[str, Any]) -> Event:
        """Publish data given whole: its keys may be any, `agent` and `type` included."""
        encoded, data = capped_event_data(self.redaction.redact_data(data))
        event = Event(type=str(type), agent=agent, data=data)
        cursor = self._db.execute(
            "INSERT INTO events(type, agent, at, data) VALUES (?, ?, ?, ?)",
            (event.type, agent, event.at.isoformat(), encoded),
        )
        event.seq = int(cursor.lastrowid or 0)
        self._fan_out(event)
        return event

    def publish_live(self, type: EventType | str, agent: str | None, data: dict[str, Any]) -> Event:
        """Send an event to the live subscribers only: for when state.db cannot store it."""
        _encoded, data = capped_event_data(data)
        event = Event(type=str(type), agent=agent, data=data)
        self._fan_out(event)
        return event

    def _fan_out(self, event: Event) -> None:
        with self._lock:
            queues = list(self._subscribers)
        if not queues or self._loop is None or self._loop.is_closed():
            return
        for queue in queues:
            self._loop.call_soon_threadsafe(_offer, queue, event)

    def subscribe(self) -> asyncio.Queue[Event]:
        queue: asyncio.Queue[Event] = asyncio.Queue(maxsize=1000)
        with self._lock:
            self._subscribers.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[Event]) -> None:
        with self._lock:
            self._subscribers.discard(queue)

    def recent(
        self, limit: int = 100, agent: str | None = None, after: int = 0, types: list[str] | None = None
    ) -> list[Event]:
        """`types`: each a type or a family prefix (`budget` for budget.*)."""
        sql = "SELECT * FROM events WHERE seq > ?" + (" AND agent = ?" if agent else "")
        params: list[Any] = [after] + ([agent] if agent else [])
        if types:
            sql += " AND (" + " OR ".join("type = ? OR substr(type, 1, ?) = ?" for _ in types) + ")"
            for kind in types:
                params += [kind, len(kind) + 1, kind + "."]
        rows = self._db.query(sql + " ORDER BY seq DESC LIMIT ?", [*params, limit])
        return [
            Event(seq=r["seq"], type=r["type"], agent=r["agent"], at=r["at"], data=json.loads(r["data"]))
            for r in reversed(rows)
        ]

    def prune(self, before: datetime, size_per_agent: int) -> int:
        """Drop events older than `before`, then each agent's oldest past `size_per_agent` bytes
        (the orchestrator's own events count as one more agent). The number dropped."""
        with self._db.transaction() as conn:
            # Events are stored in time order: the first one young enough, found in key order,
            # marks where the old ones end (no scan of the whole table, no index on `at`).
            aged = conn.execute(
                "DELETE FROM events WHERE seq < COALESCE((SELECT seq FROM events WHERE at >= ?"
                " ORDER BY seq LIMIT 1), (SELECT MAX(seq) + 1 FROM events))",
                (before.isoformat(),),
            ).rowcount
            sized = conn.execute(
                "DELETE FROM events WHERE seq IN (SELECT seq FROM (SELECT seq, SUM("
                f"length(data) + length(type) + {ROW_OVERHEAD_BYTES}) OVER (PARTITION BY agent"
                " ORDER BY seq DESC ROWS UNBOUNDED PRECEDING) AS kept FROM events) WHERE kept > ?)",
                (size_per_agent,),
            ).rowcount
        return int(aged) + int(sized)

    def stored_bytes(self) -> dict[str | None, int]:
        """What the events of each agent take, counted as `prune` counts it."""
        rows = self._db.query(
            f"SELECT agent, SUM(length(data) + length(type) + {ROW_OVERHEAD_BYTES}) AS size"
            " FROM events GROUP BY agent"
        )
        return {row["agent"]: int(row["size"]) for row in rows}


def capped_event_data(data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The data as stored (JSON) and as published: itself, or a summary when it is too big."""
    encoded = json.dumps(data, default=str)
    size = len(encoded.encode())
    if size <= MAX_EVENT_DATA_BYTES:
        return encoded, data
    summary: dict[str, Any] = {
        "truncated": True,
        "bytes": size,
        "keys": [str(key)[:64] for key in list(data)[:SUMMARY_KEYS]],
    }
    return json.dumps(summary), summary


def _offer(queue: asyncio.Queue[Event], event: Event) -> None:
    if queue.full():
        # A slow subscriber loses its oldest event rather than stalling publishers.
        queue.get_nowait()
    queue.put_nowait(event)


# ------------------------------------------------------------------------------ running totals
# Read at scrape time by the metrics: each reader keeps totals up to a row id it has fully
# counted and reads only the rows after it. A table or column that does not exist (yet) reads
# as empty.


class EventReader:
    """Counts of selected event types in the `events` table by (agent, type)."""

    def __init__(self, types: Iterable[str]) -> None:
        self._types = sorted(set(types))
        self._lock = threading.Lock()
        self._upto = 0
        self._counts: Counter[tuple[str, str]] = Counter()

    def read(self, db: Database) -> Counter[tuple[str, str]]:
        marks = ", ".join("?" for _ in self._types)
        with self._lock:
            top = max_id(db, "events", "seq")
            for row in safe_query(
                db,
                "SELECT agent, type, COUNT(*) AS n FROM events WHERE seq > ? AND seq <= ? "
                f"AND type IN ({marks}) AND agent IS NOT NULL GROUP BY agent, type",
                [self._upto, top, *self._types],
            ):
                self._counts[(str(row["agent"]), str(row["type"]))] += int(row["n"])
            self._upto = max(self._upto, top)
            return Counter(self._counts)


def new_events_of(db: Database, after: int, types: Iterable[str]) -> tuple[list[Event], int]:
    """Stored events of agents with seq > after and a type in `types`, oldest first, and the seq
    read up to (pass it back as `after` next time)."""
    wanted = sorted(set(types))
    marks = ", ".join("?" for _ in wanted)
    top = max_id(db, "events", "seq")
    rows = safe_query(
        db,
        "SELECT seq, type, agent, at, data FROM events WHERE seq > ? AND seq <= ? "
        f"AND type IN ({marks}) AND agent IS NOT NULL ORDER BY seq ASC",
        [after, top, *wanted],
    )
    found = [
        Event(seq=r["seq"], type=r["type"], agent=r["agent"], at=r["at"], data=json.loads(r["data"]))
        for r in rows
    ]
    return found, max(after, top)


def stored_events(db: Database, after: int, agent: str | None, limit: int) -> list[Event]:
    """Stored events with seq > after, oldest first (EventBus.recent returns the newest ones)."""
    sql = "SELECT seq, type, agent, at, data FROM events WHERE seq > ?"
    params: list[Any] = [after]
    if agent:
        sql += " AND agent = ?"
        params.append(agent)
    rows = db.query(sql + " ORDER BY seq ASC LIMIT ?", [*params, limit])
    return [
        Event(seq=r["seq"], type=r["type"], agent=r["agent"], at=r["at"], data=json.loads(r["data"]))
        for r in rows
    ]


def last_event_of(db: Database, agent: str, types: Iterable[str]) -> Event | None:
    """The agent's newest stored event of one of these types."""
    wanted = sorted(set(types))
    marks = ", ".join("?" for _ in wanted)
    row = db.query_one(
        f"SELECT seq, type, agent, at, data FROM events WHERE agent = ? AND type IN ({marks}) "
        "ORDER BY seq DESC LIMIT 1",
        [agent, *wanted],
    )
    if row is None:
        return None
    return Event(
        seq=row["seq"], type=row["type"], agent=row["agent"], at=row["at"], data=json.loads(row["data"])
    )


def latest_seq(db: Database) -> int:
    """The newest stored event's seq (0 when there is none)."""
    row = db.query_one("SELECT COALESCE(MAX(seq), 0) AS seq FROM events")
    return int(row["seq"]) if row else 0
