"""The sleep policy: put to sleep (stop the unit of) an agent that had no work for its idle
period (fleet.yaml's `hibernate_after`), start it again when a message arrives for it or a
heartbeat finds work.

The agent's desired state (the lifecycle's `asleep`) is written before the unit is stopped, so the
supervisor never mistakes a sleeping agent for a crashed one, and an orchestrator restart keeps a
sleeping agent asleep. With `max_awake`, waking goes through admission
(`orchestrator.scheduler.admission`): an agent with work beyond the cap waits its turn.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta

from orchestrator.backends.base import Backend, BackendError, UnitInfo
from orchestrator.broker import Inbox
from orchestrator.events import EventBus, EventType
from orchestrator.lifecycle import Controls, Lifecycle, LifecycleEvent, Policy, TransitionRefused, state_of
from orchestrator.scheduler.admission import WakeQueue
from orchestrator.scheduler.clock import Clock
from orchestrator.scheduler.fleet_in_force import FleetInForce
from orchestrator.scheduler.store import SchedulerStore
from orchestrator.scheduler.wake_boost import WakeBoost

log = logging.getLogger(__name__)
YIELD_AFTER_S = 10.0
"""While agents wait for a place, an awake agent idle this long goes to sleep and gives its
place up, whatever its `hibernate_after`."""
WORK_WAITING = "work waiting"


class SleepPolicy:
    def __init__(
        self,
        fleet: FleetInForce,
        backend: Backend,
        events: EventBus,
        inbox: Inbox,
        store: SchedulerStore,
        clock: Clock,
        controls: Controls,
        boost: WakeBoost,
    ) -> None:
        """`boost`: raises a woken unit's CPU limit for its start (where the runtime can)."""
        self._fleet = fleet
        self._boost = boost
        self._backend = backend
        self._lifecycle = Lifecycle(backend, store.actual)
        self._events = events
        self._inbox = inbox
        self._store = store
        self._desired = store.desired
        self._clock = clock
        self._controls = controls
        self.queue = WakeQueue()
        # A wake that arrives while the unit is still being stopped must wait for the stop,
        # or it would find the unit "running", start nothing, and leave it stopped.
        self._locks: dict[str, threading.RLock] = {}
        # Admission: counting the awake agents and flipping one awake happen under one lock, so
        # two wakes at once cannot both take the last place. Never held while waiting on an
        # agent's lock (putting an agent to sleep holds its lock and then admits the next).
        self._gate = threading.Lock()
        self._waking: set[str] = set()
        """Agents whose unit is being started: counted awake, still flagged asleep."""

    def _lock(self, agent: str) -> threading.RLock:
        return self._locks.setdefault(agent, threading.RLock())  # setdefault is atomic

    def _units(self, agent: str) -> list[UnitInfo]:
        return self._lifecycle.units(self._fleet.name, agent)

    def _move(self, agent: str, event: LifecycleEvent, policy: Policy, unit: UnitInfo) -> None:
        self._lifecycle.transition(agent, event, policy=policy, unit_id=unit.id, current=state_of(unit))

    def sweep(self, now: datetime) -> tuple[list[str], datetime | None]:
        """Queue sleeping agents with work, put to sleep every agent idle for long enough (sooner
        while others wait for a place), and wake the waiting ones there is room for. Returns those
        put to sleep and the next deadline."""
        self._wake_for_waiting_work()
        config = self._fleet.config
        known = self._store.idle_since()
        yielding = len(self.queue) > 0
        put_to_sleep, upcoming = [], []
        for agent in config.agents:
            after_s = config.hibernate_after_of(agent) if self._backend.runs_on_demand else None
            if after_s is None:
                continue
            last_activity, asleep = known.get(agent) or self._first_sight(agent, now)
            if asleep:
                continue
            deadline = last_activity + timedelta(seconds=min(after_s, YIELD_AFTER_S) if yielding else after_s)
            if deadline > now:
                upcoming.append(deadline)
            elif self.put_to_sleep(agent, now):
                put_to_sleep.append(agent)
        self.admit()
        return put_to_sleep, min(upcoming, default=None)

    def _first_sight(self, agent: str, now: datetime) -> tuple[datetime, bool]:
        state = self._store.state(agent, now)
        return state.last_activity, state.asleep

    def _wake_for_waiting_work(self) -> None:
        """Sleeping agents with queued items are woken (or queued), oldest item first: items that
        arrived before a restart, or while the agent was made asleep, are never left waiting."""
        waiting = self._inbox.waiting_since()
        if not waiting:
            return
        config = self._fleet.config
        asleep = self._desired.asleep().intersection(config.agents, waiting)
        for agent in sorted(asleep, key=waiting.__getitem__):
            if agent not in self.queue and self._controls.hold_of(agent) is None:
                self.wake(agent, WORK_WAITING)

    def put_to_sleep(self, agent: str, now: datetime) -> bool:
        with self._lock(agent):
            done = self._put_to_sleep(agent, now)
        if done:
            self.admit()  # its place is free
        return done

    def _put_to_sleep(self, agent: str, now: datetime) -> bool:
        if self._inbox.counts(agent).unfinished:
            return False
        units = self._units(agent)
        if not units or not self._desired.set(agent, "asleep", now):
            return False
        stopped = []
        try:
            for unit in units:
                if unit.state == "running":
                    self._move(agent, LifecycleEvent.HIBERNATE, Policy.HIBERNATION, unit)
                    stopped.append(unit.name)
        except (BackendError, TransitionRefused) as exc:
            log.error("putting %s to sleep failed: %s", agent, exc)
            self._desired.set(agent, "awake", now)
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

    def wake(self, agent: str, reason: str, *, capped: bool = True) -> bool:
        """Start a sleeping agent's unit. False when it was not asleep (nothing to do), when
        the operator stopped it (it stays down until `flotilla start`), or when, `capped`,
        `max_awake` agents are awake: it then waits in the queue for a place."""
        with self._gate:
            if not self._desired.is_asleep(agent) or self._controls.own_hold(agent) == "stopped":
                self.queue.discard(agent)
                return False
            if capped and self._full(agent):
                if self.queue.add(agent, reason, self._clock.now()):
                    self._events.publish(
                        EventType.AGENT_QUEUED, agent=agent, reason=reason, position=len(self.queue)
                    )
                return False
            if agent in self._waking:
                return False  # another caller is starting it
            self.queue.discard(agent)
            self._waking.add(agent)
        try:
            with self._lock(agent):
                # Flagged awake only once its unit runs: until then the supervisor leaves it be.
                self._start_units(agent, reason)
                self._desired.set(agent, "awake", self._clock.now())
        finally:
            with self._gate:
                self._waking.discard(agent)
        return True

    def _full(self, agent: str) -> bool:
        """`max_awake` agents that sleep when idle are awake (always-on agents are not counted)."""
        config = self._fleet.config
        cap = config.max_awake
        if cap is None or config.always_on_of(agent):
            return False
        asleep = (self._desired.asleep() - self._waking) | self._controls.stopped()
        awake = sum(1 for name in config.agents if name not in asleep and not config.always_on_of(name))
        return awake >= cap

    def admit(self) -> list[str]:
        """Wake the agents that wait, next first, while there is room. Returns those woken."""
        agents = self._fleet.config.agents
        woken = []
        for queued in self.queue.snapshot():
            if queued.agent not in agents:
                self.queue.discard(queued.agent)
                continue
            if self.wake(queued.agent, queued.reason):
                woken.append(queued.agent)
            elif queued.agent in self.queue:
                break  # no room left
        return woken

    def _start_units(self, agent: str, reason: str) -> None:
        started = []
        try:
            for unit in self._units(agent):
                if unit.state != "running":
                    self._boost.before_start(agent, unit.id)
                    self._move(agent, LifecycleEvent.WAKE, Policy.ADMISSION, unit)
                    started.append(unit.name)
        except (BackendError, TransitionRefused) as exc:
            # Left awake: the supervisor now owns the agent and retries with backoff.
            log.error("waking %s failed: %s", agent, exc)
            self._events.publish(
                EventType.AGENT_UNHEALTHY, agent=agent, reason=f"wake failed ({reason})", error=str(exc)
            )
            return
        self._events.publish(EventType.AGENT_STARTED, agent=agent, reason=f"wake: {reason}", units=started)
