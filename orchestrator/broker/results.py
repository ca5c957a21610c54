"""Waiting for an item's result: whoever queued an item (an ask, an operator's message, a chat)
waits here until its recipient answers, it is given up, or the wait times out."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from agent_runtime.protocol import WorkResult
from orchestrator.broker.wakeups import Listeners, ServingLoop

StoredResult = Callable[[str], WorkResult | None]


class ResultWaiters:
    """Futures per item id, settled on the serving loop when the item's result is stored."""

    def __init__(self, serving: ServingLoop, stored: StoredResult) -> None:
        self._serving = serving
        self._stored = stored
        self._futures: Listeners[asyncio.Future[WorkResult]] = Listeners()

    async def wait(self, item_id: str, timeout_s: float) -> WorkResult | None:
        """The item's result, at once when stored, else when it lands; None after timeout_s."""
        stored = self._stored(item_id)
        if stored is not None:
            return stored
        future: asyncio.Future[WorkResult] = asyncio.get_running_loop().create_future()
        self._futures.add(item_id, future)
        try:
            # Re-check after registering: the result may have landed in between.
            stored = self._stored(item_id)
            if stored is not None:
                return stored
            return await asyncio.wait_for(future, timeout=timeout_s)
        except TimeoutError:
            return None
        finally:
            self._futures.remove(item_id, future)

    def resolve(self, item_id: str, result: WorkResult) -> None:
        """Hand the result to everyone waiting for it (from any thread)."""
        for future in self._futures.of(item_id):
            self._serving.call(_settle, future, result)

    def waiting(self, item_id: str) -> int:
        """How many wait for this item's result now."""
        return len(self._futures.of(item_id))


def _settle(future: asyncio.Future[WorkResult], result: WorkResult) -> None:
    if not future.done():
        future.set_result(result)
