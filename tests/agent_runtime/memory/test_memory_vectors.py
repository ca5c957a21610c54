"""The vector path of the fact store: level codes, recall against exact cosine, and the codes'
life with the facts (forget, re-embedding, files written before codes existed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agent_runtime.memory.models import MemoryConfig
from agent_runtime.memory.store import MemoryStore
from agent_runtime.memory.vectors import level_code

DIMS = 256
FACTS = 3000
QUERIES = 20


def unit(rng: np.random.Generator, count: int) -> np.ndarray:
    vectors = rng.standard_normal((count, DIMS)).astype(np.float32)
    normalized: np.ndarray = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return normalized


def codes_of(store: MemoryStore) -> int:
    with store.transaction() as conn:
        return int(conn.execute("SELECT COUNT(*) FROM fact_codes").fetchone()[0])


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> tuple[MemoryStore, np.ndarray]:
    """Random unit vectors: the true neighbours barely stand out, the hardest case for codes."""
    rng = np.random.default_rng(7)
    vectors = unit(rng, FACTS)
    store = MemoryStore(
        tmp_path_factory.mktemp("vectors") / "memory.db",
        config=MemoryConfig(dimensions=DIMS, embedding_model="test-random"),
    )
    for i, vector in enumerate(vectors):
        store.save(f"fact {i}", category=f"topic-{i % 5}", vector=vector.tobytes())
    return store, vectors


def test_level_code_has_three_bits_per_dimension_ordered_by_threshold() -> None:
    values = np.array([2.0, 0.5, -0.5, -2.0] * 2, dtype=np.float32)  # rms 1.46: thresholds +-0.98
    code = level_code(values.tobytes())
    assert len(code) == 3  # 8 dimensions, 3 levels, one byte each
    above_high, above_zero, above_low = code
    assert above_high == 0b10001000
    assert above_zero == 0b11001100
    assert above_low == 0b11101110


def test_search_over_every_fact_finds_the_exact_top_ten(filled: tuple[MemoryStore, np.ndarray]) -> None:
    store, vectors = filled
    rng = np.random.default_rng(8)
    recalls = []
    for query in unit(rng, QUERIES):
        exact = {int(i) + 1 for i in np.argsort(-(vectors @ query))[:10]}
        with store.transaction():
            found = store.index.nearest(query.tobytes(), 10)
        assert [sim for _, sim in found] == sorted((sim for _, sim in found), reverse=True)
        recalls.append(len({fact_id for fact_id, _ in found} & exact) / 10)
    assert np.mean(recalls) >= 0.95, recalls


def test_similarities_returned_are_exact_cosines(filled: tuple[MemoryStore, np.ndarray]) -> None:
    store, vectors = filled
    query = unit(np.random.default_rng(9), 1)[0]
    with store.transaction():
        found = store.index.nearest(query.tobytes(), 5)
    for fact_id, similarity in found:
        assert similarity == pytest.approx(float(vectors[fact_id - 1] @ query), abs=1e-5)


def test_forgotten_facts_leave_the_codes_and_reembedding_clears_them(tmp_path: Path) -> None:
    config = MemoryConfig(dimensions=DIMS, embedding_model="test-random")
    rng = np.random.default_rng(10)
    with MemoryStore(tmp_path / "memory.db", config=config) as store:
        ids = [store.save(f"fact {i}", vector=v.tobytes()).fact_id or 0 for i, v in enumerate(unit(rng, 4))]
        assert codes_of(store) == 4
        store.forget(ids[0], reason="test")
        assert codes_of(store) == 3
        with store.transaction():
            assert ids[0] not in {
                fact_id for fact_id, _ in store.index.nearest(unit(rng, 1)[0].tobytes(), 10)
            }
        with store.transaction():
            store.index.reset_vectors()
        assert codes_of(store) == 0


def test_a_file_written_before_level_codes_gets_them_when_opened(tmp_path: Path) -> None:
    config = MemoryConfig(dimensions=DIMS, embedding_model="test-random")
    vectors = unit(np.random.default_rng(11), 6)
    with MemoryStore(tmp_path / "memory.db", config=config) as store:
        for i, vector in enumerate(vectors):
            store.save(f"fact {i}", vector=vector.tobytes())
        with store.transaction() as conn:
            conn.execute("DELETE FROM fact_codes")
            conn.execute("DELETE FROM meta WHERE key = 'level_codes'")  # as before codes existed
    with MemoryStore(tmp_path / "memory.db", config=config) as store:
        assert codes_of(store) == 6
        with store.transaction():
            best = store.index.nearest(vectors[3].tobytes(), 1)
        assert best[0][0] == 4 and best[0][1] == pytest.approx(1.0, abs=1e-5)
