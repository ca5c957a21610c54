"""The interface every model provider implements, and the error it raises."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator

from orchestrator.gateway.models import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionRequest,
    EmbeddingRequest,
    EmbeddingResponse,
)

RETRYABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})


class UpstreamError(Exception):
    """The provider failed. `status` is the upstream HTTP status, or None when no answer came."""

    def __init__(self, message: str, status: int | None = None, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retry_after_s = retry_after_s

    @property
    def retryable(self) -> bool:
        return self.status is None or self.status in RETRYABLE_STATUSES or self.status >= 500


class Provider(ABC):
    """A source of completions and embeddings.

    Requests arrive with `model` already set to the provider's own model name. `stream` raises
    UpstreamError before its first chunk when the call fails outright, so the caller can still
    retry or fall back before anything reached the agent.
    """

    name: str

    @abstractmethod
    async def complete(self, request: ChatCompletionRequest) -> ChatCompletion: ...

    @abstractmethod
    def stream(self, request: ChatCompletionRequest) -> AsyncIterator[ChatCompletionChunk]: ...

    @abstractmethod
    async def embed(self, request: EmbeddingRequest) -> EmbeddingResponse: ...

    async def embed_for(self, agent: str, request: EmbeddingRequest) -> EmbeddingResponse:
        """`embed` on behalf of `agent`: a provider that shares its work between agents
        overrides it."""
        return await self.embed(request)

    async def aclose(self) -> None:  # noqa: B027 - most providers hold nothing to release
        """Release connections; the default has none."""
