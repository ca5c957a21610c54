"""A model's measured weight of the vector part of the search score (`SimilarityScale.vector_weight`,
measured on the dev half of the labelled memory set) replaces the config's default weights, and
a config that sets its own keeps them."""

from __future__ import annotations

import math

import pytest

from agent_runtime.memory import embeddings
from agent_runtime.memory.models import MemoryConfig, SimilarityScale
from agent_runtime.memory.store import MemoryStore

DIMS = 8
BY_MEANING = "The blue box holds the spare set."
BY_WORDS = "Depot keys hang on the hook."
QUERY = "depot keys"


class ProbeEmbedder:
    """The query is 0.6 close to the fact that shares no word with it, 0.3 to the one that
    shares both its words."""

    semantic = True
    model = "probe-model"

    def __call__(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(text) for text in texts]

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * DIMS
        if text == BY_MEANING:
            vector[0] = 1.0
        elif text == BY_WORDS:
            vector[1] = 1.0
        elif text == QUERY:
            vector[0], vector[1], vector[2] = 0.6, 0.3, math.sqrt(1 - 0.36 - 0.09)
        else:
            vector[3] = 1.0
        return vector


def _first(config: MemoryConfig) -> str:
    with MemoryStore(":memory:", embedder=ProbeEmbedder(), config=config) as store:
        for text in (BY_MEANING, BY_WORDS):
            store.save(text, category="notes", source="user_stated")
        hits = store.search(QUERY, 2, record_access=False)
        assert len(hits) == 2
        return hits[0].fact.text


def test_a_measured_vector_weight_ranks_by_meaning(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _first(MemoryConfig(dimensions=DIMS)) == BY_WORDS
    monkeypatch.setitem(
        embeddings.MEASURED_SIMILARITY_SCALE, "probe-model", SimilarityScale(vector_weight=1.0)
    )
    assert _first(MemoryConfig(dimensions=DIMS)) == BY_MEANING
    assert _first(MemoryConfig(dimensions=DIMS, vector_weight=0.7, keyword_weight=0.3)) == BY_WORDS


def test_a_weight_outside_0_to_1_is_refused() -> None:
    with pytest.raises(ValueError, match=r"vector weight 1\.5 is not within 0\.\.1"):
        SimilarityScale(vector_weight=1.5)
    assert embeddings.MEASURED_SIMILARITY_SCALE["multilingual-e5-small"].vector_weight == 0.9


NEAR = "Invoices are approved by Maria in finance."
FAR = "The office closes at six on Fridays."
QUESTION = "who signs off on bills"


class NarrowEmbedder:
    """Cosines packed in a narrow band, as multilingual-e5-small's are: the question is 0.79
    close to the fact it asks for and 0.70 to the other one."""

    semantic = True
    model = "narrow-model"

    def __call__(self, texts: list[str]) -> list[list[float]]:
        vectors = []
        for text in texts:
            vector = [0.0] * DIMS
            if text == QUESTION:
                vector[0] = 1.0
            else:
                cosine = 0.79 if text == NEAR else 0.70
                vector[0], vector[1 if text == NEAR else 2] = cosine, math.sqrt(1 - cosine**2)
            vectors.append(vector)
        return vectors


def test_a_fact_over_the_search_floor_is_found_though_under_the_scale_floor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(embeddings.MEASURED_SEARCH_FLOOR, "narrow-model", 0.78)
    monkeypatch.setitem(
        embeddings.MEASURED_SIMILARITY_SCALE,
        "narrow-model",
        SimilarityScale(floor=0.8, ceiling=0.84, vector_weight=0.9),
    )
    with MemoryStore(":memory:", embedder=NarrowEmbedder(), config=MemoryConfig(dimensions=DIMS)) as store:
        for text in (FAR, NEAR):
            store.save(text, category="notes", source="user_stated")
        hits = store.search(QUESTION, 3, record_access=False)
        # The search floor says what may be returned; the scale only orders what is.
        assert [hit.fact.text for hit in hits] == [NEAR]
        assert hits[0].score > 0 and hits[0].vector_score == pytest.approx(0.79, abs=1e-4)
