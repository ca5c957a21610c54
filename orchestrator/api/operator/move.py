"""Operator route that moves an agent to another node with its storage."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, Field

from orchestrator.api.deps import OperatorDep, ServicesDep
from orchestrator.api.errors import ApiError
from orchestrator.backends.base import BackendError
from orchestrator.running_agents.move import ANSWER_WITHIN_S, AgentMove, MoveResult, UnknownAgentToMove

router = APIRouter(prefix="/api/v1", tags=["operator"])


class MoveRequest(BaseModel):
    node: str = Field(min_length=1, max_length=253, description="The target node's hostname")
    within_s: float = Field(
        default=ANSWER_WITHIN_S,
        ge=0,
        le=3600,
        description="How long the agent has on the target to connect, restore and answer",
    )


@router.post("/agents/{agent}/move")
async def move_agent(agent: str, body: MoveRequest, _: OperatorDep, services: ServicesDep) -> MoveResult:
    mover = AgentMove(
        services.manager,
        services.backend,
        services.health,
        services.events,
        services.paths,
        services.controls,
        services.asker,
        services.agent_links,
    )
    try:
        return await mover.move(agent, body.node, body.within_s)
    except UnknownAgentToMove as exc:
        raise ApiError(404, "unknown_agent", str(exc)) from None
    except BackendError as exc:
        raise ApiError(409, "move_failed", str(exc)) from None
