"""Listing agent containers in one Docker API call, inspecting only the ones that changed.

`docker ps` data lacks what a unit needs (start time, exit code, health detail), so every
listed container used to be inspected: 51 API calls to list 50 agents, several times a second
while a fleet starts and `up -d` waits on it. Inspect data is kept per container and reused
while the container's state and health, as `docker ps` reports them, stay the same.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

Attrs = dict[str, Any]
StateKey = tuple[str, str, str]

# How `docker ps` shows health at the end of a running container's status text.
_HEALTH_IN_STATUS = re.compile(r"\((healthy|unhealthy|health: starting)\)\s*$")


def summary_key(summary: Attrs) -> StateKey:
    """(id, state, health) of a `docker ps` entry."""
    found = _HEALTH_IN_STATUS.search(summary.get("Status") or "")
    health = "" if found is None else found[1].removeprefix("health: ")
    return summary["Id"], summary.get("State") or "", health


def inspect_key(attrs: Attrs) -> StateKey:
    """(id, state, health) of `docker inspect` data."""
    state = attrs.get("State") or {}
    return attrs["Id"], state.get("Status") or "", (state.get("Health") or {}).get("Status") or ""


class InspectCache:
    def __init__(self, inspect: Callable[[str], Attrs | None]) -> None:
        """`inspect` returns a container's inspect data, or None once it is gone."""
        self._inspect = inspect
        self._attrs: dict[str, Attrs] = {}
        self._lock = threading.Lock()

    def resolve(self, summaries: list[Attrs]) -> list[Attrs]:
        """Inspect data for each listed container still there, fetched only where it changed."""
        resolved = []
        for summary in summaries:
            container_id = summary["Id"]
            with self._lock:
                cached = self._attrs.get(container_id)
            if cached is None or inspect_key(cached) != summary_key(summary):
                cached = self._inspect(container_id)
                with self._lock:
                    if cached is None:
                        self._attrs.pop(container_id, None)
                        continue
                    self._attrs[container_id] = cached
            resolved.append(cached)
        return resolved

    def remember(self, attrs: Attrs) -> None:
        """Keep inspect data this process already holds (a container it just made): a fleet made
        asleep is then listed without one inspect per container."""
        with self._lock:
            self._attrs[attrs["Id"]] = attrs

    def forget(self, container_id: str) -> None:
        """Drop what is known of a container this process is about to change."""
        with self._lock:
            self._attrs.pop(container_id, None)
