"""The search structures of the fact store: exact embeddings, the binary vec0 index, FTS5
keywords and per-category centroids.

Every method runs on the caller's connection inside the caller's lock or transaction: a fact
enters or leaves all structures in the same transaction as its row changes.

Vector search is two-stage, and the second stage is always the exact cosine similarity of the
candidates' float32 embeddings. Within one category, a KNN over 1-bit quantized vectors
(Hamming distance in sqlite-vec) proposes them. Over every fact, an int8 cosine scan of a
matrix held in memory (`quantized.QuantizedMatrix`, a cache of `fact_codes`) proposes
`RERANK_FACTOR` x k of them: measured on random and clustered 1536-dimension vectors at 10k
and 100k facts, the int8 order puts the exact top 10 among its first 40 in practically every
query, so the float32 rescoring returns the exact top 10.
Category centroids are running sums kept with sqlite-vec's `vec_add`/`vec_sub`, so adding a
fact costs one vector addition, never a pass over the category.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from agent_runtime.memory.quantized import KERNEL_AVAILABLE, QuantizedMatrix, memory_budget
from agent_runtime.memory.schema import vector_index
from agent_runtime.memory.scripts import has_spaceless, index_text, query_text
from agent_runtime.memory.sqlite import Connection
from agent_runtime.memory.text import fts_query
from agent_runtime.memory.vectors import int8_code

DEFAULT_CATEGORY = "general"
MAX_CATEGORY_CHARS = 64
# How many candidates the int8 scan proposes for exact rescoring: RERANK_FACTOR x k, at least
# MIN_RERANK. Rescoring one costs a few microseconds, the scan a fraction of a microsecond per fact.
RERANK_FACTOR = 4
MIN_RERANK = 40
# Set in `meta` once every indexed fact has its int8 code; the flag of the earlier level codes
# is dropped with them.
CODES_FLAG = "int8_codes"
OLD_CODES_FLAG = "level_codes"
# Set in `meta` once the facts in spaceless scripts are indexed by characters and pairs.
SPACELESS_FLAG = "fts_spaceless_pairs"
BACKFILL_BATCH = 1000


def normalize_category(name: str | None) -> str:
    cleaned = " ".join((name or "").lower().split())[:MAX_CATEGORY_CHARS]
    return cleaned or DEFAULT_CATEGORY


class FactIndex:
    def __init__(self, conn: Connection, dims: int, matrix_max_mb: int | None = None) -> None:
        self.conn = conn
        self.dims = dims
        self.matrix_budget = memory_budget(matrix_max_mb)
        self._matrix: QuantizedMatrix | None = None
        self._data_version: int | None = None

    # Categories

    def category_id(self, name: str | None) -> int:
        category = normalize_category(name)
        row = self.conn.execute("SELECT id FROM categories WHERE name = ?", (category,)).fetchone()
        if row is not None:
            return int(row[0])
        cursor = self.conn.execute("INSERT INTO categories(name) VALUES (?)", (category,))
        return int(cursor.lastrowid or 0)

    def rank_categories(self, query: bytes, top: int) -> list[tuple[int, float]]:
        rows = self.conn.execute(
            "SELECT id, vec_distance_cosine(vec_sum, ?) AS d FROM categories "
            "WHERE n > 0 AND vec_sum IS NOT NULL AND d IS NOT NULL ORDER BY d LIMIT ?",
            (query, top),
        ).fetchall()
        return [(int(row[0]), 1.0 - float(row[1])) for row in rows]

    # Entering and leaving the index

    def add(self, fact_id: int, text: str, category_id: int, vector: bytes | None) -> None:
        self.conn.execute("INSERT INTO fact_fts(rowid, text) VALUES (?, ?)", (fact_id, index_text(text)))
        if vector is not None:
            self.attach_vector(fact_id, category_id, vector)

    def attach_vector(self, fact_id: int, category_id: int, vector: bytes) -> None:
        """Put an active fact's vector into the KNN index and its category's centroid."""
        self.conn.execute(
            "INSERT OR REPLACE INTO fact_embeddings(fact_id, embedding) VALUES (?, ?)", (fact_id, vector)
        )
        self.conn.execute(
            "INSERT INTO fact_index(rowid, embedding, category_id) VALUES (?, vec_quantize_binary(?), ?)",
            (fact_id, vector, category_id),
        )
        code = int8_code(vector)
        self.conn.execute("INSERT OR REPLACE INTO fact_codes(fact_id, code) VALUES (?, ?)", (fact_id, code))
        if self._matrix is not None:
            self._matrix.add(fact_id, code)
        self.conn.execute(
            "UPDATE categories SET n = n + 1, "
            "vec_sum = CASE WHEN vec_sum IS NULL THEN ? ELSE vec_add(vec_sum, ?) END WHERE id = ?",
            (vector, vector, category_id),
        )
        self.conn.execute("UPDATE facts SET has_vector = 1 WHERE id = ?", (fact_id,))

    def remove(self, fact_id: int, category_id: int, *, keep_embedding: bool) -> None:
        """Take a fact out of search; keep its exact embedding only for history."""
        self.conn.execute("DELETE FROM fact_fts WHERE rowid = ?", (fact_id,))
        row = self.conn.execute(
            "SELECT embedding FROM fact_embeddings WHERE fact_id = ?", (fact_id,)
        ).fetchone()
        indexed = self.conn.execute("SELECT 1 FROM fact_index WHERE rowid = ?", (fact_id,)).fetchone()
        self.conn.execute("DELETE FROM fact_codes WHERE fact_id = ?", (fact_id,))
        if self._matrix is not None:
            self._matrix.remove(fact_id)
        if indexed is not None:
            self.conn.execute("DELETE FROM fact_index WHERE rowid = ?", (fact_id,))
            if row is not None:
                self.conn.execute(
                    "UPDATE categories SET n = n - 1, "
                    "vec_sum = CASE WHEN n <= 1 THEN NULL ELSE vec_sub(vec_sum, ?) END WHERE id = ?",
                    (row[0], category_id),
                )
        if not keep_embedding:
            self.conn.execute("DELETE FROM fact_embeddings WHERE fact_id = ?", (fact_id,))

    def embedding(self, fact_id: int) -> bytes | None:
        row = self.conn.execute(
            "SELECT embedding FROM fact_embeddings WHERE fact_id = ?", (fact_id,)
        ).fetchone()
        return bytes(row[0]) if row is not None else None

    # Queries

    def knn(self, query: bytes, k: int, category_id: int | None = None) -> list[int]:
        """Candidate fact ids by Hamming distance of the quantized vectors (bookworm needs `k = ?`)."""
        if category_id is None:
            rows = self.conn.execute(
                "SELECT rowid FROM fact_index WHERE embedding MATCH vec_quantize_binary(?) AND k = ?",
                (query, k),
            ).fetchall()
        else:
            rows = self.conn.execute(
                "SELECT rowid FROM fact_index WHERE embedding MATCH vec_quantize_binary(?) AND k = ? "
                "AND category_id = ?",
                (query, k, category_id),
            ).fetchall()
        return [int(row[0]) for row in rows]

    def indexed_count(self) -> int:
        row = self.conn.execute("SELECT COALESCE(SUM(n), 0) FROM categories").fetchone()
        return int(row[0])

    def similarities(self, query: bytes, fact_ids: Iterable[int]) -> dict[int, float]:
        """Exact cosine similarity of each fact's float32 embedding to the query."""
        ids = list(fact_ids)
        if not ids:
            return {}
        rows = self.conn.execute(
            "SELECT fact_id, vec_distance_cosine(embedding, ?) FROM fact_embeddings "
            "WHERE fact_id IN (SELECT value FROM json_each(?))",
            (query, json.dumps(ids)),
        ).fetchall()
        return {int(row[0]): 1.0 - float(row[1]) for row in rows if row[1] is not None}

    def nearest(self, query: bytes, k: int, category_id: int | None = None) -> list[tuple[int, float]]:
        """The k nearest active facts, exactly rescored, best first."""
        if category_id is not None:
            sims = self.similarities(query, self.knn(query, max(k, 1), category_id))
            return sorted(sims.items(), key=lambda item: item[1], reverse=True)[:k]
        matrix = self.resident()
        if matrix is None:  # no SIMD kernel: the exact scan of every active fact, in SQL
            rows = self.conn.execute(
                "SELECT e.fact_id, vec_distance_cosine(e.embedding, ?) AS d FROM fact_codes c "
                "JOIN fact_embeddings e ON e.fact_id = c.fact_id WHERE d IS NOT NULL ORDER BY d LIMIT ?",
                (query, k),
            ).fetchall()
        else:
            pool = matrix.closest(int8_code(query), max(RERANK_FACTOR * k, MIN_RERANK))
            # Joined with fact_codes: only facts still active and indexed are returned.
            rows = self.conn.execute(
                "SELECT e.fact_id, vec_distance_cosine(e.embedding, ?) AS d FROM fact_embeddings e "
                "JOIN fact_codes c ON c.fact_id = e.fact_id "
                "WHERE e.fact_id IN (SELECT value FROM json_each(?)) AND d IS NOT NULL ORDER BY d LIMIT ?",
                (query, json.dumps(pool), k),
            ).fetchall()
        return [(int(row[0]), 1.0 - float(row[1])) for row in rows]

    # The matrix in memory

    def resident(self) -> QuantizedMatrix | None:
        """The int8 matrix of every active fact, filled from `fact_codes` when missing or stale.

        Stale means another connection has committed since it was filled (SQLite's
        `data_version` moved): this connection's own changes keep it in step as they happen.
        None without the SIMD kernel, or when the matrix would be larger than its budget.
        """
        if not KERNEL_AVAILABLE or self.indexed_count() * self.dims > self.matrix_budget:
            self._matrix = None
            return None
        version = int(self.conn.execute("PRAGMA data_version").fetchone()[0])
        if self._matrix is None or version != self._data_version:
            self._matrix = self.load_matrix()
            self._data_version = version
        return self._matrix

    def load_matrix(self) -> QuantizedMatrix:
        cursor = self.conn.cursor()
        cursor.row_factory = None  # plain tuples: no Row object per fact
        return QuantizedMatrix.from_rows(self.dims, cursor.execute("SELECT fact_id, code FROM fact_codes"))

    def drop_matrix(self) -> None:
        """Forget the matrix (a transaction rolled back): the next search fills it again."""
        self._matrix = None
        self._data_version = None

    def keyword(self, query: str, limit: int) -> dict[int, float]:
        """Active facts matching any query word, with their BM25 score (higher is better)."""
        expression = fts_query(query_text(query))
        if expression is None:
            return {}
        rows = self.conn.execute(
            "SELECT rowid, -bm25(fact_fts) FROM fact_fts WHERE fact_fts MATCH ? ORDER BY rank LIMIT ?",
            (expression, limit),
        ).fetchall()
        return {int(row[0]): max(float(row[1]), 0.0) for row in rows}

    # Rebuilding

    def reset_vectors(self) -> None:
        """Forget every vector (the embedding model changed); facts stay and get re-embedded."""
        self.conn.execute("DROP TABLE IF EXISTS fact_index")
        self.conn.execute(vector_index(self.dims))
        self.conn.execute("DELETE FROM fact_embeddings")
        self.conn.execute("DELETE FROM fact_codes")
        self.drop_matrix()
        self.conn.execute("UPDATE facts SET has_vector = 0 WHERE has_vector != 0")
        self.conn.execute("UPDATE categories SET n = 0, vec_sum = NULL")
        self.conn.execute("UPDATE episodes SET embedding = NULL")
        self.conn.execute("UPDATE contradictions SET embedding = NULL")
        self.conn.execute("UPDATE barriers SET embedding = NULL")

    def backfill_codes(self) -> int:
        """int8 codes for indexed facts that have none: a file written before codes existed, or
        with the earlier 3-bit level codes, which are replaced.

        Done once per file: a meta flag keeps every later open from looking again."""
        if self.conn.execute("SELECT 1 FROM meta WHERE key = ?", (CODES_FLAG,)).fetchone() is not None:
            return 0
        self.conn.execute("DELETE FROM meta WHERE key = ?", (OLD_CODES_FLAG,))
        self.conn.execute("DELETE FROM fact_codes WHERE length(code) != ?", (self.dims,))
        done = 0
        while True:
            rows = self.conn.execute(
                "SELECT e.fact_id, e.embedding FROM fact_embeddings e JOIN facts f ON f.id = e.fact_id "
                "WHERE f.status = 'active' AND f.has_vector = 1 "
                "AND NOT EXISTS (SELECT 1 FROM fact_codes c WHERE c.fact_id = e.fact_id) LIMIT ?",
                (BACKFILL_BATCH,),
            ).fetchall()
            if not rows:
                break
            self.conn.executemany(
                "INSERT INTO fact_codes(fact_id, code) VALUES (?, ?)",
                [(int(row[0]), int8_code(bytes(row[1]))) for row in rows],
            )
            done += len(rows)
        self.conn.execute("INSERT INTO meta(key, value) VALUES (?, '1')", (CODES_FLAG,))
        return done

    def reindex_spaceless(self) -> int:
        """Index again, by characters and pairs (`scripts`), the active facts in Chinese,
        Japanese or Korean of a file written before that rule. Done once per file."""
        if self.conn.execute("SELECT 1 FROM meta WHERE key = ?", (SPACELESS_FLAG,)).fetchone() is not None:
            return 0
        rows = self.conn.execute("SELECT id, text FROM facts WHERE status = 'active'").fetchall()
        spaceless = [(int(row[0]), str(row[1])) for row in rows if has_spaceless(str(row[1]))]
        for fact_id, text in spaceless:
            self.conn.execute("DELETE FROM fact_fts WHERE rowid = ?", (fact_id,))
            self.conn.execute("INSERT INTO fact_fts(rowid, text) VALUES (?, ?)", (fact_id, index_text(text)))
        self.conn.execute("INSERT INTO meta(key, value) VALUES (?, '1')", (SPACELESS_FLAG,))
        return len(spaceless)
