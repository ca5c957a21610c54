"""The consolidation job: keeps MEMORY.md tidy and under its cap.

It removes resolved items (`- [x] ...`, "(done)", "(resolved)", struck-through lines), lines
the review job flagged (forgotten, replaced or duplicate facts), merges repeated items, and
turns relative dates into absolute ones ("tomorrow" -> "2025-05-02"), dated from the version
of MEMORY.md in which the line first appeared. With a model, the model rewrites the file under
the same rules and the deterministic pass then runs over its answer, so the guarantees hold
either way; an unusable answer (empty, or over the cap) falls back to the deterministic pass.

If the file is still over its cap, the oldest items of the "## Extracted facts" section leave
it, but only those the memory store holds as active facts. MEMORY.md is written through the
workspace's versioned write path (author "job"), and only if nobody changed it meanwhile.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from agent_runtime.memory.jobs import Job, JobContext, JobFailed, JobPlan, nothing_to_write
from agent_runtime.memory.records import iso
from agent_runtime.memory.review import RELATIVE_TIME
from agent_runtime.memory.text import content_key
from agent_runtime.workspace.versioned import CAPS, Workspace, WorkspaceError

MEMORY_FILE = "MEMORY.md"
EXTRACTED_SECTION = "## Extracted facts"
MAX_VERSIONS_SCANNED = 50
DROP_KINDS = ("forgotten", "stale", "duplicate")

_BULLET = re.compile(r"^\s*(?:[-*+]|\d+\.)\s+(?P<text>.+)$")
_RESOLVED = re.compile(
    r"^\s*(?:[-*+]|\d+\.)\s+(?:\[[xX]\]|~~.+~~\s*$)|\((?:done|resolved|fixed|completed)\)|✅|^\s*(?:[-*+]\s+)?(?:DONE|RESOLVED):",
    re.I,
)

PROMPT = """You maintain MEMORY.md, the long-term notes of an AI agent. Today is {today}.
Rewrite the file below:
- remove items that are resolved, done or no longer true;
- merge items that repeat each other into one;
- replace relative dates ("today", "tomorrow", "last week") by absolute dates;
- keep every other item and every heading (in particular "{section}"), in markdown;
- stay under {cap} bytes.
{drop}
Answer with the new content of MEMORY.md only.

