"""Time as the scheduler sees it: injectable, so tests can live through a day in milliseconds."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware (UTC)."""
        ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """Wall-clock time and real sleeping."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


class ManualClock:
    """Virtual time for tests and simulations.

    `sleep` moves the clock forward by the requested amount at once (then yields to the event
    loop), so a scheduler loop driven by this clock runs through simulated hours as fast as its
    own work allows. `advance` moves time forward from outside, e.g. to simulate downtime.
    Only one task should sleep on a ManualClock: concurrent sleepers would each advance it.
    """

    def __init__(self, start: datetime | None = None) -> None:
        start = start or datetime(2025, 1, 6, 0, 0, tzinfo=UTC)
        if start.tzinfo is None:
            raise ValueError("ManualClock needs a timezone-aware start time")
        self._now = start.astimezone(UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> datetime:
        with self._lock:
            self._now += timedelta(seconds=max(0.0, seconds))
            return self._now

    def set(self, when: datetime) -> None:
        with self._lock:
            if when < self._now:
                raise ValueError("a ManualClock never goes back in time")
            self._now = when.astimezone(UTC)

    async def sleep(self, seconds: float) -> None:
        self.advance(seconds)
        await asyncio.sleep(0)
