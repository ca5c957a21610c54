"""state.db damaged while the orchestrator runs: a request that meets the damage is answered
503 with a body that says so, and the damage is published once as `orchestrator.state_damaged`
(an alert rule `when: event` with `event: orchestrator.state_damaged` sends it on).

From then on the orchestrator refuses writes over HTTP with the same reason (writing more into
a damaged file can spread the damage, and a restore replaces it anyway) and keeps serving what
still reads: `flotilla ps` lists the damage among the fleet's problems. The operator stops the
fleet and restores the last backup; `flotilla doctor` shows the same finding.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from agent_runtime.protocol import ErrorBody
from orchestrator.events import EventType
from orchestrator.state.check import is_state_damage

if TYPE_CHECKING:
    from orchestrator.services import Services

log = logging.getLogger(__name__)

SERVICE_UNAVAILABLE = 503
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
ALLOWED_WHEN_DAMAGED = ("/api/v1/backups",)
"""A backup only reads the fleet (an agent's own files may be worth keeping before a restore)."""


def damage_body(services: Services) -> ErrorBody:
    path = services.paths.db
    return ErrorBody(
        error="state_damaged",
        message=(
            f"the orchestrator's state database {path} is damaged ({services.db.damage}): what still "
            "reads is served, writes are refused. Stop the fleet (`flotilla down`), then restore the "
            "last backup (`flotilla restore ARCHIVE --force`); `flotilla doctor` checks the file"
        ),
        details=[f"path: {path}", f"problem: {services.db.damage}"],
    )


def note_damage(services: Services, failed: sqlite3.DatabaseError) -> None:
    """Remember the damage; the first time, log it and publish the event (stored when the
    events table still takes it, sent to the live subscribers in any case)."""
    if services.db.damage is not None:
        return
    services.db.damage = str(failed) or failed.__class__.__name__
    log.error("state.db %s is damaged: %s", services.paths.db, services.db.damage)
    data = {"path": str(services.paths.db), "problem": services.db.damage}
    try:
        services.events.publish(EventType.STATE_DAMAGED, **data)
    except sqlite3.Error:
        services.events.publish_live(EventType.STATE_DAMAGED, None, data)


def state_problems(services: Services) -> list[str]:
    """The damage as one of the fleet's problems (shown by `flotilla ps`); none when none seen."""
    if services.db.damage is None:
        return []
    return [
        f"state.db {services.paths.db} is damaged ({services.db.damage}): writes are refused; "
        "stop the fleet and restore the last backup (`flotilla restore ARCHIVE --force`)"
    ]


async def damage_ends_stream(services: Services, events: AsyncIterator[str]) -> AsyncIterator[str]:
    """A server-sent event stream that, when it meets damage in state.db, ends with an `error`
    event saying so (its head is sent already: no 503 can be given any more)."""
    try:
        async for event in events:
            yield event
    except sqlite3.DatabaseError as failed:
        if not is_state_damage(failed):
            raise
        await asyncio.to_thread(note_damage, services, failed)
        yield f"event: error\ndata: {damage_body(services).model_dump_json()}\n\n"


class RefuseWritesWhenDamaged:
    """ASGI middleware: once state.db is known to be damaged, an HTTP write is answered 503."""

    def __init__(self, app: ASGIApp, services: Services) -> None:
        self.app = app
        self.services = services

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        damaged = self.services.db.damage is not None
        if (
            scope["type"] != "http"
            or not damaged
            or scope["method"] in READ_METHODS
            or scope["path"].startswith(ALLOWED_WHEN_DAMAGED)
        ):
            await self.app(scope, receive, send)
            return
        response = JSONResponse(
            status_code=SERVICE_UNAVAILABLE, content=damage_body(self.services).model_dump()
        )
        await response(scope, receive, send)


def install_state_damage_handling(app: FastAPI, services: Services) -> None:
    @app.exception_handler(sqlite3.DatabaseError)
    async def _damaged(request: Request, exc: sqlite3.DatabaseError) -> JSONResponse:
        if not is_state_damage(exc):
            raise exc  # a bug, not damage: the server's own 500 and its log, as before
        await asyncio.to_thread(note_damage, services, exc)
        log.error("%s %s met the damaged state.db: %s", request.method, request.url.path, exc)
        return JSONResponse(status_code=SERVICE_UNAVAILABLE, content=damage_body(services).model_dump())

    app.add_middleware(RefuseWritesWhenDamaged, services=services)
