"""Reading server-sent events: the one decoder both sides of the agent boundary use (the agent's
model stream, the gateway's upstream streams, the CLI's event and reply streams).

It takes decoded lines, as every HTTP client here yields them, and follows the event-stream
format: `event:` names the event, `data:` lines are joined with newlines, a blank line dispatches,
a line starting with `:` is a comment, and `id:`/`retry:` and unknown fields are ignored. An
event still open when the stream ends is dispatched too (some servers close without the last
blank line).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from dataclasses import dataclass

DEFAULT_EVENT = "message"


@dataclass(frozen=True)
class SseEvent:
    event: str
    data: str


class SseDecoder:
    """Turns lines into events; `feed` returns an event when a line completes one."""

    def __init__(self) -> None:
        self._event = DEFAULT_EVENT
        self._data: list[str] = []

    def feed(self, line: str) -> SseEvent | None:
        line = line.removesuffix("\n").removesuffix("\r")
        if not line:
            return self.flush()
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            self._event = value or DEFAULT_EVENT
        elif field == "data":
            self._data.append(value)
        return None

    def flush(self) -> SseEvent | None:
        """The event gathered so far, if it has data; the decoder starts a new one either way."""
        event = SseEvent(self._event, "\n".join(self._data)) if self._data else None
        self._event, self._data = DEFAULT_EVENT, []
        return event


def iter_sse(lines: Iterable[str]) -> Iterator[SseEvent]:
    decoder = SseDecoder()
    for line in lines:
        event = decoder.feed(line)
        if event is not None:
            yield event
    last = decoder.flush()
    if last is not None:
        yield last


async def aiter_sse(lines: AsyncIterable[str]) -> AsyncIterator[SseEvent]:
    decoder = SseDecoder()
    async for line in lines:
        event = decoder.feed(line)
        if event is not None:
            yield event
    last = decoder.flush()
    if last is not None:
        yield last
