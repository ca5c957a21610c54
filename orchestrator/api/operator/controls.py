"""Operator routes that act: stop, start, restart, pause and resume agents; rotate the token."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from fastapi import APIRouter
from pydantic import BaseModel

from orchestrator.api.deps import OperatorDep, ServicesDep
from orchestrator.api.errors import ApiError
from orchestrator.backends.base import BackendError
from orchestrator.running_agents.actions import (
    ActionResult,
    UnknownAgent,
    rotate_operator_token,
)
from orchestrator.services import Services
from orchestrator.state.endpoint import Endpoint, read_endpoint, write_endpoint

router = APIRouter(prefix="/api/v1", tags=["operator"])


async def _act(services: Services, action: Callable[[], ActionResult]) -> ActionResult:
    """Run a (blocking) action off the event loop, mapping its failures to clear answers."""
    try:
        return await asyncio.to_thread(action)
    except UnknownAgent as exc:
        raise ApiError(404, "unknown_agent", str(exc)) from None
    except BackendError as exc:
        raise ApiError(503, "backend_unavailable", str(exc)) from None


@router.post("/agents/{agent}/stop")
async def stop(agent: str, _: OperatorDep, services: ServicesDep) -> ActionResult:
    return await _act(services, lambda: services.actions.stop_agent(agent))


@router.post("/agents/{agent}/start")
async def start(agent: str, _: OperatorDep, services: ServicesDep) -> ActionResult:
    return await _act(services, lambda: services.actions.start_agent(agent))


@router.post("/agents/{agent}/restart")
async def restart(agent: str, _: OperatorDep, services: ServicesDep) -> ActionResult:
    return await _act(services, lambda: services.actions.restart_agent(agent))


@router.post("/agents/{agent}/pause")
async def pause_agent(agent: str, _: OperatorDep, services: ServicesDep) -> ActionResult:
    return await _act(services, lambda: services.actions.pause(agent))


@router.post("/agents/{agent}/resume")
async def resume_agent(agent: str, _: OperatorDep, services: ServicesDep) -> ActionResult:
    return await _act(services, lambda: services.actions.resume(agent))


@router.post("/fleet/pause")
async def pause_fleet(_: OperatorDep, services: ServicesDep) -> ActionResult:
    return await _act(services, lambda: services.actions.pause(None))


@router.post("/fleet/resume")
async def resume_fleet(_: OperatorDep, services: ServicesDep) -> ActionResult:
    return await _act(services, lambda: services.actions.resume(None))


class RotatedToken(BaseModel):
    token: str


@router.post("/token/rotate")
async def rotate_token(_: OperatorDep, services: ServicesDep) -> RotatedToken:
    """A new operator token; the one this request used stops working."""
    token = services.operator_token = rotate_operator_token(services.paths, services.tokens)
    endpoint = read_endpoint(services.paths)
    if endpoint is not None:
        write_endpoint(services.paths, Endpoint(url=endpoint.url, token=token, pid=endpoint.pid))
    return RotatedToken(token=token)
