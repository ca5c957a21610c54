"""A reader of the agent's turn log for the maintenance jobs.

Format: `<data>/history/*.jsonl` (one file per day, `YYYY-MM-DD.jsonl`, sorted by name), one
JSON object per line with at least

    {"id": "t17f3...", "at": "2025-05-01T09:30:00.000Z", "role": "user", "content": "..."}

`role` is one of system, user, assistant, tool; other keys (tool_calls, name, item_id) are
ignored here. Lines are only ever appended. A reader's position is (file name, byte offset):
everything before it was read. A line without its final newline is still being written, so
the reader stops before it; a complete line that is not a valid turn is skipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

# The runtime's header on a heartbeat's prompt (`work.prompt`): "[2026-03-02 12:00:00 UTC · heartbeat]".
HEARTBEAT_HEADER = re.compile(r"^\[[^\]\n]*· heartbeat\]")


class Turn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str
    at: str
    role: str
    content: str = ""


@dataclass(frozen=True)
class Position:
    file: str = ""
    offset: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "offset": self.offset}

    @classmethod
    def from_json(cls, raw: object) -> Position:
        if isinstance(raw, dict) and isinstance(raw.get("file"), str) and isinstance(raw.get("offset"), int):
            return cls(raw["file"], raw["offset"])
        return cls()

    def __str__(self) -> str:
        return f"{self.file}@{self.offset}" if self.file else "start"


def _files(history_dir: Path, after: Position) -> list[Path]:
    if not history_dir.is_dir():
        return []
    return [p for p in sorted(history_dir.glob("*.jsonl")) if p.name >= after.file]


def _parse(line: bytes) -> Turn | None:
    try:
        raw = json.loads(line)
        if isinstance(raw, dict) and raw.get("content") is None:
            raw["content"] = ""
        return Turn.model_validate(raw)
    except (ValueError, ValidationError):
        return None


def iter_turns(history_dir: Path, after: Position | None = None) -> Iterator[tuple[Turn, Position]]:
    """Turns after `after`, each with the position just past it."""
    start = after or Position()
    for path in _files(history_dir, start):
        offset = start.offset if path.name == start.file else 0
        with path.open("rb") as handle:
            handle.seek(offset)
            for line in handle:
                if not line.endswith(b"\n"):
                    return
                offset += len(line)
                turn = _parse(line)
                if turn is not None:
                    yield turn, Position(path.name, offset)


def read_turns(history_dir: Path, after: Position | None, limit: int) -> list[tuple[Turn, Position]]:
    found: list[tuple[Turn, Position]] = []
    for item in iter_turns(history_dir, after):
        found.append(item)
        if len(found) >= limit:
            break
    return found


def starts_exchange(turn: Turn) -> bool:
    """True for a person's or a peer's message: it opens an exchange (the message, the answer
    and its tool calls), which is what the jobs' turn thresholds count. A heartbeat's prompt
    opens none: ticks are counted by the schedule, not as turns."""
    return opens_exchange(turn.role, turn.content)


def opens_exchange(role: str, content: str) -> bool:
    return role == "user" and not HEARTBEAT_HEADER.match(content.lstrip())


def count_exchanges(history_dir: Path, after: Position | None, limit: int | None = None) -> int:
    """Exchanges opened after `after` (counting stops at `limit`)."""
    count = 0
    for turn, _ in iter_turns(history_dir, after):
        if starts_exchange(turn):
            count += 1
            if limit is not None and count >= limit:
                break
    return count


def count_turns(history_dir: Path, after: Position | None) -> int:
    return sum(1 for _ in iter_turns(history_dir, after))


def end_position(history_dir: Path) -> Position:
    """The position after the last complete turn."""
    last = Position()
    for _, position in iter_turns(history_dir):
        last = position
    return last


def all_turn_ids(history_dir: Path) -> set[str]:
    return {turn.id for turn, _ in iter_turns(history_dir)}
