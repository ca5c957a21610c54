"""Operator routes over the LLM gateway's ledger.

GET  /api/v1/costs           CostsReport: spend per agent today and this month, budgets
GET  /api/v1/usage           UsageSeries: calls, tokens and dollars per time bucket
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Query

from orchestrator.api.deps import OperatorDep, ServicesDep
from orchestrator.gateway.models import CostsReport, UsageSeries

router = APIRouter()


@router.get("/api/v1/costs")
async def costs(_: OperatorDep, services: ServicesDep) -> CostsReport:
    return services.gateway.costs()


@router.get("/api/v1/usage", response_model=None)
async def usage(
    _: OperatorDep,
    services: ServicesDep,
    agent: Annotated[str | None, Query(description="Only this agent")] = None,
    since: Annotated[datetime | None, Query(description="ISO 8601 start; default 24 hours ago")] = None,
    bucket: Annotated[Literal["hour", "day"], Query(description="Width of a time bucket")] = "hour",
) -> UsageSeries:
    if since is not None and since.tzinfo is None:
        since = since.replace(tzinfo=UTC)
    return services.gateway.usage(since, bucket, agent or None)
