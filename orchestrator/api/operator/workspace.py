"""Operator routes over an agent's workspace: list, read (any version), edit, history, diff.

`{file}` is a path relative to the workspace folder (SOUL.md, learnings/2025-01-01.md), so the
`/history` and `/diff` routes are declared before the catch-all file route.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from agent_runtime.protocol import WorkspaceWriteResult
from orchestrator.api.deps import OperatorDep, ServicesDep
from orchestrator.workspaces import access
from orchestrator.workspaces.models import (
    WorkspaceDiff,
    WorkspaceEdit,
    WorkspaceFileContent,
    WorkspaceHistory,
    WorkspaceListing,
)

router = APIRouter(prefix="/api/v1/agents/{agent}/workspace", tags=["workspace"])

Version = Annotated[int | None, Query(ge=0)]


@router.get("")
async def list_workspace(agent: str, _: OperatorDep, services: ServicesDep) -> WorkspaceListing:
    """Every workspace file with its size, its cap and how full it is."""
    return await access.list_files(services.asker, services.workspaces.open(agent))


@router.get("/{file:path}/history")
def file_history(agent: str, file: str, _: OperatorDep, services: ServicesDep) -> WorkspaceHistory:
    """Each recorded version: number, author, time, size and reason."""
    return access.history(services.workspaces.open(agent), file)


@router.get("/{file:path}/diff")
def file_diff(
    agent: str, file: str, _: OperatorDep, services: ServicesDep, a: Version = None, b: Version = None
) -> WorkspaceDiff:
    """Unified diff from version a to version b (default: the last two versions)."""
    return access.diff(services.workspaces.open(agent), file, a, b)


@router.get("/{file:path}")
async def read_file(
    agent: str, file: str, _: OperatorDep, services: ServicesDep, version: Version = None
) -> WorkspaceFileContent:
    """The live content, or a past version with `?version=N`."""
    return await access.read_file(services.asker, services.workspaces.open(agent), file, version)


@router.put("/{file:path}")
def write_file(
    agent: str, file: str, body: WorkspaceEdit, _: OperatorDep, services: ServicesDep
) -> WorkspaceWriteResult:
    """Replace a capped workspace file as the operator: over the cap -> 413, broken contract -> 422."""
    workspace = services.workspaces.open(agent)
    return services.workspaces.write_file(workspace, file, body.content, body.reason)
