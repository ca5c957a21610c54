"""Relaying a provider's stream to the agent while keeping what the ledger needs."""

from __future__ import annotations

import json

from orchestrator.gateway.models import ChatCompletionChunk, Usage

DONE_EVENT = b"data: [DONE]\n\n"


def error_event(code: str, message: str) -> bytes:
    """An error reported inside an already started stream (OpenAI SDKs raise on it)."""
    body = {"error": {"message": message, "type": code, "code": code}}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


class StreamTracker:
    """Follows the chunks of one stream: the provider's usage if it reports one, else the text."""

    def __init__(self) -> None:
        self.usage: Usage | None = None
        self.model: str | None = None
        self.last: ChatCompletionChunk | None = None
        self._written: list[str] = []

    def see(self, chunk: ChatCompletionChunk) -> None:
        self.model = self.model or chunk.model
        self.last = chunk
        if chunk.usage is not None:
            self.usage = chunk.usage
        for choice in chunk.choices:
            if choice.delta.content:
                self._written.append(choice.delta.content)
            for call in choice.delta.tool_calls or []:
                if call.function is not None:
                    self._written.append((call.function.name or "") + (call.function.arguments or ""))

    @property
    def written(self) -> str:
        return "".join(self._written)

    @staticmethod
    def usage_only(chunk: ChatCompletionChunk) -> bool:
        """The closing usage chunk, which only agents that asked for it receive."""
        return not chunk.choices and chunk.usage is not None
