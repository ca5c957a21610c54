"""What each agent last said about itself in its check-ins, and whether that is recent."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Literal

from agent_runtime.protocol import CheckIn

CHECKIN_STALE_S = 45.0

DiskChange = Literal["full", "freed"]


@dataclass(frozen=True)
class Sighting:
    checkin: CheckIn
    seen_monotonic: float

    @property
    def age_s(self) -> float:
        return time.monotonic() - self.seen_monotonic


class HealthBoard:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: dict[str, Sighting] = {}
        self._started: dict[str, float] = {}
        self._changes = 0
        self._disk_full: set[str] = set()
        """Agents whose disk is full: an episode outlasts restarts (`forget`), as the disk does."""

    @property
    def changes(self) -> int:
        """How many times what the board holds has changed: a cheap test for "anything new?"."""
        return self._changes

    def record(self, agent: str, checkin: CheckIn) -> DiskChange | None:
        """Keeps the check-in; says when it starts or ends an episode of a full disk (a check-in
        without a disk reading, as an old agent's or one sent before the runtime loaded, neither)."""
        with self._lock:
            self._last[agent] = Sighting(checkin, time.monotonic())
            self._changes += 1
            was_full = agent in self._disk_full
            if checkin.disk_full and not was_full:
                self._disk_full.add(agent)
                return "full"
            if was_full and not checkin.disk_full and checkin.disk_free_bytes is not None:
                self._disk_full.discard(agent)
                return "freed"
            return None

    def disk_full_note(self, agent: str) -> str | None:
        """ "the agent's disk is full (N bytes free)" while an episode lasts, else None."""
        with self._lock:
            if agent not in self._disk_full:
                return None
            sighting = self._last.get(agent)
        free = sighting.checkin.disk_free_bytes if sighting is not None else None
        shown = f"{free} bytes free" if free is not None else "free space unknown"
        return f"the agent's disk is full ({shown})"

    def mark_started(self, agent: str) -> None:
        """A new incarnation of the agent asked for its config; forget what the old one said."""
        with self._lock:
            self._last.pop(agent, None)
            self._started[agent] = time.monotonic()
            self._changes += 1

    def started_within(self, agent: str, seconds: float) -> bool:
        """A new incarnation of the agent asked for its config less than `seconds` ago."""
        with self._lock:
            started = self._started.get(agent)
        return started is not None and time.monotonic() - started <= seconds

    def last(self, agent: str) -> Sighting | None:
        with self._lock:
            return self._last.get(agent)

    def is_checking_in(self, agent: str, max_age_s: float = CHECKIN_STALE_S) -> bool:
        sighting = self.last(agent)
        return sighting is not None and sighting.age_s <= max_age_s

    def forget(self, agent: str) -> None:
        with self._lock:
            self._last.pop(agent, None)
            self._started.pop(agent, None)
            self._changes += 1
