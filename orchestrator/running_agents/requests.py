"""Requests from the orchestrator to an agent, over the link the agent dialled.

Nothing dials an agent: an agent's link (`orchestrator.api.agent.link`) registers here while it
is open, and carries the orchestrator's requests (`AgentRequest`) as well as the agent's own.
This is how the orchestrator reaches what lives in an agent's own storage (memory, learnings)
without opening a path in it, and how it hands the agent its workspace.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from dataclasses import dataclass
from typing import Any, Protocol

from agent_runtime.protocol import AgentOp, AgentRequest, WorkspaceCopy
from orchestrator.loop_calls import call_in_loop

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 30.0
# How long a request waits for the link of an agent that said it restarts in place (its
# next process dials within about a second; a slow start takes a few).
REOPEN_WAIT_S = 15.0


@dataclass(frozen=True)
class AgentAnswer:
    status: int
    body: Any


class AgentUnreachable(Exception):
    """The agent could not be asked: the message says why (not connected, gone, too slow)."""


class RequestSender(Protocol):
    async def send_request(self, request: AgentRequest) -> None: ...


class AgentLinks:
    """The open links, by agent, and the orchestrator's requests waiting for an answer."""

    def __init__(self) -> None:
        # Every open link of each agent, newest last: requests go to the newest, and when it
        # closes the one before it carries them again.
        self._open: dict[str, list[RequestSender]] = {}
        self._arrivals: dict[str, list[asyncio.Future[None]]] = {}
        self._waiting: dict[int, tuple[str, RequestSender, asyncio.Future[AgentAnswer]]] = {}
        # Agents whose process said it restarts in place, and when: requests wait for the next.
        self._restarting: dict[str, float] = {}
        self._ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None

    # --- the link's side ---------------------------------------------------------------

    def attach(self, agent: str, sender: RequestSender) -> None:
        """Called on the event loop when the agent's link opens."""
        self._loop = asyncio.get_running_loop()
        self._open.setdefault(agent, []).append(sender)
        self._restarting.pop(agent, None)
        for arrival in self._arrivals.pop(agent, []):
            if not arrival.done():
                arrival.set_result(None)

    def retire(self, agent: str, sender: RequestSender) -> None:
        """The agent's process on this link restarts in place: no request goes to it from
        now on (those sent before are answered on it); new ones wait for the next link."""
        self._forget_sender(agent, sender)
        if agent not in self._open:
            self._restarting[agent] = time.monotonic()

    def detach(self, agent: str, sender: RequestSender) -> None:
        self._forget_sender(agent, sender)
        for request_id, (owner, via, future) in list(self._waiting.items()):
            if owner == agent and via is sender and not future.done():
                future.set_exception(AgentUnreachable(f"agent {agent}'s channel closed before it answered"))
                self._waiting.pop(request_id, None)

    def _forget_sender(self, agent: str, sender: RequestSender) -> None:
        senders = self._open.get(agent, [])
        if sender in senders:
            senders.remove(sender)
            if not senders:
                del self._open[agent]

    def answered(self, agent: str, request_id: int, status: int, body: Any) -> None:
        waiting = self._waiting.get(request_id)
        if waiting is None or waiting[0] != agent:
            return  # late, or not this agent's to answer
        del self._waiting[request_id]
        if not waiting[2].done():
            waiting[2].set_result(AgentAnswer(status, body))

    # --- asking ---------------------------------------------------------------------------

    def is_open(self, agent: str) -> bool:
        return agent in self._open

    async def wait_open(self, agent: str, timeout_s: float) -> bool:
        """True once the agent's link is open, False after timeout_s."""
        if agent in self._open:
            return True
        arrival: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._arrivals.setdefault(agent, []).append(arrival)
        try:
            await asyncio.wait_for(arrival, timeout_s)
        except TimeoutError:
            return False
        finally:
            waiting = self._arrivals.get(agent, [])
            if arrival in waiting:
                waiting.remove(arrival)
        return True

    async def request(
        self, agent: str, op: AgentOp, body: dict[str, Any], timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> AgentAnswer:
        senders = self._open.get(agent)
        if not senders and (reopen_s := self._reopen_wait_s(agent)) > 0:
            await self.wait_open(agent, min(reopen_s, timeout_s))
            senders = self._open.get(agent)
        if not senders:
            raise AgentUnreachable(f"agent {agent} is not connected")
        sender = senders[-1]
        request = AgentRequest(request=next(self._ids), op=op, body=body)
        future: asyncio.Future[AgentAnswer] = asyncio.get_running_loop().create_future()
        self._waiting[request.request] = (agent, sender, future)
        try:
            await sender.send_request(request)
            return await asyncio.wait_for(future, timeout_s)
        except TimeoutError:
            raise AgentUnreachable(f"agent {agent} did not answer {op.value} within {timeout_s:g}s") from None
        finally:
            self._waiting.pop(request.request, None)

    def _reopen_wait_s(self, agent: str) -> float:
        """How much longer an agent restarting in place is waited for (0 when it is not)."""
        since = self._restarting.get(agent)
        if since is None:
            return 0.0
        left = REOPEN_WAIT_S - (time.monotonic() - since)
        if left <= 0:
            del self._restarting[agent]
        return max(left, 0.0)

    def push_workspace(self, agent: str, copy: WorkspaceCopy) -> None:
        """Hand an accepted change to the agent, from any thread; an agent that is not
        connected gets the whole workspace when its link opens."""
        call_in_loop(self._loop, self._start_push, agent, copy)

    def _start_push(self, agent: str, copy: WorkspaceCopy) -> None:
        if agent not in self._open:
            return
        task = asyncio.ensure_future(self._push(agent, copy))
        task.add_done_callback(_log_failure)

    async def _push(self, agent: str, copy: WorkspaceCopy) -> None:
        answer = await self.request(agent, AgentOp.WORKSPACE_PUT, copy.model_dump())
        if answer.status >= 400:
            log.warning("agent %s refused a workspace update: %s", agent, answer.body)


def _log_failure(task: asyncio.Future[None]) -> None:
    if not task.cancelled() and (failed := task.exception()) is not None:
        log.warning("workspace update not delivered: %s", failed)
