"""Memory store: insert throughput and search latency at 10k and 100k facts, with recall@10
against exact cosine beside every latency, and a single-threaded numpy brute-force top-10 over
the same matrix measured in the same run (the physical baseline).

Two kinds of 1536-dimension unit vectors: random (the true neighbours are barely closer than
everything else, the worst case for any quantization) and clustered (a mixture of 300
centroids with noise, closer to real embeddings). Vectors are passed precomputed, so the store
is measured and not an embedder. Texts have 8 to 12 words from a 4,000-word vocabulary, facts
fall in one of 20 categories. Every insert is one `MemoryStore.save` call in its own
transaction, duplicate and same-subject checks included.

Searches, all timed by wall clock on the calling thread (and its CPU time):
- vector search: `FactIndex.nearest(query, 10)` over every fact (simsimd's int8 cosine scan of
  the matrix held in memory, one thread, then the exact float32 cosine of the best 40 in SQLite),
  the figure compared with numpy; its recall@10 is against the exact top 10;
- hybrid search: `MemoryStore.search` (category and flat vector candidates, keyword candidates,
  ranking, access bookkeeping) with a query vector and three query words; its recall is that of
  the vector candidates it gathered (how many of the exact top 10 it had to rank).
The numpy baseline runs in a subprocess with OPENBLAS_NUM_THREADS, OMP_NUM_THREADS and
MKL_NUM_THREADS set to 1 before numpy is imported (1 thread), over the same float32 matrix,
interleaved query by query with the store's vector searches (two rounds, each side first in
one), so a change of machine load reaches both.

The int8 matrix is in memory from the first insert on (as in an agent that has searched once),
so inserts pay for keeping it in step. Restart: a second store opened on the finished file
fills its matrix from `fact_codes`; that time and the matrix's size are reported.

Planted: a query made from a stored fact's vector plus noise, at a cosine of 0.7 (a close
paraphrase) or 0.5 (a loose one) to it: how often that fact is in the hybrid top 10.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from agent_runtime.memory import MemoryConfig, MemoryStore
from agent_runtime.memory.search import gather

Row = dict[str, str]
DIMS = 1536
CATEGORIES = 20
CENTROIDS = 300
VOCABULARY = 4000
SEED = 20250501
TARGET_RATIO = 2.0
FORGETS = 5
TARGET_RECALL = 0.95
TARGET_INSERTS_PER_S = 500.0
TARGET_MAX_INSERT_MS = 50.0
PLANTED_COSINES = (0.7, 0.5)
BASELINE_THREADS = 1
_SYLLABLES = ["ka", "lo", "mi", "ru", "te", "sa", "no", "vi", "de", "po", "zu", "fe", "ri", "ga", "bo", "ny"]
# The baseline's process: thread counts are fixed in the environment before numpy loads. It
# times the query whose index it reads on stdin and answers [wall, cpu] on stdout, so its
# searches interleave with the store's and both see the same machine load.
BASELINE_SCRIPT = """
import json, sys, time
import numpy as np
matrix = np.load(sys.argv[1])
queries = np.load(sys.argv[2])
for line in sys.stdin:
    query = queries[int(line)]
    started, cpu = time.perf_counter(), time.thread_time()
    scores = matrix @ query
    top = np.argpartition(-scores, 10)[:10]
    top = top[np.argsort(-scores[top])]
    print(json.dumps([time.perf_counter() - started, time.thread_time() - cpu]), flush=True)
