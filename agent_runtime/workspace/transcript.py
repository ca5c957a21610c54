"""The agent's turn log as the operator reads it: the last turns, or what came after an id.

The log (`history.HistoryLog`) is in the agent's own storage; the orchestrator asks for it over
the channel (`AgentOp.HISTORY_READ`) and the agent answers with these models. A turn is the
messages of one inbox item (the operator's message or a peer's ask, the model's replies, its
tool calls and their results). Long texts are cut so that one answer stays well inside a
channel frame; a cut text says so.

The operator reads every conversation: the main one and each paired person's own
(`history/people/<key>/`), merged day by day in the order their turns were made.
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
from agent_runtime.workspace.history import PEOPLE_FOLDER, HistoryLog

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


def _days(log: HistoryLog) -> list[tuple[str, list[Path]]]:
    """The day files of every conversation, by day, oldest day first."""
    people = log.root / PEOPLE_FOLDER
    folders = [log.root, *(sorted(p for p in people.iterdir() if p.is_dir()) if people.is_dir() else [])]
    days: dict[str, list[Path]] = {}
    for folder in folders:
        for path in folder.glob("*.jsonl"):
            days.setdefault(path.stem, []).append(path)
    return sorted(days.items())


def _day_records(paths: list[Path]) -> list[dict[str, Any]]:
    """One day's turns of every conversation, in the order they were made (ids sort by time)."""
    records = [record for path in paths for record in _records(path)]
    if len(paths) > 1:
        records.sort(key=lambda record: str(record["id"]))
    return records


def _newest_first(log: HistoryLog) -> Iterator[dict[str, Any]]:
    for _day, paths in reversed(_days(log)):
        yield from reversed(_day_records(paths))


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
    for day, paths in _days(log):
        if day < first_day:
            continue
        for record in _day_records(paths):
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
    for _day, paths in list(reversed(_days(log)))[:ITEM_DAYS_SEARCHED]:
        found = [_message(r) for r in _day_records(paths) if r.get("item_id") == item_id]
        for message in reversed(found):
            budget -= _size(message)
            if budget < 0:
                break
            picked.append(message)
        if picked and not found:
            break
    picked.reverse()
    return TranscriptPage(messages=picked, last_id=picked[-1].id if picked else None)
