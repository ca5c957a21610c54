"""Broker routes: agents ask and tell their peers; the operator reads inboxes, traces and contracts."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from agent_runtime.protocol import (
    AGENT_API_PREFIX,
    AskRequest,
    AskResult,
    InboxItem,
    PeerInfo,
    TellRequest,
    TellResult,
)
from orchestrator.api.deps import AgentDep, OperatorDep, ServicesDep
from orchestrator.api.errors import ApiError
from orchestrator.broker.broker import MAX_TIMEOUT_S
from orchestrator.broker.contracts_check import ContractsReport, check_services
from orchestrator.broker.messages import MessageTrace
from orchestrator.services import Services

router = APIRouter()


def _member(services: Services, agent: str) -> None:
    if agent not in services.fleet.config.agents:
        raise ApiError(404, "not_found", f"there is no agent named {agent!r} in this fleet")


# --- agent routes ----------------------------------------------------------------------------


@router.get(f"{AGENT_API_PREFIX}/peers", tags=["agent"])
def list_peers(agent: AgentDep, services: ServicesDep) -> list[PeerInfo]:
    """The agents this agent may talk to, with the operations of the contract in force for each."""
    _member(services, agent.name)
    return services.broker.peers(agent.name)


@router.post(f"{AGENT_API_PREFIX}/ask", tags=["agent"])
async def ask(body: AskRequest, agent: AgentDep, services: ServicesDep) -> AskResult:
    """Ask a peer an operation and wait for its answer; broker refusals come back as `error`."""
    if not 0 < body.timeout_s <= MAX_TIMEOUT_S:
        raise ApiError(
            422, "invalid_request", f"timeout_s must be more than 0 and at most {MAX_TIMEOUT_S:g} seconds"
        )
    return await services.broker.ask(agent.name, body)


@router.post(f"{AGENT_API_PREFIX}/tell", tags=["agent"])
async def tell(body: TellRequest, agent: AgentDep, services: ServicesDep) -> TellResult:
    return await services.broker.tell(agent.name, body)


# --- operator routes -------------------------------------------------------------------------


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


@router.get("/api/v1/trace/{message_id}", tags=["broker"])
def trace(message_id: str, _: OperatorDep, services: ServicesDep) -> MessageTrace:
    found = services.broker.messages.trace(message_id)
    if found is None:
        raise ApiError(404, "not_found", f"no message {message_id!r} (give a message id or an inbox item id)")
    return found


@router.get("/api/v1/contracts/check", tags=["broker"])
def contracts_check(_: OperatorDep, services: ServicesDep) -> ContractsReport:
    return check_services(services)
