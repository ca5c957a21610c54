"""The agent's link: config, check-ins, inbox, ask and tell over one WebSocket per agent (see
agent_runtime.protocol, where its path and frames keep the wire name "channel"), and the
workspace both ways.

When a link opens, the agent is sent the operator's copy of its workspace (its working copy
is replaced by it); its own workspace writes arrive as frames and go through the one write path
of the operator's copy. The open link is registered in `services.agent_links`, through which
the orchestrator asks the agent for what lives in its own storage.

The agent dials it, like every other route; its bearer token is checked once, at the handshake.
Each frame is one call of its action (`actions`), answered as the matching HTTP route would
answer: the same checks, statuses and error bodies. Frames that wait (an ask, a long-poll) run as
tasks of their own so one connection can carry many at once; the others are answered in order of
arrival.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from fastapi import APIRouter, WebSocket, WebSocketDisconnect
from pydantic import BaseModel, TypeAdapter, ValidationError
from starlette.responses import JSONResponse

from agent_runtime import is_disk_full
from agent_runtime.protocol import (
    AGENT_API_PREFIX,
    AgentOp,
    AgentRequest,
    ChannelAnswer,
    ChannelAsk,
    ChannelCheckIn,
    ChannelConfig,
    ChannelDone,
    ChannelForgotten,
    ChannelNext,
    ChannelProgress,
    ChannelRequest,
    ChannelRetiring,
    ChannelTell,
    ChannelWorkspaceWrite,
    ErrorBody,
)
from orchestrator.api.agent import actions
from orchestrator.api.deps import bearer_token
from orchestrator.api.errors import ApiError
from orchestrator.api.state_damage import SERVICE_UNAVAILABLE, damage_body, note_damage
from orchestrator.api.storage_errors import INSUFFICIENT_STORAGE, disk_full_body
from orchestrator.errors import Refused
from orchestrator.services import Services
from orchestrator.state.check import is_state_damage
from orchestrator.workspaces import access as workspace_access

log = logging.getLogger(__name__)
router = APIRouter(prefix=AGENT_API_PREFIX, tags=["agent"])

_frames: TypeAdapter[ChannelRequest] = TypeAdapter(ChannelRequest)
# Every frame but `next` (the long-poll, answered when an item comes) is answered by `_perform`.
Answered = (
    ChannelConfig
    | ChannelCheckIn
    | ChannelAsk
    | ChannelTell
    | ChannelDone
    | ChannelProgress
    | ChannelWorkspaceWrite
    | ChannelForgotten
    | ChannelRetiring
)
UNAUTHORIZED = ErrorBody(error="unauthorized", message="missing or invalid agent bearer token")


@router.websocket("/channel")
async def agent_link(websocket: WebSocket) -> None:
    services: Services = websocket.app.state.services
    token = bearer_token(websocket)
    principal = services.tokens.identify(token) if token else None
    if principal is None or principal.is_operator:
        await _deny(websocket)
        return
    await websocket.accept()
    await AgentLink(websocket, services, principal.name).serve()


async def _deny(websocket: WebSocket) -> None:
    """Refuse the handshake with HTTP 401 where the server can send one (403 otherwise)."""
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        await websocket.send_denial_response(JSONResponse(UNAUTHORIZED.model_dump(), status_code=401))
    else:
        await websocket.close(code=1008)


class AgentLink:
    """One agent's open link: its frames served, the orchestrator's requests sent on it."""

    def __init__(self, websocket: WebSocket, services: Services, agent: str) -> None:
        self.websocket = websocket
        self.services = services
        self.agent = agent
        self._send_lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()

    async def serve(self) -> None:
        links = self.services.agent_links
        links.attach(self.agent, self)
        self._spawn(self._sync_workspace())
        try:
            while True:
                await self._receive(await self.websocket.receive_text())
        except WebSocketDisconnect:
            pass
        finally:
            links.detach(self.agent, self)
            for task in list(self._tasks):
                task.cancel()

    async def send_request(self, request: AgentRequest) -> None:
        """An orchestrator request to the agent; its answer comes back as a ChannelAnswer."""
        async with self._send_lock:
            await self.websocket.send_text(request.model_dump_json())

    async def _sync_workspace(self) -> None:
        """The whole operator's copy, sent first: the agent's working copy starts from the truth."""
        if self.agent not in self.services.fleet.config.agents:
            return
        access = self.services.workspaces.open(self.agent)
        copy = await asyncio.to_thread(workspace_access.workspace_copy, access)
        answer = await self.services.agent_links.request(
            self.agent, AgentOp.WORKSPACE_SYNC, copy.model_dump()
        )
        if answer.status >= 400:
            log.warning("agent %s did not take its workspace: %s", self.agent, answer.body)

    async def _receive(self, text: str) -> None:
        try:
            frame = _frames.validate_json(text)
        except ValidationError as bad:
            # Without a valid frame there may be no id to answer to: the reply goes to id 0.
            await self._reply(
                0, 422, ErrorBody(error="invalid_request", message=f"not a channel frame: {bad}")
            )
            return
        if isinstance(frame, ChannelAnswer):
            self.services.agent_links.answered(self.agent, frame.request, frame.status, frame.body)
        elif isinstance(frame, ChannelNext):
            self._spawn(self._next(frame))
        elif isinstance(frame, ChannelAsk):
            self._spawn(self._respond(frame))
        else:
            await self._respond(frame)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (failed := task.exception()) is not None:
            # Most often a reply to an agent that has just gone away: its work is redelivered.
            log.warning("link of %s: a reply was not sent: %r", self.agent, failed)

    async def _respond(self, frame: Answered) -> None:
        try:
            status, body = await self._perform(frame)
        except ApiError as refused:
            status, body = refused.status, refused.body
        except Refused as refused:
            answer = ApiError.of(refused)
            status, body = answer.status, answer.body
        except (OSError, sqlite3.OperationalError) as failed:
            # A full disk is answered like over HTTP (507, the path, the free bytes), and the
            # link stays open: the agent sees why, and everything that only reads goes on.
            if not is_disk_full(failed):
                raise
            status, body = INSUFFICIENT_STORAGE, self._disk_full(frame, failed)
        except sqlite3.DatabaseError as damaged:
            if not is_state_damage(damaged):
                raise
            await asyncio.to_thread(note_damage, self.services, damaged)
            status, body = SERVICE_UNAVAILABLE, damage_body(self.services)
        await self._reply(frame.id, status, body)

    def _disk_full(self, frame: Answered, failed: OSError | sqlite3.OperationalError) -> ErrorBody:
        if isinstance(failed, OSError) and failed.filename:
            path = Path(str(failed.filename))
        else:
            path = self.services.paths.db
        if isinstance(frame, ChannelWorkspaceWrite):
            what = f"agent {self.agent}'s workspace file {frame.name} could not be written"
        else:
            what = f"the orchestrator could not record agent {self.agent}'s {frame.type}"
        log.warning("%s: the disk of %s is full", what, path)
        return disk_full_body(path, what)

    async def _perform(self, frame: Answered) -> tuple[int, BaseModel | None]:
        """The frame's action (`actions`), with its status when it succeeds."""
        services, agent = self.services, self.agent
        if isinstance(frame, ChannelCheckIn):
            return 200, actions.check_in(services, agent, frame.checkin)
        if isinstance(frame, ChannelConfig):
            return 200, actions.serve_config(services, agent, frame.reload)
        if isinstance(frame, ChannelAsk):
            return 200, await actions.ask(services, agent, frame.request)
        if isinstance(frame, ChannelTell):
            return 200, await actions.tell(services, agent, frame.request)
        if isinstance(frame, ChannelWorkspaceWrite):
            return 200, await asyncio.to_thread(
                actions.write_workspace, services, agent, frame.name, frame.write
            )
        if isinstance(frame, ChannelForgotten):
            return 200, await actions.forgotten(services, agent, frame.texts)
        if isinstance(frame, ChannelRetiring):
            services.agent_links.retire(agent, self)
        elif isinstance(frame, ChannelDone):
            actions.finish(services, agent, frame.item_id, frame.result)
        else:
            actions.add_progress(services, agent, frame.item_id, frame.delta)
        return 204, None

    async def _next(self, frame: ChannelNext) -> None:
        """The long-poll: an item claimed but not delivered goes back in the queue."""
        item = await actions.claim_next(self.services, self.agent, frame.wait_s)
        if item is None:
            await self._reply(frame.id, 204, None)
            return
        try:
            await self._reply(frame.id, 200, item)
        except BaseException:
            actions.release(self.services, item)
            raise

    async def _reply(self, frame_id: int, status: int, body: BaseModel | None) -> None:
        # Serialized by hand around the model's own JSON: one encoding pass, no dict round trip.
        payload = body.model_dump_json() if body is not None else "null"
        async with self._send_lock:
            await self.websocket.send_text(f'{{"id":{frame_id},"status":{status},"body":{payload}}}')
