"""Routes an agent calls to talk to its peers: the peers it may ask, ask and tell."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Request, Response
from pydantic import BaseModel

from agent_runtime.protocol import (
    AGENT_API_PREFIX,
    AskRequest,
    AskResult,
    PeerInfo,
    TellRequest,
    TellResult,
)
from orchestrator.api.errors import ApiError
from orchestrator.api.fair_share import admit_message
from orchestrator.api.limits import check_payload
from orchestrator.approvals import ApprovalRules, ApprovalStore
from orchestrator.broker import MAX_TIMEOUT_S
from orchestrator.control.auth import Principal
from orchestrator.services import Services

router = APIRouter()


async def _calling_agent(request: Request) -> Principal:
    """The agent behind the bearer token, resolved on the event loop.

    The check is pure CPU work: as an async dependency it skips the worker-thread hop a plain
    function dependency costs, which matters on the ask path where every request counts.
    Agents always send the Authorization header.
    """
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    services: Services = request.app.state.services
    principal = services.tokens.identify(token.strip()) if scheme.lower() == "bearer" and token else None
    if principal is None:
        raise HTTPException(status_code=401, detail="missing or invalid bearer token")
    if principal.is_operator:
        raise HTTPException(status_code=403, detail="this route is for agents")
    return principal


async def _services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


AgentDep = Annotated[Principal, Depends(_calling_agent)]
FastServicesDep = Annotated[Services, Depends(_services)]


def _json(body: BaseModel) -> Response:
    """Serialize once with pydantic, skipping the framework's response-model round trip."""
    return Response(body.model_dump_json(), media_type="application/json")


def _member(services: Services, agent: str) -> None:
    if agent not in services.fleet.config.agents:
        raise ApiError(404, "not_found", f"there is no agent named {agent!r} in this fleet")


def check_ask_timeout(request: AskRequest) -> None:
    if not 0 < request.timeout_s <= MAX_TIMEOUT_S:
        raise ApiError(
            422, "invalid_request", f"timeout_s must be more than 0 and at most {MAX_TIMEOUT_S:g} seconds"
        )


@router.get(f"{AGENT_API_PREFIX}/peers", tags=["agent"])
async def list_peers(agent: AgentDep, services: FastServicesDep) -> list[PeerInfo]:
    """The agents this agent may talk to, with the operations of the contract in force for each."""
    _member(services, agent.name)
    return services.broker.peers(agent.name)


def approval_rules(services: Services, agent: str) -> ApprovalRules:
    """The agent's approval rules of the fleet in force, checked on what it sends."""
    config = services.fleet.config.agents.get(agent)
    required = config.tools.approval_required() if config is not None else []
    return ApprovalRules(agent, required, ApprovalStore(services.db, services.events))


@router.post(f"{AGENT_API_PREFIX}/ask", tags=["agent"], response_model=AskResult)
async def ask(body: AskRequest, agent: AgentDep, services: FastServicesDep) -> Response:
    """Ask a peer an operation and wait for its answer; broker refusals come back as `error`.
    403 when the operation needs an approval that no approved item gives."""
    check_ask_timeout(body)
    check_payload(services, body)
    admit_message(services, agent.name, body)
    approval_rules(services, agent.name).check_ask(body)
    return _json(await services.broker.ask(agent.name, body))


@router.post(f"{AGENT_API_PREFIX}/tell", tags=["agent"], response_model=TellResult)
async def tell(body: TellRequest, agent: AgentDep, services: FastServicesDep) -> Response:
    """403 when a tell needs an approval that no approved item gives."""
    check_payload(services, body)
    admit_message(services, agent.name, body)
    approval_rules(services, agent.name).check_tell(body)
    return _json(await services.broker.tell(agent.name, body))
