"""The FastAPI application: one router per concern, included here and nowhere else."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from orchestrator.api import gateway
from orchestrator.api.agent import approvals as agent_approvals
from orchestrator.api.agent import link, peers
from orchestrator.api.agent import routes as agent_routes
from orchestrator.api.agent import tools as agent_tools
from orchestrator.api.errors import install_error_handlers
from orchestrator.api.limits import BodyLimit
from orchestrator.api.operator import (
    alerts,
    apply,
    approvals,
    attention,
    backup,
    chat,
    controls,
    costs,
    dashboard,
    events,
    fleet,
    history,
    hooks,
    memory,
    messages,
    metrics,
    move,
    notifications,
    scheduler,
    screenshots,
    trace,
    workspace,
)
from orchestrator.api.operator import inbox as inbox_routes
from orchestrator.api.operator import limits as limits_routes
from orchestrator.api.operator import workflows as workflow_routes
from orchestrator.api.state_damage import install_state_damage_handling
from orchestrator.api.storage_errors import install_storage_error_handlers
from orchestrator.api.surfaces import AgentSurface
from orchestrator.services import Services

ROUTERS = [
    agent_routes.router,
    link.router,
    fleet.router,
    messages.router,
    apply.router,
    alerts.router,
    approvals.router,
    agent_approvals.router,
    agent_tools.router,
    controls.router,
    move.router,
    gateway.router,
    costs.router,
    peers.router,
    inbox_routes.router,
    memory.router,
    scheduler.router,
    workspace.router,
    events.router,
    metrics.router,
    dashboard.router,
    history.router,
    screenshots.router,
    trace.router,
    backup.router,
    attention.router,
    hooks.router,
    chat.router,
    notifications.router,
    limits_routes.router,
    workflow_routes.router,
]


def create_app(services: Services) -> FastAPI:
    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        loop = asyncio.get_running_loop()
        services.events.bind_loop(loop)
        services.inbox.bind_loop(loop)
        yield
        if services.browsers is not None:
            await services.browsers.close_all()

    # /openapi.json is served without a token (route and body shapes, no fleet data); the
    # interactive pages are not, as they load their scripts from a CDN.
    app = FastAPI(title="Flotilla orchestrator", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.services = services
    install_error_handlers(app)
    install_storage_error_handlers(app, lambda: services.paths.db)
    install_state_damage_handling(app, services)
    app.add_middleware(BodyLimit, limit_of=lambda: services.fleet.config.limits.bytes_of("request_body"))
    app.add_middleware(AgentSurface, agent_url_of=lambda: services.agent_url)
    for router in ROUTERS:
        app.include_router(router)
    return app
