"""Admission to the awake agents: with `max_awake` reached, an agent that has work waits in a
queue, first come first woken, until one of the awake agents goes back to sleep.

Each agent holds at most one place however many items it has, so a busy agent cannot crowd the
others out. The queue lives in memory: its items are in the inbox, so after an orchestrator
restart the scheduler's first pass queues the sleeping agents with work again, oldest item first.
"""

from __future__ import annotations

import threading
from datetime import datetime

from pydantic import BaseModel, Field


class QueuedWake(BaseModel):
    """An agent with work, waiting for a place among the awake agents."""

    agent: str
    reason: str = Field(description="What it has to do, as the first request to wake it said")
    since: datetime
    position: int = Field(description="1 for the next agent to be woken")


class WakeQueue:
    """Agents waiting to be woken, in the order they asked. Safe from any thread."""

    def __init__(self) -> None:
        self._waiting: dict[str, tuple[str, datetime]] = {}
        self._lock = threading.Lock()

    def add(self, agent: str, reason: str, at: datetime) -> bool:
        """Queue the agent; False when it already waits (it keeps its place)."""
        with self._lock:
            if agent in self._waiting:
                return False
            self._waiting[agent] = (reason, at)
            return True

    def discard(self, agent: str) -> None:
        with self._lock:
            self._waiting.pop(agent, None)

    def first(self) -> list[str]:
        """The waiting agents, next first."""
        with self._lock:
            return list(self._waiting)

    def __contains__(self, agent: object) -> bool:
        with self._lock:
            return agent in self._waiting

    def __len__(self) -> int:
        with self._lock:
            return len(self._waiting)

    def snapshot(self) -> list[QueuedWake]:
        with self._lock:
            waiting = list(self._waiting.items())
        return [
            QueuedWake(agent=agent, reason=reason, since=since, position=index)
            for index, (agent, (reason, since)) in enumerate(waiting, start=1)
        ]
