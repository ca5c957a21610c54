"""`GET /metrics` in the Prometheus text format.

It needs the operator token (bearer, `?token=` or the dashboard cookie) unless the app was
started with `app.state.metrics_public = True`, for a scraper that cannot send a token.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, HTTPException, Request, Response
from prometheus_client import CollectorRegistry

from orchestrator.api.deps import ServicesDep, principal_of
from orchestrator.metrics.collector import CONTENT_TYPE_LATEST, build_registry, render
from orchestrator.services import Services

router = APIRouter(tags=["metrics"])

PUBLIC_FLAG = "metrics_public"
_REGISTRY_ATTR = "flotilla_metrics_registry"


def _authorize(request: Request, services: Services) -> None:
    if getattr(request.app.state, PUBLIC_FLAG, False):
        return
    if not principal_of(request, services).is_operator:
        raise HTTPException(status_code=403, detail="/metrics needs the operator token")


def _registry(request: Request, services: Services) -> CollectorRegistry:
    """One registry per app: its collector keeps incremental counters between scrapes."""
    registry: CollectorRegistry | None = getattr(request.app.state, _REGISTRY_ATTR, None)
    if registry is None:
        scheduler = services.scheduler
        registry = build_registry(
            services.db,
            services.fleet_view,
            services.health,
            lambda: [queued.agent for queued in scheduler.wake_queue()],
            services.gateway.cooldowns.report,
        )
        setattr(request.app.state, _REGISTRY_ATTR, registry)
    return registry


@router.get("/metrics", response_class=Response)
async def metrics(request: Request, services: ServicesDep) -> Response:
    _authorize(request, services)
    registry = _registry(request, services)
    # The collector queries SQLite; keep that off the event loop.
    body = await asyncio.to_thread(render, registry)
    return Response(content=body, media_type=CONTENT_TYPE_LATEST)
