"""Operator routes about the fleet as a whole: its status, and whether its agents are ready."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Query

from orchestrator.api.deps import OperatorDep, ServicesDep
from orchestrator.api.errors import ApiError
from orchestrator.api.operator.fleet_status import (
    FleetReadiness,
    FleetStatus,
    fleet_readiness,
    fleet_status_of,
)
from orchestrator.backends.base import BackendError
from orchestrator.services import Services

router = APIRouter(prefix="/api/v1", tags=["operator"])

READY_CHECK_S = 0.02
# Between check-ins nothing the answer depends on changes, but for problems and time (a check-in
# going stale): without a new check-in, the answer is worked out again only this often.
READY_RECHECK_S = 1.0
MAX_READY_WAIT_S = 10.0


@router.get("/fleet/ready")
async def fleet_ready(
    _: OperatorDep,
    services: ServicesDep,
    wait: Annotated[float, Query(ge=0, le=MAX_READY_WAIT_S, description="seconds to wait for all")] = 0.0,
) -> FleetReadiness:
    """How many agents are up, and how many take messages. With `wait`, answers as soon as all
    take messages (or a problem shows), at the latest after `wait` seconds: what `up -d` waits
    on."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    readiness = fleet_readiness(services)
    seen, recheck_at = _readiness_inputs(services), loop.time() + READY_RECHECK_S
    while not readiness.settled and loop.time() < deadline:
        await asyncio.sleep(READY_CHECK_S)
        inputs = _readiness_inputs(services)
        if inputs == seen and loop.time() < recheck_at:
            continue
        readiness = fleet_readiness(services)
        seen, recheck_at = inputs, loop.time() + READY_RECHECK_S
    return readiness


def _readiness_inputs(services: Services) -> tuple[int, int, bool]:
    """What changes when the readiness may have: a check-in, a start, a new problem. Comparing
    them every 20 ms costs nothing, where working the answer out for 50 agents does."""
    return services.health.changes, len(services.manager.problems), services.manager.applying


@router.get("/fleet")
def fleet_status(_: OperatorDep, services: ServicesDep) -> FleetStatus:
    try:
        return fleet_status_of(services)
    except BackendError as exc:
        raise ApiError(503, "backend_unavailable", str(exc)) from None
