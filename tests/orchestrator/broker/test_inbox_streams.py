"""Live progress streams: deltas reach every watcher in order until the item ends."""

from __future__ import annotations

import asyncio
import threading

from orchestrator.broker.streams import ProgressStreams
from orchestrator.broker.wakeups import ServingLoop


async def _collect(streams: ProgressStreams, item_id: str, timeout_s: float = 5.0) -> list[str]:
    return [chunk async for chunk in streams.stream(item_id, timeout_s)]


def test_watchers_get_the_deltas_in_order_until_the_item_ends() -> None:
    serving = ServingLoop()
    streams = ProgressStreams(serving, finished=lambda item_id: False)

    async def scenario() -> list[list[str]]:
        serving.loop = asyncio.get_running_loop()
        watching = asyncio.gather(_collect(streams, "i1"), _collect(streams, "i1"))
        while streams.watchers("i1") < 2:
            await asyncio.sleep(0.01)

        def agent_writes() -> None:
            for delta in ("Hel", "lo", "!"):
                streams.add("i1", delta)
            streams.add("other", "not for i1")
            streams.end("i1")

        writer = threading.Thread(target=agent_writes)
        writer.start()
        seen = await watching
        writer.join()
        return list(seen)

    assert asyncio.run(scenario()) == [["Hel", "lo", "!"], ["Hel", "lo", "!"]]
    assert streams.watchers("i1") == 0


def test_a_finished_item_streams_nothing() -> None:
    streams = ProgressStreams(ServingLoop(), finished=lambda item_id: True)
    assert asyncio.run(_collect(streams, "i1")) == []
    assert streams.watchers("i1") == 0


def test_a_stream_ends_at_its_timeout() -> None:
    streams = ProgressStreams(ServingLoop(), finished=lambda item_id: False)
    assert asyncio.run(_collect(streams, "i1", timeout_s=0.05)) == []
    assert streams.watchers("i1") == 0
