"""The built-in `wordllama-256` embedding model: real meaning, computed in the orchestrator's
process from weights shipped in the `wordllama` package (the optional extra
`embeddings-local`), with no network and no key.

WordLlama averages token vectors taken from a large language model's embedding table: 256
dimensions, well under 0.1 ms a sentence on one core, 16 MB of weights. It is far weaker than a
hosted embedding model on paraphrase, but its similarities carry meaning, which the `test`
model's hash vectors do not. The weights load on the first request (0.3-0.5 s; the process
grows by about 70 MiB) and stay for the life of the process. The files are opened from the package itself: nothing is looked up or
downloaded from a model hub.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Protocol

from agent_runtime.memory import LOCAL_EMBEDDING_MODEL
from orchestrator.config.models import LOCAL_EMBEDDING_DIMENSIONS, EmbeddingConfig, missing_package_message
from orchestrator.gateway.models import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionRequest,
    EmbeddingRequest,
    EmbeddingResponse,
)
from orchestrator.gateway.providers.base import Provider, UpstreamError
from orchestrator.gateway.providers.embedding_share import EmbedTexts, FairEmbeddingThread
from orchestrator.gateway.providers.loaded_once import LoadedOnce
from orchestrator.gateway.tokens import TokenCounter

WEIGHTS = "weights/l2_supercat_256.safetensors"
TOKENIZER = "tokenizers/l2_supercat_tokenizer_config.json"
DIMENSIONS = 256


class _Model(Protocol):
    def embed(self, texts: list[str], norm: bool = ...) -> Any: ...


def _read_package_files() -> _Model:
    try:
        import wordllama
        from safetensors import safe_open
        from tokenizers import Tokenizer
        from wordllama.inference import WordLlamaInference
    except ImportError:
        raise UpstreamError(missing_package_message(), status=501) from None
    root = Path(wordllama.__file__).parent
    try:
        with safe_open(str(root / WEIGHTS), framework="np") as weights:
            table = weights.get_tensor("embedding.weight")
        tokenizer = Tokenizer.from_file(str(root / TOKENIZER))
    except OSError as failed:
        raise UpstreamError(f"{LOCAL_EMBEDDING_MODEL} could not load its weights: {failed}", 500) from None
    model: _Model = WordLlamaInference(table, tokenizer)
    return model


MODEL: LoadedOnce[_Model] = LoadedOnce(_read_package_files)


def embed_texts(texts: list[str], dimensions: int = DIMENSIONS) -> list[list[float]]:
    """Unit vectors of `dimensions` (64, 128 or 256), one per text."""
    if dimensions not in LOCAL_EMBEDDING_DIMENSIONS:
        sizes = ", ".join(str(size) for size in LOCAL_EMBEDDING_DIMENSIONS)
        raise UpstreamError(
            f"{LOCAL_EMBEDDING_MODEL} gives vectors of {sizes} dimensions, not {dimensions}", 400
        )
    matrix = MODEL.get().embed(texts, norm=False)[:, :dimensions]
    norms = (matrix * matrix).sum(axis=1, keepdims=True) ** 0.5
    norms[norms == 0] = 1.0
    return [[float(value) for value in row] for row in matrix / norms]


DEFAULT_CPU_SECONDS_PER_MINUTE = EmbeddingConfig().cpu_seconds_per_minute
# Requests embedded without an agent's name share one turn and one cap.
UNNAMED = ""


class LocalEmbeddingProvider(Provider):
    """Serves a local embedding model in-process (`wordllama-256` unless told another); it
    answers no chat."""

    def __init__(
        self,
        counter: TokenCounter,
        model: str = LOCAL_EMBEDDING_MODEL,
        embed: EmbedTexts = embed_texts,
        dimensions: int = DIMENSIONS,
        cpu_seconds_per_minute: Callable[[], float] = lambda: DEFAULT_CPU_SECONDS_PER_MINUTE,
    ) -> None:
        self.name = model
        self._dimensions = dimensions
        self._counter = counter
        # One thread: however many agents ask at once, the model takes at most one core of the
        # orchestrator's, and the shared default pool stays free for everything else.
        self._worker = FairEmbeddingThread(model, embed, cpu_seconds_per_minute)

    async def complete(self, request: ChatCompletionRequest) -> ChatCompletion:
        raise UpstreamError(_not_a_chat_model(self.name), status=400)

    async def stream(self, request: ChatCompletionRequest) -> AsyncIterator[ChatCompletionChunk]:
        raise UpstreamError(_not_a_chat_model(self.name), status=400)
        yield  # pragma: no cover - makes this an async generator, as the interface wants

    async def embed(self, request: EmbeddingRequest) -> EmbeddingResponse:
        return await self.embed_for(UNNAMED, request)

    async def embed_for(self, agent: str, request: EmbeddingRequest) -> EmbeddingResponse:
        texts = request.texts
        # Loading and embedding are CPU work: off the event loop, on the model's own thread.
        vectors = await self._worker.embed(agent, texts, request.dimensions or self._dimensions)
        data = []
        for index, vector in enumerate(vectors):
            encoded: list[float] | str = vector
            if request.encoding_format == "base64":
                encoded = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        tokens = sum(self._counter.count_many(texts))
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        return EmbeddingResponse.model_validate(
            {"object": "list", "data": data, "model": self.name, "usage": usage}
        )

    async def aclose(self) -> None:
        self._worker.close()


def _not_a_chat_model(model: str) -> str:
    return f"{model} is an embedding model: it answers no chat completion"
