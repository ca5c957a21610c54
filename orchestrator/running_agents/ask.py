"""Asking an agent for something in its own storage, on behalf of the operator.

A sleeping agent is woken for it; an agent that is starting is waited for a little; one that
cannot answer is `Unavailable`, naming the reason. The agent's answer carries an HTTP-like
status: its refusals (404, 422...) are passed on as they are (`AgentRefused`).
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from agent_runtime.protocol import AgentOp, ErrorBody
from orchestrator.errors import AgentRefused, BadAnswer, NotFound, Unavailable
from orchestrator.fleet.view import FleetView
from orchestrator.running_agents.health import HealthBoard
from orchestrator.running_agents.requests import AgentLinks, AgentUnreachable

Model = TypeVar("Model", bound=BaseModel)

# An agent that was just started (or woken, or that has just checked in) opens its link
# within a few seconds; one that shows no sign of life is not waited for long.
CONNECT_WAIT_S = 20.0
SILENT_WAIT_S = 2.0
ANSWER_TIMEOUT_S = 30.0


class Waker(Protocol):
    """What asking needs of the sleep policy (the scheduler's)."""

    def is_asleep(self, agent: str) -> bool: ...

    def wake(self, agent: str, reason: str) -> bool: ...


def _unavailable(agent: str, reason: str) -> Unavailable:
    return Unavailable(
        "agent_unavailable",
        f"agent {agent} cannot answer: {reason} (see `flotilla ps` and `flotilla logs {agent}`)",
    )


class AgentAsker:
    def __init__(self, fleet: FleetView, links: AgentLinks, health: HealthBoard, waker: Waker) -> None:
        self._fleet = fleet
        self._links = links
        self._health = health
        self._waker = waker

    def require_agent(self, agent: str) -> None:
        agents = self._fleet.current().config.agents
        if agent not in agents:
            known = ", ".join(sorted(agents))
            raise NotFound("unknown_agent", f"no agent named {agent!r} in this fleet; agents: {known}")

    async def _connected(self, agent: str, wait: bool) -> None:
        links = self._links
        if links.is_open(agent):
            return
        if not wait:
            raise _unavailable(agent, "it is not connected")
        woken = False
        if self._waker.is_asleep(agent):
            loop = asyncio.get_running_loop()
            woken = await loop.run_in_executor(None, self._waker.wake, agent, "asked by the operator")
        alive = woken or self._health.is_checking_in(agent)
        if await links.wait_open(agent, CONNECT_WAIT_S if alive else SILENT_WAIT_S):
            return
        reason = "it was woken from hibernation but has not connected" if woken else "it is not connected"
        raise _unavailable(agent, reason)

    async def ask(
        self,
        agent: str,
        op: AgentOp,
        body: dict[str, Any],
        model: type[Model],
        *,
        wait: bool = True,
    ) -> Model:
        """The agent's answer to `op`, as `model`; its refusals as `AgentRefused`. With `wait`
        false, an agent whose link is not open is not woken nor waited for (`Unavailable`)."""
        self.require_agent(agent)
        await self._connected(agent, wait)
        try:
            answer = await self._links.request(agent, op, body, ANSWER_TIMEOUT_S)
        except AgentUnreachable as failed:
            raise Unavailable("agent_unavailable", f"agent {agent} cannot answer: {failed}") from None
        if answer.status >= 400:
            try:
                refusal = ErrorBody.model_validate(answer.body)
            except ValidationError:
                refusal = ErrorBody(error="agent_error", message=str(answer.body)[:300])
            raise AgentRefused(answer.status, refusal.error, f"{agent}: {refusal.message}", refusal.details)
        try:
            return model.model_validate(answer.body)
        except ValidationError as bad:
            raise BadAnswer(
                "bad_answer", f"agent {agent} answered {op.value} with an unexpected body: {bad}"
            ) from None
