"""The vector path of the fact store: int8 codes, recall against exact cosine, and the codes'
life with the facts (forget, supersede, rollback, restart, another connection's writes, files
written before int8 codes existed), with the SIMD kernel and with the SQL scan that replaces it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agent_runtime.memory import index as index_module
from agent_runtime.memory.models import MemoryConfig
from agent_runtime.memory.quantized import KERNEL_AVAILABLE, QuantizedMatrix, memory_budget, memory_limit
from agent_runtime.memory.store import MemoryStore
from agent_runtime.memory.vectors import VectorError, int8_code

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


def test_int8_code_scales_the_largest_component_to_127() -> None:
    values = np.array([0.5, -0.25, 0.125, 0.0, -0.5], dtype=np.float32)
    assert list(np.frombuffer(int8_code(values.tobytes()), dtype=np.int8)) == [127, -64, 32, 0, -127]
    with pytest.raises(VectorError):
        int8_code(np.zeros(4, dtype=np.float32).tobytes())


def test_the_simd_kernel_is_installed() -> None:
    """simsimd is a dependency of the agent: without it search falls back to the SQL scan."""
    assert KERNEL_AVAILABLE


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


def test_a_file_with_the_earlier_level_codes_gets_int8_codes_when_opened(tmp_path: Path) -> None:
    config = MemoryConfig(dimensions=DIMS, embedding_model="test-random")
    vectors = unit(np.random.default_rng(11), 6)
    with MemoryStore(tmp_path / "memory.db", config=config) as store:
        for i, vector in enumerate(vectors):
            store.save(f"fact {i}", vector=vector.tobytes())
        with store.transaction() as conn:  # as the earlier version wrote them: 3 bits per dimension
            conn.execute("UPDATE fact_codes SET code = zeroblob(?)", (DIMS * 3 // 8,))
            conn.execute("DELETE FROM meta WHERE key = 'int8_codes'")
            conn.execute("INSERT INTO meta(key, value) VALUES ('level_codes', '1')")
    with MemoryStore(tmp_path / "memory.db", config=config) as store:
        with store.transaction() as conn:
            lengths = {int(row[0]) for row in conn.execute("SELECT length(code) FROM fact_codes")}
            assert lengths == {DIMS}
            best = store.index.nearest(vectors[3].tobytes(), 1)
        assert codes_of(store) == 6
        assert best[0][0] == 4 and best[0][1] == pytest.approx(1.0, abs=1e-5)


def nearest_ids(store: MemoryStore, query: np.ndarray, k: int = 10) -> list[int]:
    with store.transaction():
        return [fact_id for fact_id, _ in store.index.nearest(query.tobytes(), k)]


def test_superseded_and_forgotten_facts_leave_the_results(tmp_path: Path) -> None:
    config = MemoryConfig(dimensions=DIMS, embedding_model="test-random")
    vectors = unit(np.random.default_rng(12), 3)
    with MemoryStore(tmp_path / "memory.db", config=config) as store:
        first = store.save("the harbour master is Ines", vector=vectors[0].tobytes()).fact_id
        assert nearest_ids(store, vectors[0], 1) == [first]
        newer = store.save("the harbour master is Ana", vector=vectors[1].tobytes(), supersedes=first).fact_id
        assert first not in nearest_ids(store, vectors[0])
        assert newer in nearest_ids(store, vectors[0])
        store.forget(newer or 0, reason="test")
        assert nearest_ids(store, vectors[1]) == []


def test_a_rolled_back_fact_is_not_found(tmp_path: Path) -> None:
    config = MemoryConfig(dimensions=DIMS, embedding_model="test-random")
    vectors = unit(np.random.default_rng(13), 2)
    with MemoryStore(tmp_path / "memory.db", config=config) as store:
        kept = store.save("kept fact", vector=vectors[0].tobytes()).fact_id
        nearest_ids(store, vectors[1])  # the matrix is in memory from here on
        with pytest.raises(RuntimeError), store.transaction():
            store.save("undone fact", vector=vectors[1].tobytes())
            raise RuntimeError("undo")
        assert nearest_ids(store, vectors[1]) == [kept]


def test_restart_and_another_connections_writes_keep_results_exact(
    filled: tuple[MemoryStore, np.ndarray], tmp_path: Path
) -> None:
    store, _ = filled
    queries = unit(np.random.default_rng(14), 5)
    before = [nearest_ids(store, query) for query in queries]
    with MemoryStore(store.path, config=store.config) as reopened:
        assert [nearest_ids(reopened, query) for query in queries] == before
        added = reopened.save("a fact from another connection", vector=queries[0].tobytes()).fact_id
    assert nearest_ids(store, queries[0], 1) == [added]
    with MemoryStore(store.path, config=store.config) as other:
        other.forget(added or 0, reason="test")
    assert nearest_ids(store, queries[0]) == before[0]


def test_without_the_kernel_the_sql_scan_returns_the_exact_top_ten(
    filled: tuple[MemoryStore, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, vectors = filled
    monkeypatch.setattr(index_module, "KERNEL_AVAILABLE", False)
    for query in unit(np.random.default_rng(15), 3):
        exact = [int(i) + 1 for i in np.argsort(-(vectors @ query))[:10]]
        assert nearest_ids(store, query) == exact


def test_past_its_memory_budget_the_matrix_is_left_out_and_search_stays_exact(tmp_path: Path) -> None:
    config = MemoryConfig(dimensions=DIMS, embedding_model="test-random", matrix_max_mb=0)
    rng = np.random.default_rng(16)
    vectors = unit(rng, 50)
    with MemoryStore(tmp_path / "memory.db", config=config) as store:
        for i, vector in enumerate(vectors):
            store.save(f"fact {i}", vector=vector.tobytes())
        query = unit(rng, 1)[0]
        assert nearest_ids(store, query) == [int(i) + 1 for i in np.argsort(-(vectors @ query))[:10]]
        with store.transaction():
            assert store.index.resident() is None


def test_the_default_budget_is_a_share_of_the_memory_this_process_may_use() -> None:
    assert 0 < memory_budget(None) < memory_limit()
    assert memory_budget(3) == 3 * 1024 * 1024


def test_the_matrix_keeps_its_rows_in_step_with_adds_replacements_and_removals() -> None:
    rng = np.random.default_rng(17)
    vectors = unit(rng, 6)
    codes = [int8_code(vector.tobytes()) for vector in vectors]
    matrix = QuantizedMatrix.from_rows(DIMS, [(10 + i, code) for i, code in enumerate(codes[:4])])
    matrix.add(14, codes[4])
    matrix.remove(11)  # the last row (14) moves into its place
    matrix.add(12, codes[5])  # replaces fact 12's code in its row
    assert sorted(matrix.ids) == [10, 12, 13, 14] and 11 not in matrix
    for fact_id, row in matrix.rows.items():
        assert matrix.ids[row] == fact_id
    expected = {10: codes[0], 12: codes[5], 13: codes[3], 14: codes[4]}
    for fact_id, code in expected.items():
        row = matrix.rows[fact_id]
        assert bytes(matrix.codes[row * DIMS : (row + 1) * DIMS]) == code
    assert matrix.closest(codes[4], 1) == [14]
    assert sorted(matrix.closest(codes[0], 10)) == [10, 12, 13, 14]