"""


def vocabulary(rng: np.random.Generator) -> list[str]:
    words: set[str] = set()
    while len(words) < VOCABULARY:
        count = int(rng.integers(2, 4))
        words.add("".join(_SYLLABLES[int(i)] for i in rng.integers(0, len(_SYLLABLES), count)))
    return sorted(words)


def _normalized(vectors: np.ndarray) -> np.ndarray:
    vectors = vectors.astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def unit_vectors(rng: np.random.Generator, count: int) -> np.ndarray:
    return _normalized(rng.standard_normal((count, DIMS)))


class Dataset:
    """Random unit vectors, or a mixture of centroids with noise as large as the centroid."""

    def __init__(self, kind: str, rng: np.random.Generator) -> None:
        self.kind = kind
        self.rng = rng
        self.centroids = unit_vectors(rng, CENTROIDS) if kind == "clustered" else None

    def draw(self, count: int) -> np.ndarray:
        if self.centroids is None:
            return unit_vectors(self.rng, count)
        picked = self.centroids[self.rng.integers(0, CENTROIDS, count)]
        noise = self.rng.standard_normal((count, DIMS)) / np.sqrt(DIMS)
        return _normalized(picked + noise)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def exact_top10(matrix: np.ndarray, query: np.ndarray) -> set[int]:
    scores = matrix @ query
    top = np.argpartition(-scores, 10)[:10]
    return {int(i) for i in top}


class SingleThreadBaseline:
    """numpy's matrix-vector product and top-10 selection in a 1-thread subprocess, one query
    at a time on request: (wall clock, CPU time) of each, timed inside that process."""

    def __init__(self, matrix_file: Path, queries_file: Path) -> None:
        env = dict(os.environ)
        for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env[name] = str(BASELINE_THREADS)
        self.process = subprocess.Popen(
            [sys.executable, "-c", BASELINE_SCRIPT, str(matrix_file), str(queries_file)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def time(self, query_index: int) -> tuple[float, float]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{query_index}\n")
        self.process.stdin.flush()
        wall, cpu = json.loads(self.process.stdout.readline())
        return float(wall), float(cpu)

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=60)


def _row(size: int, kind: str, metric: str, value: str, target: str = "") -> Row:
    return {"benchmark": f"memory {size // 1000}k {kind}", "metric": metric, "value": value, "target": target}


def restart_reload(store: MemoryStore) -> tuple[float, float]:
    """Open a second store on the same file and time filling its int8 matrix; (ms, MB)."""
    with MemoryStore(store.path, config=store.config) as reopened, reopened.transaction():
        started = time.perf_counter()
        matrix = reopened.index.resident()
        elapsed = time.perf_counter() - started
        size = matrix.nbytes() / 1e6 if matrix is not None else 0.0
    with store.transaction():  # the first store's own matrix, refreshed if the reopen wrote
        store.index.resident()
    return elapsed * 1000.0, size


def _insert(
    store: MemoryStore, vectors: np.ndarray, words: list[str], rng: np.random.Generator
) -> tuple[list[float], list[float]]:
    """Wall-clock and calling-thread CPU time of each insert."""
    latencies: list[float] = []
    cpu: list[float] = []
    for i in range(len(vectors)):
        text = " ".join(words[int(j)] for j in rng.integers(0, VOCABULARY, int(rng.integers(8, 13))))
        t0, c0 = time.perf_counter(), time.thread_time()
        store.save(f"{text} {i}", category=f"topic-{i % CATEGORIES}", vector=vectors[i].tobytes())
        latencies.append(time.perf_counter() - t0)
        cpu.append(time.thread_time() - c0)
    return latencies, cpu


def measure(size: int, kind: str, queries: int, folder: Path) -> list[Row]:
    rng = np.random.default_rng(SEED + size + (1 if kind == "clustered" else 0))
    words = vocabulary(rng)
    data = Dataset(kind, rng)
    vectors = data.draw(size)
    store = MemoryStore(
        folder / f"memory-{size}-{kind}.db",
        config=MemoryConfig(dimensions=DIMS, embedding_model="bench-random"),
    )
    with store.transaction():
        store.index.resident()
    cpu_started, process_cpu_started = time.thread_time(), time.process_time()
    started = time.perf_counter()
    latencies, insert_cpus = _insert(store, vectors, words, rng)
    slowest = max(range(size), key=latencies.__getitem__)
    total = time.perf_counter() - started
    insert_cpu = time.thread_time() - cpu_started
    insert_process_cpu = time.process_time() - process_cpu_started
    tail = latencies[-max(size // 10, 1) :]

    query_vectors = data.draw(queries)
    matrix_file, queries_file = folder / "matrix.npy", folder / "queries.npy"
    np.save(matrix_file, vectors)
    np.save(queries_file, query_vectors)
    reload_ms, matrix_mb = restart_reload(store)

    vector_times: list[float] = []
    vector_cpu: list[float] = []
    vector_recalls: list[float] = []
    hybrid_times: list[float] = []
    hybrid_recalls: list[float] = []
    planted_found = dict.fromkeys(PLANTED_COSINES, 0)
    config = store.config
    exact_sets = [exact_top10(vectors, query) for query in query_vectors]
    # Vector searches and the numpy baseline interleaved query by query, in two rounds (numpy
    # first, then the store first), so both see the same load. Not interleaved with the hybrid
    # searches, which record accesses: the checkpoint thread would copy those writes meanwhile.
    baseline = SingleThreadBaseline(matrix_file, queries_file)
    brute: list[tuple[float, float]] = []
    for numpy_first in (True, False):
        for index, (query, exact) in enumerate(zip(query_vectors, exact_sets, strict=True)):
            if numpy_first:
                brute.append(baseline.time(index))
            with store.transaction():
                t0, c0 = time.perf_counter(), time.thread_time()
                found = store.index.nearest(query.tobytes(), 10)
                vector_times.append(time.perf_counter() - t0)
                vector_cpu.append(time.thread_time() - c0)
            if not numpy_first:
                brute.append(baseline.time(index))
            vector_recalls.append(len({fact_id - 1 for fact_id, _ in found} & exact) / 10)
    baseline.close()
    for query, exact in zip(query_vectors, exact_sets, strict=True):
        blob = query.tobytes()
        text = " ".join(words[int(j)] for j in rng.integers(0, VOCABULARY, 3))
        with store.transaction():
            gathered = gather(store.index, text, blob, 10, config, None).similarity
        hybrid_recalls.append(len({fact_id - 1 for fact_id in gathered} & exact) / 10)
        t0 = time.perf_counter()
        store.search(text, 10, vector=blob, min_similarity=0.0)
        hybrid_times.append(time.perf_counter() - t0)

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
    brute_times = [wall for wall, _ in brute]
    brute_cpu = [cpu for _, cpu in brute]

    ms = 1000.0
    vector_p50, hybrid_p50, brute_p50 = (
        statistics.median(vector_times),
        statistics.median(hybrid_times),
        statistics.median(brute_times),
    )
    vector_recall, hybrid_recall = statistics.mean(vector_recalls), statistics.mean(hybrid_recalls)

    def row(metric: str, value: str, target: str = "") -> Row:
        return _row(size, kind, metric, value, target)

    return [
        row(
            "insert throughput, whole run (facts/s)", f"{size / total:.0f}", f">= {TARGET_INSERTS_PER_S:.0f}"
        ),
        row(
            "insert throughput, last 10% (facts/s)",
            f"{len(tail) / sum(tail):.0f}",
            f">= {TARGET_INSERTS_PER_S:.0f}",
        ),
        row(
            "insert p50 / p95 (ms)",
            f"{statistics.median(latencies) * ms:.2f} / {percentile(latencies, 0.95) * ms:.2f}",
        ),
        row(
            "slowest insert, wall clock (its CPU time) (ms); most CPU any insert took (ms)",
            f"{latencies[slowest] * ms:.1f} ({insert_cpus[slowest] * ms:.1f}); {max(insert_cpus) * ms:.1f}",
            f"<= {TARGET_MAX_INSERT_MS:.0f}",
        ),
        row(
            "insert CPU time per fact, calling thread / with checkpoint thread (ms)",
            f"{insert_cpu / size * ms:.2f} / {insert_process_cpu / size * ms:.2f}",
        ),
        row(
            "vector search p50 / p95 (ms), recall@10",
            f"{vector_p50 * ms:.2f} / {percentile(vector_times, 0.95) * ms:.2f}, recall {vector_recall:.3f}",
            f"recall >= {TARGET_RECALL}",
        ),
        row(
            "CPU time p50 (ms): vector search / numpy 1 thread",
            f"{statistics.median(vector_cpu) * ms:.2f} / {statistics.median(brute_cpu) * ms:.2f}",
        ),
        row(
            f"numpy brute force top-10, {BASELINE_THREADS} thread, p50 / p95 (ms), recall@10",
            f"{brute_p50 * ms:.2f} / {percentile(brute_times, 0.95) * ms:.2f}, recall 1.000",
        ),
        row(
            "vector search p50 / numpy 1-thread p50",
            f"{vector_p50 / brute_p50:.2f}x (recall {vector_recall:.3f})",
            f"<= {TARGET_RATIO:.0f}x",
        ),
        row(
            "hybrid search p50 / p95 (ms), recall@10 of its vector candidates",
            f"{hybrid_p50 * ms:.2f} / {percentile(hybrid_times, 0.95) * ms:.2f}, recall {hybrid_recall:.3f}",
        ),
        row(
            "hybrid search p50 / numpy 1-thread p50",
            f"{hybrid_p50 / brute_p50:.2f}x (recall {hybrid_recall:.3f})",
        ),
        row(
            "restart: int8 matrix filled from fact_codes (ms), its size (MB)",
            f"{reload_ms:.0f} ms, {matrix_mb:.1f} MB",
        ),
        row(
            f"forget one fact p50 / max of {FORGETS} (ms)",
            f"{statistics.median(forget_times) * ms:.0f} / {max(forget_times) * ms:.0f}",
        ),
    ] + [
        row(f"planted fact in hybrid top 10, query cosine {cosine}", f"{found}/{queries}")
        for cosine, found in planted_found.items()
    ]


def run(quick: bool) -> list[Row]:
    sizes = [10_000] if quick else [10_000, 100_000]
    rows: list[Row] = []
    for size in sizes:
        for kind in ("random", "clustered"):
            with tempfile.TemporaryDirectory(prefix="flt-bench-memory-") as folder:
                rows += measure(size, kind, 30 if quick else 100, Path(folder))
    return rows


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    sizes_arg = [a for a in sys.argv[1:] if a.isdigit()]
    chosen = [int(a) for a in sizes_arg] or ([10_000] if quick else [10_000, 100_000])
    for size in chosen:
        for kind in ("random", "clustered"):
            with tempfile.TemporaryDirectory(prefix="flt-bench-memory-") as folder:
                for r in measure(size, kind, 30 if quick else 100, Path(folder)):
                    print(f"{r['benchmark']:22} {r['metric']:66} {r['value']:>26}  {r['target']}", flush=True)
