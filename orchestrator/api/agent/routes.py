"""Routes an agent calls about itself: its config, check-ins, its inbox, the events it reports and
the records of its runs. Each is an adapter over its action (`actions`); the agent runtime uses
config and check-in (its first words, before the link), events and runs, and the inbox routes
serve runtimes that speak plain HTTP (docs/agent-api.md)."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from agent_runtime.protocol import (
    AGENT_API_PREFIX,
    AgentEvent,
    AgentRuntimeConfig,
    CheckIn,
    CheckInReply,
    InboxItem,
    ReplyChunk,
    RunRecord,
    WorkResult,
)
from orchestrator.api.agent import actions
from orchestrator.api.deps import AgentDep, ServicesDep

router = APIRouter(prefix=AGENT_API_PREFIX, tags=["agent"])


@router.get("/config")
async def get_config(
    agent: AgentDep, services: ServicesDep, reload: Annotated[bool, Query()] = False
) -> AgentRuntimeConfig:
    return actions.serve_config(services, agent.name, reload)


@router.post("/checkin")
async def checkin(body: CheckIn, agent: AgentDep, services: ServicesDep) -> CheckInReply:
    return actions.check_in(services, agent.name, body)


async def _disconnected(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


@router.get("/inbox/next", response_model=None)
async def next_item(
    request: Request, agent: AgentDep, services: ServicesDep, wait: Annotated[float, Query(ge=0)] = 25.0
) -> InboxItem | Response:
    """Long-poll for the next item. A poll whose client went away must not swallow an item."""
    claim = asyncio.ensure_future(actions.claim_next(services, agent.name, wait))
    gone = asyncio.ensure_future(_disconnected(request))
    await asyncio.wait({claim, gone}, return_when=asyncio.FIRST_COMPLETED)
    gone.cancel()
    if not claim.done():
        claim.cancel()
        return Response(status_code=204)
    item = claim.result()
    if item is not None and await request.is_disconnected():
        actions.release(services, item)
        return Response(status_code=204)
    return item if item is not None else Response(status_code=204)


@router.post("/inbox/{item_id}/progress", status_code=204)
async def progress(item_id: str, body: ReplyChunk, agent: AgentDep, services: ServicesDep) -> None:
    actions.add_progress(services, agent.name, item_id, body.delta)


@router.post("/inbox/{item_id}/done", status_code=204)
async def done(item_id: str, body: WorkResult, agent: AgentDep, services: ServicesDep) -> None:
    actions.finish(services, agent.name, item_id, body)


@router.post("/events", status_code=204)
async def report_event(body: AgentEvent, agent: AgentDep, services: ServicesDep) -> None:
    actions.report_event(services, agent.name, body)


@router.post("/runs", status_code=204)
def post_run(record: RunRecord, agent: AgentDep, services: ServicesDep) -> Response:
    """Store the record of one agent turn. Posting the same record id again is harmless."""
    actions.record_run(services, agent.name, record)
    return Response(status_code=204)
