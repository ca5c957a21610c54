"""What the operator can do to one agent or to the whole fleet: stop, start, restart, pause,
resume, and rotate the operator's own token. Each action is recorded as an event."""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel

from orchestrator.controls import WHOLE_FLEET
from orchestrator.events import EventType
from orchestrator.services import Services

ActionName = Literal["stop", "start", "restart", "pause", "resume"]
OPERATOR_TOKEN_FILE = "operator.token"


class ActionResult(BaseModel):
    agent: str | None = None
    """None: the whole fleet."""
    action: ActionName
    done: str


class UnknownAgent(LookupError):
    pass


def _require(services: Services, agent: str) -> None:
    if agent not in services.fleet.config.agents:
        known = ", ".join(services.fleet.config.agents)
        raise UnknownAgent(f"no agent {agent!r} in fleet {services.fleet.name} ({known})")


def stop_agent(services: Services, agent: str) -> ActionResult:
    """Stop the agent's unit; it stays down (the supervisor and apply leave it) until started."""
    _require(services, agent)
    services.controls.set(agent, "stopped")
    unit = services.manager.units_by_agent().get(agent)
    if unit is not None and unit.state == "running":
        services.backend.stop(unit.id, timeout_s=10.0)
    services.health.forget(agent)
    services.events.publish(EventType.AGENT_STOPPED, agent=agent, reason="stopped by the operator")
    return ActionResult(
        agent=agent, action="stop", done=f"{agent} stopped; `flotilla start {agent}` starts it"
    )


def start_agent(services: Services, agent: str) -> ActionResult:
    """Lift a stop (and a pause of this agent) and start its unit, made anew when missing."""
    _require(services, agent)
    services.controls.set(agent, None)
    unit = services.manager.units_by_agent().get(agent)
    if unit is None:
        services.manager.recreate(agent)
    elif unit.state != "running":
        services.backend.start(unit.id)
    services.inbox.wake(agent)
    services.events.publish(EventType.AGENT_STARTED, agent=agent, reason="started by the operator")
    return ActionResult(agent=agent, action="start", done=f"{agent} started")


def restart_agent(services: Services, agent: str) -> ActionResult:
    """Stop and start the agent's unit now (its storage and inbox stay)."""
    _require(services, agent)
    unit = services.manager.units_by_agent().get(agent)
    if unit is None:
        services.manager.recreate(agent)
    else:
        services.backend.stop(unit.id, timeout_s=10.0)
        services.backend.start(unit.id)
    services.health.forget(agent)
    services.events.publish(EventType.AGENT_RESTARTED, agent=agent, reason="restarted by the operator")
    held = services.controls.hold_of(agent)
    note = f" (still {held}: `flotilla resume {agent}` or `start`)" if held else ""
    return ActionResult(agent=agent, action="restart", done=f"{agent} restarted{note}")


def pause(services: Services, agent: str | None) -> ActionResult:
    """Pause one agent, or every agent (None): no inbox item, no model call, no heartbeat tick."""
    if agent is not None:
        _require(services, agent)
    services.controls.set(agent or WHOLE_FLEET, "paused")
    services.events.publish(EventType.AGENT_PAUSED, agent=agent, scope="agent" if agent else "fleet")
    who = agent or "every agent"
    return ActionResult(agent=agent, action="pause", done=f"{who} paused: no model calls, inbox kept")


def resume(services: Services, agent: str | None) -> ActionResult:
    """Lift a pause of one agent (a stop stays), or the fleet-wide pause (None)."""
    if agent is not None:
        _require(services, agent)
        if services.controls.own_hold(agent) == "paused":
            services.controls.set(agent, None)
        woken = [agent]
    else:
        services.controls.set(WHOLE_FLEET, None)
        woken = list(services.fleet.config.agents)
    for name in woken:
        services.inbox.wake(name)
    services.events.publish(EventType.AGENT_RESUMED, agent=agent, scope="agent" if agent else "fleet")
    still = services.controls.fleet_paused and agent is not None
    note = " (the whole fleet is still paused: `flotilla resume --all`)" if still else ""
    return ActionResult(agent=agent, action="resume", done=f"{agent or 'every agent'} resumed{note}")


def save_operator_token(services: Services) -> None:
    """Keep the operator's token beside the state (mode 0600) so that it survives restarts."""
    path = services.paths.root / OPERATOR_TOKEN_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(services.operator_token + "\n")


def load_operator_token(services: Services) -> bool:
    """Take the saved operator token again; False when there is none (a first start)."""
    path = services.paths.root / OPERATOR_TOKEN_FILE
    try:
        token = path.read_text().strip()
    except FileNotFoundError:
        return False
    if not token:
        return False
    services.tokens.adopt_operator(token)
    services.operator_token = token
    return True


def rotate_operator_token(services: Services) -> str:
    """A new operator token: the old one stops working at once."""
    services.operator_token = services.tokens.mint_operator()
    save_operator_token(services)
    return services.operator_token
