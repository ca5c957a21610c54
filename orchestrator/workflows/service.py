"""The workflow engine's loop in the orchestrator.

A full pass over every running run when it starts (which is how a restarted orchestrator resumes
them) and then every `FULL_PASS_S` (step and run timeouts, approvals that expired). Between
those, only the runs something happened to are passed over: a step's item answered, an approval
decided, a run started or retried, a retry's wait over. Passes run on a worker thread: they are
database work, and the event loop serves the API meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from agent_runtime.protocol import utcnow
from orchestrator.approvals.store import APPROVAL_DECIDED
from orchestrator.broker import Inbox
from orchestrator.events import Event, EventBus
from orchestrator.workflows.engine import RUN_FINISHED, RUN_STARTED, WorkflowEngine
from orchestrator.workflows.spans import RunSpans
from orchestrator.workflows.triggers import WorkflowTriggers

log = logging.getLogger(__name__)

TICK_S = 1.0
FULL_PASS_S = 10.0
# Longest one watch on an item's answer lasts before it is renewed (the item's own timeout is
# the engine's to apply).
WATCH_S = 300.0
PRUNE_EVERY_S = 3600.0


class WorkflowService:
    def __init__(
        self,
        engine: WorkflowEngine,
        triggers: WorkflowTriggers,
        inbox: Inbox,
        events: EventBus,
        keep_for: Callable[[], timedelta],
        tick_s: float = TICK_S,
        spans: RunSpans | None = None,
    ) -> None:
        self.engine = engine
        self._triggers = triggers
        self._inbox = inbox
        self._events = events
        self._keep_for = keep_for
        self._tick_s = tick_s
        self._spans = spans
        self._wake = asyncio.Event()
        self._dirty: set[str] = set()
        self._watched: dict[str, asyncio.Task[None]] = {}
        self._pruned_at: datetime | None = None
        self._full_pass_at = 0.0

    async def run(self) -> None:
        events = self._events.subscribe()
        listener = asyncio.create_task(self._listen(events), name="workflow-events")
        try:
            while True:
                self._wake.clear()
                await asyncio.to_thread(self._pass)
                self._watch_items()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self._tick_s)
        finally:
            listener.cancel()
            self._events.unsubscribe(events)
            for task in self._watched.values():
                task.cancel()
            if self._spans is not None:
                await asyncio.to_thread(self._spans.close)

    def _pass(self) -> None:
        try:
            self._triggers.start_due()
            if time.monotonic() - self._full_pass_at >= FULL_PASS_S:
                self._full_pass_at = time.monotonic()
                self._dirty.clear()
                self.engine.advance_all()
            else:
                runs = self._dirty | set(self.engine.store.retries_due(utcnow()))
                self._dirty -= runs
                for run_id in sorted(runs):
                    self.engine.advance(run_id)
        except Exception:  # one broken pass must not end the loop that resumes every run
            log.exception("workflow pass failed; the next pass tries again")
        self._prune()

    def _mark(self, run_id: str) -> None:
        self._dirty.add(run_id)
        self._wake.set()

    def _watch_items(self) -> None:
        """Pass over a run as soon as an item one of its steps waits on is answered."""
        out = dict((item_id, run_id) for run_id, item_id in self.engine.store.items_out())
        for item_id in list(self._watched):
            if item_id not in out or self._watched[item_id].done():
                self._watched.pop(item_id).cancel()
        for item_id in out.keys() - self._watched.keys():
            self._watched[item_id] = asyncio.create_task(
                self._watch(item_id, out[item_id]), name=f"workflow-item-{item_id}"
            )

    async def _watch(self, item_id: str, run_id: str) -> None:
        if await self._inbox.wait_result(item_id, WATCH_S) is not None:
            self._mark(run_id)

    async def _listen(self, events: asyncio.Queue[Event]) -> None:
        while True:
            event = await events.get()
            try:
                self._on_event(event)
            except Exception:  # a run that cannot start must not stop the listening
                log.exception("workflow handling of %s failed", event.type)

    def _on_event(self, event: Event) -> None:
        if event.type == RUN_STARTED:
            self._mark(str(event.data.get("run_id")))
        elif event.type == APPROVAL_DECIDED:
            run_id = self.engine.store.run_waiting_on(str(event.data.get("id")))
            if run_id is not None:
                self._mark(run_id)
        elif event.type == RUN_FINISHED and self._spans is not None:
            finished = self.engine.store.get(str(event.data.get("run_id")))
            if finished is not None:
                self._spans.write(finished)
        self._triggers.start_for(event)

    def _prune(self) -> None:
        now = utcnow()
        if self._pruned_at is not None and (now - self._pruned_at).total_seconds() < PRUNE_EVERY_S:
            return
        self._pruned_at = now
        self.engine.store.prune(now - self._keep_for())
