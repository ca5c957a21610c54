"""The FastAPI application: one router per concern, included here and nowhere else."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from orchestrator.api import agent_routes, alerts_routes, channel, control_routes, operator_routes
from orchestrator.api.backup_routes import router as backup_router
from orchestrator.api.errors import install_error_handlers
from orchestrator.api.limits import BodyLimit
from orchestrator.api.storage_errors import install_storage_error_handlers
from orchestrator.api.surfaces import AgentSurface
from orchestrator.broker import router as broker_router
from orchestrator.gateway import router as gateway_router
from orchestrator.memory_api import router as memory_router
from orchestrator.operator import router as surface_router
from orchestrator.scheduler import router as scheduler_router
from orchestrator.services import Services

ROUTERS = [
    agent_routes.router,
    channel.router,
    operator_routes.router,
    alerts_routes.router,
    control_routes.router,
    gateway_router.router,
    broker_router.router,
    memory_router.router,
    scheduler_router.router,
    surface_router.router,
    backup_router,
]


def create_app(services: Services) -> FastAPI:
    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        loop = asyncio.get_running_loop()
        services.events.bind_loop(loop)
        inbox = getattr(services, "inbox", None)
        if inbox is not None:
            inbox.bind_loop(loop)
        yield

    app = FastAPI(title="Flotilla orchestrator", lifespan=lifespan)
    app.state.services = services
    install_error_handlers(app)
    install_storage_error_handlers(app, lambda: services.paths.db)
    app.add_middleware(BodyLimit, limit_of=lambda: services.fleet.config.limits.bytes_of("request_body"))
    app.add_middleware(AgentSurface, agent_url_of=lambda: services.agent_url)
    for router in ROUTERS:
        app.include_router(router)
    return app
