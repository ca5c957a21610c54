"""Operator route: the alert log (what was sent where, what failed and why)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from orchestrator.alerts import AlertRecord, AlertStore
from orchestrator.api.deps import OperatorDep, ServicesDep

router = APIRouter(prefix="/api/v1", tags=["operator"])


@router.get("/alerts")
async def list_alerts(
    services: ServicesDep, _: OperatorDep, limit: Annotated[int, Query(ge=1, le=1000)] = 50
) -> list[AlertRecord]:
    """The newest alerts first."""
    return AlertStore(services.db).recent(limit)
