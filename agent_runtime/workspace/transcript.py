"""The agent's turn log as the operator reads it: the last turns, or what came after an id.

The log (`history.HistoryLog`) is in the agent's own storage; the orchestrator asks for it over
the channel (`AgentOp.HISTORY_READ`) and the agent answers with these models. A turn is the
messages of one inbox item (the operator's message or a peer's ask, the model's replies, its
tool calls and their results). Long texts are cut so that one answer stays well inside a
channel frame; a cut text says so.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent_runtime.protocol import (
    ToolCallView,
    TranscriptMessage,
    TranscriptPage,
    TranscriptQuery,
)
from agent_runtime.workspace.history import HistoryLog

MAX_TEXT = 8_000
MAX_PAGE_CHARS = 2_000_000


def _cut(text: str) -> tuple[str, bool]:
    return (text, False) if len(text) <= MAX_TEXT else (text[:MAX_TEXT], True)


def _call_view(call: dict[str, Any]) -> ToolCallView:
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    arguments = function.get("arguments", "") if isinstance(function, dict) else ""
    text, cut = _cut(arguments if isinstance(arguments, str) else json.dumps(arguments))
    name = function.get("name", "") if isinstance(function, dict) else ""
    return ToolCallView(id=str(call.get("id", "")), name=str(name), arguments=text, truncated=cut)


def _message(record: dict[str, Any]) -> TranscriptMessage:
    content, cut = _cut(str(record.get("content") or ""))
    return TranscriptMessage(
        id=str(record["id"]),
        at=str(record["at"]),
        role=record["role"],
        content=content,
        truncated=cut,
        tool_calls=[_call_view(c) for c in record.get("tool_calls") or () if isinstance(c, dict)],
        tool_call_id=record.get("tool_call_id"),
        name=record.get("name"),
        item_id=record.get("item_id"),
    )


def _records(path: Path) -> list[dict[str, Any]]:
    found = []
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return []
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a torn last line
        if isinstance(record, dict) and {"id", "at", "role"} <= record.keys():
            found.append(record)
    return found


def _newest_first(log: HistoryLog) -> Iterator[dict[str, Any]]:
    for path in sorted(log.root.glob("*.jsonl"), reverse=True):
        yield from reversed(_records(path))


def _size(message: TranscriptMessage) -> int:
    return len(message.content) + sum(len(call.arguments) for call in message.tool_calls) + 200


def read_transcript(log: HistoryLog, query: TranscriptQuery) -> TranscriptPage:
    """The last `turns` turns, or (with `after`) every message after that id, oldest first."""
    if query.item_id is not None:
        return _of_item(log, query.item_id)
    if query.after is not None:
        return _after(log, query.after)
    picked: list[TranscriptMessage] = []
    items: list[str | None] = []
    budget, earlier = MAX_PAGE_CHARS, False
    for record in _newest_first(log):
        message = _message(record)
        if not items or message.item_id != items[-1]:
            if len(items) == query.turns:
                earlier = True
                break
            items.append(message.item_id)
        budget -= _size(message)
        if budget < 0:
            earlier = True
            break
        picked.append(message)
    picked.reverse()
    return TranscriptPage(messages=picked, last_id=picked[-1].id if picked else None, earlier=earlier)


def _first_day(after: str) -> str:
    """The day file the id was logged in at the earliest ('' when the id is not one of ours)."""
    try:
        made = datetime.fromtimestamp(int(after[1:17], 16) / 1e9, UTC)
    except ValueError:
        return ""
    return f"{made:%Y-%m-%d}"


def _after(log: HistoryLog, after: str) -> TranscriptPage:
    """Messages logged after `after` (ids sort by the time they were made), oldest first."""
    picked: list[TranscriptMessage] = []
    budget, first_day = MAX_PAGE_CHARS, _first_day(after)
    for path in sorted(log.root.glob("*.jsonl")):
        if path.stem < first_day:
            continue
        for record in _records(path):
            if str(record["id"]) <= after:
                continue
            message = _message(record)
            budget -= _size(message)
            if budget < 0:
                return TranscriptPage(messages=picked, last_id=picked[-1].id if picked else after)
            picked.append(message)
    return TranscriptPage(messages=picked, last_id=picked[-1].id if picked else after)


def serve_transcript(data_dir: Path, body: dict[str, Any]) -> dict[str, Any]:
    """The answer to `history.read`: the page as JSON (bad input raises ValueError)."""
    page = read_transcript(HistoryLog(data_dir), TranscriptQuery.model_validate(body))
    return page.model_dump(mode="json")


ITEM_DAYS_SEARCHED = 3


def _of_item(log: HistoryLog, item_id: str) -> TranscriptPage:
    """The messages of one item, from the newest days back (an item's turn spans a day or two)."""
    picked: list[TranscriptMessage] = []
    budget = MAX_PAGE_CHARS
    for path in sorted(log.root.glob("*.jsonl"), reverse=True)[:ITEM_DAYS_SEARCHED]:
        found = [_message(r) for r in _records(path) if r.get("item_id") == item_id]
        for message in reversed(found):
            budget -= _size(message)
            if budget < 0:
                break
            picked.append(message)
        if picked and not found:
            break
    picked.reverse()
    return TranscriptPage(messages=picked, last_id=picked[-1].id if picked else None)
