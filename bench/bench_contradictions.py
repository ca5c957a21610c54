"""The cost of the semantic contradiction check (`truth.disputed_by_meaning`) per saved fact.

A store of N facts embedded by the built-in `wordllama-256` (called in-process, as the gateway
computes it) runs the check alone for M more facts (embedded beforehand): one more
nearest-neighbour search over every category, and the disagreement test on the neighbours above
the threshold; then saves them, for the cost of a whole save beside it. The facts are drawn from a few templates about a few people,
places and things, so the rule fires on many of them: a worst case for its cost, not a figure of
how often it fires on real memory. Needs the extra `embeddings-local`.

    python -m bench.bench_contradictions [--quick]
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path

from agent_runtime.memory import LOCAL_EMBEDDING_MODEL, FactSource, MemoryConfig, MemoryStore
from agent_runtime.memory.truth import Candidate
from orchestrator.gateway.providers.local_embedding import embed_texts

Row = dict[str, str]
THINGS = ["flight", "train", "dentist appointment", "team meeting", "gym class", "piano lesson", "rent"]
PLACES = ["Berlin", "Paris", "Lisbon", "Porto", "Madrid", "Rome", "Oslo", "Vienna", "Prague", "Munich"]
PEOPLE = ["Anna", "Maria", "Tom", "Lena", "Ravi", "Chen", "Omar", "Sofia", "Jonas", "Ines"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
SOURCES = [FactSource.USER_STATED, FactSource.AGENT, FactSource.EXTRACTED, FactSource.INFERRED]


class LocalEmbedder:
    """`wordllama-256` in-process, as the gateway computes it."""

    model = LOCAL_EMBEDDING_MODEL
    semantic = True

    def __call__(self, texts: list[str]) -> list[list[float]]:
        return embed_texts(texts)


def sentence(rng: random.Random, index: int) -> str:
    thing, place, person, day = rng.choice(THINGS), rng.choice(PLACES), rng.choice(PEOPLE), rng.choice(DAYS)
    hour, minute = rng.randrange(6, 22), rng.choice([0, 15, 30, 45])
    shapes = [
        f"{person}'s {thing} is on {day} at {hour}:{minute:02d}",
        f"The user met {person} in {place} about the {thing}",
        f"The {thing} in {place} costs {rng.randrange(10, 2000)} euros",
        f"{person} does not like the {thing} on {day}",
        f"Note {index}: {person} moved to {place}",
    ]
    return rng.choice(shapes)


def fill(store: MemoryStore, rng: random.Random, size: int, saves: int) -> list[Candidate]:
    """Save `size` facts; return `saves` more, prepared (embedded) but not saved."""
    texts = [sentence(rng, i) for i in range(size + saves)]
    vectors = embed_texts(texts)
    candidates = [
        store.prepare(text, category=f"c{i % 8}", source=SOURCES[i % 4], vector=vector, embed=False)
        for i, (text, vector) in enumerate(zip(texts, vectors, strict=True))
    ]
    for candidate in candidates[:size]:
        store.save_prepared(candidate)
    return candidates[size:]


def check_ms(store: MemoryStore, candidates: list[Candidate]) -> tuple[float, int]:
    """Milliseconds of the check alone per candidate (best of three passes), and how many
    candidates it finds a disputed fact for."""
    best, found = float("inf"), 0
    for _ in range(3):
        started = time.perf_counter()
        with store.transaction() as conn:
            found = sum(1 for c in candidates if store._disputed(conn, c) is not None)
        best = min(best, time.perf_counter() - started)
    return best * 1000 / len(candidates), found


def save_ms(store: MemoryStore, candidates: list[Candidate]) -> float:
    started = time.perf_counter()
    for candidate in candidates:
        store.save_prepared(candidate)
    return (time.perf_counter() - started) * 1000 / len(candidates)


def measure(folder: Path, size: int, saves: int) -> list[Row]:
    config = MemoryConfig(dimensions=256, embedding_model=LOCAL_EMBEDDING_MODEL)
    with MemoryStore(folder / "memory.db", embedder=LocalEmbedder(), config=config) as store:
        candidates = fill(store, random.Random(7), size, saves)
        check, found = check_ms(store, candidates)
        save = save_ms(store, candidates)
    name = f"contradictions {size // 1000}k facts"
    return [
        {
            "benchmark": name,
            "metric": "semantic check per saved fact (ms)",
            "value": f"{check:.3f}",
            "target": "< 1",
        },
        {
            "benchmark": name,
            "metric": "whole save with the check (ms/fact)",
            "value": f"{save:.2f}",
            "target": "",
        },
        {
            "benchmark": name,
            "metric": "saves the check finds a disputed fact for",
            "value": f"{found} of {saves}",
            "target": "",
        },
    ]


def run(quick: bool) -> list[Row]:
    sizes = [1_000] if quick else [1_000, 10_000]
    saves = 200 if quick else 500
    rows: list[Row] = []
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="flt-bench-contradictions-") as folder:
            rows += measure(Path(folder), size, saves)
    return rows


if __name__ == "__main__":
    for row in run("--quick" in sys.argv):
        print(f"{row['benchmark']:28} {row['metric']:40} {row['value']:>8}  {row['target']}", flush=True)
