"""Operator routes over the broker: an agent's inbox and dead letters, a message's trace, and the
check of the contracts in force."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel

from agent_runtime.protocol import InboxItem
from orchestrator.api.deps import OperatorDep, ServicesDep
from orchestrator.api.errors import ApiError
from orchestrator.broker import ContractsReport, DeadLetter, MessageTrace, check_running
from orchestrator.config.wrong_names import unknown_agent
from orchestrator.services import Services

router = APIRouter()


def _member(services: Services, agent: str) -> None:
    if agent not in services.fleet.config.agents:
        raise ApiError(
            404, "unknown_agent", unknown_agent(agent, services.fleet.name, services.fleet.config.agents)
        )


@router.get("/api/v1/agents/{agent}/inbox", tags=["broker"])
def inbox(
    agent: str,
    _: OperatorDep,
    services: ServicesDep,
    all: Annotated[bool, Query(description="include finished items")] = False,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> list[InboxItem]:
    _member(services, agent)
    return services.inbox.list(agent, limit=limit, include_done=all)


@router.get("/api/v1/agents/{agent}/dead-letters", tags=["broker"])
def dead_letters(agent: str, _: OperatorDep, services: ServicesDep) -> list[DeadLetter]:
    """Items handed out `limits.delivery_attempts` times without an answer; they wait for the operator."""
    _member(services, agent)
    return services.inbox.dead_letters(agent)


class DeadLetterAction(BaseModel):
    item_id: str
    state: str


def _no_dead_letter(agent: str, item_id: str) -> ApiError:
    return ApiError(404, "not_found", f"{agent} has no dead-lettered item {item_id!r}")


@router.post("/api/v1/agents/{agent}/dead-letters/{item_id}/retry", tags=["broker"])
def retry_dead_letter(agent: str, item_id: str, _: OperatorDep, services: ServicesDep) -> DeadLetterAction:
    """Queue a dead letter again, with a fresh count of delivery attempts."""
    _member(services, agent)
    if not services.inbox.retry(agent, item_id):
        raise _no_dead_letter(agent, item_id)
    return DeadLetterAction(item_id=item_id, state="queued")


@router.post("/api/v1/agents/{agent}/dead-letters/{item_id}/drop", tags=["broker"])
def drop_dead_letter(agent: str, item_id: str, _: OperatorDep, services: ServicesDep) -> DeadLetterAction:
    """Give a dead letter up: it is never delivered again."""
    _member(services, agent)
    if not services.inbox.drop(agent, item_id):
        raise _no_dead_letter(agent, item_id)
    return DeadLetterAction(item_id=item_id, state="dropped")


@router.get("/api/v1/trace/{message_id}", tags=["broker"])
def trace(message_id: str, _: OperatorDep, services: ServicesDep) -> MessageTrace:
    found = services.broker.messages.trace(message_id)
    if found is None:
        raise ApiError(404, "not_found", f"no message {message_id!r} (give a message id or an inbox item id)")
    return found


@router.get("/api/v1/contracts/check", tags=["broker"])
def contracts_check(_: OperatorDep, services: ServicesDep) -> ContractsReport:
    return check_running(services.fleet, services.broker.interfaces, services.paths)
