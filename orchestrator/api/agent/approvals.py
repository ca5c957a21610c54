"""Routes an agent calls for a tool call that needs an operator's approval: ask, then wait
(`actions.request_approval`, `actions.await_decision`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from agent_runtime.protocol import AGENT_API_PREFIX, ApprovalItem, ApprovalRequest
from orchestrator.api.agent import actions
from orchestrator.api.deps import AgentDep, ServicesDep

router = APIRouter(prefix=AGENT_API_PREFIX, tags=["agent"])

# The longest one wait request is held; the agent asks again until the item is decided.
MAX_WAIT_S = 30.0


@router.post("/approvals")
def request_approval(body: ApprovalRequest, services: ServicesDep, agent: AgentDep) -> ApprovalItem:
    """The approval item for this call (the same key answers with the same item); 429 past
    `limits.pending_approvals` undecided."""
    return actions.request_approval(services, agent.name, body)


@router.get("/approvals/{approval_id}")
async def wait_for_decision(
    approval_id: str,
    services: ServicesDep,
    agent: AgentDep,
    wait: Annotated[float, Query(ge=0, le=MAX_WAIT_S)] = 0.0,
) -> ApprovalItem:
    """The item, once decided or after `wait` seconds (still pending then)."""
    return await actions.await_decision(services, agent.name, approval_id, wait)
