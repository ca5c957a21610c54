"""Operator routes about the fleet as a whole and messages to agents."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from agent_runtime.protocol import ItemKind, WorkResult
from orchestrator.api.deps import OperatorDep, ServicesDep
from orchestrator.api.errors import ApiError
from orchestrator.api.fleet_apply import PlanOut, plan_out, read_candidate
from orchestrator.api.limits import check_message
from orchestrator.backends.base import BackendError, UnitInfo
from orchestrator.config.loader import LoadedFleet
from orchestrator.seeding import SEEDED_FILES
from orchestrator.services import Services

router = APIRouter(prefix="/api/v1", tags=["operator"])


class AgentStatus(BaseModel):
    name: str
    role: str
    model: str
    state: str
    health: str
    restarts: int
    uptime_s: float | None
    memory_bytes: int | None
    spend_today_usd: float
    pending: int
    hibernated: bool
    held: str | None = Field(default=None, description="stopped or paused by the operator")
    unit_id: str | None
    node: str | None = None
    context_used: int | None = None
    context_window: int | None = None
    tokenizer: str | None = None
    memory_mode: str | None = None
    memory_problem: str | None = Field(
        default=None, description="memory.db was damaged at start and set aside"
    )
    embedding_model: str | None = Field(default=None, description="None: memory searches by keyword only")
    busy: bool = False
    dead_letters: int = Field(default=0, description="Inbox items set aside after too many deliveries")


class FleetReadiness(BaseModel):
    healthy: int = Field(description="Agents checking in (the first check-in comes before the runtime loads)")
    answering: int = Field(
        default=0, description="Agents whose runtime is loaded: they take a message from their inbox"
    )
    total: int = Field(description="Agents that should be running (hibernated ones are not counted)")
    problems: list[str] = Field(default_factory=list, description="What the last apply could not do")
    warnings: list[str] = Field(default_factory=list, description="Boundaries that are not enforced")

    @property
    def settled(self) -> bool:
        """Every agent takes messages, or something went wrong that waiting will not fix."""
        return self.answering >= self.total or bool(self.problems)


class FleetStatus(BaseModel):
    fleet: str
    runtime: str
    isolation: str
    agents: list[AgentStatus]
    warnings: list[str] = Field(default_factory=list, description="Boundaries that are not enforced")
    problems: list[str] = Field(default_factory=list, description="What the last apply could not do")


class MessageIn(BaseModel):
    text: str = Field(min_length=1)
    timeout_s: float = Field(default=300.0, gt=0, le=3600)


class MessageAccepted(BaseModel):
    item_id: str


class ItemStatus(BaseModel):
    item_id: str
    state: str
    result: WorkResult | None


def _health(services: Services, agent: str, unit: UnitInfo | None) -> str:
    if unit is None or unit.state != "running":
        return "down"
    if unit.health == "unhealthy":
        return "unhealthy"
    if services.health.is_checking_in(agent):
        return "healthy"
    return "starting"


def agent_status(services: Services, agent: str, unit: UnitInfo | None, spent_today: float) -> AgentStatus:
    sighting = services.health.last(agent)
    checkin = sighting.checkin if sighting and unit and unit.state == "running" else None
    uptime = None
    if unit and unit.state == "running" and unit.started_at:
        uptime = (datetime.now(UTC) - unit.started_at).total_seconds()
    context = checkin.context if checkin else None
    return AgentStatus(
        name=agent,
        role=services.fleet.config.agents[agent].role,
        model=services.fleet.config.model_of(agent),
        state=unit.state if unit else "missing",
        health=_health(services, agent, unit),
        restarts=services.supervisor.restarts(agent),
        uptime_s=uptime,
        memory_bytes=checkin.rss_bytes if checkin else None,
        spend_today_usd=spent_today,
        pending=services.inbox.pending(agent),
        dead_letters=services.inbox.dead_count(agent),
        hibernated=services.scheduler.is_hibernated(agent),
        held=services.controls.hold_of(agent),
        unit_id=unit.id if unit else None,
        node=unit.node if unit else None,
        context_used=context.used_tokens if context else None,
        context_window=context.window if context else None,
        tokenizer=context.tokenizer if context else None,
        memory_mode=checkin.memory_mode if checkin else None,
        memory_problem=checkin.memory_problem if checkin else None,
        embedding_model=services.fleet.config.embedding_model(),
        busy=checkin.state == "busy" if checkin else False,
    )


def fleet_warnings(services: Services) -> list[str]:
    """What the operator must know is not enforced (an agent network without its firewall)."""
    return [services.backend.fence_warning] if services.backend.fence_warning else []


def fleet_status_of(services: Services) -> FleetStatus:
    units = services.manager.units_by_agent()
    spent = {costs.agent: costs.today_usd for costs in services.gateway.costs().agents}
    return FleetStatus(
        fleet=services.fleet.name,
        runtime=services.backend.name,
        isolation=services.backend.isolation,
        problems=services.manager.problems,
        warnings=fleet_warnings(services),
        agents=[
            agent_status(services, name, units.get(name), spent.get(name, 0.0))
            for name in services.fleet.config.agents
        ],
    )


READY_CHECK_S = 0.02
MAX_READY_WAIT_S = 10.0


# Check-in states sent once the runtime is loaded and the agent long-polls its inbox.
ANSWERING_STATES = frozenset({"idle", "busy"})


def _answering(services: Services, agent: str) -> bool:
    """Its runtime is loaded, or it is restarting in place after an idle release (it has worked
    before, its inbox waits, and it takes messages again within a second)."""
    sighting = services.health.last(agent)
    if sighting is None or not services.health.is_checking_in(agent):
        return False
    checkin = sighting.checkin
    return checkin.state in ANSWERING_STATES or (checkin.state == "starting" and checkin.turns > 0)


def fleet_readiness(services: Services) -> FleetReadiness:
    """From the agents' check-ins alone: no runtime call, cheap enough to ask every 20 ms."""
    hibernated = services.manager.hibernated() | services.controls.stopped()
    awake = [agent for agent in services.fleet.config.agents if agent not in hibernated]
    return FleetReadiness(
        healthy=sum(1 for agent in awake if services.health.is_checking_in(agent)),
        answering=sum(1 for agent in awake if _answering(services, agent)),
        total=len(awake),
        problems=list(services.manager.problems),
        warnings=fleet_warnings(services),
    )


