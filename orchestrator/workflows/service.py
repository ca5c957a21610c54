"""The workflow engine's loop in the orchestrator: a pass over the running runs at start (which is
how a restarted orchestrator resumes them), then again whenever a step's item is answered, an
approval is decided, or a tick passes (retries' waits, timeouts)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from agent_runtime.protocol import utcnow
from orchestrator.approvals.store import APPROVAL_DECIDED
from orchestrator.broker.inbox import Inbox
from orchestrator.events import EventBus
from orchestrator.workflows.engine import RUN_STARTED, WorkflowEngine
from orchestrator.workflows.triggers import WorkflowTriggers

log = logging.getLogger(__name__)

TICK_S = 1.0
# Longest one watch on an item's answer lasts before it is renewed (the item's own timeout is
# the engine's to apply).
WATCH_S = 300.0
PRUNE_EVERY_S = 3600.0
# What the engine itself publishes per step is left out: it would wake the loop for its own work.
WAKING_EVENTS = frozenset({APPROVAL_DECIDED, RUN_STARTED})


class WorkflowService:
    def __init__(
        self,
        engine: WorkflowEngine,
        triggers: WorkflowTriggers,
        inbox: Inbox,
        events: EventBus,
        keep_for: Callable[[], timedelta],
        tick_s: float = TICK_S,
    ) -> None:
        self.engine = engine
        self._triggers = triggers
        self._inbox = inbox
        self._events = events
        self._keep_for = keep_for
        self._tick_s = tick_s
        self._wake = asyncio.Event()
        self._watched: dict[str, asyncio.Task[None]] = {}
        self._pruned_at: datetime | None = None

    def wake(self) -> None:
        self._wake.set()

    async def run(self) -> None:
        events = self._events.subscribe()
        listener = asyncio.create_task(self._listen(events), name="workflow-events")
        try:
            while True:
                self._wake.clear()
                self._pass()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self._tick_s)
        finally:
            listener.cancel()
            self._events.unsubscribe(events)
            for task in self._watched.values():
                task.cancel()

    def _pass(self) -> None:
        try:
            self._triggers.start_due()
            self.engine.advance_all()
        except Exception:  # one broken pass must not end the loop that resumes every run
            log.exception("workflow pass failed; the next pass tries again")
        self._watch_items()
        self._prune()

    def _watch_items(self) -> None:
        """Wake the loop when an item a step waits on is answered, rather than at the next tick."""
        out = {
            step.item_id
            for run_id in self.engine.store.running_ids()
            if (run := self.engine.store.get(run_id)) is not None
            for step in run.steps
            if step.state == "queued" and step.item_id is not None
        }
        for item_id in list(self._watched):
            if item_id not in out or self._watched[item_id].done():
                self._watched.pop(item_id).cancel()
        for item_id in out - set(self._watched):
            self._watched[item_id] = asyncio.create_task(
                self._watch(item_id), name=f"workflow-item-{item_id}"
            )

    async def _watch(self, item_id: str) -> None:
        if await self._inbox.wait_result(item_id, WATCH_S) is not None:
            self._wake.set()

    async def _listen(self, events: asyncio.Queue) -> None:  # type: ignore[type-arg]
        while True:
            event = await events.get()
            if event.type in WAKING_EVENTS:
                self._wake.set()
            try:
                self._triggers.start_for(event)
            except Exception:  # a run that cannot start must not stop the listening
                log.exception("workflow trigger on %s failed", event.type)

    def _prune(self) -> None:
        now = utcnow()
        if self._pruned_at is not None and (now - self._pruned_at).total_seconds() < PRUNE_EVERY_S:
            return
        self._pruned_at = now
        self.engine.store.prune(now - self._keep_for())
