"""A woken agent starts on the host's cores, then works under its own CPU limit.

An agent's start (the interpreter, the runtime's imports, its worker for the first turn) costs
about 0.4 CPU s. Under the default limit of half a core that alone takes 0.8 s of wall clock,
most of a wake. For the first seconds after a wake the orchestrator raises the unit's limit to the
host's cores, then puts the fleet.yaml limit back.

The raise is written to the lifecycle's table of raised limits before it is made and removed once the limit is back, so an
orchestrator that dies in between puts it back when it starts again (`restore_all`), and one that
stops puts back every raise still pending before it goes. A runtime that cannot change a unit's
limit in place (`Backend.set_cpus` answers False) is left alone.
"""

from __future__ import annotations

import logging
import threading

from orchestrator.backends.base import Backend, BackendError
from orchestrator.fleet.view import FleetView
from orchestrator.lifecycle import Lifecycle, LifecycleEvent, Policy, RaisedLimits, TransitionRefused
from orchestrator.scheduler.fleet_in_force import FleetInForce
from orchestrator.state.db import Database

log = logging.getLogger(__name__)

WAKE_BOOST_S = 5.0
"""How long a woken agent runs on the host's cores: its start and first turn take about 1 s."""


class WakeBoost:
    def __init__(
        self, backend: Backend, db: Database, fleet: FleetView, hold_s: float = WAKE_BOOST_S
    ) -> None:
        self._lifecycle = Lifecycle(backend)
        self._raised = RaisedLimits(db)
        self._fleet = FleetInForce(fleet)
        self._hold_s = hold_s
        self._timers: dict[str, threading.Timer] = {}
        self._lock = threading.Lock()
        self._host_cpus: float | None = None

    def before_start(self, agent: str, unit_id: str) -> None:
        """Raise the limit of the unit about to start; it is put back `hold_s` later."""
        own = self._fleet.config.resources_of(agent).cpus
        raised = self._boosted_cpus()
        if raised <= own:
            return
        self._raised.record(unit_id, agent, own)
        try:
            changed = self._set_cpus(agent, LifecycleEvent.RAISE_CPUS, unit_id, raised)
        except (BackendError, TransitionRefused) as failed:
            log.warning("the start of %s is not sped up: %s", agent, failed)
            changed = False
        if not changed:
            self._raised.forget(unit_id)
            return
        timer = threading.Timer(self._hold_s, self.restore, (unit_id,))
        timer.daemon = True
        with self._lock:
            earlier = self._timers.pop(unit_id, None)
            self._timers[unit_id] = timer
        if earlier is not None:
            earlier.cancel()
        timer.start()

    def restore(self, unit_id: str) -> None:
        """Put the fleet.yaml limit of this unit back (nothing when it was not raised)."""
        with self._lock:
            self._timers.pop(unit_id, None)
        raised = self._raised.own_limit(unit_id)
        if raised is None:
            return
        agent, own_cpus = raised
        try:
            self._set_cpus(agent, LifecycleEvent.RESTORE_CPUS, unit_id, own_cpus)
        except (BackendError, TransitionRefused) as failed:
            # Most often the unit is gone (removed, or recreated with its limit from fleet.yaml).
            log.info("the CPU limit of %s was not put back: %s", agent, failed)
        self._raised.forget(unit_id)

    def _set_cpus(self, agent: str, event: LifecycleEvent, unit_id: str, cpus: float) -> bool:
        # Whether the unit runs does not matter to a CPU limit: its state is not read.
        moved = self._lifecycle.transition(
            agent, event, policy=Policy.WAKE_BOOST, unit_id=unit_id, current=None, cpus=cpus
        )
        return moved.changed

    def restore_all(self) -> int:
        """Put back every raised limit now: at start, those an orchestrator that died left raised;
        at stop, those whose timer would not run. Returns how many there were."""
        with self._lock:
            timers = list(self._timers.values())
            self._timers.clear()
        for timer in timers:
            timer.cancel()
        units = self._raised.units()
        for unit_id in units:
            self.restore(unit_id)
        return len(units)

    def _boosted_cpus(self) -> float:
        if self._host_cpus is None:
            capacity = self._lifecycle.capacity()
            self._host_cpus = capacity.cpus if capacity is not None else 0.0
        return self._host_cpus
