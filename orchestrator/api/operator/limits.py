"""The operator's view of each agent's fair share: the rates in force, who is over them now and
how often each was refused, what retention keeps, and what each agent's records take."""

from __future__ import annotations

from fastapi import APIRouter

from orchestrator.api.deps import OperatorDep, ServicesDep
from orchestrator.fair_share.view import FairShareView, StoredBytes
from orchestrator.services import Services

router = APIRouter(prefix="/api/v1/limits", tags=["limits"])


def stored_by_agent(services: Services) -> list[StoredBytes]:
    events = services.events.stored_bytes()
    messages = services.broker.messages.stored_bytes()
    inbox = services.inbox.stored_bytes()
    runs = services.scheduler.runs.stored_bytes()
    names = sorted(set(services.fleet.config.agents) | {n for n in events if n} | set(messages) | set(inbox))
    return [
        StoredBytes(
            agent=name,
            events=events.get(name, 0),
            messages=messages.get(name, 0),
            inbox=inbox.get(name, 0),
            runs=runs.get(name, 0),
        )
        for name in names
    ]


@router.get("")
async def fair_share(_: OperatorDep, services: ServicesDep) -> FairShareView:
    limits = services.fleet.config.limits
    return FairShareView(
        rates=limits.rates,
        retention=limits.retention,
        per_agent_bound_bytes=limits.retention.per_agent_bytes,
        agents=services.fair_share.states(),
        stored=stored_by_agent(services),
        last_retention=services.retention.last,
    )
