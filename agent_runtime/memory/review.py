"""The review job: flags entries the other jobs should act on, in the `review_items` table.

Flags (kind, target):
- contradicted (fact id): an active fact with a pending contradiction;
- stale (fact id): a fact that speaks of "today", "tomorrow", "next week"... and is older than
  `STALE_AFTER_DAYS`, or whose salience has faded to the floor without ever being used;
- unsupported (fact id): an extracted or inferred fact none of whose source turns is in the
  history any more (or that never had any);
- forgotten (key): a MEMORY.md line stating a forgotten fact;
- stale (key): a MEMORY.md line stating a superseded fact that no active fact repeats;
- duplicate (key): a MEMORY.md line that repeats an earlier one.
Keys are `text.content_key` digests. With a model, the model also reads MEMORY.md (with today's
date) and names the lines that are no longer true or repeat another (stale or duplicate, key);
an unusable answer leaves the heuristic flags alone. Consolidation drops flagged MEMORY.md
lines; extraction does not promote facts flagged stale or forgotten, and dates facts flagged
stale for their relative time. Each run re-checks the open flags and closes those that no
longer hold. The job writes nothing but `review_items`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import timedelta

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from agent_runtime.memory.jobs import Job, JobContext, JobPlan
from agent_runtime.memory.records import iso, load_ids, parse_time
from agent_runtime.memory.text import content_key, one_line
from agent_runtime.memory.turns import all_turn_ids
from agent_runtime.workspace.versioned import Workspace

STALE_AFTER_DAYS = 2
UNUSED_AFTER_DAYS = 30
RELATIVE_TIME = re.compile(
    r"\b(today|tonight|tomorrow|yesterday|this (?:morning|afternoon|evening|week|weekend|month)|"
    r"(?:next|last) (?:week|weekend|month|year)|right now|currently)\b",
    re.I,
)
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+\.)\s+(?:\[[ xX]\]\s+)?(?P<text>.+)$")
MAX_REVIEWED_LINES = 200

PROMPT = """You audit MEMORY.md, the long-term notes of an AI agent. Today is {today}.
Name the lines that are no longer true (an event that has passed, a state that has surely
changed: "stale") and the lines that repeat an earlier line ("duplicate"). Leave every other
line alone; when in doubt, leave it.

