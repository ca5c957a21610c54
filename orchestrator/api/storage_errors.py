"""A full disk answers 507 Insufficient Storage, naming the path and the space left.

A write of the orchestrator's (state.db, the operator's copy of a workspace) that fails for lack
of space is the operator's problem to fix, not a bug: the caller gets a clear answer instead of
an opaque 500, and what only reads keeps working. The answer carries the detail itself, as the
log may be on the same full disk.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from agent_runtime import is_disk_full
from agent_runtime.protocol import ErrorBody
from orchestrator.state.disk import free_bytes

log = logging.getLogger(__name__)

INSUFFICIENT_STORAGE = 507


def disk_full_body(path: Path, what: str) -> ErrorBody:
    free = free_bytes(path)
    shown = f"{free} bytes" if free is not None else "unknown"
    return ErrorBody(
        error="insufficient_storage",
        message=f"{what}: no space left on the device of {path} (free: {shown}); free some space and retry",
        details=[f"path: {path}", f"free_bytes: {free}"],
    )


def install_storage_error_handlers(app: FastAPI, state_db: Callable[[], Path]) -> None:
    @app.exception_handler(sqlite3.OperationalError)
    async def _database(request: Request, exc: sqlite3.OperationalError) -> JSONResponse:
        if is_disk_full(exc):
            body = disk_full_body(state_db(), "the orchestrator's state could not be written")
            return JSONResponse(status_code=INSUFFICIENT_STORAGE, content=body.model_dump())
        log.error("%s %s failed in the database: %s", request.method, request.url.path, exc, exc_info=exc)
        body = ErrorBody(error="unavailable", message=f"the orchestrator's database failed: {exc}")
        return JSONResponse(status_code=503, content=body.model_dump())

    @app.exception_handler(OSError)
    async def _filesystem(request: Request, exc: OSError) -> JSONResponse:
        if is_disk_full(exc):
            path = Path(str(exc.filename)) if exc.filename else state_db().parent
            body = disk_full_body(path, "a file could not be written")
            return JSONResponse(status_code=INSUFFICIENT_STORAGE, content=body.model_dump())
        log.error("%s %s failed: %s", request.method, request.url.path, exc, exc_info=exc)
        body = ErrorBody(error="internal_error", message=f"{request.url.path} failed: {exc.strerror or exc}")
        return JSONResponse(status_code=500, content=body.model_dump())