<<<MEMORY.md
{content}
MEMORY.md>>>
"""


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _relative_table(written: date) -> dict[str, str]:
    monday = _monday(written)
    first = written.replace(day=1)
    return {
        "today": written.isoformat(),
        "tonight": written.isoformat(),
        "this morning": written.isoformat(),
        "this afternoon": written.isoformat(),
        "this evening": written.isoformat(),
        "tomorrow": (written + timedelta(days=1)).isoformat(),
        "yesterday": (written - timedelta(days=1)).isoformat(),
        "this week": f"the week of {monday.isoformat()}",
        "next week": f"the week of {(monday + timedelta(days=7)).isoformat()}",
        "last week": f"the week of {(monday - timedelta(days=7)).isoformat()}",
        "this weekend": f"the weekend of {(monday + timedelta(days=5)).isoformat()}",
        "next weekend": f"the weekend of {(monday + timedelta(days=12)).isoformat()}",
        "last weekend": f"the weekend of {(monday - timedelta(days=2)).isoformat()}",
        "this month": f"{written:%Y-%m}",
        "next month": f"{(first + timedelta(days=32)):%Y-%m}",
        "last month": f"{(first - timedelta(days=1)):%Y-%m}",
        "next year": str(written.year + 1),
        "last year": str(written.year - 1),
    }


def absolute_dates(line: str, written: date) -> str:
    """Replace relative time words in a line written on `written` by dates.

    "right now" and "currently" stay: they describe a state, not a date.
    """
    table = _relative_table(written)
    return RELATIVE_TIME.sub(
        lambda match: table.get(" ".join(match.group(0).lower().split()), match.group(0)), line
    )


@dataclass
class Consolidated:
    text: str
    changes: list[str] = field(default_factory=list)


def consolidate(
    text: str,
    drop_keys: set[str],
    written_on: Callable[[str], date],
    cap: int,
    stored_keys: set[str],
    forgotten: Callable[[str], bool] | None = None,
) -> Consolidated:
    """The deterministic pass (see the module docstring). `forgotten` tells lines that state a
    forgotten fact in other words than its own."""
    out: list[str] = []
    changes: list[str] = []
    seen: set[str] = set()
    for original in text.splitlines():
        line = original
        bullet = _BULLET.match(line)
        if bullet is not None or (line.strip() and not line.startswith("#")):
            statement = _statement(line)
            key = content_key(statement)
            if _RESOLVED.search(line):
                changes.append(f"removed resolved: {statement[:80]}")
                continue
            if forgotten is not None and forgotten(statement):
                # Not quoted: the run record must not keep what was forgotten.
                changes.append("removed a line stating a forgotten fact")
                continue
            if key in drop_keys:
                changes.append(f"removed flagged: {statement[:80]}")
                continue
            if bullet is not None and key in seen:
                changes.append(f"merged duplicate: {statement[:80]}")
                continue
            seen.add(key)
            if RELATIVE_TIME.search(line):
                fixed = absolute_dates(line, written_on(line))
                if fixed != line:
                    changes.append(f"dated: {fixed.strip()[:80]}")
                    line = fixed
        if not line.strip() and out and not out[-1].strip():
            continue
        out.append(line)
    result = "\n".join(out).strip("\n") + "\n" if any(line.strip() for line in out) else ""
    return _fit(result, cap, stored_keys, changes)


def _statement(line: str) -> str:
    bullet = _BULLET.match(line)
    return bullet["text"].strip() if bullet else line.strip()


class _Fixed:
    def __init__(self, day: date) -> None:
        self.day = day

    def __call__(self, _line: str) -> date:
        return self.day


def _fit(text: str, cap: int, stored_keys: set[str], changes: list[str]) -> Consolidated:
    """Drop the oldest extracted facts the store holds until the file fits its cap."""
    if len(text.encode("utf-8")) <= cap:
        return Consolidated(text, changes)
    lines = text.splitlines()
    try:
        start = lines.index(EXTRACTED_SECTION)
    except ValueError:
        raise JobFailed(
            f"{MEMORY_FILE} stays over its cap of {cap} bytes and has no '{EXTRACTED_SECTION}'"
        ) from None
    index = start + 1
    while (
        len("\n".join(lines).encode("utf-8")) + 1 > cap
        and index < len(lines)
        and not lines[index].startswith("#")
    ):
        bullet = _BULLET.match(lines[index])
        if bullet is not None and content_key(bullet["text"]) in stored_keys:
            changes.append(f"moved to the store only: {bullet['text'][:80]}")
            del lines[index]
        else:
            index += 1
    result = "\n".join(lines) + "\n"
    if len(result.encode("utf-8")) > cap:
        raise JobFailed(f"{MEMORY_FILE} stays over its cap of {cap} bytes after consolidation")
    return Consolidated(result, changes)


class _VersionDates:
    """The date each line first appeared in MEMORY.md, from the workspace's version history."""

    def __init__(self, workspace: Workspace, fallback: date) -> None:
        self.workspace = workspace
        self.fallback = fallback
        self._versions: list[tuple[date, str]] | None = None

    def __call__(self, line: str) -> date:
        if self._versions is None:
            self._versions = []
            for version in self.workspace.history(MEMORY_FILE)[-MAX_VERSIONS_SCANNED:]:
                try:
                    content = self.workspace.read_version(MEMORY_FILE, version.version)
                except WorkspaceError:
                    continue
                self._versions.append((version.at.date(), content))
        for written, content in self._versions:
            if line in content:
                return written
        return self.fallback


