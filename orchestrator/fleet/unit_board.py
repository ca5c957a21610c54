"""The last known unit of every agent, from the listings the orchestrator makes anyway.

The supervisor lists the awake agents' units on every pass and, while the fleet is read, the
whole fleet every `FULL_LISTING_S`; each listing is recorded here. Reading the fleet (the fleet view behind `ps`
and the dashboard) then costs no engine call in the steady state: with 1,000 declared agents,
listing every container on every request was most of the view's time, in the engine.

What the board may not know is asked of the engine, for those agents alone: an agent never
listed or forgotten since (its unit was just restarted or made again), an awake agent its last
pass did not cover (just woken), an awake agent whose unit does not run (crashed, or being
restarted), and a sleeping agent whose unit runs (being put to sleep). While no supervisor
keeps the board (its loop is not running, or it fell behind), and on the first read after a
quiet spell, the fleet is listed as before.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from orchestrator.backends.base import UnitInfo

FULL_LISTING_S = 30.0
"""How often the supervisor lists every unit of the fleet, sleeping ones included, while the
fleet is being read; a fleet nobody reads is not listed whole (that is idle work of the engine
and the orchestrator, some 50 ms at N = 1,000), and its first read lists it."""
KEPT_WITHIN_S = 10.0
"""The board is trusted while the supervisor's last pass began at most this long ago (a pass
every 2 s, some seconds of slack for a slow engine)."""


@dataclass(frozen=True)
class Sighting:
    unit: UnitInfo | None
    """None: the agent had no unit when listed."""
    at: float
    """When the listing that saw it began (monotonic)."""


class UnitBoard:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._seen: dict[str, Sighting] = {}
        self._full_at: float | None = None
        self._kept_at: float | None = None
        self._read_at: float | None = None
        self._lock = threading.Lock()

    def now(self) -> float:
        return self._clock()

    def record_all(self, units: Iterable[UnitInfo], at: float) -> None:
        """A listing of the whole fleet, begun at `at`: agents not in it have no unit."""
        found = {unit.agent: unit for unit in units}
        with self._lock:
            for agent in found.keys() | self._seen.keys():
                self._put(agent, found.get(agent), at)
            self._full_at = at if self._full_at is None else max(self._full_at, at)

    def record(self, agents: Collection[str], units: Iterable[UnitInfo], at: float) -> None:
        """A listing of these agents' units, begun at `at`."""
        found = {unit.agent: unit for unit in units}
        with self._lock:
            for agent in agents:
                self._put(agent, found.get(agent), at)

    def _put(self, agent: str, unit: UnitInfo | None, at: float) -> None:
        """Keeps the newer sighting: a slow listing must not undo what a later one saw."""
        known = self._seen.get(agent)
        if known is None or known.at <= at:
            self._seen[agent] = Sighting(unit, at)

    def kept(self, at: float) -> None:
        """A supervisor's pass, begun at `at`, has recorded every awake agent's unit."""
        with self._lock:
            self._kept_at = at if self._kept_at is None else max(self._kept_at, at)

    def forget(self, agent: str) -> None:
        """The orchestrator is changing this agent's unit: ask the engine on the next read."""
        with self._lock:
            self._seen.pop(agent, None)

    def forget_all(self) -> None:
        """Units were made, removed or replaced (an apply): the next read lists the fleet."""
        with self._lock:
            self._seen.clear()
            self._full_at = None

    def full_listing_due(self, now: float) -> bool:
        """The fleet was read lately and its last full listing is `FULL_LISTING_S` old."""
        with self._lock:
            if self._read_at is None or now - self._read_at > 2 * FULL_LISTING_S:
                return False
            return self._full_at is None or now - self._full_at >= FULL_LISTING_S

    def note_read(self, now: float) -> None:
        """The fleet is being read: the supervisor lists it whole every `FULL_LISTING_S` while so."""
        with self._lock:
            self._read_at = now

    def trusted(self, now: float) -> bool:
        """A supervisor keeps the board, and the whole fleet was listed recently."""
        with self._lock:
            if self._kept_at is None or self._full_at is None:
                return False
            return now - self._kept_at <= KEPT_WITHIN_S and now - self._full_at <= 2 * FULL_LISTING_S

    def doubtful(self, agents: Iterable[str], asleep: Collection[str]) -> list[str]:
        """The agents whose unit the board may not know (see the module's docstring)."""
        with self._lock:
            kept_at = self._kept_at or 0.0
            return [agent for agent in agents if _doubtful(self._seen.get(agent), agent in asleep, kept_at)]

    def units(self) -> dict[str, UnitInfo]:
        with self._lock:
            return {agent: seen.unit for agent, seen in self._seen.items() if seen.unit is not None}


def _doubtful(seen: Sighting | None, asleep: bool, kept_at: float) -> bool:
    if seen is None:
        return True
    running = seen.unit is not None and seen.unit.state == "running"
    if asleep:
        return running
    return not running or seen.at < kept_at
