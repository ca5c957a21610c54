"""Embeddings for the memory store: the gateway client, a deterministic local one, and the
guard that switches the store to keyword-only search when embeddings fail.

An `Embedder` is any callable turning a batch of texts into one vector per text. It raises
`EmbeddingError` when it cannot; the guard counts consecutive failures and, after
`failure_limit` of them, stops calling for a while (exponential backoff), so a dead embedding
service costs nothing per message and comes back on its own.
"""

from __future__ import annotations

import base64
import json
import struct
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Protocol

from pydantic import BaseModel, ValidationError

from agent_runtime.backoff import backoff_delay
from agent_runtime.memory.models import (
    BLENDED_EMBEDDING_MODEL,
    IDENTITY_SCALE,
    LOCAL_EMBEDDING_MODEL,
    MULTILINGUAL_EMBEDDING_MODEL,
    MemoryConfig,
    MemoryMode,
    SimilarityScale,
)
from agent_runtime.memory.vectors import VectorError, to_blob
from agent_runtime.testing.embeddings import deterministic_embedding
from agent_runtime.transport.httpclient import HttpClient, HttpError, http_client

EMBEDDINGS_PATH = "/v1/embeddings"
# Models whose vectors carry no meaning: the `test` model's are hashes of the words.
NON_SEMANTIC_MODELS = frozenset({"test"})
# The similarity above which two facts that disagree on a value are taken as contradicting,
# measured per model on a labelled set of sentence pairs (docs/memory.md, "Contradictions").
MEASURED_CONTRADICTION_SIMILARITY: dict[str, float] = {LOCAL_EMBEDDING_MODEL: 0.6}
# The similarity under which search leaves a fact out unless a keyword matched, per model, set
# from the paraphrase queries of the labelled memory benchmark (docs/memory.md, "Search floor").
MEASURED_SEARCH_FLOOR: dict[str, float] = {
    LOCAL_EMBEDDING_MODEL: 0.1,
    MULTILINGUAL_EMBEDDING_MODEL: 0.78,
    BLENDED_EMBEDDING_MODEL: 0.69,
}
# Each model's similarity scale, measured on the dev half of the labelled memory benchmark
# (`python -m bench.memory_calibration`; docs/memory.md, "Similarity scale"). A model without
# one (wordllama-256, the test model, hosted models) has its cosines taken as they are.
MEASURED_SIMILARITY_SCALE: dict[str, SimilarityScale] = {
    MULTILINGUAL_EMBEDDING_MODEL: SimilarityScale(floor=0.8, ceiling=0.84, vector_weight=0.9),
    BLENDED_EMBEDDING_MODEL: SimilarityScale(floor=0.7, ceiling=0.76, vector_weight=0.9),
}
MAX_BATCH = 128
QUERY_CACHE_SIZE = 256


class EmbeddingError(RuntimeError):
    """The embedder gave no usable vectors for this batch."""


class Embedder(Protocol):
    def __call__(self, texts: list[str]) -> list[list[float]]: ...


def is_semantic(embedder: Embedder | None) -> bool:
    """Whether the embedder's vectors carry meaning. An embedder says so with a `semantic`
    attribute; one that does not (a plain function) is taken as not semantic, so that nothing
    is judged on vectors of unknown quality."""
    return embedder is not None and bool(getattr(embedder, "semantic", False))


def embedder_model(embedder: Embedder | None) -> str | None:
    model = getattr(embedder, "model", None)
    return model if isinstance(model, str) else None


def similarity_scale(config: MemoryConfig, embedder: Embedder | None) -> SimilarityScale:
    """The scale search weighs the embedder's cosines on: the one measured for its model."""
    model = embedder_model(embedder) or config.embedding_model
    return MEASURED_SIMILARITY_SCALE.get(model or "", IDENTITY_SCALE)


def search_floor(config: MemoryConfig, embedder: Embedder | None) -> float:
    """The similarity under which search leaves a fact out (unless a keyword matched): the
    config's when set, else the figure measured for the embedding model, else the default."""
    if "min_similarity" in config.model_fields_set:
        return config.min_similarity
    model = embedder_model(embedder) or config.embedding_model
    return MEASURED_SEARCH_FLOOR.get(model or "", config.min_similarity)


class DeterministicEmbedder:
    """The `test` model's embeddings, computed locally: the same vectors the gateway returns."""

    semantic = False
    model = "test"

    def __init__(self, dims: int) -> None:
        self.dims = dims

    def __call__(self, texts: list[str]) -> list[list[float]]:
        return [deterministic_embedding(text, self.dims) for text in texts]


class _EmbeddingItem(BaseModel):
    index: int
    embedding: list[float] | str


class _EmbeddingReply(BaseModel):
    data: list[_EmbeddingItem]


TokenSource = str | Callable[[], str]


