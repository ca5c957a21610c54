"""Fixtures for the memory store tests: a store on a temporary memory.db with the deterministic
embedder (64 dimensions keep the tests fast), an embedder that can be switched off, and clocks
the tests move by hand."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agent_runtime.memory.embeddings import DeterministicEmbedder, EmbeddingError
from agent_runtime.memory.factlog import FactLog
from agent_runtime.memory.models import MemoryConfig
from agent_runtime.memory.store import MemoryStore

DIMS = 64


class SwitchableEmbedder:
    """The deterministic embedder, with an off switch that makes every call fail."""

    def __init__(self, dims: int = DIMS) -> None:
        self.inner = DeterministicEmbedder(dims)
        self.down = False
        self.calls = 0

    def __call__(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        if self.down:
            raise EmbeddingError("embedding service unreachable")
        return self.inner(texts)


class ManualClock:
    def __init__(self) -> None:
        self.monotonic = 1000.0
        self.wall = datetime(2025, 5, 1, 9, 0, tzinfo=UTC)

    def advance(self, seconds: float) -> None:
        self.monotonic += seconds
        self.wall += timedelta(seconds=seconds)

    def now(self) -> datetime:
        return self.wall

    def mono(self) -> float:
        return self.monotonic


StoreFactory = Callable[..., MemoryStore]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def embedder() -> SwitchableEmbedder:
    return SwitchableEmbedder()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    (folder / "workspace" / "memory").mkdir(parents=True)
    (folder / "history").mkdir()
    return folder


@pytest.fixture
def open_store(data_dir: Path, embedder: SwitchableEmbedder, clock: ManualClock) -> Iterator[StoreFactory]:
    opened: list[MemoryStore] = []

    def make(**overrides: object) -> MemoryStore:
        config = overrides.pop("config", None) or MemoryConfig(dimensions=DIMS, embedding_model="test")
        store = MemoryStore(
            overrides.pop("path", data_dir / "memory.db"),  # type: ignore[arg-type]
            embedder=overrides.pop("embedder", embedder),  # type: ignore[arg-type]
            config=config,  # type: ignore[arg-type]
            fact_log=FactLog(data_dir / "workspace", clock=clock.now),
            clock=clock.now,
            monotonic=clock.mono,
        )
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


@pytest.fixture
def store(open_store: StoreFactory) -> MemoryStore:
    return open_store()
