"""Durable per-agent inboxes: the one object producers, agents and readers hold.

The concerns live in their own modules and meet here: the durable queue and its claims
(`queue`), dead letters (`dead_letters`), the coroutines waiting for a result (`results`), live
progress streams (`streams`), read views (`views`, inherited) and retention (`upkeep`).

Every producer (peer asks and tells, operator messages, chats, hooks, heartbeats, workflow
steps) queues an item through `submit`, the one entry to the queue.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from typing import Any

from agent_runtime.protocol import HeartbeatReason, InboxItem, ItemKind, WorkResult
from orchestrator.broker.dead_letters import DeadLetter, DeadLetters
from orchestrator.broker.items import NewItem
from orchestrator.broker.queue import ArrivalHook, DurableQueue
from orchestrator.broker.results import ResultWaiters
from orchestrator.broker.streams import ProgressStreams
from orchestrator.broker.upkeep import prune_finished, rewrite_texts
from orchestrator.broker.views import InboxViews
from orchestrator.broker.wakeups import Arrivals, ServingLoop
from orchestrator.events import EventBus
from orchestrator.fleet.view import FleetView
from orchestrator.lifecycle import Controls
from orchestrator.state.db import Database, TextRewrite


class Inbox(InboxViews):
    """Producers submit, agents claim and acknowledge, waiters and watchers follow an item; the
    read views are inherited."""

    def __init__(self, db: Database, events: EventBus, controls: Controls, fleet: FleetView) -> None:
        super().__init__(db)
        self._serving = ServingLoop()
        self._arrivals = Arrivals(self._serving)
        self._results = ResultWaiters(self._serving, self.result)
        self._streams = ProgressStreams(self._serving, lambda item_id: self.result(item_id) is not None)
        self._queue = DurableQueue(
            db, events, controls, fleet, views=self, arrivals=self._arrivals, finished=self._finished
        )
        self._dead = DeadLetters(db, self._queue, self)

    # --- settings the composition root fills in --------------------------------------------

    @property
    def on_put(self) -> list[ArrivalHook]:
        """Called with (agent, item) when work is queued for an agent, e.g. to wake it."""
        return self._queue.on_put

    @on_put.setter
    def on_put(self, hooks: list[ArrivalHook]) -> None:
        self._queue.on_put = hooks

    @property
    def dead_letter_cause(self) -> Callable[[str], str | None]:
        """What may keep an agent from answering (its full disk), added to its dead letters' reason."""
        return self._queue.dead_letter_cause

    @dead_letter_cause.setter
    def dead_letter_cause(self, cause: Callable[[str], str | None]) -> None:
        self._queue.dead_letter_cause = cause

    @property
    def mask(self) -> Callable[[str], str]:
        """Applied to the text of an operator's, a person's or a hook's item before its row is
        first written (no credential of theirs ever reaches state.db or its WAL), and to an
        operator's message's answer once delivered (the waiting operator gets it as it came)."""
        return self._queue.mask

    @mask.setter
    def mask(self, mask: Callable[[str], str]) -> None:
        self._queue.mask = mask

    def bind_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        self._serving.loop = loop

    def close(self) -> None:
        """Release every waiting long-poll at once (the orchestrator is shutting down)."""
        self._arrivals.close()

    # --- producing -------------------------------------------------------------------------

    def submit(
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
        """Queue an item for `agent`: the one entry for every producer. With an idempotency key
        already used for this agent, the item queued with it. See `NewItem` for the fields."""
        new = NewItem(
            agent=agent,
            kind=kind,
            sender=sender,
            text=text,
            operation=operation,
            input=input,
            correlation_id=correlation_id,
            hop=hop,
            trace=trace or [],
            reasons=reasons or [],
            priority=priority,
            ttl_s=ttl_s,
            idempotency_key=idempotency_key,
            principal=principal,
            item_id=item_id,
            payer=payer,
        )
        return self._queue.put(new)

    # --- consuming -------------------------------------------------------------------------

    async def next(self, agent: str, wait_s: float) -> InboxItem | None:
        """Claim the most urgent queued item, waiting up to wait_s for one to arrive."""
        return await self._queue.next(agent, wait_s)

    def requeue_claimed(self, agent: str) -> int:
        return self._queue.requeue_claimed(agent)

    def requeue_stale_claims(self, agent: str, older_than_s: float) -> int:
        return self._queue.requeue_stale_claims(agent, older_than_s)

    def release(self, item_id: str) -> None:
        self._queue.release(item_id)

    def complete(self, agent: str, item_id: str, result: WorkResult) -> bool:
        return self._queue.complete(agent, item_id, result)

    def fail(self, item_id: str, error: str) -> None:
        self._queue.fail(item_id, error)

    def wake(self, agent: str) -> None:
        """Let the agent's waiting long-poll look again (it was resumed, say)."""
        self._arrivals.signal(agent)

    # --- dead letters ----------------------------------------------------------------------

    def dead_letters(self, agent: str | None = None) -> list[DeadLetter]:
        return self._dead.list(agent)

    def dead_count(self, agent: str) -> int:
        return self._dead.count(agent)

    def retry(self, agent: str, item_id: str) -> bool:
        return self._dead.retry(agent, item_id)

    def drop(self, agent: str, item_id: str) -> bool:
        return self._dead.drop(agent, item_id)

    # --- results and progress --------------------------------------------------------------

    async def wait_result(self, item_id: str, timeout_s: float) -> WorkResult | None:
        return await self._results.wait(item_id, timeout_s)

    def add_progress(self, item_id: str, delta: str) -> None:
        self._streams.add(item_id, delta)

    def stream(self, item_id: str, timeout_s: float = 600.0) -> AsyncIterator[str]:
        return self._streams.stream(item_id, timeout_s)

    def _finished(self, item_id: str, result: WorkResult) -> None:
        self._results.resolve(item_id, result)
        self._streams.end(item_id)

    # --- upkeep ----------------------------------------------------------------------------

    def prune_finished(self, before: datetime, size_per_agent: int) -> int:
        return prune_finished(self._db, before, size_per_agent)

    def rewrite_texts(self, agent: str, probe: str, rewrite: TextRewrite) -> int:
        return rewrite_texts(self._db, agent, probe, rewrite)
