"""The append-only turn log: `<data>/history/YYYY-MM-DD.jsonl`, one JSON object per message.

Each line holds at least `id`, `at`, `role` and `content`, plus `tool_calls`, `tool_call_id`,
`name` (the tool's name on tool results) and `item_id` when they apply. Lines are only ever
appended: compaction and pruning change what the model sees, never this log, which is what
memory extraction and audits read. A turn is redacted (`agent_runtime.safety.redaction`) before it is
written: no credential reaches the log verbatim.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from agent_runtime.process.disk_space import is_disk_full
from agent_runtime.safety.redaction import redact

Role = Literal["system", "user", "assistant", "tool"]


PEOPLE_FOLDER = "people"
"""Under `history/`: a folder per paired person's own conversation, a turn log of its own."""


def new_turn_id() -> str:
    """Sortable by creation time, unique across restarts."""
    return f"t{time.time_ns():x}{secrets.token_hex(3)}"


def _days_of(turn_id: str) -> set[str | None]:
    """The log files that may hold a turn: the day its id was made, and the day after (a turn
    stamped a hair before midnight can be filed after it). None when the id is not ours."""
    if not turn_id.startswith("t"):
        return {None}
    try:
        seconds = int(turn_id[1:17], 16) / 1e9
    except ValueError:
        return {None}
    made = datetime.fromtimestamp(seconds, UTC)
    return {f"{made:%Y-%m-%d}", f"{made + timedelta(days=1):%Y-%m-%d}"}


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Turn:
    role: Role
    content: str
    id: str = field(default_factory=new_turn_id)
    at: str = field(default_factory=now_iso)
    tool_calls: tuple[dict[str, Any], ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    item_id: str | None = None

    def to_openai(self) -> dict[str, Any]:
        """The message as the chat completions API takes it."""
        message: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [dict(call) for call in self.tool_calls]
        if self.tool_call_id is not None:
            message["tool_call_id"] = self.tool_call_id
        return message

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {"id": self.id, "at": self.at, "role": self.role, "content": self.content}
        if self.tool_calls:
            record["tool_calls"] = [dict(call) for call in self.tool_calls]
        if self.tool_call_id is not None:
            record["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            record["name"] = self.name
        if self.item_id is not None:
            record["item_id"] = self.item_id
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Turn:
        return cls(
            role=record["role"],
            content=record.get("content") or "",
            id=record["id"],
            at=record["at"],
            tool_calls=tuple(record.get("tool_calls") or ()),
            tool_call_id=record.get("tool_call_id"),
            name=record.get("name"),
            item_id=record.get("item_id"),
        )

    def text_for_counting(self) -> str:
        """What the model reads of this message, for token counting."""
        if not self.tool_calls:
            return self.content
        calls = json.dumps([dict(call) for call in self.tool_calls], separators=(",", ":"), sort_keys=True)
        return f"{self.content}\n{calls}"


def _redact_value(value: Any) -> tuple[Any, bool]:
    """A decoded JSON value with every string in it redacted, and whether anything changed."""
    if isinstance(value, str):
        cleaned = redact(value)
        return cleaned.text, cleaned.changed
    if isinstance(value, list):
        items = [_redact_value(item) for item in value]
        return [item for item, _ in items], any(changed for _, changed in items)
    if isinstance(value, dict):
        pairs = {key: _redact_value(item) for key, item in value.items()}
        return {key: item for key, (item, _) in pairs.items()}, any(c for _, c in pairs.values())
    return value, False


def _redact_arguments(arguments: str) -> tuple[str, bool]:
    """Tool-call arguments redacted value by value, so they stay valid JSON."""
    try:
        decoded = json.loads(arguments)
    except json.JSONDecodeError:
        cleaned = redact(arguments)
        return cleaned.text, cleaned.changed
    value, changed = _redact_value(decoded)
    return (json.dumps(value, ensure_ascii=False), True) if changed else (arguments, False)


def redact_turn(turn: Turn) -> Turn:
    """The turn with credential-shaped text replaced by markers, in its content and in the
    arguments of its tool calls (the same object when there was nothing to redact)."""
    content = redact(turn.content)
    calls = []
    changed = content.changed
    for call in turn.tool_calls:
        function = call.get("function")
        arguments = function.get("arguments") if isinstance(function, dict) else None
        cleaned, redacted = _redact_arguments(arguments) if isinstance(arguments, str) else ("", False)
        if isinstance(function, dict) and redacted:
            calls.append({**call, "function": {**function, "arguments": cleaned}})
            changed = True
        else:
            calls.append(call)
    if not changed:
        return turn
    return replace(turn, content=content.text, tool_calls=tuple(calls))


class HistoryLog:
    """Appends turns to the day's file; each line is written with one `write` and fsynced."""

    def __init__(
        self,
        data_dir: Path,
        on_full: Callable[[str, OSError], None] | None = None,
        root: Path | None = None,
        make_room: Callable[[int], bool] | None = None,
    ) -> None:
        """`on_full`: told when a turn could not be written for want of space; the turn is then
        kept in the context only (the answer still goes out). Without it the error is raised.
        `root`: the folder of the log (default `history/`, the agent's main conversation).
        `make_room`: asked for the bytes of a turn the full disk refused (the agent's space
        reserve); when it frees them, the turn is written once more."""
        self.root = root or data_dir / "history"
        self._lock = threading.Lock()
        self.on_full = on_full
        self.make_room = make_room

    def path_for(self, at: str) -> Path:
        return self.root / f"{at[:10]}.jsonl"

    def append(self, turn: Turn) -> Turn:
        """Write the turn, redacted; returns the turn as written."""
        turn = redact_turn(turn)
        line = (json.dumps(turn.to_record(), ensure_ascii=False) + "\n").encode("utf-8")
        try:
            self._write(turn.at, line)
        except OSError as failed:
            if self.on_full is None or not is_disk_full(failed):
                raise
            if not self._written_in_room(turn.at, line):
                self.on_full("a turn of the history log", failed)
        return turn

    def _written_in_room(self, at: str, line: bytes) -> bool:
        """The line written in the room `make_room` frees; False when it frees none or the
        disk is still full."""
        if self.make_room is None or not self.make_room(len(line)):
            return False
        try:
            self._write(at, line)
        except OSError as failed:
            if not is_disk_full(failed):
                raise
            return False
        return True

    def _write(self, at: str, line: bytes) -> None:
        with self._lock:
            self.root.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path_for(at), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                start = os.fstat(fd).st_size
                try:
                    os.write(fd, line)
                    os.fsync(fd)
                except OSError:
                    # A torn line would join the next one; shrinking needs no space.
                    os.ftruncate(fd, start)
                    raise
            finally:
                os.close(fd)

    def append_all(self, turns: Iterable[Turn]) -> None:
        for turn in turns:
            self.append(turn)

    def iter_turns(self) -> Iterator[Turn]:
        """Every turn on disk, oldest day first; a torn last line is skipped."""
        for path in sorted(self.root.glob("*.jsonl")):
            yield from self._read(path)

    def load(self, ids: Iterable[str]) -> list[Turn]:
        """The turns with these ids, in log order; only the days their ids point to are read."""
        wanted = set(ids)
        days = {day for turn_id in wanted for day in _days_of(turn_id)}
        if None in days:
            paths = sorted(self.root.glob("*.jsonl"))
        else:
            paths = [self.root / f"{day}.jsonl" for day in sorted(d for d in days if d)]
        found = []
        for path in paths:
            for turn in self._read(path):
                if turn.id in wanted:
                    found.append(turn)
        return found

    @staticmethod
    def _read(path: Path) -> Iterator[Turn]:
        try:
            lines = path.open(encoding="utf-8")
        except FileNotFoundError:
            return
        with lines:
            for line in lines:
                try:
                    yield Turn.from_record(json.loads(line))
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue
