"""Token counts for the context manager, without loading a tokenizer in the agent.

The cl100k table costs ~40 MiB per process, so the agent asks the gateway
(`POST /v1/tokens/count`) and caches each text's count by hash: a message is counted once.
When the gateway cannot count, the ~4 characters per token estimate is used and the status
says "estimate" until a real count succeeds again.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Literal, Protocol

from agent_runtime.protocol import TokenCountResult

CHARS_PER_TOKEN = 4
# Chat framing per message (role, separators), as OpenAI documents for cl100k models.
TOKENS_PER_MESSAGE = 4
TOKENS_REPLY_PRIMING = 3
CACHE_ENTRIES = 50_000

Tokenizer = Literal["cl100k", "estimate"]


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


class TokenCounter(Protocol):
    @property
    def tokenizer(self) -> Tokenizer: ...

    def count(self, texts: Sequence[str]) -> list[int]: ...


class EstimateCounter:
    tokenizer: Tokenizer = "estimate"

    def count(self, texts: Sequence[str]) -> list[int]:
        return [estimate_tokens(text) for text in texts]


CountFunction = Callable[[list[str]], TokenCountResult]


class CachingCounter:
    """Counts through `remote` (the gateway route), once per distinct text.

    After a failed call, texts are estimated locally and the route is left alone for
    `retry_after_s`, so an unreachable gateway does not cost a request per turn.
    """

    def __init__(
        self,
        remote: CountFunction,
        failures: tuple[type[BaseException], ...],
        retry_after_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._remote = remote
        self._failures = failures
        self._retry_after_s = retry_after_s
        self._clock = clock
        self._cache: OrderedDict[bytes, int] = OrderedDict()
        self._tokenizer: Tokenizer = "cl100k"
        self._paused_until = 0.0
        self.remote_calls = 0

    @property
    def tokenizer(self) -> Tokenizer:
        return self._tokenizer

    def count(self, texts: Sequence[str]) -> list[int]:
        keys = [hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest() for text in texts]
        missing = {key: text for key, text in zip(keys, texts, strict=True) if key not in self._cache}
        if missing and self._clock() >= self._paused_until:
            self._fill(missing)
        counts = []
        for key, text in zip(keys, texts, strict=True):
            cached = self._cache.get(key)
            counts.append(cached if cached is not None else estimate_tokens(text))
        return counts

    def _fill(self, missing: dict[bytes, str]) -> None:
        self.remote_calls += 1
        try:
            result = self._remote(list(missing.values()))
        except self._failures:
            result = None
        if result is None or len(result.counts) != len(missing):
            self._tokenizer = "estimate"
            self._paused_until = self._clock() + self._retry_after_s
            return
        self._tokenizer = result.tokenizer
        for key, count in zip(missing, result.counts, strict=True):
            self._cache[key] = count
        while len(self._cache) > CACHE_ENTRIES:
            self._cache.popitem(last=False)
