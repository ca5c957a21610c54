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

from orchestrator.api.deps import OperatorDep, ServicesDep
from orchestrator.api.errors import ApiError
from orchestrator.backup.archive import BackupRefused, take_backup
from orchestrator.backup.fleet_backups import fleet_sources, link_asker, stopped_snapshots

router = APIRouter(prefix="/api/v1/backups", tags=["backup"])


class BackupRequest(BaseModel):
    output: str = Field(description="Absolute path of the archive to write")
    agent: str | None = None


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
                fleet_sources(services.fleet_view, services.paths),
                link_asker(services.asker),
                output,
                only_agent=body.agent,
                progress=progress.put_nowait,
                stopped=stopped_snapshots(
                    services.manager, services.backend, services.paths, services.controls
                ),
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
