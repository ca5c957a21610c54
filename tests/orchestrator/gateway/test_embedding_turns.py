"""The local embedding thread's turns between agents and its per-agent CPU cap, with a model
that records what it was given (the order is what is tested; the gateway test runs the real
model)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from orchestrator.gateway.providers.embedding_share import (
    CpuLedger,
    EmbeddingCpuExhausted,
    FairEmbeddingThread,
    slices_of,
)


class RecordingModel:
    """Holds its first call until released, so that every request is queued behind it."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.release = threading.Event()

    def __call__(self, texts: list[str], dimensions: int) -> list[list[float]]:
        if not self.calls:
            self.release.wait(timeout=10)
        self.calls.append(texts)
        return [[float(len(text))] * dimensions for text in texts]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_texts_are_cut_into_slices_of_bounded_size() -> None:
    assert list(slices_of(["a" * 400, "b" * 400, "c" * 400, "d" * 3000, "e"], limit=1000)) == [
        ["a" * 400, "b" * 400],
        ["c" * 400],
        ["d" * 3000],
        ["e"],
    ]
    assert list(slices_of([])) == []


def test_agents_take_turns_a_slice_at_a_time() -> None:
    model = RecordingModel()
    thread = FairEmbeddingThread("m", model, lambda: 60.0)

    async def scenario() -> tuple[list[list[float]], list[list[float]]]:
        blocker = asyncio.create_task(thread.embed("carol", ["x"], 1))
        await asyncio.sleep(0.05)
        flood = asyncio.create_task(thread.embed("alice", [f"a{n}" * 600 for n in range(5)], 1))
        await asyncio.sleep(0.05)
        save = asyncio.create_task(thread.embed("bob", ["b"], 1))
        await asyncio.sleep(0.05)
        model.release.set()
        await blocker
        return await flood, await save

    try:
        flooded, saved = asyncio.run(scenario())
    finally:
        thread.close()
    order = [texts[0][:2] for texts in model.calls]
    assert order == ["x", "a0", "b", "a1", "a2", "a3", "a4"]
    assert [vector[0] for vector in flooded] == [1200.0] * 5 and saved == [[1.0]]


def test_an_agent_past_its_cap_is_refused_until_the_minute_has_passed() -> None:
    clock = FakeClock()
    ledger = CpuLedger(clock)
    ledger.charge("alice", 3.0)
    clock.now += 20
    ledger.charge("alice", 2.5)
    ledger.charge("bob", 0.5)
    assert ledger.spent("alice") == pytest.approx(5.5)
    assert ledger.wait_until_under("alice", 5.0) == pytest.approx(40.0)
    assert ledger.wait_until_under("bob", 5.0) == 0.0

    thread = FairEmbeddingThread("m", RecordingModel(), lambda: 5.0, ledger=ledger)
    with pytest.raises(EmbeddingCpuExhausted) as refused:
        asyncio.run(thread.embed("alice", ["hello"], 1))
    assert refused.value.retry_after_s == pytest.approx(40.0)
    assert "agent 'alice' used 5.5 s" in str(refused.value) and "cpu_seconds_per_minute" in str(refused.value)
    clock.now += 41
    assert ledger.spent("alice") == pytest.approx(2.5)
    thread.close()
