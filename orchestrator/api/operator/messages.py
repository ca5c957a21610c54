"""Operator routes that message an agent: queue a message (its reply streamed on request) and
follow the inbox item it became."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Annotated, Literal

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from agent_runtime.protocol import ItemKind, WorkResult
from orchestrator.api.deps import OperatorDep, ServicesDep
from orchestrator.api.errors import ApiError
from orchestrator.api.limits import check_message
from orchestrator.api.operator.start_watch import StartWatch, cannot_start_message
from orchestrator.api.state_damage import damage_ends_stream
from orchestrator.approvals.store import ApprovalStore
from orchestrator.config.wrong_names import unknown_agent
from orchestrator.lifecycle import Hold
from orchestrator.services import Services

router = APIRouter(prefix="/api/v1", tags=["operator"])

MAX_ITEM_WAIT_S = 60.0
# How often a streamed reply looks for what holds it up (a hold, an approval waiting).
WATCH_EVERY_S = 0.5


class MessageIn(BaseModel):
    text: str = Field(min_length=1)
    timeout_s: float = Field(default=300.0, gt=0, le=3600)


class MessageAccepted(BaseModel):
    item_id: str


class ItemStatus(BaseModel):
    item_id: str
    state: str
    result: WorkResult | None


class WaitNotice(BaseModel):
    """Why a reply is not coming yet, sent as a `waiting` event of the reply stream."""

    reason: Literal["paused", "stopped", "approval"]
    message: str
    approval_id: str | None = None


class _WaitWatch:
    """What holds up the reply to one item, each cause told once."""

    def __init__(self, services: Services, agent: str, item_id: str) -> None:
        self._controls, self._agent, self._item_id = services.controls, agent, item_id
        self._approvals = ApprovalStore(services.db, services.events)
        self._hold: Hold | None = None
        self._approvals_told: set[str] = set()

    def news(self) -> list[WaitNotice]:
        notices = []
        hold = self._controls.hold_of(self._agent)
        if hold is not None and hold != self._hold:
            how = "resume" if hold == "paused" else "start"
            notices.append(
                WaitNotice(
                    reason=hold,
                    message=f"agent {self._agent!r} is {hold}: the message waits in its inbox until "
                    f"`flotilla {how} {self._agent}`",
                )
            )
        self._hold = hold
        for approval in self._approvals.list("pending"):
            if approval.item_id == self._item_id and approval.id not in self._approvals_told:
                self._approvals_told.add(approval.id)
                notices.append(
                    WaitNotice(
                        reason="approval",
                        approval_id=approval.id,
                        message=f"waiting for approval {approval.id} of {approval.tool}: "
                        f"`flotilla approve {approval.id}` or `flotilla deny {approval.id}`",
                    )
                )
        return notices


def _require_agent(services: Services, agent: str) -> None:
    if agent not in services.fleet.config.agents:
        raise ApiError(
            404, "unknown_agent", unknown_agent(agent, services.fleet.name, services.fleet.config.agents)
        )


@router.post("/agents/{agent}/messages", response_model=None)
async def send_message(
    agent: str,
    body: MessageIn,
    _: OperatorDep,
    services: ServicesDep,
    stream: Annotated[bool, Query()] = False,
) -> MessageAccepted | StreamingResponse:
    """Queue an operator message. With ?stream=true, answer with the reply as server-sent events."""
    _require_agent(services, agent)
    check_message(services, body.text)
    # Started before the item exists: a refusal of the start the item causes is not missed.
    starts = await asyncio.to_thread(StartWatch, services, agent) if stream else None
    item = services.inbox.submit(agent, ItemKind.OPERATOR_MESSAGE, "operator", body.text, priority=10)
    if starts is None:
        return MessageAccepted(item_id=item.id)
    return StreamingResponse(
        damage_ends_stream(services, _reply_events(services, agent, item.id, body.timeout_s, starts)),
        media_type="text/event-stream",
    )


async def _reply_events(
    services: Services, agent: str, item_id: str, timeout_s: float, starts: StartWatch
) -> AsyncIterator[str]:
    yield f"event: queued\ndata: {json.dumps({'item_id': item_id})}\n\n"
    deadline = time.monotonic() + timeout_s
    watch = _WaitWatch(services, agent, item_id)
    async for event in _deltas_and_notices(services, watch, item_id, timeout_s, starts):
        yield event
    if starts.failure is not None:
        error = {"error": "cannot_start", "message": cannot_start_message(agent, item_id, starts.failure)}
        yield f"event: error\ndata: {json.dumps(error)}\n\n"
        return
    remaining = max(0.1, deadline - time.monotonic())
    result = await services.inbox.wait_result(item_id, remaining)
    if result is None:
        error = {
            "error": "timeout",
            "message": f"no reply within {timeout_s:.0f}s; item {item_id} stays queued",
        }
        yield f"event: error\ndata: {json.dumps(error)}\n\n"
        return
    yield f"event: done\ndata: {result.model_dump_json()}\n\n"


@router.get("/items/{item_id}")
async def item_status(
    item_id: str,
    _: OperatorDep,
    services: ServicesDep,
    wait: Annotated[
        float, Query(ge=0, le=MAX_ITEM_WAIT_S, description="seconds to wait for the result, if none yet")
    ] = 0.0,
) -> ItemStatus:
    """The item's state and result. With `wait`, answers as soon as the result is there, at the
    latest after `wait` seconds (then without one): no polling needed to follow an item."""
    state = services.inbox.state(item_id)
    if state is None:
        raise ApiError(404, "not_found", f"no inbox item {item_id}")
    result = services.inbox.result(item_id)
    if result is None and wait > 0:
        result = await services.inbox.wait_result(item_id, wait)
        if result is not None:
            state = services.inbox.state(item_id) or state
    return ItemStatus(item_id=item_id, state=state, result=result)


async def _deltas_and_notices(
    services: Services, watch: _WaitWatch, item_id: str, timeout_s: float, starts: StartWatch
) -> AsyncIterator[str]:
    """The reply's parts as the agent streams them, and between them what holds the reply up;
    ends early when the agent cannot start (`starts.failure`) before it began to reply."""
    parts: asyncio.Queue[str | None] = asyncio.Queue()

    async def pump() -> None:
        async for delta in services.inbox.stream(item_id, timeout_s):
            await parts.put(delta)
        await parts.put(None)

    task = asyncio.create_task(pump())
    next_look = 0.0
    replying = False
    try:
        while True:
            if time.monotonic() >= next_look:
                # Off the event loop: the approvals table is read (and expired) in SQLite.
                for notice in await asyncio.to_thread(watch.news):
                    yield f"event: waiting\ndata: {notice.model_dump_json()}\n\n"
                if not replying and await asyncio.to_thread(starts.look) is not None:
                    return
                next_look = time.monotonic() + WATCH_EVERY_S
            try:
                delta = await asyncio.wait_for(parts.get(), WATCH_EVERY_S)
            except TimeoutError:
                continue
            if delta is None:
                return
            replying = True
            yield f"event: delta\ndata: {json.dumps({'delta': delta})}\n\n"
    finally:
        task.cancel()
