"""Relaying a provider's stream to the agent while keeping what the ledger needs."""

from __future__ import annotations

import json

from orchestrator.gateway.models import (
    AssistantMessage,
    ChatCompletion,
    ChatCompletionChunk,
    Choice,
    ChunkChoice,
    Delta,
    FunctionCall,
    FunctionDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)

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
        self.finish_reason: str | None = None
        self._written: list[str] = []
        self._content: list[str] = []
        self._calls: dict[int, ToolCall] = {}

    def see(self, chunk: ChatCompletionChunk) -> None:
        self.model = self.model or chunk.model
        self.last = chunk
        if chunk.usage is not None:
            self.usage = chunk.usage
        for choice in chunk.choices:
            self.finish_reason = choice.finish_reason or self.finish_reason
            if choice.delta.content:
                self._written.append(choice.delta.content)
                self._content.append(choice.delta.content)
            for call in choice.delta.tool_calls or []:
                self._see_call(call)

    def _see_call(self, part: ToolCallDelta) -> None:
        call = self._calls.setdefault(
            part.index, ToolCall(id="", type="function", function=FunctionCall(name="", arguments=""))
        )
        call.id = part.id or call.id
        if part.function is not None:
            call.function.name += part.function.name or ""
            call.function.arguments += part.function.arguments or ""
            self._written.append((part.function.name or "") + (part.function.arguments or ""))

    def completion(self, usage: Usage) -> ChatCompletion:
        """The whole answer as one completion (what a non-streamed call would have returned)."""
        calls = [self._calls[index] for index in sorted(self._calls)]
        message = AssistantMessage(
            role="assistant", content="".join(self._content) or None, tool_calls=calls or None
        )
        last = self.last
        return ChatCompletion(
            id=last.id if last else "",
            object="chat.completion",
            created=last.created if last else 0,
            model=self.model or "",
            choices=[Choice(index=0, message=message, finish_reason=self.finish_reason or "stop")],
            usage=usage,
        )

    @property
    def written(self) -> str:
        return "".join(self._written)

    @staticmethod
    def usage_only(chunk: ChatCompletionChunk) -> bool:
        """The closing usage chunk, which only agents that asked for it receive."""
        return not chunk.choices and chunk.usage is not None


def replayed_events(completion: ChatCompletion, wants_usage: bool) -> list[bytes]:
    """A settled completion as the stream that carried it: its text, its tool calls, the finish
    reason, the usage (when asked for) and the end."""
    head = {"id": completion.id, "created": completion.created, "model": completion.model}
    choice = completion.choices[0] if completion.choices else Choice(message=AssistantMessage())
    message = choice.message
    calls = [
        ToolCallDelta(
            index=number,
            id=call.id,
            type=call.type,
            function=FunctionDelta(name=call.function.name, arguments=call.function.arguments),
        )
        for number, call in enumerate(message.tool_calls or [])
    ]
    delta = Delta(role="assistant", content=message.content, tool_calls=calls or None)
    chunks = [
        ChatCompletionChunk(**head, choices=[ChunkChoice(index=0, delta=delta)]),
        ChatCompletionChunk(
            **head, choices=[ChunkChoice(index=0, delta=Delta(), finish_reason=choice.finish_reason)]
        ),
    ]
    if wants_usage and completion.usage is not None:
        chunks.append(ChatCompletionChunk(**head, choices=[], usage=completion.usage))
    return [*(chunk.sse() for chunk in chunks), DONE_EVENT]
