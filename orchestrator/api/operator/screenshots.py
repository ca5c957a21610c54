"""`GET /api/v1/agents/{agent}/screenshots/{name}`: a screenshot an agent's browser took, as the
orchestrator kept it (PNG), for the dashboard's transcript. Operator token (or cookie) only.

The name is checked against the shelf's own pattern and the agent against the fleet, so the path
is always one the orchestrator wrote.
"""

from __future__ import annotations

import re

from fastapi import APIRouter
from fastapi.responses import Response

from orchestrator.api.deps import OperatorDep, ServicesDep
from orchestrator.api.errors import ApiError
from orchestrator.browser.screenshots import SCREENSHOT_NAME

router = APIRouter(prefix="/api/v1/agents/{agent}", tags=["browser"])
NAME = re.compile(SCREENSHOT_NAME)


@router.get("/screenshots/{name}")
async def screenshot(agent: str, name: str, _: OperatorDep, services: ServicesDep) -> Response:
    """The PNG; 404 when the agent, the name or the file is unknown (older ones are deleted)."""
    if agent not in services.fleet.config.agents or not NAME.fullmatch(name):
        raise ApiError(404, "not_found", f"no screenshot {name[:80]!r} of agent {agent[:64]!r}")
    path = services.paths.root / "browser" / agent / name
    try:
        content = path.read_bytes()
    except FileNotFoundError:
        raise ApiError(404, "not_found", f"screenshot {name} of agent {agent} is no longer kept") from None
    headers = {"Content-Security-Policy": "default-src 'none'", "X-Content-Type-Options": "nosniff"}
    return Response(content, media_type="image/png", headers=headers)
