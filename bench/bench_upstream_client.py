"""The gateway's upstream call: its own httpx path against the official `openai` async client.

Both call the same fake OpenAI-compatible upstream on 127.0.0.1 from one event loop, one call at
a time, interleaved in rounds so that the machine's pace moves both alike. The gateway keeps its
own path unless the official client costs at most 1 ms more per call (p50): the client would
replace the hand-written error mapping and Retry-After parsing, not the rest of the gateway.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time

import openai

from orchestrator.config.models import ProviderConfig
from orchestrator.gateway.models import ChatCompletionRequest
from orchestrator.gateway.providers.openai_compat import OpenAICompatProvider
from orchestrator.testing.fake_upstream import FakeUpstream

Row = dict[str, str]
KEY = "bench-upstream-key"
MESSAGES = [
    {"role": "system", "content": "You are a benchmark agent. " * 40},
    {"role": "user", "content": "hello, how are you today?"},
]
BUDGET_MS = 1.0


def _row(metric: str, value: str, target: str = "") -> Row:
    return {"benchmark": "upstream_client", "metric": metric, "value": value, "target": target}


async def _measure(base_url: str, calls: int) -> tuple[list[float], list[float]]:
    os.environ["FLT_BENCH_UPSTREAM_KEY"] = KEY
    own = OpenAICompatProvider(
        "fake", ProviderConfig(base_url=base_url, api_key_env="FLT_BENCH_UPSTREAM_KEY")
    )
    official = openai.AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=0)
    request = ChatCompletionRequest.model_validate({"model": "fake-model", "messages": MESSAGES})
    own_samples: list[float] = []
    official_samples: list[float] = []
    try:
        for _ in range(5):  # connections opened, code paths warm
            await own.complete(request)
            await official.chat.completions.create(model="fake-model", messages=MESSAGES)  # type: ignore[arg-type]
        for _ in range(calls):
            started = time.perf_counter()
            await own.complete(request)
            own_samples.append(time.perf_counter() - started)
            started = time.perf_counter()
            await official.chat.completions.create(model="fake-model", messages=MESSAGES)  # type: ignore[arg-type]
            official_samples.append(time.perf_counter() - started)
    finally:
        await own.aclose()
        await official.close()
    return own_samples, official_samples


def run(quick: bool) -> list[Row]:
    calls = 200 if quick else 1000
    upstream = FakeUpstream()
    with upstream.serve() as base_url:
        own, official = asyncio.run(_measure(base_url, calls))
    own_p50 = statistics.median(own) * 1000
    official_p50 = statistics.median(official) * 1000
    extra = official_p50 - own_p50
    verdict = "kept (the client costs more)" if extra > BUDGET_MS else "the official client is within budget"
    return [
        _row("upstream call p50, the gateway's httpx path", f"{own_p50:.2f} ms"),
        _row("upstream call p50, official openai AsyncOpenAI", f"{official_p50:.2f} ms"),
        _row("official client minus own path (p50)", f"{extra:+.2f} ms", "<= +1 ms to switch"),
        _row("the gateway's upstream path", verdict),
    ]


if __name__ == "__main__":
    for row in run(quick=True):
        print(f"{row['metric']}: {row['value']} {row['target']}")
