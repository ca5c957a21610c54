"""Live progress: the reply text an agent streams while it works on an item, relayed to whoever
watches that item (an operator's `--stream`, the dashboard). Nothing here is stored: a stream
is for the people watching now; the result is what stays."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from orchestrator.broker.wakeups import Listeners, ServingLoop

_END = object()


class ProgressStreams:
    """Queues per item id, one for each watcher, fed on the serving loop."""

    def __init__(self, serving: ServingLoop, finished: Callable[[str], bool]) -> None:
        self._serving = serving
        self._finished = finished
        self._queues: Listeners[asyncio.Queue[object]] = Listeners()

    def add(self, item_id: str, delta: str) -> None:
        """A piece of reply text for the item's watchers (from any thread)."""
        self._to_watchers(item_id, delta)

    def end(self, item_id: str) -> None:
        """The item is finished: its streams end."""
        self._to_watchers(item_id, _END)

    async def stream(self, item_id: str, timeout_s: float = 600.0) -> AsyncIterator[str]:
        """Reply text as the agent streams it, until the item is done or timeout_s passes."""
        queue: asyncio.Queue[object] = asyncio.Queue()
        self._queues.add(item_id, queue)
        try:
            if self._finished(item_id):
                return
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout_s
            while (remaining := deadline - loop.time()) > 0:
                try:
                    chunk = await asyncio.wait_for(queue.get(), timeout=remaining)
                except TimeoutError:
                    return
                if chunk is _END:
                    return
                assert isinstance(chunk, str)
                yield chunk
        finally:
            self._queues.remove(item_id, queue)

    def watchers(self, item_id: str) -> int:
        """How many watch this item's stream now."""
        return len(self._queues.of(item_id))

    def _to_watchers(self, item_id: str, chunk: object) -> None:
        for queue in self._queues.of(item_id):
            self._serving.call(queue.put_nowait, chunk)
