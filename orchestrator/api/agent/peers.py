"""Routes an agent calls to talk to its peers: the peers it may ask, ask and tell; adapters over
their actions (`actions`). The agent runtime lists its peers here and asks and tells over its
link; the ask and tell routes serve runtimes that speak plain HTTP (docs/agent-api.md)."""

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
from orchestrator.api.agent import actions
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


@router.get(f"{AGENT_API_PREFIX}/peers", tags=["agent"])
async def list_peers(agent: AgentDep, services: FastServicesDep) -> list[PeerInfo]:
    """The agents this agent may talk to, with the operations of the contract in force for each."""
    return actions.list_peers(services, agent.name)


@router.post(f"{AGENT_API_PREFIX}/ask", tags=["agent"], response_model=AskResult)
async def ask(body: AskRequest, agent: AgentDep, services: FastServicesDep) -> Response:
    """Ask a peer an operation and wait for its answer; broker refusals come back as `error`.
    403 when the operation needs an approval that no approved item gives."""
    return _json(await actions.ask(services, agent.name, body))


@router.post(f"{AGENT_API_PREFIX}/tell", tags=["agent"], response_model=TellResult)
async def tell(body: TellRequest, agent: AgentDep, services: FastServicesDep) -> Response:
    """403 when a tell needs an approval that no approved item gives."""
    return _json(await actions.tell(services, agent.name, body))
