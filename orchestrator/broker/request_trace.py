"""The path of one request through the fleet, from any id the operator has seen.

An id, or any unique prefix of one, may name a broker message (an ask or a tell), the inbox item
a message was delivered as, or an inbox item that was no message at all (the operator's message,
a heartbeat). The trace starts at the top of the chain: the operator's message when the request
began with one. Each step carries its timings (queued, claimed, finished) and the run record of
the turn that worked it (model, tokens, cost, duration).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from orchestrator.broker.messages import MessageLog, MessageRecord, first_messages_of_item, message_ids_like
from orchestrator.broker.views import ItemTiming, item_ids_like, item_timing
from orchestrator.running_agents.transcripts import TurnRun, turn_run
from orchestrator.scheduler.runs import RunStore, turns_for_items
from orchestrator.state.db import Database

ID_PREFIX = re.compile(r"^[A-Za-z0-9_-]{4,64}$")
CANDIDATES_SHOWN = 10
StepKind = Literal["ask", "tell", "operator_message", "heartbeat", "hook", "peer_ask", "peer_tell"]


class TraceStep(BaseModel):
    id: str = Field(description="The message id, or the inbox item's id for an item that was no message")
    kind: StepKind
    sender: str
    recipient: str
    operation: str | None = None
    item_id: str | None = Field(default=None, description="The inbox item it was delivered as")
    state: str
    error: str | None = None
    depth: int = 0
    created_at: datetime
    claimed_at: datetime | None = None
    finished_at: datetime | None = None
    queued_s: float | None = Field(default=None, description="From sent to claimed by the recipient")
    took_s: float | None = Field(default=None, description="From sent to its outcome")
    run: TurnRun | None = Field(default=None, description="The recipient's turn that worked it")


class RequestTrace(BaseModel):
    asked: str = Field(description="The full id the request was resolved to")
    root_id: str
    path: list[str] = Field(description="The agents the request went through, from the first sender")
    steps: list[TraceStep] = Field(description="Depth first, in the order they were sent")
    took_s: float | None = Field(default=None, description="From the first step to the last outcome")


class TraceNotFound(Exception):
    pass


class AmbiguousId(Exception):
    def __init__(self, prefix: str, candidates: list[str]) -> None:
        self.candidates = candidates
        shown = ", ".join(candidates[:CANDIDATES_SHOWN])
        super().__init__(f"{prefix!r} starts {len(candidates)} ids ({shown}): give more characters")


def _seconds(start: datetime, end: datetime | None) -> float | None:
    return max(0.0, (end - start).total_seconds()) if end is not None else None


class RequestTracer:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._messages = MessageLog(db)
        RunStore(db)  # its table exists even where no scheduler runs yet

    def resolve(self, text: str) -> str:
        """The message or item id that `text` names, whole or as a unique prefix."""
        if not ID_PREFIX.match(text):
            raise TraceNotFound(f"{text!r} is not an id: give at least 4 of its letters, digits, '-' or '_'")
        found: dict[str, None] = {}
        for message_id in message_ids_like(self._db, text, CANDIDATES_SHOWN + 1):
            found[message_id] = None
        for item_id in item_ids_like(self._db, text, CANDIDATES_SHOWN + 1):
            message = self._messages.get(item_id)  # the item a message was delivered as
            found[message.id if message is not None else item_id] = None
        exact = [key for key in found if key == text]
        if exact:
            return exact[0]
        if not found:
            raise TraceNotFound(f"no message or inbox item id starts with {text!r}")
        if len(found) > 1:
            raise AmbiguousId(text, sorted(found))
        return next(iter(found))

    def trace(self, text: str) -> RequestTrace:
        asked = self.resolve(text)
        message_trace = self._messages.trace(asked)
        if message_trace is None:
            return self._from_item(asked)
        root = message_trace.messages[0] if message_trace.messages else None
        top = root.parent_item if root is not None and root.parent_id is None else None
        if top is not None and (item := item_timing(self._db, top)) is not None:
            traced = self._from_item(item.id)
            return traced.model_copy(update={"asked": message_trace.message_id})
        steps = [self._message_step(m, m.depth) for m in message_trace.messages]
        return self._finish(message_trace.message_id, message_trace.root_id, message_trace.path, steps)

    def _from_item(self, item_id: str) -> RequestTrace:
        item = item_timing(self._db, item_id)
        if item is None:
            raise TraceNotFound(f"no message or inbox item {item_id!r}")
        steps = [self._item_step(item)]
        for first in first_messages_of_item(self._db, item_id):
            below = self._messages.trace(first)
            if below is not None:
                steps += [self._message_step(m, m.depth + 1) for m in below.messages]
        path = [item.sender, item.agent]
        for step in steps[1:]:
            if step.recipient not in path:
                path.append(step.recipient)
        return self._finish(item_id, item_id, path, steps)

    def _finish(self, asked: str, root_id: str, path: list[str], steps: list[TraceStep]) -> RequestTrace:
        runs = {
            run.item_id: run for run in turns_for_items(self._db, [s.item_id for s in steps if s.item_id])
        }
        for step in steps:
            run = runs.get(step.item_id) if step.item_id else None
            step.run = turn_run(run) if run is not None else None
        ends = [step.finished_at for step in steps if step.finished_at is not None]
        took = _seconds(steps[0].created_at, max(ends)) if steps and ends else None
        return RequestTrace(asked=asked, root_id=root_id, path=path, steps=steps, took_s=took)

    @staticmethod
    def _item_step(item: ItemTiming) -> TraceStep:
        return TraceStep(
            id=item.id,
            kind=item.kind.value,
            sender=item.sender,
            recipient=item.agent,
            operation=item.operation,
            item_id=item.id,
            state=item.state,
            created_at=item.created_at,
            claimed_at=item.claimed_at,
            finished_at=item.finished_at,
            queued_s=_seconds(item.created_at, item.claimed_at),
            took_s=_seconds(item.created_at, item.finished_at),
        )

    @staticmethod
    def _message_step(message: MessageRecord, depth: int) -> TraceStep:
        error = f"{message.error_code}: {message.error_message or ''}" if message.error_code else None
        return TraceStep(
            id=message.id,
            kind=message.kind.value,
            sender=message.sender,
            recipient=message.recipient,
            operation=message.operation,
            item_id=message.item_id,
            state=message.state.value,
            error=error,
            depth=depth,
            created_at=message.created_at,
            claimed_at=message.claimed_at,
            finished_at=message.finished_at,
            queued_s=_seconds(message.created_at, message.claimed_at),
            took_s=_seconds(message.created_at, message.finished_at),
        )