class GatewayEmbedder:
    """Posts to the orchestrator's OpenAI-compatible `POST /v1/embeddings` with a bearer token.

    `token` may be a callable so a rotated token is picked up without rebuilding the embedder.
    `dims` is sent as `dimensions` only when given: many embedding servers refuse the parameter,
    and without it a model answers in its own size (see `probe_dimensions`).
    """

    def __init__(
        self,
        base_url: str,
        token: TokenSource,
        model: str,
        dims: int | None,
        *,
        timeout_s: float = 30.0,
        client: HttpClient | None = None,
    ) -> None:
        self.url = base_url.rstrip("/") + EMBEDDINGS_PATH
        self.model = model
        self.semantic = model not in NON_SEMANTIC_MODELS
        self.dims = dims
        self._token = token
        self._client = client or http_client(base_url, timeout_s)
        self._owns_client = client is None

    def _bearer(self) -> str:
        return self._token() if callable(self._token) else self._token

    def __call__(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), MAX_BATCH):
            vectors += self._post(texts[start : start + MAX_BATCH])
        return vectors

    def _post(self, texts: list[str]) -> list[list[float]]:
        body: dict[str, object] = {"model": self.model, "input": texts, "encoding_format": "base64"}
        if self.dims is not None:
            body["dimensions"] = self.dims
        try:
            response = self._client.send(
                "POST",
                EMBEDDINGS_PATH,
                content=json.dumps(body).encode(),
                headers={"authorization": f"Bearer {self._bearer()}", "content-type": "application/json"},
            )
        except HttpError as failed:
            raise EmbeddingError(f"embedding request to {self.url} failed: {failed}") from None
        if response.status_code != 200:
            raise EmbeddingError(
                f"embedding request to {self.url} answered HTTP {response.status_code}: {response.text[:200]}"
            )
        try:
            reply = _EmbeddingReply.model_validate_json(response.content)
        except ValidationError as bad:
            raise EmbeddingError(
                f"embedding reply from {self.url} is malformed: {bad.errors()[0]['msg']}"
            ) from None
        if len(reply.data) != len(texts):
            raise EmbeddingError(f"asked for {len(texts)} embeddings, got {len(reply.data)}")
        return [self._decode(item.embedding) for item in sorted(reply.data, key=lambda item: item.index)]

    def _decode(self, embedding: list[float] | str) -> list[float]:
        if isinstance(embedding, list):
            return embedding
        raw = base64.b64decode(embedding)
        if len(raw) % 4:
            raise EmbeddingError("base64 embedding is not a whole number of float32 values")
        return list(struct.unpack(f"<{len(raw) // 4}f", raw))

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    def probe_dimensions(self) -> int:
        """The size of this model's vectors, from one short embedding; raises EmbeddingError."""
        [vector] = self(["dimensions probe"])
        if not vector:
            raise EmbeddingError(f"{self.model} answered an empty vector")
        self.dims = len(vector)
        return self.dims


class EmbeddingService:
    """Calls the embedder unless it is resting after repeated failures; tracks the store's mode.

    `embed` returns None instead of raising: the caller then works without vectors and the
    store backfills them once embeddings are back.
    """

    def __init__(
        self,
        embedder: Embedder | None,
        dims: int,
        *,
        failure_limit: int = 3,
        retry_base_s: float = 30.0,
        retry_max_s: float = 3600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.embedder = embedder
        self.dims = dims
        self.failure_limit = failure_limit
        self.retry_base_s = retry_base_s
        self.retry_max_s = retry_max_s
        self._clock = clock
        self._lock = threading.Lock()
        self.consecutive_failures = 0
        self.last_error: str | None = None
        self._resting_until: float | None = None
        self._cache: OrderedDict[str, bytes] = OrderedDict()

    @property
    def mode(self) -> MemoryMode:
        with self._lock:
            if self.embedder is None or self._resting_until is not None:
                return MemoryMode.KEYWORD
            return MemoryMode.HYBRID

    def retry_in(self) -> float | None:
        with self._lock:
            if self._resting_until is None:
                return None
            return max(0.0, self._resting_until - self._clock())

    def available(self) -> bool:
        """Whether a call would be attempted now (configured, and not resting)."""
        with self._lock:
            if self.embedder is None:
                return False
            return self._resting_until is None or self._clock() >= self._resting_until

    def embed(self, texts: Sequence[str]) -> list[bytes] | None:
        """float32 blobs, one per text, or None when embeddings are unavailable right now."""
        if not texts or not self.available() or self.embedder is None:
            return None
        try:
            vectors = self.embedder(list(texts))
            if len(vectors) != len(texts):
                raise EmbeddingError(f"asked for {len(texts)} embeddings, got {len(vectors)}")
            blobs = [to_blob(vector, self.dims) for vector in vectors]
        except (EmbeddingError, VectorError) as failed:
            self._failed(str(failed))
            return None
        self._succeeded()
        return blobs

    def embed_query(self, text: str) -> bytes | None:
        """Like `embed` for one search query, with a small cache of recent queries."""
        with self._lock:
            cached = self._cache.get(text)
            if cached is not None:
                self._cache.move_to_end(text)
        if cached is not None and self.mode is MemoryMode.HYBRID:
            return cached
        found = self.embed([text])
        if found is None:
            return None
        with self._lock:
            self._cache[text] = found[0]
            while len(self._cache) > QUERY_CACHE_SIZE:
                self._cache.popitem(last=False)
        return found[0]

    def _failed(self, error: str) -> None:
        with self._lock:
            self.consecutive_failures += 1
            self.last_error = error
            over = self.consecutive_failures - self.failure_limit
            if over >= 0:
                delay = backoff_delay(over + 1, self.retry_base_s, self.retry_max_s)
                self._resting_until = self._clock() + delay

    def _succeeded(self) -> None:
        with self._lock:
            self.consecutive_failures = 0
            self._resting_until = None
