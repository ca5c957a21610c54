"""Hybrid fact search: (vector_weight x scaled cosine + keyword_weight x BM25) x decay.

The cosine is put on the embedding model's own scale first (`SimilarityScale`: 0 at the cosine
of an unrelated fact, 1 at that of the fact asked for), so vectors and keywords weigh the same
for every model; the search floor is a plain cosine. The floor says which facts may be returned,
the scale only how they rank: a fact over the floor that the scale puts at 0 still comes, after
every fact the scale scores, in the order of its cosine. A model may also carry the weights
measured for it (`SimilarityScale.vector_weight`), which a config that sets its own overrides.

Vector candidates come in up to three tiers:
1. categories: the query is compared with each category's centroid;
2. facts in the best categories (those at least `category_similarity` close), searched in
   their own partitions of the index;
3. a flat search over every active fact (an int8 scan of the matrix in memory, then exact
   rescoring), run when tier 2 found fewer than k facts at least `good_similarity` close (or
   no category was close enough).
Keyword candidates come from FTS5 in every mode. The keyword score is BM25 divided by the best
BM25 among the candidates, so both parts lie in [0, 1]. Without a query vector (keyword-only
mode) the score is the keyword part alone.

decay = salience x (1 + access_boost x min(access_count, access_cap)): salience fades by
`decay_factor` per maintenance pass, and facts that keep being used are boosted, up to a cap.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from agent_runtime.memory.index import FactIndex
from agent_runtime.memory.models import IDENTITY_SCALE, FactHit, MemoryConfig, SimilarityScale
from agent_runtime.memory.records import FACT_COLUMNS, FACT_FROM, Row, fact_from_row

# The score of a fact over the search floor but under its model's scale floor, per unit of its
# cosine: well under any score the scale or the keywords give, so such facts come last.
UNDER_SCALE_WEIGHT = 1e-4

Tier = Literal["category", "flat", "keyword"]


@dataclass
class Candidates:
    similarity: dict[int, float]
    keyword: dict[int, float]
    tier: dict[int, Tier]


def _vector_candidates(
    index: FactIndex,
    vector: bytes,
    k: int,
    config: MemoryConfig,
    category_id: int | None,
    scale: SimilarityScale,
) -> tuple[dict[int, float], dict[int, Tier]]:
    pool = max(k * config.candidate_factor, config.min_candidates)
    similarity: dict[int, float] = {}
    tier: dict[int, Tier] = {}
    if category_id is not None:
        partitions = [category_id]
    else:
        ranked = index.rank_categories(vector, config.top_categories)
        partitions = [cid for cid, sim in ranked if sim >= config.category_similarity]
    for partition in partitions:
        found = index.similarities(vector, index.knn(vector, pool, partition))
        similarity.update(found)
        tier.update(dict.fromkeys(found, "category"))
    good = sum(1 for sim in similarity.values() if scale.score(sim) >= config.good_similarity)
    if category_id is None and good < k:
        found = {i: sim for i, sim in index.nearest(vector, pool) if i not in similarity}
        similarity.update(found)
        tier.update(dict.fromkeys(found, "flat"))
    return similarity, tier


def gather(
    index: FactIndex,
    query: str,
    vector: bytes | None,
    k: int,
    config: MemoryConfig,
    category_id: int | None,
    scale: SimilarityScale = IDENTITY_SCALE,
) -> Candidates:
    keyword = index.keyword(query, max(config.keyword_candidates, k * 2))
    if vector is None:
        return Candidates({}, keyword, dict.fromkeys(keyword, "keyword"))
    similarity, tier = _vector_candidates(index, vector, k, config, category_id, scale)
    missing = [fact_id for fact_id in keyword if fact_id not in similarity]
    similarity.update(index.similarities(vector, missing))
    for fact_id in missing:
        tier[fact_id] = "keyword"
    return Candidates(similarity, keyword, tier)


def decay(row: Row, config: MemoryConfig) -> float:
    accesses = min(int(row["access_count"]), config.access_cap)
    return float(row["salience"]) * (1.0 + config.access_boost * accesses)


def rank(
    index: FactIndex,
    candidates: Candidates,
    vector_mode: bool,
    k: int,
    config: MemoryConfig,
    category_id: int | None,
    min_similarity: float,
    scopes: frozenset[str] | None = None,
    scale: SimilarityScale = IDENTITY_SCALE,
) -> list[FactHit]:
    ids = set(candidates.similarity) | set(candidates.keyword)
    if not ids:
        return []
    rows = index.conn.execute(
        f"SELECT {FACT_COLUMNS} FROM {FACT_FROM} WHERE f.id IN (SELECT value FROM json_each(?)) "
        "AND f.status = 'active'",
        (json.dumps(sorted(ids)),),
    ).fetchall()
    best_keyword = max(candidates.keyword.values(), default=0.0) or 1.0
    vector_weight, keyword_weight = _weights(config, scale)
    hits: list[FactHit] = []
    for row in rows:
        if category_id is not None and row["category_id"] != category_id:
            continue
        if scopes is not None and row["scope"] not in scopes:
            continue
        fact_id = int(row["id"])
        similarity = max(0.0, candidates.similarity.get(fact_id, 0.0))
        keyword = candidates.keyword.get(fact_id, 0.0) / best_keyword
        if vector_mode:
            if keyword == 0.0 and similarity < min_similarity:
                continue
            base = vector_weight * scale.score(similarity) + keyword_weight * keyword
            if base <= 0.0:
                base = UNDER_SCALE_WEIGHT * similarity
        else:
            base = keyword
        if base <= 0.0:
            continue
        hits.append(
            FactHit(
                fact=fact_from_row(row),
                score=base * decay(row, config),
                vector_score=similarity,
                keyword_score=keyword,
                tier=candidates.tier.get(fact_id, "keyword"),
            )
        )
    hits.sort(key=lambda hit: hit.score, reverse=True)
    return hits[:k]


def _weights(config: MemoryConfig, scale: SimilarityScale) -> tuple[float, float]:
    """The vector and keyword parts' weights: the ones measured for the model, unless the
    config sets its own."""
    if scale.vector_weight is None or "vector_weight" in config.model_fields_set:
        return config.vector_weight, config.keyword_weight
    return scale.vector_weight, 1.0 - scale.vector_weight
