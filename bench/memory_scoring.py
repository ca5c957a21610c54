"""Runs the labelled memory set (`memory_dataset`) through real `MemoryStore`s and scores it.

Pairs: each pair gets a fresh store; its first fact is saved, then its second, in one category,
with the sources the pair names; the second save's outcome is the prediction. A distinct fact
is lost when the pair is not an update or a contradiction and either fact ends up out of
ordinary results (superseded, or held back as a pending contradiction).

Queries: each store of the set holds its facts plus the same distractors (the first facts of
the first pairs); a query is found when its target is among the first three results.
Keyword-only recall is the same search in a store without an embedder.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from agent_runtime.memory import Embedder, FactStatus, MemoryConfig, MemoryStore, SaveOutcome
from bench.memory_dataset import Dataset, Pair, Query

CATEGORY = "notes"
DISTRACTORS = 60


class CachedEmbedder:
    """An embedder with every vector of the run computed once, in batches."""

    def __init__(self, inner: Embedder, texts: Iterable[str]) -> None:
        self.inner = inner
        self.semantic = bool(getattr(inner, "semantic", False))
        self.model = getattr(inner, "model", None)
        unique = list(dict.fromkeys(texts))
        self.vectors: dict[str, list[float]] = {}
        for start in range(0, len(unique), 64):
            batch = unique[start : start + 64]
            self.vectors.update(zip(batch, inner(batch), strict=True))

    def __call__(self, texts: list[str]) -> list[list[float]]:
        missing = [text for text in texts if text not in self.vectors]
        if missing:
            self.vectors.update(zip(missing, self.inner(missing), strict=True))
        return [self.vectors[text] for text in texts]


@dataclass
class PairScores:
    lost: int = 0
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    lost_examples: list[tuple[str, str]] = field(default_factory=list)

    def add(self, key: str) -> None:
        self.counts[key] += 1

    def ratio(self, hits: str, total: str) -> float:
        return self.counts[hits] / self.counts[total] if self.counts[total] else 1.0

    @property
    def supersession_precision(self) -> float:
        return self.ratio("superseded_right", "superseded")

    @property
    def supersession_recall(self) -> float:
        return self.ratio("superseded_right", "updated")

    @property
    def contradiction_precision(self) -> float:
        return self.ratio("contradiction_right", "contradicted")

    @property
    def contradiction_recall(self) -> float:
        return self.ratio("contradiction_right", "contradiction")


def score_pairs(pairs: Sequence[Pair], embedder: Embedder | None, dims: int) -> PairScores:
    scores = PairScores()
    for pair in pairs:
        outcome, both_active = run_pair(pair, embedder, dims)
        scores.add(pair.label)
        if outcome is SaveOutcome.SUPERSEDED:
            scores.add("superseded")
            if pair.label == "updated":
                scores.add("superseded_right")
        if outcome is SaveOutcome.CONTRADICTION:
            scores.add("contradicted")
            if pair.label == "contradiction":
                scores.add("contradiction_right")
        if pair.label in ("distinct", "unrelated") and not both_active:
            scores.lost += 1
            scores.lost_examples.append((pair.first, pair.second))
    return scores


def run_pair(pair: Pair, embedder: Embedder | None, dims: int) -> tuple[SaveOutcome, bool]:
    """The second save's outcome, and whether both facts are active afterwards."""
    with MemoryStore(":memory:", embedder=embedder, config=MemoryConfig(dimensions=dims)) as store:
        first = store.save(pair.first, category=CATEGORY, source=pair.first_source)
        second = store.save(pair.second, category=CATEGORY, source=pair.second_source)
        active = {fact.text for fact in store.list_facts(status=FactStatus.ACTIVE)}
        both = first.fact_id is not None and len(active) == 2
        return second.outcome, both


@dataclass
class Recall:
    found: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    asked: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def of(self, language: str) -> float:
        return self.found[language] / self.asked[language] if self.asked[language] else 0.0

    def languages(self) -> list[str]:
        return sorted(self.asked)


def score_queries(
    dataset: Dataset,
    queries: Sequence[Query],
    embedder: Embedder | None,
    dims: int,
    floor: float | None = None,
    k: int = 3,
) -> Recall:
    recall = Recall()
    distractors = [pair.first for pair in dataset.pairs[:DISTRACTORS]]
    by_store: dict[str, list[Query]] = defaultdict(list)
    for query in queries:
        by_store[query.store].append(query)
    for store_name, asked in sorted(by_store.items()):
        texts = [fact.text for fact in dataset.facts if fact.store == store_name] + distractors
        with MemoryStore(":memory:", embedder=embedder, config=MemoryConfig(dimensions=dims)) as store:
            for text in texts:
                store.save(text, category=CATEGORY, source="user_stated")
            for query in asked:
                hits = store.search(query.query, k, record_access=False, min_similarity=floor)
                recall.asked[query.language] += 1
                if query.target in {hit.fact.text for hit in hits}:
                    recall.found[query.language] += 1
    return recall
