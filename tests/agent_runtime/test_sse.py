"""The one server-sent events decoder: fields, comments, multi-line data, an unterminated last event."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from agent_runtime import SseEvent, aiter_sse, iter_sse

STREAM = [
    ": a comment",
    "event: progress",
    "data: one",
    "data: two",
    "",
    "",
    "id: 7",
    "retry: 100",
    'data: {"x": 1}',
    "",
    "data:no space",
    "event: result",
]


def test_events_are_split_at_blank_lines_and_the_last_one_is_kept() -> None:
    assert list(iter_sse(STREAM)) == [
        SseEvent("progress", "one\ntwo"),
        SseEvent("message", '{"x": 1}'),
        SseEvent("result", "no space"),
    ]


def test_async_lines_give_the_same_events() -> None:
    async def lines() -> AsyncIterator[str]:
        for line in STREAM:
            yield line

    async def collect() -> list[SseEvent]:
        return [event async for event in aiter_sse(lines())]

    assert asyncio.run(collect()) == list(iter_sse(STREAM))


def test_line_endings_and_empty_event_names() -> None:
    assert list(iter_sse(["event:\r", "data: a\r\n", "\r\n"])) == [SseEvent("message", "a")]
