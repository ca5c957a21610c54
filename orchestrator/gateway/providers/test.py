"""The built-in `test` model: deterministic, offline, keyless, answering in the OpenAI wire format.

It never pretends to be a real model: every text it writes starts with "[test model]". What
it answers is decided by `script` (see docs/test-model.md); this module renders that
decision as a completion, a stream of chunks or embeddings, with usage counted by the
fleet's token counter.
"""

from __future__ import annotations

import base64
import hashlib
import re
import struct
import time
from collections.abc import AsyncIterator
from typing import Any

from agent_runtime.testing import deterministic_embedding
from orchestrator.config.models import TEST_MODEL
from orchestrator.gateway.models import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionRequest,
    EmbeddingRequest,
    EmbeddingResponse,
)
from orchestrator.gateway.providers.base import Provider
from orchestrator.gateway.providers.script import ScriptedReply, reply_to
from orchestrator.gateway.tokens import TokenCounter

ARGUMENT_PIECE = 16
_WORDS = re.compile(r"\s*\S+\s*|\s+")


class TestModelProvider(Provider):
    """Answers `test` by script; no network, no key."""

    __test__ = False  # not a pytest test class, despite its name
    name = TEST_MODEL

    def __init__(self, counter: TokenCounter, embedding_dimensions: int = 1536) -> None:
        self._counter = counter
        self._dimensions = embedding_dimensions

    # ------------------------------------------------------------------ chat

    async def complete(self, request: ChatCompletionRequest) -> ChatCompletion:
        reply = reply_to(request)
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.tool_calls:
            message["tool_calls"] = _tool_calls(request, reply)
        body = {
            "id": _completion_id(request),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": TEST_MODEL,
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": _finish(reply)}],
            "usage": self._usage(request, reply),
        }
        return ChatCompletion.model_validate(body)

    async def stream(self, request: ChatCompletionRequest) -> AsyncIterator[ChatCompletionChunk]:
        reply = reply_to(request)
        include_usage = bool(request.stream_options and request.stream_options.include_usage)
        head: dict[str, Any] = {
            "id": _completion_id(request),
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": TEST_MODEL,
        }
        if include_usage:
            head["usage"] = None
        for delta, finish in _deltas(request, reply):
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            yield ChatCompletionChunk.model_validate(head | {"choices": [choice]})
        if include_usage:
            yield ChatCompletionChunk.model_validate(
                head | {"choices": [], "usage": self._usage(request, reply)}
            )

    def _usage(self, request: ChatCompletionRequest, reply: ScriptedReply) -> dict[str, Any]:
        prompt = self._counter.count_chat(request.counted_messages, request.tools)
        written = (reply.text or "") + "".join(call.name + call.arguments for call in reply.tool_calls)
        completion = self._counter.count(written)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": 0},
        }

    # ------------------------------------------------------------------ embeddings

    async def embed(self, request: EmbeddingRequest) -> EmbeddingResponse:
        dimensions = request.dimensions or self._dimensions
        data = []
        for index, text in enumerate(request.texts):
            vector = deterministic_embedding(text, dimensions)
            encoded: list[float] | str = vector
            if request.encoding_format == "base64":
                encoded = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        tokens = sum(self._counter.count_many(request.texts))
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        return EmbeddingResponse.model_validate(
            {"object": "list", "data": data, "model": TEST_MODEL, "usage": usage}
        )


def _completion_id(request: ChatCompletionRequest) -> str:
    digest = hashlib.sha256(request.model_dump_json().encode()).hexdigest()[:24]
    return f"chatcmpl-test-{digest}"


def _finish(reply: ScriptedReply) -> str:
    return "tool_calls" if reply.tool_calls else "stop"


def _call_id(request: ChatCompletionRequest, index: int) -> str:
    return f"call_{_completion_id(request)[-12:]}_{index}"


def _tool_calls(request: ChatCompletionRequest, reply: ScriptedReply) -> list[dict[str, Any]]:
    return [
        {
            "id": _call_id(request, i),
            "type": "function",
            "function": {"name": c.name, "arguments": c.arguments},
        }
        for i, c in enumerate(reply.tool_calls)
    ]


def _deltas(request: ChatCompletionRequest, reply: ScriptedReply) -> list[tuple[dict[str, Any], str | None]]:
    """The stream as (delta, finish_reason) pairs: role, content word by word or tool calls, end."""
    deltas: list[tuple[dict[str, Any], str | None]] = [({"role": "assistant", "content": ""}, None)]
    for piece in _WORDS.findall(reply.text or ""):
        deltas.append(({"content": piece}, None))
    for index, call in enumerate(reply.tool_calls):
        opening = {
            "index": index,
            "id": _call_id(request, index),
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        deltas.append(({"tool_calls": [opening]}, None))
        for start in range(0, len(call.arguments), ARGUMENT_PIECE):
            piece = call.arguments[start : start + ARGUMENT_PIECE]
            deltas.append(({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}, None))
    deltas.append(({}, _finish(reply)))
    return deltas
