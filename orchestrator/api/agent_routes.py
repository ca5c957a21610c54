"""Routes an agent calls about itself: its config, check-ins, its inbox and the events it reports."""

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
    WorkResult,
)
from orchestrator.api.deps import AgentDep, ServicesDep
from orchestrator.api.errors import ApiError
from orchestrator.api.limits import check_event, check_result
from orchestrator.config.windows import window_for
from orchestrator.events import EventType
from orchestrator.gateway.embedding import embedding_dimensions
from orchestrator.services import Services

router = APIRouter(prefix=AGENT_API_PREFIX, tags=["agent"])

MAX_WAIT_S = 30.0
# A claim this old, held while its agent reports being idle, was lost on the way to the agent.
STALE_CLAIM_S = 20.0
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
}


def runtime_config(services: Services, agent: str) -> AgentRuntimeConfig:
    fleet = services.fleet
    config = fleet.config
    model = config.model_of(agent)
    return AgentRuntimeConfig(
        fleet=config.fleet,
        agent=agent,
        role=config.agents[agent].role,
        model=model,
        heartbeat_model=config.heartbeat_model_of(agent),
        context_window=config.context_window_of(agent, window_for(model)),
        embedding_model=config.embedding_model(),
        embedding_dimensions=embedding_dimensions(config),
        talks_to=list(config.agents[agent].talks_to),
        max_frame_bytes=config.limits.bytes_of("channel_frame"),
        config_hash=fleet.runtime_hash(agent),
    )


def _known(services: Services, agent: str) -> None:
    if agent not in services.fleet.config.agents:
        raise ApiError(410, "agent_removed", f"agent {agent!r} is no longer part of the fleet")


def serve_config(services: Services, agent: str, reload: bool = False) -> AgentRuntimeConfig:
    """Asked once by each new agent process: what it claimed before it started is handed out again.

    A running process that reloads its config (`reload`) is the same incarnation: its check-ins
    and claims stand.
    """
    _known(services, agent)
    if not reload:
        services.health.mark_started(agent)
        services.inbox.requeue_claimed(agent)
    return runtime_config(services, agent)


def record_checkin(services: Services, agent: str, body: CheckIn) -> CheckInReply:
    _known(services, agent)
    services.health.record(agent, body)
    if body.state == "idle" and body.current_item is None:
        services.inbox.requeue_stale_claims(agent, STALE_CLAIM_S)
    return CheckInReply(config_hash=services.fleet.runtime_hash(agent))


@router.get("/config")
async def get_config(
    agent: AgentDep, services: ServicesDep, reload: Annotated[bool, Query()] = False
) -> AgentRuntimeConfig:
    return serve_config(services, agent.name, reload)


@router.post("/checkin")
async def checkin(body: CheckIn, agent: AgentDep, services: ServicesDep) -> CheckInReply:
    return record_checkin(services, agent.name, body)


async def _disconnected(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


@router.get("/inbox/next", response_model=None)
async def next_item(
    request: Request, agent: AgentDep, services: ServicesDep, wait: Annotated[float, Query(ge=0)] = 25.0
) -> InboxItem | Response:
    """Long-poll for the next item. A poll whose client went away must not swallow an item."""
    claim = asyncio.ensure_future(services.inbox.next(agent.name, min(wait, MAX_WAIT_S)))
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
    return item if item is not None else Response(status_code=204)


def _not_found(item_id: str) -> ApiError:
    return ApiError(404, "not_found", f"no inbox item {item_id}")


def own_item(services: Services, agent: str, item_id: str) -> None:
    if services.inbox.owner(item_id) != agent:
        raise _not_found(item_id)


def acknowledge(services: Services, agent: str, item_id: str, result: WorkResult) -> None:
    """Record the result of an item this agent holds (the ownership check is in the same update).

    A result over the payload limit is not stored: the item fails with the reason, so nothing
    waits on it or hands it out again, and the agent gets the 413.
    """
    try:
        check_result(services, result)
    except ApiError as refused:
        own_item(services, agent, item_id)
        services.inbox.fail(item_id, refused.body.message)
        raise
    if not services.inbox.complete(agent, item_id, result):
        raise _not_found(item_id)


@router.post("/inbox/{item_id}/progress", status_code=204)
async def progress(item_id: str, body: ReplyChunk, agent: AgentDep, services: ServicesDep) -> None:
    own_item(services, agent.name, item_id)
    services.inbox.add_progress(item_id, body.delta)


@router.post("/inbox/{item_id}/done", status_code=204)
async def done(item_id: str, body: WorkResult, agent: AgentDep, services: ServicesDep) -> None:
    acknowledge(services, agent.name, item_id, body)


@router.post("/events", status_code=204)
async def report_event(body: AgentEvent, agent: AgentDep, services: ServicesDep) -> None:
    if body.type not in AGENT_EVENT_TYPES:
        allowed = ", ".join(sorted(AGENT_EVENT_TYPES))
        raise ApiError(422, "invalid_event", f"agents may not report {body.type!r}; allowed: {allowed}")
    check_event(services, body.data)
    services.events.publish(body.type, agent=agent.name, **body.data)
