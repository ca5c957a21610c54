"""`GET /api/v1/budgets` and `GET /api/v1/attention`: the budget gauges (per agent and fleet,
with their reset time) and the agents that need the operator, each with its reasons:
budget-blocked, dead letters waiting, crash-looping (restarted 3 times within 10 minutes) or
unhealthy. Operator token only.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import UTC, datetime, timedelta

from fastapi import APIRouter
from pydantic import BaseModel, Field

from orchestrator.api.deps import OperatorDep, ServicesDep
from orchestrator.api.operator.fleet_status import AgentStatus, fleet_status_of
from orchestrator.events import EventType
from orchestrator.services import Services
from orchestrator.telemetry.budget_report import BudgetReport, budget_report

router = APIRouter(prefix="/api/v1", tags=["operator"])

CRASH_LOOP_RESTARTS = 3
CRASH_LOOP_WINDOW = timedelta(minutes=10)
EVENTS_READ = 1000


class AgentAttention(BaseModel):
    agent: str
    reasons: list[str] = Field(description="budget_blocked, dead_letters, crash_loop, unhealthy")


class Attention(BaseModel):
    count: int = Field(description="Agents that need the operator")
    agents: list[AgentAttention]


@router.get("/budgets")
async def budgets(_: OperatorDep, services: ServicesDep) -> BudgetReport:
    """Every configured cap with what was spent, what is left and when it resets."""
    return await asyncio.to_thread(budget_report, services.db, services.fleet.config)


@router.get("/attention")
async def attention(_: OperatorDep, services: ServicesDep) -> Attention:
    return await asyncio.to_thread(_attention, services)


def _attention(services: Services) -> Attention:
    blocked = set(budget_report(services.db, services.fleet.config).blocked)
    looping = _crash_looping(services, datetime.now(UTC))
    found = []
    for status in fleet_status_of(services).agents:
        reasons = [
            reason
            for reason, applies in (
                ("budget_blocked", status.name in blocked),
                ("dead_letters", status.dead_letters > 0),
                ("crash_loop", status.name in looping),
                ("unhealthy", _unhealthy(status)),
            )
            if applies
        ]
        if reasons:
            found.append(AgentAttention(agent=status.name, reasons=reasons))
    return Attention(count=len(found), agents=found)


def _unhealthy(status: AgentStatus) -> bool:
    """Failing its health check, or down without the operator or the sleep policy having put it there."""
    if status.health == "unhealthy":
        return True
    return status.health == "down" and status.held is None and not status.hibernated


def _crash_looping(services: Services, now: datetime) -> set[str]:
    since = now - CRASH_LOOP_WINDOW
    restarts = Counter(
        event.agent
        for event in services.events.recent(limit=EVENTS_READ)
        if event.type == EventType.AGENT_RESTARTED and event.agent and event.at >= since
    )
    return {agent for agent, count in restarts.items() if count >= CRASH_LOOP_RESTARTS}
