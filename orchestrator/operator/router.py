"""The operator surface: workspace inspection and editing, live events, the dashboard, /metrics."""

from fastapi import APIRouter

from orchestrator.operator import dashboard_routes, events_routes, metrics_routes, workspace_routes

router = APIRouter()
router.include_router(workspace_routes.router)
router.include_router(events_routes.router)
router.include_router(metrics_routes.router)
router.include_router(dashboard_routes.router)
