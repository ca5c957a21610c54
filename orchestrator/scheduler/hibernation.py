"""Hibernation: stop the unit of an agent that had no work for `hibernate_after`, start it again
when a message arrives for it or a heartbeat finds work.

The hibernated flag is persisted before the unit is stopped, so the supervisor (which asks
`Scheduler.is_hibernated`) never mistakes a hibernating agent for a crashed one, and an
orchestrator restart keeps a sleeping agent asleep.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta

from orchestrator.backends.base import LABEL_AGENT, LABEL_FLEET, Backend, BackendError, UnitInfo
from orchestrator.broker.inbox import Inbox
from orchestrator.events import EventBus, EventType
from orchestrator.fleet.view import FleetView
from orchestrator.scheduler.clock import Clock
from orchestrator.scheduler.store import SchedulerStore

log = logging.getLogger(__name__)
STOP_TIMEOUT_S = 10.0


class Hibernation:
    def __init__(
        self,
        fleet: FleetView,
        backend: Backend,
        events: EventBus,
        inbox: Inbox,
        store: SchedulerStore,
        clock: Clock,
    ) -> None:
        self._fleet = fleet
        self._backend = backend
        self._events = events
        self._inbox = inbox
        self._store = store
        self._clock = clock
        # A wake that arrives while the unit is still being stopped must wait for the stop,
        # or it would find the unit "running", start nothing, and leave it stopped.
        self._locks: dict[str, threading.RLock] = {}

    def _lock(self, agent: str) -> threading.RLock:
        return self._locks.setdefault(agent, threading.RLock())  # setdefault is atomic

    def _units(self, agent: str) -> list[UnitInfo]:
        labels = {LABEL_FLEET: self._fleet.current().name, LABEL_AGENT: agent}
        return self._backend.list(labels)

    def is_hibernated(self, agent: str) -> bool:
        return self._store.is_hibernated(agent)

    def deadline(self, agent: str, now: datetime) -> datetime | None:
        """When this agent may be hibernated, if it has `hibernate_after` and is awake."""
        after_s = self._fleet.current().config.hibernate_after_of(agent)
        if after_s is None:
            return None
        state = self._store.state(agent, now)
        if state.hibernated:
            return None
        return state.last_activity + timedelta(seconds=after_s)

    def sweep(self, now: datetime) -> tuple[list[str], datetime | None]:
        """Hibernate every agent idle for long enough. Returns those hibernated and the next deadline."""
        hibernated, upcoming = [], []
        for agent in self._fleet.current().config.agents:
            deadline = self.deadline(agent, now)
            if deadline is None:
                continue
            if deadline > now:
                upcoming.append(deadline)
            elif self.hibernate(agent, now):
                hibernated.append(agent)
        return hibernated, min(upcoming, default=None)

    def hibernate(self, agent: str, now: datetime) -> bool:
        with self._lock(agent):
            return self._hibernate(agent, now)

    def _hibernate(self, agent: str, now: datetime) -> bool:
        if self._inbox.counts(agent).unfinished:
            return False
        units = self._units(agent)
        if not units or not self._store.set_hibernated(agent, True, now):
            return False
        stopped = []
        try:
            for unit in units:
                if unit.state == "running":
                    self._backend.stop(unit.id, timeout_s=STOP_TIMEOUT_S)
                    stopped.append(unit.name)
        except BackendError as exc:
            log.error("hibernating %s failed: %s", agent, exc)
            self._store.set_hibernated(agent, False, now)
            self._events.publish(
                EventType.AGENT_UNHEALTHY, agent=agent, reason="hibernation failed", error=str(exc)
            )
            return False
        state = self._store.state(agent, now)
        idle_s = (now - state.last_activity).total_seconds()
        self._events.publish(EventType.AGENT_HIBERNATED, agent=agent, idle_s=idle_s, units=stopped)
        if self._inbox.counts(agent).unfinished:
            self.wake(agent, "message arrived while hibernating")  # a put raced the stop
        return True

    def wake(self, agent: str, reason: str) -> bool:
        """Start a hibernated agent's unit. False when it was not hibernated (nothing to do)."""
        with self._lock(agent):
            return self._wake(agent, reason)

    def _wake(self, agent: str, reason: str) -> bool:
        now = self._clock.now()
        if not self._store.set_hibernated(agent, False, now):
            return False
        started = []
        try:
            for unit in self._units(agent):
                if unit.state != "running":
                    self._backend.start(unit.id)
                    started.append(unit.name)
        except BackendError as exc:
            # Left awake: the supervisor now owns the agent and retries with backoff.
            log.error("waking %s failed: %s", agent, exc)
            self._events.publish(
                EventType.AGENT_UNHEALTHY, agent=agent, reason=f"wake failed ({reason})", error=str(exc)
            )
            return True
        self._events.publish(EventType.AGENT_STARTED, agent=agent, reason=f"wake: {reason}", units=started)
        return True
