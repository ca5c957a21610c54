"""Operator route that moves an agent to another node with its storage."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter
from pydantic import BaseModel, Field

from orchestrator.agent_move import AgentMove, MoveResult, UnknownAgentToMove
from orchestrator.api.deps import OperatorDep, ServicesDep
from orchestrator.api.errors import ApiError
from orchestrator.backends.base import BackendError

router = APIRouter(prefix="/api/v1", tags=["operator"])


class MoveRequest(BaseModel):
    node: str = Field(min_length=1, max_length=253, description="The target node's hostname")


@router.post("/agents/{agent}/move")
async def move_agent(agent: str, body: MoveRequest, _: OperatorDep, services: ServicesDep) -> MoveResult:
    mover = AgentMove(services.manager, services.backend, services.health, services.events, services.paths)
    try:
        return await asyncio.to_thread(mover.move, agent, body.node)
    except UnknownAgentToMove as exc:
        raise ApiError(404, "unknown_agent", str(exc)) from None
    except BackendError as exc:
        raise ApiError(409, "move_failed", str(exc)) from None
