"""Operator routes: the tool calls waiting for approval, and the decisions on them."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from agent_runtime.protocol import ApprovalDecision, ApprovalItem, ApprovalState
from orchestrator.api.deps import OperatorDep, ServicesDep
from orchestrator.api.errors import ApiError
from orchestrator.approvals import AlreadyDecided, ApprovalStore, UnknownApproval
from orchestrator.approvals.store import Decision

router = APIRouter(prefix="/api/v1", tags=["operator"])


@router.get("/approvals")
def list_approvals(
    services: ServicesDep,
    _: OperatorDep,
    state: ApprovalState | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> list[ApprovalItem]:
    """Newest first; items past their timeout read as expired."""
    return ApprovalStore(services.db, services.events).list(state, limit)


@router.post("/approvals/{approval_id}/approve")
def approve(
    approval_id: str, services: ServicesDep, _: OperatorDep, body: ApprovalDecision | None = None
) -> ApprovalItem:
    return _decide(ApprovalStore(services.db, services.events), approval_id, "approved", body)


@router.post("/approvals/{approval_id}/deny")
def deny(
    approval_id: str, services: ServicesDep, _: OperatorDep, body: ApprovalDecision | None = None
) -> ApprovalItem:
    return _decide(ApprovalStore(services.db, services.events), approval_id, "denied", body)


def _decide(
    store: ApprovalStore, approval_id: str, decision: Decision, body: ApprovalDecision | None
) -> ApprovalItem:
    try:
        return store.decide(approval_id, decision, body.reason if body else "")
    except UnknownApproval as unknown:
        raise ApiError(404, "not_found", str(unknown)) from None
    except AlreadyDecided as decided:
        raise ApiError(409, "conflict", str(decided)) from None
