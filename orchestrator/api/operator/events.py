"""The event feed for operators: recent events as JSON, and a live Server-Sent Events stream.

A client that reconnects passes the last sequence number it saw (`?after=` or the standard
`Last-Event-ID` header) and receives the stored events it missed before the live ones, with no
gap and no duplicate: it subscribes first, replays from the database, then forwards live events
whose sequence number is past the last one replayed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, FastAPI, Header, Query, Request
from fastapi.responses import StreamingResponse

from orchestrator.api.deps import OperatorDep, ServicesDep
from orchestrator.events import Event, EventBus, latest_seq, stored_events
from orchestrator.state.db import Database

router = APIRouter(prefix="/api/v1/events", tags=["events"])

REPLAY_PAGE = 500
DEFAULT_HEARTBEAT_S = 15.0
# How often a stream waiting for events checks whether its client went away.
DISCONNECT_POLL_S = 1.0
# uvicorn waits for open responses before it stops; an event stream never ends by itself, so the
# server sets this flag (via `close_streams`) when it is asked to stop.
CLOSING_FLAG = "flotilla_streams_closing"


def close_streams(app: FastAPI) -> None:
    """End every open event stream of `app` within DISCONNECT_POLL_S (call before stopping uvicorn)."""
    setattr(app.state, CLOSING_FLAG, True)


def format_sse(event: Event) -> str:
    """One SSE message. The type travels inside the JSON so a plain `onmessage` handler sees all."""
    return f"id: {event.seq}\ndata: {event.model_dump_json()}\n\n"


class EventStream:
    """Replay then follow the bus for one client, with keep-alive comments while idle."""

    def __init__(
        self, bus: EventBus, db: Database, agent: str | None, after: int, heartbeat_s: float
    ) -> None:
        self._bus = bus
        self._db = db
        self._agent = agent
        self._last = after
        self._heartbeat_s = heartbeat_s

    async def messages(self, request: Request) -> AsyncIterator[str]:
        queue = self._bus.subscribe()
        try:
            # Tell the browser how long to wait before reconnecting, and open the stream at once.
            yield "retry: 3000\n: connected\n\n"
            while page := await asyncio.to_thread(self._replay_page):
                yield page
            async for chunk in self._follow(queue, request):
                yield chunk
        finally:
            self._bus.unsubscribe(queue)

    def _replay_page(self) -> str:
        """The next stored events past the last one sent, as SSE text ("" when caught up)."""
        page = stored_events(self._db, self._last, self._agent, REPLAY_PAGE)
        if page:
            self._last = page[-1].seq
        return "".join(format_sse(event) for event in page)

    async def _follow(self, queue: asyncio.Queue[Event], request: Request) -> AsyncIterator[str]:
        idle = 0.0
        while not getattr(request.app.state, CLOSING_FLAG, False):
            wait = min(DISCONNECT_POLL_S, self._heartbeat_s)
            try:
                event = await asyncio.wait_for(queue.get(), timeout=wait)
            except TimeoutError:
                if await request.is_disconnected():
                    return
                idle += wait
                if idle >= self._heartbeat_s:
                    idle = 0.0
                    yield ": keep-alive\n\n"
                continue
            if event.seq <= self._last or (self._agent and event.agent != self._agent):
                continue
            self._last = event.seq
            idle = 0.0
            yield format_sse(event)


@router.get("/recent")
def recent_events(
    _: OperatorDep,
    services: ServicesDep,
    agent: str | None = None,
    after: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    type: Annotated[
        list[str] | None, Query(description="Only these types; a prefix names a family (`budget`: budget.*)")
    ] = None,
) -> list[Event]:
    """The newest `limit` events (oldest first), optionally for one agent, of some types, and past
    a sequence number."""
    return services.events.recent(limit=limit, agent=agent, after=after, types=type or [])


@router.get("", response_class=StreamingResponse)
async def stream_events(
    request: Request,
    _: OperatorDep,
    services: ServicesDep,
    agent: str | None = None,
    after: Annotated[int | None, Query(ge=0)] = None,
    heartbeat: Annotated[float, Query(gt=0, le=300, description="Seconds between keep-alives")] = (
        DEFAULT_HEARTBEAT_S
    ),
    last_event_id: Annotated[str | None, Header()] = None,
) -> StreamingResponse:
    """Live events as text/event-stream. With `after` (or Last-Event-ID), stored events come first."""
    # A browser reconnecting by itself repeats the original URL and adds Last-Event-ID, which is
    # then the more recent of the two.
    marks = [after] if after is not None else []
    if last_event_id and last_event_id.isdigit():
        marks.append(int(last_event_id))
    start = max(marks) if marks else latest_seq(services.db)
    stream = EventStream(services.events, services.db, agent, start, heartbeat)
    return StreamingResponse(
        stream.messages(request),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