def _strip_fences(answer: str) -> str:
    text = answer.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    return text.strip() + "\n" if text.strip() else ""


class ConsolidationJob(Job):
    name = "consolidation"
    artifact = "workspace/MEMORY.md"

    def plan(self, ctx: JobContext) -> JobPlan:
        workspace = Workspace(ctx.data_dir)
        current = workspace.read(MEMORY_FILE)
        cursor = int(ctx.checkpoint.get("review_cursor", 0))
        flags = ctx.store.query(
            "SELECT id, target_ref FROM review_items WHERE status = 'open' AND target_kind = 'key' "
            f"AND kind IN ({', '.join('?' * len(DROP_KINDS))})",
            DROP_KINDS,
        )
        drop_keys = {str(row[1]) for row in flags}
        barrier_keys = {str(row[0]) for row in ctx.store.query("SELECT content_key FROM barriers")}
        drop_keys |= barrier_keys
        checkpoint = {"review_cursor": max([cursor, *(int(row[0]) for row in flags)]), "at": iso(ctx.now())}
        if not current.strip():
            return JobPlan(write=nothing_to_write, checkpoint=checkpoint, detail=f"{MEMORY_FILE} is empty")
        cap = CAPS[MEMORY_FILE] or len(current.encode("utf-8"))
        today = ctx.now().date()
        stored = {
            str(row[0]) for row in ctx.store.query("SELECT content_key FROM facts WHERE status = 'active'")
        }
        source, model, detail = current, None, ""
        dated_by: Callable[[str], date] = _VersionDates(workspace, self._mtime_date(workspace, today))
        if ctx.complete is not None:
            answer = _strip_fences(ctx.ask_model(self._prompt(current, today, drop_keys, cap)))
            if answer and len(answer.encode("utf-8")) <= cap:
                # The model was told today's date: whatever relative dates it left are today's.
                source, model, dated_by = answer, ctx.model, _Fixed(today)
            else:
                detail = "model answer unusable (empty or over the cap): deterministic pass only; "
        matcher = ctx.store.forgotten_matcher()

        def forgotten(statement: str) -> bool:
            return content_key(statement) in barrier_keys or matcher.states_forgotten(statement)

        result = consolidate(source, drop_keys, dated_by, cap, stored, forgotten)
        ctx.check()

        def write() -> list[str]:
            if workspace.read(MEMORY_FILE) != current:
                raise JobFailed(f"{MEMORY_FILE} changed while it was being consolidated; next run will retry")
            if result.text == current:
                return []
            written = workspace.write(MEMORY_FILE, result.text, "job", "consolidation")
            return [*result.changes, f"{MEMORY_FILE} version {written.version}: {written.size} bytes"]

        return JobPlan(
            write=write,
            checkpoint=checkpoint,
            input_from=f"{len(current.encode('utf-8'))} bytes",
            input_to=f"{len(result.text.encode('utf-8'))} bytes",
            model=model,
            detail=detail + f"{len(result.changes)} changes",
        )

    @staticmethod
    def _mtime_date(workspace: Workspace, fallback: date) -> date:
        try:
            return datetime.fromtimestamp(workspace.path(MEMORY_FILE).stat().st_mtime).date()
        except FileNotFoundError:
            return fallback

    @staticmethod
    def _prompt(current: str, today: date, flagged_keys: set[str], cap: int) -> str:
        drop = ""
        lines = [line for line in current.splitlines() if line.strip() and not line.startswith("#")]
        flagged = [line for line in lines if content_key(_statement(line)) in flagged_keys]
        if flagged:
            drop = "Remove these lines, which are outdated or were forgotten on purpose:\n" + "\n".join(
                flagged
            )
        return PROMPT.format(
            today=today.isoformat(), section=EXTRACTED_SECTION, cap=cap, drop=drop, content=current
        )
