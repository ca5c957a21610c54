"""Backups of the running fleet, taken by the orchestrator (it alone can ask the agents for
their own files). Operator token only.

    POST /api/v1/backups   {"output": "/abs/path.tar", "agent": null}
         -> text/event-stream: `progress` events, then one `result` (BackupResult) or `error`
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from fastapi import APIRouter
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from agent_runtime.protocol import AgentOp
from orchestrator.api.agent_ask import ask_agent
from orchestrator.api.deps import OperatorDep, ServicesDep
from orchestrator.api.errors import ApiError
from orchestrator.backup.archive import BackupRefused, FleetSources, take_backup
from orchestrator.backup.schedule import ScheduledBackups
from orchestrator.backup.snapshot import AskAgent, Model, SnapshotFailed
from orchestrator.services import Services

router = APIRouter(prefix="/api/v1/backups", tags=["backup"])


class BackupRequest(BaseModel):
    output: str = Field(description="Absolute path of the archive to write")
    agent: str | None = None


def fleet_sources(services: Services) -> FleetSources:
    fleet = services.fleet
    return FleetSources(
        fleet=fleet.name, fleet_file=fleet.path, paths=services.paths, agents=tuple(fleet.config.agents)
    )


def channel_asker(services: Services) -> AskAgent:
    async def ask(agent: str, op: AgentOp, body: dict[str, Any], model: type[Model]) -> Model:
        try:
            return await ask_agent(services, agent, op, body, model)
        except ApiError as failed:
            raise SnapshotFailed(f"agent {agent}: {failed.body.message}") from None

    return ask


def scheduled_backups(services: Services) -> ScheduledBackups:
    """The orchestrator's own backups (fleet.yaml `backup:`), through the same path as this route."""
    return ScheduledBackups(
        lambda: services.fleet.config.backup,
        lambda: fleet_sources(services),
        channel_asker(services),
        services.events.publish,
    )


def _event(kind: str, data: Any) -> str:
    return f"event: {kind}\ndata: {json.dumps(data)}\n\n"


@router.post("")
async def backup(body: BackupRequest, _: OperatorDep, services: ServicesDep) -> StreamingResponse:
    output = Path(body.output)
    if not output.is_absolute():
        raise ApiError(422, "invalid_request", f"output must be an absolute path, got {body.output!r}")
    progress: asyncio.Queue[str | None] = asyncio.Queue()

    async def run() -> str:
        try:
            result = await take_backup(
                fleet_sources(services),
                channel_asker(services),
                output,
                only_agent=body.agent,
                progress=progress.put_nowait,
            )
            return _event("result", result.model_dump())
        except (BackupRefused, OSError) as failed:
            return _event("error", {"message": str(failed)})
        finally:
            progress.put_nowait(None)

    async def stream() -> AsyncIterator[str]:
        task = asyncio.create_task(run())
        while (line := await progress.get()) is not None:
            yield _event("progress", {"message": line})
        yield await task

    return StreamingResponse(stream(), media_type="text/event-stream")
