"""What the operator can do to one agent or to the whole fleet: stop, start, restart, pause,
resume, and rotate the operator's own token. Each action is recorded as an event."""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel

from orchestrator.backends.base import UnitInfo
from orchestrator.broker import Inbox
from orchestrator.config.wrong_names import unknown_agent
from orchestrator.control.auth import TokenStore
from orchestrator.events import EventBus, EventType
from orchestrator.fleet.manager import FleetManager
from orchestrator.fleet.view import FleetView
from orchestrator.lifecycle import WHOLE_FLEET, Controls, LifecycleEvent, Policy, state_of
from orchestrator.running_agents.health import HealthBoard
from orchestrator.state.paths import StatePaths

ActionName = Literal["stop", "start", "restart", "pause", "resume"]
OPERATOR_TOKEN_FILE = "operator.token"


class ActionResult(BaseModel):
    agent: str | None = None
    """None: the whole fleet."""
    action: ActionName
    done: str


class UnknownAgent(LookupError):
    pass


class OperatorActions:
    def __init__(
        self,
        fleet: FleetView,
        manager: FleetManager,
        controls: Controls,
        health: HealthBoard,
        inbox: Inbox,
        events: EventBus,
    ) -> None:
        self._fleet = fleet
        self._manager = manager
        self._lifecycle = manager.lifecycle
        self._controls = controls
        self._health = health
        self._inbox = inbox
        self._events = events

    def _require(self, agent: str) -> None:
        fleet = self._fleet.current()
        if agent not in fleet.config.agents:
            raise UnknownAgent(unknown_agent(agent, fleet.name, fleet.config.agents))

    def _request(self, agent: str, event: LifecycleEvent, unit: UnitInfo) -> None:
        self._lifecycle.transition(
            agent, event, policy=Policy.OPERATOR, unit_id=unit.id, current=state_of(unit)
        )

    def stop_agent(self, agent: str) -> ActionResult:
        """Stop the agent's unit; it stays down (the supervisor and apply leave it) until started."""
        self._require(agent)
        self._controls.set(agent, "stopped")
        unit = self._manager.units_by_agent([agent]).get(agent)
        if unit is not None and unit.state == "running":
            self._request(agent, LifecycleEvent.STOP, unit)
        self._health.forget(agent)
        self._manager.board.forget(agent)
        self._events.publish(EventType.AGENT_STOPPED, agent=agent, reason="stopped by the operator")
        return ActionResult(
            agent=agent, action="stop", done=f"{agent} stopped; `flotilla start {agent}` starts it"
        )

    def start_agent(self, agent: str) -> ActionResult:
        """Lift a stop (and a pause of this agent) and start its unit, made anew when missing."""
        self._require(agent)
        self._controls.set(agent, None)
        unit = self._manager.units_by_agent([agent]).get(agent)
        if unit is None:
            self._manager.recreate(agent)
        elif unit.state != "running":
            self._request(agent, LifecycleEvent.START, unit)
        self._inbox.wake(agent)
        self._manager.board.forget(agent)
        self._events.publish(EventType.AGENT_STARTED, agent=agent, reason="started by the operator")
        return ActionResult(agent=agent, action="start", done=f"{agent} started")

    def restart_agent(self, agent: str) -> ActionResult:
        """Stop and start the agent's unit now (its storage and inbox stay)."""
        self._require(agent)
        unit = self._manager.units_by_agent([agent]).get(agent)
        if unit is None:
            self._manager.recreate(agent)
        else:
            self._request(agent, LifecycleEvent.RESTART, unit)
        self._health.forget(agent)
        self._manager.board.forget(agent)
        self._events.publish(EventType.AGENT_RESTARTED, agent=agent, reason="restarted by the operator")
        held = self._controls.hold_of(agent)
        note = f" (still {held}: `flotilla resume {agent}` or `start`)" if held else ""
        return ActionResult(agent=agent, action="restart", done=f"{agent} restarted{note}")

    def pause(self, agent: str | None) -> ActionResult:
        """Pause one agent, or every agent (None): no inbox item, no model call, no heartbeat tick."""
        if agent is not None:
            self._require(agent)
        self._controls.set(agent or WHOLE_FLEET, "paused")
        self._events.publish(EventType.AGENT_PAUSED, agent=agent, scope="agent" if agent else "fleet")
        who = agent or "every agent"
        return ActionResult(agent=agent, action="pause", done=f"{who} paused: no model calls, inbox kept")

    def resume(self, agent: str | None) -> ActionResult:
        """Lift a pause of one agent (a stop stays), or the fleet-wide pause (None)."""
        if agent is not None:
            self._require(agent)
            if self._controls.own_hold(agent) == "paused":
                self._controls.set(agent, None)
            woken = [agent]
        else:
            self._controls.set(WHOLE_FLEET, None)
            woken = list(self._fleet.current().config.agents)
        for name in woken:
            self._inbox.wake(name)
        self._events.publish(EventType.AGENT_RESUMED, agent=agent, scope="agent" if agent else "fleet")
        still = self._controls.fleet_paused and agent is not None
        note = " (the whole fleet is still paused: `flotilla resume --all`)" if still else ""
        return ActionResult(agent=agent, action="resume", done=f"{agent or 'every agent'} resumed{note}")


def save_operator_token(paths: StatePaths, token: str) -> None:
    """Keep the operator's token beside the state (mode 0600) so that it survives restarts."""
    path = paths.root / OPERATOR_TOKEN_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(token + "\n")


def load_operator_token(paths: StatePaths, tokens: TokenStore) -> str | None:
    """Take the saved operator token again; None when there is none (a first start)."""
    path = paths.root / OPERATOR_TOKEN_FILE
    try:
        token = path.read_text().strip()
    except FileNotFoundError:
        return None
    if not token:
        return None
    tokens.adopt_operator(token)
    return token


def rotate_operator_token(paths: StatePaths, tokens: TokenStore) -> str:
    """A new operator token: the old one stops working at once."""
    token = tokens.mint_operator()
    save_operator_token(paths, token)
    return token
