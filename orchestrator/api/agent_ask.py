"""Asking an agent for something in its own storage, on behalf of an operator route.

A hibernated agent is woken for it; an agent that is starting is waited for a little; one that
cannot answer gives a clear 503 naming the reason. The agent's answer carries an HTTP-like
status: its refusals (404, 422...) are passed on as they are.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agent_runtime.protocol import AgentOp, ErrorBody
from orchestrator.agent_requests import AgentUnreachable
from orchestrator.api.errors import ApiError
from orchestrator.services import Services

Model = TypeVar("Model", bound=BaseModel)

# An agent that was just started (or woken, or that has just checked in) opens its channel
# within a few seconds; one that shows no sign of life is not waited for long.
CONNECT_WAIT_S = 20.0
SILENT_WAIT_S = 2.0
ANSWER_TIMEOUT_S = 30.0


def require_agent(services: Services, agent: str) -> None:
    if agent not in services.fleet.config.agents:
        known = ", ".join(sorted(services.fleet.config.agents))
        raise ApiError(404, "unknown_agent", f"no agent named {agent!r} in this fleet; agents: {known}")


def _unavailable(agent: str, reason: str) -> ApiError:
    return ApiError(
        503,
        "agent_unavailable",
        f"agent {agent} cannot answer: {reason} (see `flotilla ps` and `flotilla logs {agent}`)",
    )


async def _connected(services: Services, agent: str, wait: bool) -> None:
    channels = services.channels
    if channels.is_open(agent):
        return
    if not wait:
        raise _unavailable(agent, "it is not connected")
    woken = False
    scheduler = getattr(services, "scheduler", None)
    if scheduler is not None and scheduler.is_hibernated(agent):
        loop = asyncio.get_running_loop()
        woken = await loop.run_in_executor(None, scheduler.wake, agent, "asked by the operator")
    alive = woken or services.health.is_checking_in(agent)
    if await channels.wait_open(agent, CONNECT_WAIT_S if alive else SILENT_WAIT_S):
        return
    reason = "it was woken from hibernation but has not connected" if woken else "it is not connected"
    raise _unavailable(agent, reason)


async def ask_agent(
    services: Services,
    agent: str,
    op: AgentOp,
    body: dict[str, Any],
    model: type[Model],
    *,
    wait: bool = True,
) -> Model:
    """The agent's answer to `op`, as `model`; its refusals as ApiErrors. With `wait` false, an
    agent whose channel is not open is not woken nor waited for (an immediate 503)."""
    require_agent(services, agent)
    await _connected(services, agent, wait)
    try:
        answer = await services.channels.request(agent, op, body, ANSWER_TIMEOUT_S)
    except AgentUnreachable as failed:
        raise ApiError(503, "agent_unavailable", f"agent {agent} cannot answer: {failed}") from None
    if answer.status >= 400:
        try:
            refusal = ErrorBody.model_validate(answer.body)
        except ValidationError:
            refusal = ErrorBody(error="agent_error", message=str(answer.body)[:300])
        raise ApiError(answer.status, refusal.error, f"{agent}: {refusal.message}", refusal.details)
    try:
        return model.model_validate(answer.body)
    except ValidationError as bad:
        raise ApiError(
            502, "bad_answer", f"agent {agent} answered {op.value} with an unexpected body: {bad}"
        ) from None
