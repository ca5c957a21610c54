"""The `rotation` maintenance job: the turn log (`history/YYYY-MM-DD.jsonl`) stays bounded.

By a fixed rule, once a day:
- a day older than `compact_after_days` (7) is compacted once: each tool result longer than
  `TOOL_OUTPUT_KEPT` characters keeps its beginning and says how much was cut (tool outputs are
  most of the log's bytes, and the answer that used them is kept whole);
- a day older than `keep_days` (30) becomes an episode in the store (the day's requests and
  answers, condensed; searchable with the compaction summaries by `memory_search`) and its file
  is deleted.
A day is touched only when every job that reads the log has read past it (their checkpoints
name a later file), so no job loses input; a job that never ran holds everything back.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from agent_runtime.memory.jobs import Job, JobContext, JobPlan, JobSchedule, nothing_to_write
from agent_runtime.memory.store import MemoryStore
from agent_runtime.memory.turns import Position, opens_exchange
from agent_runtime.workspace.versioned import atomic_write_bytes

TOOL_OUTPUT_KEPT = 400
EPISODE_CHARS = 6000
LINE_CHARS = 160
# The jobs whose checkpoints hold a position in the log (their own, and the checkpoint strategy's).
COGNITION_CHECKPOINTS = ("review", "consolidation", "extraction")


@dataclass(frozen=True)
class RotationRule:
    compact_after_days: int = 7
    keep_days: int = 30


def _day_of(path: Path) -> date | None:
    try:
        return date.fromisoformat(path.stem)
    except ValueError:
        return None


def read_positions(store: MemoryStore, data_dir: Path) -> list[Position]:
    """Where every reader of the log stands: the maintenance jobs' checkpoints in the store and
    the checkpoint strategy's files. A reader with no checkpoint yet stands at the start."""
    positions = []
    for (raw,) in store.query("SELECT value FROM job_checkpoints"):
        value = json.loads(raw)
        for key in ("turns", "position"):
            if isinstance(value, dict) and key in value:
                positions.append(Position.from_json(value[key]))
    folder = data_dir / "cognition" / "checkpoints"
    if (data_dir / "cognition").is_dir():
        for job in COGNITION_CHECKPOINTS:
            try:
                value = json.loads((folder / f"{job}.json").read_text(encoding="utf-8"))
            except (FileNotFoundError, json.JSONDecodeError):
                positions.append(Position())
                continue
            positions.append(Position.from_json(value.get("position") if isinstance(value, dict) else None))
    return positions


def _compacted(lines: list[str]) -> tuple[list[str], int]:
    cut = 0
    out = []
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            out.append(line)
            continue
        content = record.get("content")
        if record.get("role") != "tool" or not isinstance(content, str) or len(content) <= TOOL_OUTPUT_KEPT:
            out.append(line)
            continue
        left = len(content) - TOOL_OUTPUT_KEPT
        record["content"] = f"{content[:TOOL_OUTPUT_KEPT]}\n[... {left} chars cut by rotation]"
        cut += 1
        out.append(json.dumps(record, ensure_ascii=False) + "\n")
    return out, cut


def _one_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if lines and lines[0].startswith("[") and lines[0].endswith("]"):
        lines = lines[1:]  # the runtime's header on an incoming message
    lines = [line for line in lines if not line.startswith("[runtime:")]
    joined = " ".join(lines)
    return joined if len(joined) <= LINE_CHARS else joined[: LINE_CHARS - 1] + "…"


def day_episode(day: date, records: list[dict[str, Any]]) -> str:
    """What a day of the log said, condensed: each exchange's request and final answer."""
    parts: list[str] = []
    pending: str | None = None
    exchanges = 0
    for record in records:
        role, content = str(record.get("role", "")), str(record.get("content") or "")
        if opens_exchange(role, content):
            exchanges += 1
            pending = _one_line(content)
        elif role == "assistant" and content.strip() and not record.get("tool_calls") and pending is not None:
            parts.append(f"Asked: {pending} Answered: {_one_line(content)}")
            pending = None
    head = f"History of {day.isoformat()} ({exchanges} exchanges, {len(records)} log lines)."
    body = " ".join(parts)
    text = f"{head} {body}".strip()
    return text if len(text) <= EPISODE_CHARS else text[: EPISODE_CHARS - 1] + "…"


class RotationJob(Job):
    name = "rotation"
    artifact = "history/*.jsonl (compacted, then turned into episodes)"

    def __init__(self, schedule: JobSchedule, rule: RotationRule | None = None) -> None:
        super().__init__(schedule)
        self.rule = rule or RotationRule()

    def plan(self, ctx: JobContext) -> JobPlan:
        today = ctx.now().date()
        positions = read_positions(ctx.store, ctx.data_dir)
        oldest_read = min((position.file for position in positions), default="")
        compacted = set(ctx.checkpoint.get("compacted", []))
        files = sorted(ctx.history_dir.glob("*.jsonl")) if ctx.history_dir.is_dir() else []
        # Only days every reader has read past (a later file), and never today's.
        done = [p for p in files if p.name < oldest_read and (d := _day_of(p)) is not None and d < today]
        to_prune = [p for p in done if (d := _day_of(p)) and d < today - timedelta(days=self.rule.keep_days)]
        to_compact = [
            p
            for p in done
            if p not in to_prune
            and p.stem not in compacted
            and (d := _day_of(p))
            and d < today - timedelta(days=self.rule.compact_after_days)
        ]
        if not (to_prune or to_compact):
            return JobPlan(
                write=nothing_to_write, checkpoint=dict(ctx.checkpoint), detail="nothing to rotate"
            )
        keep = sorted((compacted | {p.stem for p in to_compact}) - {p.stem for p in to_prune})

        def write() -> list[str]:
            changes = []
            for path in to_compact:
                lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
                out, cut = _compacted(lines)
                if cut:
                    atomic_write_bytes(path, "".join(out).encode("utf-8"))
                changes.append(f"{path.name}: {cut} tool outputs cut")
            for path in to_prune:
                day = _day_of(path)
                assert day is not None
                records = [
                    json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
                ]
                turn_ids = [str(r.get("id")) for r in records if r.get("id")]
                if records:
                    ctx.store.add_episode(
                        str(records[0].get("at", day.isoformat())),
                        str(records[-1].get("at", day.isoformat())),
                        turn_ids,
                        day_episode(day, records),
                        embed=False,
                    )
                os.unlink(path)
                changes.append(f"{path.name}: {len(records)} lines kept as an episode, file removed")
            return changes

        return JobPlan(
            write=write,
            checkpoint={**ctx.checkpoint, "compacted": keep[-self.rule.keep_days :]},
            detail=f"{len(to_compact)} days compacted, {len(to_prune)} days turned into episodes",
        )
