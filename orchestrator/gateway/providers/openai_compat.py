"""Any OpenAI-compatible upstream (OpenAI, OpenRouter, Ollama, vLLM, LM Studio, ...).

The key is read from the host environment variable the fleet names, at every call, and sent
only in the Authorization header to the provider's base URL; it is never logged or returned.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from agent_runtime import aiter_sse
from orchestrator.config.models import ProviderConfig
from orchestrator.gateway.models import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionRequest,
    EmbeddingRequest,
    EmbeddingResponse,
)
from orchestrator.gateway.providers.base import Provider, UpstreamError

CONNECT_TIMEOUT_S = 10.0
ModelT = TypeVar("ModelT", bound=BaseModel)


class MissingKeyError(UpstreamError):
    """The fleet names a key variable that is not set in the orchestrator's environment."""

    @property
    def retryable(self) -> bool:
        return False


class OpenAICompatProvider(Provider):
    def __init__(self, name: str, config: ProviderConfig) -> None:
        self.name = name
        self.config = config
        self._http: httpx.AsyncClient | None = None

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            timeout = httpx.Timeout(
                self.config.timeout_s, connect=min(CONNECT_TIMEOUT_S, self.config.timeout_s)
            )
            self._http = httpx.AsyncClient(base_url=self.config.base_url + "/", timeout=timeout)
        return self._http

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def _headers(self) -> dict[str, str]:
        headers = {"accept": "application/json"}
        variable = self.config.api_key_env
        if variable:
            key = os.environ.get(variable)
            if not key:
                raise MissingKeyError(
                    f"provider '{self.name}' needs its key in the environment variable {variable}, "
                    "which is not set on the orchestrator host"
                )
            headers["authorization"] = f"Bearer {key}"
        return headers

    async def complete(self, request: ChatCompletionRequest) -> ChatCompletion:
        body = request.wire() | {"stream": False}
        body.pop("stream_options", None)
        return await self._post("chat/completions", body, ChatCompletion)

    async def embed(self, request: EmbeddingRequest) -> EmbeddingResponse:
        return await self._post("embeddings", request.wire(), EmbeddingResponse)

    def _redacted(self, exc: UpstreamError) -> UpstreamError:
        """The error with the key blanked out, should the provider have echoed it back."""
        key = os.environ.get(self.config.api_key_env) if self.config.api_key_env else None
        if key and key in exc.message:
            exc.message = exc.message.replace(key, "[redacted]")
            exc.args = (exc.message,)
        return exc

    async def _post(self, path: str, body: dict[str, Any], model: type[ModelT]) -> ModelT:
        try:
            return await self._post_unredacted(path, body, model)
        except UpstreamError as exc:
            raise self._redacted(exc) from None

    async def _post_unredacted(self, path: str, body: dict[str, Any], model: type[ModelT]) -> ModelT:
        try:
            response = await self._client().post(path, json=body, headers=self._headers())
        except httpx.TimeoutException as exc:
            raise UpstreamError(f"provider '{self.name}' timed out ({type(exc).__name__})") from None
        except httpx.TransportError as exc:
            raise UpstreamError(f"provider '{self.name}' is unreachable: {exc}") from None
        if response.status_code >= 400:
            raise _status_error(self.name, response)
        try:
            return model.model_validate(response.json())
        except (ValueError, ValidationError) as exc:
            raise UpstreamError(
                f"provider '{self.name}' sent an unreadable reply: {exc}", status=502
            ) from None

    async def stream(self, request: ChatCompletionRequest) -> AsyncIterator[ChatCompletionChunk]:
        try:
            async with aclosing(self._events(request)) as events:
                async for chunk in events:
                    yield chunk
        except UpstreamError as exc:
            raise self._redacted(exc) from None

    async def _events(self, request: ChatCompletionRequest) -> AsyncGenerator[ChatCompletionChunk, None]:
        body = request.wire() | {"stream": True}
        headers = self._headers() | {"accept": "text/event-stream"}
        try:
            async with self._client().stream(
                "POST", "chat/completions", json=body, headers=headers
            ) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise _status_error(self.name, response)
                async for event in aiter_sse(response.aiter_lines()):
                    data = event.data.strip()
                    if data == "[DONE]":
                        return
                    yield _parse_chunk(self.name, data)
        except httpx.TimeoutException as exc:
            raise UpstreamError(f"provider '{self.name}' timed out ({type(exc).__name__})") from None
        except httpx.TransportError as exc:
            raise UpstreamError(f"provider '{self.name}' broke the stream: {exc}") from None


def _parse_chunk(provider: str, data: str) -> ChatCompletionChunk:
    try:
        payload = json.loads(data)
    except ValueError:
        raise UpstreamError(f"provider '{provider}' sent an unreadable stream event", status=502) from None
    if isinstance(payload, dict) and "error" in payload:
        raise UpstreamError(f"provider '{provider}' failed mid-stream: {_error_text(payload)}", status=502)
    try:
        return ChatCompletionChunk.model_validate(payload)
    except ValidationError as exc:
        raise UpstreamError(f"provider '{provider}' sent an unreadable chunk: {exc}", status=502) from None


def _error_text(payload: Any) -> str:
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or error)
    if isinstance(error, str):
        return str(payload.get("message") or error)
    return json.dumps(payload)[:500]


def _status_error(provider: str, response: httpx.Response) -> UpstreamError:
    try:
        detail = _error_text(response.json())
    except ValueError:
        detail = response.text[:500] or response.reason_phrase
    return UpstreamError(
        f"provider '{provider}' answered HTTP {response.status_code}: {detail}",
        status=response.status_code,
        retry_after_s=_retry_after(response.headers.get("retry-after")),
    )


def _retry_after(value: str | None) -> float | None:
    """Retry-After in seconds, given as a number or as an HTTP date."""
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max((moment - datetime.now(UTC)).total_seconds(), 0.0)
