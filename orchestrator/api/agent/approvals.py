"""Routes an agent calls for a tool call that needs an operator's approval: ask, then wait."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Query

from agent_runtime.protocol import AGENT_API_PREFIX, ApprovalItem, ApprovalRequest
from orchestrator.api.deps import AgentDep, ServicesDep
from orchestrator.api.errors import ApiError
from orchestrator.api.fair_share import admit_event
from orchestrator.api.limits import check_approval
from orchestrator.approvals import ApprovalStore, UnknownApproval
from orchestrator.errors import RateLimited

router = APIRouter(prefix=AGENT_API_PREFIX, tags=["agent"])

# The longest one wait request is held; the agent asks again until the item is decided.
MAX_WAIT_S = 30.0
# When an agent at its cap of undecided requests may try again (a decision frees one).
PENDING_RETRY_S = 30.0
POLL_S = 0.25


@router.post("/approvals")
def request_approval(body: ApprovalRequest, services: ServicesDep, agent: AgentDep) -> ApprovalItem:
    """The approval item for this call (the same key answers with the same item). A new one is
    stored whole and announced with an event: its arguments are capped like a payload, it is
    charged to the agent's event rate, and an agent has at most `limits.pending_approvals`
    undecided."""
    store = ApprovalStore(services.db, services.events)
    known = store.find(agent.name, body.key)
    if known is not None:
        return known
    check_approval(services, body.arguments)
    cap = services.fleet.config.limits.pending_approvals
    if store.pending_count(agent.name) >= cap:
        raise RateLimited(
            "too_many_pending",
            f"agent {agent.name} has {cap} approval requests waiting for a decision, "
            f"the most limits.pending_approvals allows",
            PENDING_RETRY_S,
            [f"limit: limits.pending_approvals = {cap}"],
        )
    admit_event(services, agent.name)
    return store.request(agent.name, body)


@router.get("/approvals/{approval_id}")
async def wait_for_decision(
    approval_id: str,
    services: ServicesDep,
    agent: AgentDep,
    wait: Annotated[float, Query(ge=0, le=MAX_WAIT_S)] = 0.0,
) -> ApprovalItem:
    """The item, once decided or after `wait` seconds (still pending then)."""
    store = ApprovalStore(services.db, services.events)
    deadline = asyncio.get_running_loop().time() + wait
    while True:
        try:
            item = store.get(approval_id, agent.name)
        except UnknownApproval as unknown:
            raise ApiError(404, "not_found", str(unknown)) from None
        if item.state != "pending" or asyncio.get_running_loop().time() >= deadline:
            return item
        await asyncio.sleep(POLL_S)
