"""Supervision: an agent that crashed, vanished, went unhealthy or stopped checking in is
restarted with exponential backoff. The backoff is capped and resets after a healthy stretch,
so an agent is never left in a terminal failed state."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from agent_runtime import Backoff
from agent_runtime.protocol import utcnow
from orchestrator.backends.base import Backend, BackendError, UnitInfo
from orchestrator.events import EventBus, EventType
from orchestrator.fleet.manager import FleetManager
from orchestrator.fleet.view import FleetView
from orchestrator.lifecycle import (
    Controls,
    LifecycleEvent,
    Policy,
    Restarts,
    TransitionRefused,
    state_of,
)
from orchestrator.running_agents.health import HealthBoard
from orchestrator.state.db import Database

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SupervisorPolicy:
    tick_s: float = 2.0
    start_grace_s: float = 30.0
    checkin_stale_s: float = 45.0
    base_backoff_s: float = 1.0
    max_backoff_s: float = 60.0
    reset_after_s: float = 300.0


@dataclass
class _RestartWindow:
    """When an agent may be restarted next, and since when it has been healthy."""

    delays: Backoff
    not_before: float = 0.0
    healthy_since: float | None = None


class Supervisor:
    def __init__(
        self,
        db: Database,
        fleet: FleetView,
        manager: FleetManager,
        backend: Backend,
        controls: Controls,
        health: HealthBoard,
        events: EventBus,
        policy: SupervisorPolicy | None = None,
    ) -> None:
        self._restarts = Restarts(db)
        self._fleet = fleet
        self._manager = manager
        self._backend = backend
        self._lifecycle = manager.lifecycle
        self._controls = controls
        self._health = health
        self._events = events
        self.policy = policy or SupervisorPolicy()
        self._backoff: dict[str, _RestartWindow] = {}
        self._started_at: dict[str, float] = {}

    def all_restarts(self) -> dict[str, int]:
        """Restarts of every agent restarted at least once, in one query."""
        return self._restarts.all()

    def restarts(self, agent: str) -> int:
        return self._restarts.of(agent)

    def diagnose(self, agent: str, unit: UnitInfo | None, now: float) -> str | None:
        """Why this agent needs a restart, or None when it is fine (or too young to judge)."""
        if unit is None:
            return "its unit is missing"
        if unit.state != "running":
            code = f" (exit code {unit.exit_code})" if unit.exit_code is not None else ""
            return f"its unit is {unit.state}{code}"
        if unit.health == "unhealthy":
            return "its health check fails"
        started = self._started_at.setdefault(agent, now)
        if now - started < self.policy.start_grace_s:
            return None
        if self._health.started_within(agent, self.policy.start_grace_s):
            return None  # restarted in place (its idle release), or woken: still loading
        if not self._health.is_checking_in(agent, self.policy.checkin_stale_s):
            return "it stopped checking in"
        return None

    def check_once(self) -> list[str]:
        """One supervision pass; returns the agents it restarted. None while fleet.yaml is being
        applied: an agent just added, or being recreated, would look missing and be made twice."""
        with self._manager.unless_applying() as free:
            return self._check(time.monotonic()) if free else []

    def _check(self, now: float) -> list[str]:
        held = self._manager.asleep() | self._controls.stopped()
        awake = [agent for agent in self._fleet.current().config.agents if agent not in held]
        board = self._manager.board
        began = board.now()
        if board.full_listing_due(began):
            # Now and then every unit, for the board that reading the fleet uses (a sleeping
            # agent's unit removed or started behind the orchestrator's back shows there).
            units = self._manager.units_by_agent()
        else:
            # Only the awake agents' units: in a mostly sleeping fleet, listing every unit every
            # pass would be most of the orchestrator's idle work.
            units = self._manager.units_by_agent(awake)
        restarted = []
        for agent in held:
            # Woken later, it is judged from its new start: its last check-in is old by then.
            self._started_at.pop(agent, None)
        for agent in awake:
            unit = units.get(agent)
            if unit is not None and unit.state != "running" and self._backend.self_healing:
                continue  # the engine restarts it itself (Swarm's restart policy); two would race
            reason = self.diagnose(agent, unit, now)
            backoff = self._backoff.setdefault(
                agent, _RestartWindow(Backoff(self.policy.base_backoff_s, self.policy.max_backoff_s))
            )
            if reason is None:
                self._note_healthy(backoff, now)
                continue
            backoff.healthy_since = None
            if now < backoff.not_before:
                continue
            if self._restart(agent, units.get(agent), reason):
                restarted.append(agent)
            backoff.not_before = now + backoff.delays.next()
        board.kept(began)
        return restarted

    def _note_healthy(self, backoff: _RestartWindow, now: float) -> None:
        if backoff.healthy_since is None:
            backoff.healthy_since = now
        elif now - backoff.healthy_since >= self.policy.reset_after_s:
            backoff.delays.reset()

    def _restart(self, agent: str, unit: UnitInfo | None, reason: str) -> bool:
        log.warning("restarting %s: %s", agent, reason)
        try:
            if unit is None:
                self._manager.recreate(agent)
            else:
                self._lifecycle.transition(
                    agent,
                    LifecycleEvent.RESTART,
                    policy=Policy.SUPERVISOR,
                    unit_id=unit.id,
                    current=state_of(unit),
                )
        except (BackendError, TransitionRefused) as exc:
            log.error("restart of %s failed: %s", agent, exc)
            self._events.publish(EventType.AGENT_UNHEALTHY, agent=agent, reason=reason, error=str(exc))
            return False
        self._started_at[agent] = time.monotonic()
        self._health.forget(agent)
        self._manager.board.forget(agent)
        self._restarts.record(agent, reason, utcnow())
        self._events.publish(EventType.AGENT_RESTARTED, agent=agent, reason=reason)
        return True

    async def run(self) -> None:
        while True:
            try:
                await asyncio.to_thread(self.check_once)
            except BackendError as exc:
                log.error("supervision pass failed: %s", exc)
            await asyncio.sleep(self.policy.tick_s)
