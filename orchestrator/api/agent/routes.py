"""Routes an agent calls about itself: its config, check-ins, its inbox, the events it reports and
the records of its runs."""

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
from orchestrator.agents import session
from orchestrator.api.deps import AgentDep, ServicesDep
from orchestrator.api.errors import ApiError
from orchestrator.api.fair_share import admit_event, admit_run
from orchestrator.api.limits import check_event, check_result, check_run
from orchestrator.events import EventType
from orchestrator.services import Services

router = APIRouter(prefix=AGENT_API_PREFIX, tags=["agent"])

# Events an agent may report about itself; anything else is refused so agents cannot forge
# orchestrator events (restarts, budgets) on the bus.
AGENT_EVENT_TYPES = {
    EventType.COMPACTION_DONE.value,
    EventType.WORKSPACE_CHANGED.value,
    EventType.AGENT_REPORTED.value,
    "context.flushed",
    "context.warning",
    "context.pruned",
    "memory.mode",
    "memory.damaged",
    "maintenance.run",
    "mcp.started",
}


def acknowledge(services: Services, agent: str, item_id: str, result: WorkResult) -> None:
    """Record the result of an item this agent holds.

    A result over the payload limit is not stored: the item fails with the reason, so nothing
    waits on it or hands it out again, and the agent gets the 413.
    """
    try:
        check_result(services, result)
    except ApiError as refused:
        session.fail_refused_result(services.inbox, agent, item_id, refused.body.message)
        raise
    session.complete(services.inbox, agent, item_id, result)
    if services.browsers is not None:
        services.browsers.item_ended(agent, item_id)


@router.get("/config")
async def get_config(
    agent: AgentDep, services: ServicesDep, reload: Annotated[bool, Query()] = False
) -> AgentRuntimeConfig:
    return session.serve_config(services.fleet, services.health, services.inbox, agent.name, reload)


@router.post("/checkin")
async def checkin(body: CheckIn, agent: AgentDep, services: ServicesDep) -> CheckInReply:
    return session.record_checkin(
        services.fleet,
        services.health,
        services.inbox,
        agent.name,
        body,
        services.scheduler.memory_due.note,
        services.events,
    )


async def _disconnected(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


@router.get("/inbox/next", response_model=None)
async def next_item(
    request: Request, agent: AgentDep, services: ServicesDep, wait: Annotated[float, Query(ge=0)] = 25.0
) -> InboxItem | Response:
    """Long-poll for the next item. A poll whose client went away must not swallow an item."""
    claim = asyncio.ensure_future(services.inbox.next(agent.name, min(wait, session.MAX_WAIT_S)))
    gone = asyncio.ensure_future(_disconnected(request))
    await asyncio.wait({claim, gone}, return_when=asyncio.FIRST_COMPLETED)
    gone.cancel()
    if not claim.done():
        claim.cancel()
        return Response(status_code=204)
    item = claim.result()
    if item is not None and await request.is_disconnected():
        services.inbox.release(item.id)
        return Response(status_code=204)
    return services.snapshots.stamp(agent.name, item) if item is not None else Response(status_code=204)


@router.post("/inbox/{item_id}/progress", status_code=204)
async def progress(item_id: str, body: ReplyChunk, agent: AgentDep, services: ServicesDep) -> None:
    session.add_progress(services.inbox, agent.name, item_id, body.delta)


@router.post("/inbox/{item_id}/done", status_code=204)
async def done(item_id: str, body: WorkResult, agent: AgentDep, services: ServicesDep) -> None:
    acknowledge(services, agent.name, item_id, body)


@router.post("/events", status_code=204)
async def report_event(body: AgentEvent, agent: AgentDep, services: ServicesDep) -> None:
    if body.type not in AGENT_EVENT_TYPES:
        allowed = ", ".join(sorted(AGENT_EVENT_TYPES))
        raise ApiError(422, "invalid_event", f"agents may not report {body.type!r}; allowed: {allowed}")
    check_event(services, body.data)
    admit_event(services, agent.name)
    services.events.publish_data(body.type, agent.name, body.data)


@router.post("/runs", status_code=204)
def post_run(record: RunRecord, agent: AgentDep, services: ServicesDep) -> Response:
    """Store the record of one agent turn. Posting the same record id again is harmless."""
    if record.agent != agent.name:
        raise ApiError(
            403, "forbidden", f"agent {agent.name!r} cannot post a run record for agent {record.agent!r}"
        )
    check_run(services, record)
    admit_run(services, agent.name)
    services.scheduler.record_turn(record)
    return Response(status_code=204)
