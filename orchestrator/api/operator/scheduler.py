"""Operator routes over the scheduler: list runs, check an agent's heartbeat rules, run one tick now."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Query

from orchestrator.api.deps import OperatorDep, ServicesDep
from orchestrator.api.errors import ApiError
from orchestrator.config.wrong_names import unknown_agent
from orchestrator.scheduler.models import HeartbeatStatus, TickResult
from orchestrator.scheduler.runs import RunKind, RunView
from orchestrator.services import Services

router = APIRouter(tags=["scheduler"])


def _fleet_agent(services: Services, agent: str) -> str:
    if agent not in services.fleet.config.agents:
        raise ApiError(
            404, "unknown_agent", unknown_agent(agent, services.fleet.name, services.fleet.config.agents)
        )
    return agent


@router.get("/api/v1/runs")
def list_runs(
    _: OperatorDep,
    services: ServicesDep,
    agent: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    kind: RunKind | None = None,
) -> list[RunView]:
    """Run records, newest first: heartbeat ticks (idle/skipped/run) and agent turns."""
    runs = services.scheduler.runs
    if agent is not None and agent not in services.fleet.config.agents and runs.count(agent) == 0:
        _fleet_agent(services, agent)
    return runs.recent(agent, limit, kind)


@router.post("/api/v1/agents/{agent}/heartbeat")
async def run_heartbeat(agent: str, _: OperatorDep, services: ServicesDep) -> TickResult:
    """Run one heartbeat tick now: idle, a queued heartbeat item, or the reason it was skipped."""
    scheduler = services.scheduler
    return await asyncio.to_thread(scheduler.tick_now, _fleet_agent(services, agent))


@router.get("/api/v1/agents/{agent}/heartbeat")
def heartbeat_status(agent: str, _: OperatorDep, services: ServicesDep) -> HeartbeatStatus:
    """The agent's heartbeat schedule, its rules (due or not, last done) and any bad rule."""
    return services.scheduler.status(_fleet_agent(services, agent))
