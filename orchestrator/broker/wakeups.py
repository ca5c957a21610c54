"""Waking the coroutines that wait on the inbox, from whichever thread changed it.

Items are queued and finished from request handlers, worker threads and the scheduler; the
long-polls, result waiters and progress streams that wait for them live on the orchestrator's
event loop. Everything here hands its wake-up to that loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from orchestrator.loop_calls import call_in_loop

Listener = TypeVar("Listener")


class ServingLoop:
    """The event loop that serves requests, once known; wake-ups are delivered on it."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None

    def call(self, fn: Callable[..., Any], *args: Any) -> None:
        call_in_loop(self.loop, fn, *args)


class Arrivals:
    """One event per agent, set when work may have arrived for it: its long-poll looks again."""

    def __init__(self, serving: ServingLoop) -> None:
        self._serving = serving
        self._lock = threading.Lock()
        self._events: dict[str, asyncio.Event] = {}
        self.closed = False

    def event(self, agent: str) -> asyncio.Event:
        with self._lock:
            return self._events.setdefault(agent, asyncio.Event())

    def signal(self, agent: str) -> None:
        with self._lock:
            event = self._events.get(agent)
        if event is not None:
            self._serving.call(event.set)

    def close(self) -> None:
        """Release every waiting long-poll at once (the orchestrator is shutting down)."""
        self.closed = True
        with self._lock:
            events = list(self._events.values())
        for event in events:
            self._serving.call(event.set)


class Listeners(Generic[Listener]):
    """Who listens for each item (result waiters, stream watchers), added and removed from any
    thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_item: dict[str, list[Listener]] = {}

    def add(self, item_id: str, listener: Listener) -> None:
        with self._lock:
            self._by_item.setdefault(item_id, []).append(listener)

    def remove(self, item_id: str, listener: Listener) -> None:
        with self._lock:
            listeners = self._by_item.get(item_id, [])
            if listener in listeners:
                listeners.remove(listener)
            if not listeners:
                self._by_item.pop(item_id, None)

    def of(self, item_id: str) -> list[Listener]:
        """A copy: listeners may come and go while the caller tells each one."""
        with self._lock:
            return list(self._by_item.get(item_id, []))
