"""Operator route: the notification log (what each agent sent to which channel, and how it went)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from orchestrator.api.deps import OperatorDep, ServicesDep
from orchestrator.notifications.store import NotificationRecord

router = APIRouter(prefix="/api/v1", tags=["operator"])


@router.get("/notifications")
async def list_notifications(
    services: ServicesDep,
    _: OperatorDep,
    agent: Annotated[str | None, Query(description="only this agent's")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
) -> list[NotificationRecord]:
    """The newest notifications first: channel, origin (tool or rule), status, attempts, last error."""
    return services.notifier.store.recent(limit, agent)
