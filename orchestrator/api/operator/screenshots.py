"""`GET /api/v1/agents/{agent}/screenshots/{name}`: a screenshot an agent's browser took, a
version of `screenshots/<name>.png` in the operator's copy of the agent's workspace (PNG), for the
dashboard's transcript. Operator token (or cookie) only.

The name is checked against the versioned folder's own pattern and the agent against the fleet,
so the path is always one the orchestrator wrote.
"""

from __future__ import annotations

from fastapi import APIRouter, Query
from fastapi.responses import Response

from agent_runtime import SCREENSHOTS, UnknownVersion, VersionedBinaries, WorkspaceError
from orchestrator.api.deps import OperatorDep, ServicesDep
from orchestrator.api.errors import ApiError

router = APIRouter(prefix="/api/v1/agents/{agent}", tags=["browser"])


@router.get("/screenshots/{name}")
async def screenshot(
    agent: str,
    name: str,
    _: OperatorDep,
    services: ServicesDep,
    version: int | None = Query(default=None, ge=1, description="A kept version; the newest when omitted"),
) -> Response:
    """The PNG; 404 when the agent, the name, the version or the file is unknown (older
    versions are pruned)."""
    if agent not in services.fleet.config.agents:
        raise ApiError(404, "not_found", f"no screenshot {name[:80]!r} of agent {agent[:64]!r}")
    files = VersionedBinaries(services.paths.agent_dir(agent), SCREENSHOTS)
    try:
        content = files.read(name) if version is None else files.read_version(name, version)
    except (UnknownVersion, FileNotFoundError):
        raise ApiError(404, "not_found", f"screenshot {name} of agent {agent} is no longer kept") from None
    except WorkspaceError as bad:
        raise ApiError(404, "not_found", str(bad)) from None
    if content is None:
        raise ApiError(404, "not_found", f"agent {agent} has no screenshot {name[:80]!r}")
    headers = {"Content-Security-Policy": "default-src 'none'", "X-Content-Type-Options": "nosniff"}
    return Response(content, media_type="image/png", headers=headers)