@router.get("/fleet/ready")
async def fleet_ready(
    _: OperatorDep,
    services: ServicesDep,
    wait: Annotated[float, Query(ge=0, le=MAX_READY_WAIT_S, description="seconds to wait for all")] = 0.0,
) -> FleetReadiness:
    """How many agents are up, and how many take messages. With `wait`, answers as soon as all
    take messages (or a problem shows), at the latest after `wait` seconds: what `up -d` waits
    on."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    readiness = fleet_readiness(services)
    while not readiness.settled and loop.time() < deadline:
        await asyncio.sleep(READY_CHECK_S)
        readiness = fleet_readiness(services)
    return readiness


@router.get("/fleet")
def fleet_status(_: OperatorDep, services: ServicesDep) -> FleetStatus:
    try:
        return fleet_status_of(services)
    except BackendError as exc:
        raise ApiError(503, "backend_unavailable", str(exc)) from None


def _require_agent(services: Services, agent: str) -> None:
    if agent not in services.fleet.config.agents:
        known = ", ".join(services.fleet.config.agents)
        raise ApiError(404, "unknown_agent", f"no agent {agent!r} in fleet {services.fleet.name} ({known})")


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
    item = services.inbox.put(agent, ItemKind.OPERATOR_MESSAGE, "operator", body.text, priority=10)
    if not stream:
        return MessageAccepted(item_id=item.id)
    return StreamingResponse(_reply_events(services, item.id, body.timeout_s), media_type="text/event-stream")


async def _reply_events(services: Services, item_id: str, timeout_s: float) -> AsyncIterator[str]:
    yield f"event: queued\ndata: {json.dumps({'item_id': item_id})}\n\n"
    deadline = time.monotonic() + timeout_s
    async for delta in services.inbox.stream(item_id, timeout_s):
        yield f"event: delta\ndata: {json.dumps({'delta': delta})}\n\n"
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
def item_status(item_id: str, _: OperatorDep, services: ServicesDep) -> ItemStatus:
    state = services.inbox.state(item_id)
    if state is None:
        raise ApiError(404, "not_found", f"no inbox item {item_id}")
    return ItemStatus(item_id=item_id, state=state, result=services.inbox.result(item_id))


@router.post("/apply")
async def apply_fleet(
    _: OperatorDep,
    services: ServicesDep,
    dry_run: Annotated[bool, Query()] = False,
    file: Annotated[
        str | None, Query(description="The fleet file to apply (default: the one in force)")
    ] = None,
    force_seed: Annotated[
        list[str] | None, Query(description="AGENT/FILE: take fleet.yaml's text over a changed file")
    ] = None,
) -> PlanOut:
    """Read the fleet file and reconcile. An invalid file, or another fleet's, changes nothing."""
    candidate = await asyncio.to_thread(read_candidate, services, file)
    try:
        actions = await asyncio.to_thread(services.manager.plan, candidate)
    except BackendError as exc:
        raise ApiError(503, "backend_unavailable", f"cannot list the fleet's units: {exc}") from None
    forced = _forced_seeds(candidate, force_seed or [])
    if dry_run:
        seeds = await asyncio.to_thread(services.manager.plan_seeds, candidate, forced)
        return plan_out(actions, candidate.path, seeds)
    results = await asyncio.to_thread(services.manager.apply, lambda _: None, candidate, forced)
    failed = [f"{r.action.agent}: {r.error}" for r in results if not r.ok]
    if failed:
        raise ApiError(502, "apply_failed", "some changes failed", failed)
    return plan_out(actions, candidate.path, services.manager.seeded)


def _forced_seeds(fleet: LoadedFleet, pairs: list[str]) -> frozenset[tuple[str, str]]:
    forced = set()
    for pair in pairs:
        agent, _, file = pair.partition("/")
        if agent not in fleet.config.agents or file not in SEEDED_FILES:
            raise ApiError(
                422,
                "invalid_request",
                f"--force-seed {agent} {file}: name an agent of the fleet and one of {', '.join(SEEDED_FILES)}",
            )
        forced.add((agent, file))
    return frozenset(forced)
