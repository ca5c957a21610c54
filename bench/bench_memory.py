"""Memory store: insert throughput and hybrid search latency at 10k and 100k facts, beside a numpy
brute-force top-10 over the same vectors (the physical baseline), measured in the same run.

Facts get random 1536-dimension unit vectors (passed precomputed, so the store is measured and
not an embedder), a text of 8 to 12 words from a 4,000-word vocabulary, and one of 20
categories. Every insert is one `MemoryStore.save` call in its own transaction, duplicate and
same-subject checks included. Each search is `MemoryStore.search` (vector and keyword
candidates, ranking, access bookkeeping) with a query vector and three query words.

CPU times (of the calling thread, where SQLite runs) are given beside the wall-clock figures:
on a shared machine they show the store's own cost when other processes take the cores. The
store copies its WAL into the database file on a thread of its own; the insert CPU time with
that thread included is given too.

Two quality figures come with the latencies, because the vector index scans 1-bit quantized
vectors and rescores the candidates exactly:
- recall@10 against the exact top-10 for random queries (on random data the true neighbours
  are barely closer than everything else, the worst case for any quantization);
- planted: a query made from a stored fact's vector plus noise, at a cosine of 0.7 (a close
  paraphrase) or 0.5 (a loose one) to it: how often that fact is in the top 10.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from agent_runtime.memory.models import MemoryConfig
from agent_runtime.memory.store import MemoryStore

Row = dict[str, str]
DIMS = 1536
CATEGORIES = 20
VOCABULARY = 4000
SEED = 20250501
TARGET_RATIO = 2.0
FORGETS = 5
TARGET_INSERTS_PER_S = 500.0
TARGET_MAX_INSERT_MS = 50.0
PLANTED_COSINES = (0.7, 0.5)
_SYLLABLES = ["ka", "lo", "mi", "ru", "te", "sa", "no", "vi", "de", "po", "zu", "fe", "ri", "ga", "bo", "ny"]


def vocabulary(rng: np.random.Generator) -> list[str]:
    words: set[str] = set()
    while len(words) < VOCABULARY:
        count = int(rng.integers(2, 4))
        words.add("".join(_SYLLABLES[int(i)] for i in rng.integers(0, len(_SYLLABLES), count)))
    return sorted(words)


def unit_vectors(rng: np.random.Generator, count: int) -> np.ndarray:
    vectors = rng.standard_normal((count, DIMS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def brute_force_top10(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    scores = matrix @ query
    top = np.argpartition(-scores, 10)[:10]
    return top[np.argsort(-scores[top])]


def _row(size: int, metric: str, value: str, target: str = "") -> Row:
    return {"benchmark": f"memory {size // 1000}k", "metric": metric, "value": value, "target": target}


def measure(size: int, queries: int, folder: Path) -> list[Row]:
    rng = np.random.default_rng(SEED + size)
    words = vocabulary(rng)
    vectors = unit_vectors(rng, size)
    store = MemoryStore(
        folder / f"memory-{size}.db", config=MemoryConfig(dimensions=DIMS, embedding_model="bench-random")
    )
    latencies: list[float] = []
    cpu_started, process_cpu_started = time.thread_time(), time.process_time()
    started = time.perf_counter()
    for i in range(size):
        text = " ".join(words[int(j)] for j in rng.integers(0, VOCABULARY, int(rng.integers(8, 13))))
        t0 = time.perf_counter()
        store.save(f"{text} {i}", category=f"topic-{i % CATEGORIES}", vector=vectors[i].tobytes())
        latencies.append(time.perf_counter() - t0)
    total = time.perf_counter() - started
    insert_cpu = time.thread_time() - cpu_started
    insert_process_cpu = time.process_time() - process_cpu_started
    tail = latencies[-max(size // 10, 1) :]

    search_times: list[float] = []
    search_cpu: list[float] = []
    brute_times: list[float] = []
    recalls: list[float] = []
    planted_found = dict.fromkeys(PLANTED_COSINES, 0)
    for _ in range(queries):
        query = unit_vectors(rng, 1)[0]
        text = " ".join(words[int(j)] for j in rng.integers(0, VOCABULARY, 3))
        t0, c0 = time.perf_counter(), time.thread_time()
        store.search(text, 10, vector=query.tobytes(), min_similarity=0.0)
        search_times.append(time.perf_counter() - t0)
        search_cpu.append(time.thread_time() - c0)
        t0 = time.perf_counter()
        exact = brute_force_top10(vectors, query)
        brute_times.append(time.perf_counter() - t0)
        with store.transaction():
            found = [fact_id - 1 for fact_id, _ in store.index.nearest(query.tobytes(), 10)]
        recalls.append(len(set(found) & {int(i) for i in exact}) / 10)

        for cosine in PLANTED_COSINES:
            target = int(rng.integers(0, size))
            noise = unit_vectors(rng, 1)[0] * float(np.sqrt(1 / cosine**2 - 1))
            noisy = (vectors[target] + noise) / np.linalg.norm(vectors[target] + noise)
            hits = store.search(
                text, 10, vector=noisy.astype(np.float32).tobytes(), min_similarity=0.0, record_access=False
            )
            planted_found[cosine] += any(hit.fact.id == target + 1 for hit in hits)
    # A forget erases the text everywhere derived (keyword index merged, WAL truncated).
    forget_times = []
    for fact_id in rng.choice(size, FORGETS, replace=False):
        t0 = time.perf_counter()
        store.forget(int(fact_id) + 1)
        forget_times.append(time.perf_counter() - t0)
    store.close()

    search_p50, brute_p50 = statistics.median(search_times), statistics.median(brute_times)
    ms = 1000.0
    return [
        _row(
            size,
            "insert throughput, whole run (facts/s)",
            f"{size / total:.0f}",
            f">= {TARGET_INSERTS_PER_S:.0f}",
        ),
        _row(
            size,
            "insert throughput, last 10% (facts/s)",
            f"{len(tail) / sum(tail):.0f}",
            f">= {TARGET_INSERTS_PER_S:.0f}",
        ),
        _row(
            size,
            "insert p50 / p95 (ms)",
            f"{statistics.median(latencies) * ms:.2f} / {percentile(latencies, 0.95) * ms:.2f}",
        ),
        _row(size, "slowest insert (ms)", f"{max(latencies) * ms:.1f}", f"<= {TARGET_MAX_INSERT_MS:.0f}"),
        _row(size, "insert CPU time per fact (ms)", f"{insert_cpu / size * ms:.2f}"),
        _row(
            size,
            "insert CPU time per fact, checkpoint thread included (ms)",
            f"{insert_process_cpu / size * ms:.2f}",
        ),
        _row(
            size,
            "hybrid search p50 / p95 (ms)",
            f"{search_p50 * ms:.2f} / {percentile(search_times, 0.95) * ms:.2f}",
        ),
        _row(size, "hybrid search CPU time p50 (ms)", f"{statistics.median(search_cpu) * ms:.2f}"),
        _row(
            size,
            "numpy brute-force top-10 p50 / p95 (ms)",
            f"{brute_p50 * ms:.2f} / {percentile(brute_times, 0.95) * ms:.2f}",
        ),
        _row(
            size,
            "search p50 / brute-force p50",
            f"{search_p50 / brute_p50:.2f}x",
            f"<= {TARGET_RATIO:.0f}x at 100k",
        ),
        _row(size, "vector recall@10, random queries", f"{statistics.mean(recalls):.2f}"),
        _row(
            size,
            f"forget one fact p50 / max of {FORGETS} (ms)",
            f"{statistics.median(forget_times) * ms:.0f} / {max(forget_times) * ms:.0f}",
        ),
    ] + [
        _row(size, f"planted fact in top 10, query cosine {cosine}", f"{found}/{queries}")
        for cosine, found in planted_found.items()
    ]


def run(quick: bool) -> list[Row]:
    sizes = [10_000] if quick else [10_000, 100_000]
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="flt-bench-memory-") as folder:
        for size in sizes:
            rows += measure(size, 30 if quick else 100, Path(folder))
    return rows


if __name__ == "__main__":
    import sys

    for row in run("--quick" in sys.argv):
        print(f"{row['benchmark']:12} {row['metric']:45} {row['value']:>16}  {row['target']}")
