"""How many sandboxes run at once: one per agent (its further calls wait their turn) and a few in
all, on threads of their own, so that one agent's commands neither starve another agent's nor
hold the threads the rest of the orchestrator works on.

Loop-agnostic on purpose (a thread lock and short sleeps, no asyncio primitive bound to a loop):
the slots outlive any one event loop, as tests start several.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import TypeVar

PER_AGENT = 1
AT_ONCE = 4
POLL_S = 0.05

T = TypeVar("T")


class SandboxSlots:
    def __init__(self, per_agent: int = PER_AGENT, at_once: int = AT_ONCE) -> None:
        self._per_agent = per_agent
        self._at_once = at_once
        self._lock = threading.Lock()
        self._running: dict[str, int] = {}
        self._threads = ThreadPoolExecutor(max_workers=at_once, thread_name_prefix="exec-sandbox")

    def _take(self, key: str) -> bool:
        with self._lock:
            if self._running.get(key, 0) >= self._per_agent or sum(self._running.values()) >= self._at_once:
                return False
            self._running[key] = self._running.get(key, 0) + 1
            return True

    def _give_back(self, key: str) -> None:
        with self._lock:
            left = self._running.get(key, 1) - 1
            if left:
                self._running[key] = left
            else:
                self._running.pop(key, None)

    @asynccontextmanager
    async def slot(self, key: str) -> AsyncIterator[None]:
        while not self._take(key):
            await asyncio.sleep(POLL_S)
        try:
            yield
        finally:
            self._give_back(key)

    async def run(self, work: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._threads, work)


SLOTS = SandboxSlots()
