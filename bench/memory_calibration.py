"""Measures an embedding model's similarity scale on the dev half of the labelled memory set
(`bench.memory_dataset`, seed 40), never on the held-out half: the cosine of a paraphrase query
with the facts it does not ask for (the floor: their 90th percentile) and with the fact it asks
for (the ceiling: the median). `agent_runtime.memory.embeddings.MEASURED_SIMILARITY_SCALE` holds
the figures; search maps a cosine to (cosine - floor) / (ceiling - floor), clipped to 0..1.

    python -m bench.memory_calibration
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from agent_runtime.memory import Embedder
from bench.memory_dataset import Dataset, generate
from bench.memory_models import available_models
from bench.memory_scoring import DISTRACTORS

FLOOR_PERCENTILE = 90
CEILING_PERCENTILE = 50


def similarities(dataset: Dataset, embedder: Embedder) -> tuple[list[float], list[float]]:
    """Cosines of each dev-half paraphrase query with its target and with every other fact of
    its store (the store's facts and the distractors)."""
    distractors = [pair.first for pair in dataset.pairs[:DISTRACTORS]]
    by_store: dict[str, list[str]] = defaultdict(list)
    for fact in dataset.facts:
        by_store[fact.store].append(fact.text)
    asked = [q for q in dataset.queries if q.kind == "paraphrase" and q.half == "dev"]
    texts = list(dict.fromkeys([q.query for q in asked] + [f.text for f in dataset.facts] + distractors))
    vectors = dict(zip(texts, np.asarray(embedder(texts), dtype=np.float64), strict=True))
    targets: list[float] = []
    others: list[float] = []
    for query in asked:
        for text in by_store[query.store] + distractors:
            cosine = float(vectors[query.query] @ vectors[text])
            (targets if text == query.target else others).append(cosine)
    return targets, others


def scale(targets: list[float], others: list[float]) -> tuple[float, float]:
    floor = float(np.percentile(others, FLOOR_PERCENTILE))
    ceiling = float(np.percentile(targets, CEILING_PERCENTILE))
    return round(floor, 2), round(ceiling, 2)


def main() -> None:
    dataset = generate()
    for name, embedder, _dims, _floor in available_models():
        targets, others = similarities(dataset, embedder)
        floor, ceiling = scale(targets, others)
        print(
            f"{name}: targets min/median/max {min(targets):.3f}/{np.median(targets):.3f}/{max(targets):.3f}; "
            f"others median/p{FLOOR_PERCENTILE} {np.median(others):.3f}/"
            f"{np.percentile(others, FLOOR_PERCENTILE):.3f}; scale floor {floor}, ceiling {ceiling}"
        )


if __name__ == "__main__":
    main()