Answer with only a JSON array, possibly empty, of objects:
{{"line": <the line's number>, "kind": "stale" or "duplicate", "reason": "a few words"}}

Lines:
{lines}
"""


class ModelFlag(BaseModel):
    model_config = ConfigDict(extra="ignore")

    line: int
    kind: str
    reason: str = ""


_MODEL_FLAGS = TypeAdapter(list[ModelFlag])


@dataclass(frozen=True)
class Flag:
    kind: str
    target_kind: str
    target_ref: str
    detail: str


def memory_lines(text: str) -> list[str]:
    """The statements of MEMORY.md: bullet items and plain lines, without headings."""
    found = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _BULLET.match(line)
        found.append(match["text"].strip() if match else stripped)
    return found


class ReviewJob(Job):
    name = "review"
    artifact = "review_items in memory.db"

    def plan(self, ctx: JobContext) -> JobPlan:
        flags = self._fact_flags(ctx) + self._memory_file_flags(ctx)
        model, note = None, ""
        if ctx.complete is not None:
            found, note = self._model_flags(ctx)
            known = {(f.kind, f.target_kind, f.target_ref) for f in flags}
            flags += [f for f in found if (f.kind, f.target_kind, f.target_ref) not in known]
            model = ctx.model
        ctx.check()
        now = iso(ctx.now())

        def write() -> list[str]:
            return _store_flags(ctx, flags, now)

        return JobPlan(write=write, checkpoint={"at": now}, model=model, detail=f"{note}{len(flags)} flags")

    @staticmethod
    def _model_flags(ctx: JobContext) -> tuple[list[Flag], str]:
        """The model's stale and duplicate MEMORY.md lines; none (and a note) when its answer
        is unusable."""
        lines = memory_lines(Workspace(ctx.data_dir).read("MEMORY.md"))[:MAX_REVIEWED_LINES]
        if not lines:
            return [], ""
        numbered = "\n".join(f"{number}. {line}" for number, line in enumerate(lines, 1))
        answer = ctx.ask_model(PROMPT.format(today=ctx.now().date().isoformat(), lines=numbered))
        start, end = answer.find("["), answer.rfind("]")
        try:
            found = _MODEL_FLAGS.validate_python(json.loads(answer[start : end + 1]))
        except (json.JSONDecodeError, ValidationError):
            return [], "model answer unusable: heuristics only; "
        forgotten = ctx.store.forgotten_matcher()
        flags = []
        for item in found:
            if item.kind not in ("stale", "duplicate") or not 1 <= item.line <= len(lines):
                continue
            line = lines[item.line - 1]
            if forgotten.states_forgotten(line):
                continue  # flagged "forgotten" already, and never quoted
            detail = f"model: {one_line(item.reason, 80) or item.kind}: {one_line(line, 120)}"
            flags.append(Flag(item.kind, "key", content_key(line), detail))
        return flags, ""

    def _fact_flags(self, ctx: JobContext) -> list[Flag]:
        store = ctx.store
        now = ctx.now()
        flags = [
            Flag("contradicted", "fact", str(row[0]), f"fact {row[0]} is disputed by contradiction {row[1]}")
            for row in store.query(
                "SELECT k.fact_id, MIN(k.id) FROM contradictions k JOIN facts f ON f.id = k.fact_id "
                "WHERE k.status = 'pending' AND f.status = 'active' GROUP BY k.fact_id"
            )
        ]
        known_turns: set[str] | None = None
        rows = store.query(
            "SELECT id, text, source, turn_ids, created_at, salience, access_count FROM facts WHERE status = 'active'"
        )
        for row in rows:
            age = now - parse_time(row["created_at"])
            text = one_line(row["text"], 120)
            if RELATIVE_TIME.search(row["text"]) and age > timedelta(days=STALE_AFTER_DAYS):
                flags.append(Flag("stale", "fact", str(row["id"]), f"relative time in an old fact: {text}"))
            elif (
                row["salience"] <= store.config.salience_floor
                and row["access_count"] == 0
                and age > timedelta(days=UNUSED_AFTER_DAYS)
            ):
                flags.append(Flag("stale", "fact", str(row["id"]), f"faded and never used: {text}"))
            if row["source"] in ("extracted", "inferred"):
                turn_ids = load_ids(row["turn_ids"])
                if turn_ids and known_turns is None:
                    known_turns = all_turn_ids(ctx.history_dir)
                if not turn_ids or not (known_turns and known_turns.intersection(turn_ids)):
                    flags.append(
                        Flag("unsupported", "fact", str(row["id"]), f"no source turn in history: {text}")
                    )
            ctx.check()
        return flags

    def _memory_file_flags(self, ctx: JobContext) -> list[Flag]:
        lines = memory_lines(Workspace(ctx.data_dir).read("MEMORY.md"))
        if not lines:
            return []
        keys = {content_key(line): line for line in lines}
        placeholders = ", ".join("?" * len(keys))
        barred = {
            row[0]
            for row in ctx.store.query(
                f"SELECT content_key FROM barriers WHERE content_key IN ({placeholders})", tuple(keys)
            )
        }
        superseded = {
            row[0]
            for row in ctx.store.query(
                f"SELECT content_key FROM facts WHERE status = 'superseded' AND content_key IN ({placeholders}) "
                "AND content_key NOT IN (SELECT content_key FROM facts WHERE status = 'active')",
                tuple(keys),
            )
        }
        flags = []
        seen: set[str] = set()
        for line in lines:
            key = content_key(line)
            text = one_line(line, 120)
            if key in barred:
                # Not quoted: the flag must not keep what was forgotten.
                flags.append(Flag("forgotten", "key", key, "MEMORY.md states a forgotten fact"))
            elif key in superseded:
                flags.append(Flag("stale", "key", key, f"MEMORY.md states a replaced fact: {text}"))
            elif key in seen:
                flags.append(Flag("duplicate", "key", key, f"MEMORY.md repeats: {text}"))
            seen.add(key)
        return flags


def _store_flags(ctx: JobContext, flags: list[Flag], now: str) -> list[str]:
    """Open the new flags, close the open ones that no longer hold."""
    changes = []
    current = {(f.kind, f.target_kind, f.target_ref): f for f in flags}
    with ctx.store.transaction() as conn:
        open_rows = conn.execute(
            "SELECT id, kind, target_kind, target_ref FROM review_items WHERE status = 'open'"
        ).fetchall()
        still_open = set()
        for row in open_rows:
            identity = (row["kind"], row["target_kind"], row["target_ref"])
            if identity in current:
                still_open.add(identity)
                continue
            conn.execute(
                "UPDATE review_items SET status = 'closed', closed_at = ? WHERE id = ?", (now, row["id"])
            )
            changes.append(f"closed {row['kind']} flag {row['id']}")
        for identity, flag in current.items():
            if identity in still_open:
                continue
            cursor = conn.execute(
                "INSERT INTO review_items(kind, target_kind, target_ref, detail, created_at) VALUES (?, ?, ?, ?, ?)",
                (flag.kind, flag.target_kind, flag.target_ref, flag.detail, now),
            )
            changes.append(
                f"flagged {flag.kind} {flag.target_kind} {flag.target_ref} (item {cursor.lastrowid})"
            )
    return changes
