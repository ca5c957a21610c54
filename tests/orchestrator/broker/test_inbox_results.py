"""Waiting for an item's result: stored results, results that land from another thread, timeouts."""

from __future__ import annotations

import asyncio
import threading

from agent_runtime.protocol import WorkResult
from orchestrator.broker.results import ResultWaiters
from orchestrator.broker.wakeups import ServingLoop


def test_a_stored_result_is_returned_at_once() -> None:
    stored = {"i1": WorkResult(text="kept")}
    waiters = ResultWaiters(ServingLoop(), stored.get)
    assert asyncio.run(waiters.wait("i1", timeout_s=5.0)) == WorkResult(text="kept")
    assert waiters.waiting("i1") == 0


def test_every_waiter_gets_a_result_resolved_from_another_thread() -> None:
    serving = ServingLoop()
    waiters = ResultWaiters(serving, lambda item_id: None)

    async def scenario() -> list[WorkResult | None]:
        serving.loop = asyncio.get_running_loop()
        both = asyncio.gather(waiters.wait("i1", 5.0), waiters.wait("i1", 5.0))
        while waiters.waiting("i1") < 2:
            await asyncio.sleep(0.01)
        resolver = threading.Thread(target=waiters.resolve, args=("i1", WorkResult(text="answer")))
        resolver.start()
        results = await both
        resolver.join()
        return list(results)

    assert asyncio.run(scenario()) == [WorkResult(text="answer")] * 2
    assert waiters.waiting("i1") == 0


def test_a_wait_times_out_with_none_and_leaves_nothing_behind() -> None:
    waiters = ResultWaiters(ServingLoop(), lambda item_id: None)
    assert asyncio.run(waiters.wait("i1", timeout_s=0.05)) is None
    assert waiters.waiting("i1") == 0


def test_a_result_stored_while_registering_is_not_missed() -> None:
    """The result lands between the first look and the registration of the waiter."""
    looks: list[str] = []

    def stored(item_id: str) -> WorkResult | None:
        looks.append(item_id)
        return WorkResult(text="in between") if len(looks) > 1 else None

    waiters = ResultWaiters(ServingLoop(), stored)
    assert asyncio.run(waiters.wait("i1", timeout_s=5.0)) == WorkResult(text="in between")
    assert waiters.waiting("i1") == 0
