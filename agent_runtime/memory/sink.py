"""The memory store behind the context manager's `FactStore` seam (`agent_runtime.facts`).

Facts flushed from the context before a compaction are saved with source `extracted` and the
ids of the turns they came from; compaction summaries become episodes. Any failure is raised
as `FactStoreError`, which the context manager handles by keeping the facts in MEMORY.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_runtime.facts import FactStoreError
from agent_runtime.memory.models import FactSource
from agent_runtime.memory.sqlite import DatabaseError
from agent_runtime.memory.store import MemoryInputError, MemoryStore

# Only store-side problems are turned into FactStoreError; a bug still surfaces as itself.
_STORE_ERRORS: tuple[type[BaseException], ...] = (MemoryInputError, DatabaseError, OSError)


class StoreFactSink:
    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    def save_facts(self, facts: Sequence[str], turn_ids: Sequence[str]) -> None:
        try:
            for text in facts:
                if text.strip():
                    self.store.save(text, source=FactSource.EXTRACTED, turn_ids=list(turn_ids))
        except _STORE_ERRORS as failed:
            raise FactStoreError(f"memory store could not save facts: {failed}") from None

    def add_episode(self, start: str, end: str, turn_ids: Sequence[str], summary: str) -> None:
        try:
            self.store.add_episode(start, end, list(turn_ids), summary)
        except _STORE_ERRORS as failed:
            raise FactStoreError(f"memory store could not save the episode: {failed}") from None
