"""The three jobs of the `checkpoint` strategy. Each reads the turns after its own checkpoint,
prepares its artifact without writing anything, and returns it; the runner writes it.

Without a model each job runs a deterministic pass; with one, the model's answer is used when it
can be read, and the deterministic pass runs otherwise. Review flags (review.json) are read by
consolidation and extraction, which drop or replace the lines flagged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from agent_runtime.cognition.files import SEMANTIC_FILES, WORKING_MEMORY, CognitionFiles, Review, ReviewFlag
from agent_runtime.cognition.proposals import Proposal, Proposals, apply_to_lines
from agent_runtime.memory.extraction import ExtractedFact, parse_model_facts, pattern_facts
from agent_runtime.memory.text import content_words
from agent_runtime.memory.turns import Position, Turn, iter_turns

Complete = Callable[[str], str]
MAX_TURNS_PER_RUN = 400
SECTION_ITEMS = 6
LINE_CHARS = 160
# An open thread or a progress note older than this is flagged stale by the review.
STALE_AFTER = timedelta(days=7)
CONSOLIDATION_MARKER = "CONSOLIDATE_WORKING_MEMORY"
_HEADER = re.compile(r"^\[[^\]]*\]\s*")
_PRIORITY = re.compile(
    r"\b(priority|important|urgent|deadline|must|by (monday|tuesday|wednesday|"
    r"thursday|friday|saturday|sunday|tomorrow|tonight))\b",
    re.I,
)
_SUBJECT = re.compile(r"^- \[(?P<subject>[^\]]+)\] ")
# The runtime's own lines in an incoming message: its header and the snapshot line.
_RUNTIME_LINE = re.compile(r"^\[runtime: .*\]$")
_HEARTBEAT_HEADER = re.compile(r"^\[[^\]]*· heartbeat\]")
# A newer line sharing this share of an older line's words is about the same subject.
SAME_SUBJECT_SHARE = 0.5
_DATED = re.compile(r"\((?P<day>\d{4}-\d{2}-\d{2})\)\s*$")


@dataclass
class JobInput:
    files: CognitionFiles
    turns: list[Turn]
    end: Position
    review: Review
    now: datetime
    complete: Complete | None
    cap_bytes: int


@dataclass
class JobOutput:
    writes: dict[Path, str]
    detail: str
    checkpoint: dict[str, Any] = field(default_factory=dict)
    consumed: list[Path] = field(default_factory=list)
    """Proposals applied: removed once the writes and the checkpoint are saved."""


def read_after(files: CognitionFiles, checkpoint: dict[str, Any]) -> tuple[list[Turn], Position]:
    """The turns after a checkpoint (at most MAX_TURNS_PER_RUN) and the position after them."""
    mark = Position.from_json(checkpoint.get("position"))
    turns: list[Turn] = []
    for turn, position in iter_turns(files.history_dir, mark):
        turns.append(turn)
        mark = position
        if len(turns) >= MAX_TURNS_PER_RUN:
            break
    return turns, mark


def _plain(text: str) -> str:
    """A turn's text on one line, without the header and the snapshot line the runtime puts on
    incoming messages (budgets and peers' states are the runtime's, not the person's)."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if lines and _HEADER.match(lines[0]) and lines[0].rstrip().endswith("]"):
        lines = lines[1:]
    lines = [line for line in lines if not _RUNTIME_LINE.match(line.strip())]
    joined = " ".join(line.strip() for line in lines)
    return joined if len(joined) <= LINE_CHARS else joined[: LINE_CHARS - 1] + "…"


def _flagged(review: Review, file: str) -> set[str]:
    return {flag.line for flag in review.flags if flag.file == file}


# Consolidation: WORKING_MEMORY.md


SECTIONS = ("Priorities", "Open threads", "Recent progress")


def parse_sections(text: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {name: [] for name in SECTIONS}
    current: str | None = None
    for line in text.splitlines():
        if line.startswith("## "):
            name = line[3:].strip()
            current = name if name in found else None
        elif current and line.startswith("- "):
            found[current].append(line)
    return found


def render_sections(sections: dict[str, list[str]], cap_bytes: int) -> str:
    """WORKING_MEMORY.md, oldest items dropped first until it fits its cap."""
    trimmed = {name: list(items) for name, items in sections.items()}
    while True:
        parts = ["# Working memory"]
        for name in SECTIONS:
            parts.append(f"## {name}")
            parts.extend(trimmed[name] or ["- (none)"])
        text = "\n".join(parts) + "\n"
        longest = max(SECTIONS, key=lambda name: len(trimmed[name]))
        if len(text.encode("utf-8")) <= cap_bytes or not trimmed[longest]:
            return text
        trimmed[longest].pop()


def _words(line: str) -> set[str]:
    body = _DATED.sub("", line.removeprefix("- "))
    return set(content_words(body))


def same_subject(newer: str, older: str) -> bool:
    """True when a newer line is about what an older one was (most of the older line's words are
    in it) and says something else: a changed plan replaces the old one at once."""
    old_words, new_words = _words(older), _words(newer)
    if not old_words or old_words == new_words:
        return False
    return len(old_words & new_words) >= SAME_SUBJECT_SHARE * len(old_words)


def _merge(new: list[str], old: list[str], drop: set[str]) -> list[str]:
    """Newest first; a line replaced by a newer one on the same subject, or flagged, leaves."""
    kept: list[str] = []
    for line in dict.fromkeys(new + old):
        if line in drop or line == "- (none)":
            continue
        if any(same_subject(newer, line) for newer in kept):
            continue
        kept.append(line)
    return kept[:SECTION_ITEMS]


def _is_heartbeat(turn: Turn) -> bool:
    return bool(_HEARTBEAT_HEADER.match(turn.content.lstrip()))


def _superseded_by(lines: list[str], newer: list[str]) -> list[str]:
    return [line for line in lines if not any(same_subject(new, line) for new in newer)]


def consolidate(job: JobInput) -> JobOutput:
    path = job.files.working_memory
    name = job.files.relative(path)
    previous = parse_sections(job.files.read(path))
    drop = _flagged(job.review, name)
    priorities: list[str] = []
    threads: list[str] = []
    progress: list[str] = []
    for turn in reversed(job.turns):
        if turn.role == "user" and _is_heartbeat(turn):
            continue  # a heartbeat's checklist is the runtime's prompt, not a person's request
        text = _plain(turn.content)
        if not text or text == "HEARTBEAT_OK":
            continue
        line = f"- {text} ({turn.at[:10]})"
        if turn.role == "user":
            (priorities if _PRIORITY.search(text) else threads).append(line)
        elif turn.role == "assistant":
            progress.append(line)
    said = priorities + threads
    # A person's newer message on a priority's subject replaces it, whichever section it lands in.
    old_priorities = _superseded_by(previous["Priorities"], said)
    replacing = [line for line in threads if any(same_subject(line, old) for old in previous["Priorities"])]
    sections = {
        "Priorities": _merge(replacing + priorities, old_priorities, drop),
        "Open threads": _merge(
            [line for line in threads if line not in replacing], previous["Open threads"], drop
        ),
        "Recent progress": _merge(progress, previous["Recent progress"], drop),
    }
    waiting = Proposals(job.files).waiting((WORKING_MEMORY,))
    text = render_sections(_with_proposals(sections, waiting), job.cap_bytes)
    detail = "deterministic pass"
    if job.complete is not None and job.turns:
        answer = _model_working_memory(job, text)
        if answer:
            sections = _with_proposals(parse_sections(answer), waiting)
            text, detail = render_sections(sections, job.cap_bytes), "model"
    if waiting:
        detail += f", {len(waiting)} proposal(s) applied"
    return JobOutput(
        {path: text}, f"{detail}: {len(job.turns)} turns consolidated", consumed=[p for p, _ in waiting]
    )


def _with_proposals(
    sections: dict[str, list[str]], waiting: list[tuple[Path, Proposal]]
) -> dict[str, list[str]]:
    out = {name: list(items) for name, items in sections.items()}
    for _path, proposal in waiting:
        if proposal.action == "remove":
            out = {name: apply_to_lines(items, proposal) for name, items in out.items()}
        else:
            out[proposal.section] = apply_to_lines(out[proposal.section], proposal)[:SECTION_ITEMS]
    return out


def _model_working_memory(job: JobInput, draft: str) -> str:
    """The model's rewrite of the draft, capped; empty when the answer is unusable."""
    assert job.complete is not None
    transcript = "\n".join(f"{t.at[:16]} {t.role}: {_plain(t.content)}" for t in job.turns[-80:])
    flags = "\n".join(f"- {f.line} ({f.reason})" for f in job.review.flags) or "(none)"
    prompt = (
        f"{CONSOLIDATION_MARKER}\nRewrite the agent's working memory: its current priorities, open "
        "threads and recent progress, as markdown with exactly the sections '## Priorities', "
        f"'## Open threads' and '## Recent progress', each a list of '- ' lines, under "
        f"{job.cap_bytes} bytes in all. Leave out the flagged lines.\n\nDraft:\n{draft}\n"
        f"Flagged lines:\n{flags}\n\nRecent turns:\n{transcript}\n"
    )
    answer = job.complete(prompt).strip()
    sections = parse_sections(answer)
    if not any(sections.values()):
        return ""
    return render_sections(sections, job.cap_bytes)


# Extraction: facts.md, preferences.md, projects.md


def semantic_file(fact: ExtractedFact) -> str:
    text = fact.text.lower()
    if (fact.category or "").startswith("pref") or re.search(
        r"\b(prefers|likes|loves|hates|dislikes|does not like)\b", text
    ):
        return "preferences.md"
    if (fact.category or "").startswith("project") or "project" in text:
        return "projects.md"
    return "facts.md"


def _fact_line(fact: ExtractedFact, day: str) -> str:
    subject = f"[{fact.subject}] " if fact.subject else ""
    return f"- {subject}{fact.text} ({day})"


def subject_of(line: str) -> str | None:
    match = _SUBJECT.match(line)
    return match["subject"] if match else None


def extract(job: JobInput) -> JobOutput:
    facts = _facts(job)
    day = {turn.id: turn.at[:10] for turn in job.turns}
    outputs: dict[Path, str] = {}
    added = 0
    waiting = Proposals(job.files).waiting(SEMANTIC_FILES)
    for name in SEMANTIC_FILES:
        path = job.files.semantic_dir / name
        drop = _flagged(job.review, job.files.relative(path))
        lines = [line for line in job.files.read(path).splitlines() if line.startswith("- ")]
        lines = [line for line in lines if line not in drop]
        for fact in facts:
            if semantic_file(fact) != name:
                continue
            line = _fact_line(
                fact,
                day.get(fact.turn_ids[0], job.now.date().isoformat())
                if fact.turn_ids
                else job.now.date().isoformat(),
            )
            if fact.subject:
                # A newer statement on the same subject replaces the older one: a correction holds.
                lines = [old for old in lines if subject_of(old) != fact.subject]
            body = line.rsplit(" (", 1)[0]
            if not any(old.rsplit(" (", 1)[0] == body for old in lines):
                lines.append(line)
                added += 1
        for _path, proposal in waiting:
            if proposal.file == name:
                lines = apply_to_lines(lines, proposal)
        title = name.removesuffix(".md").capitalize()
        outputs[path] = f"# {title}\n" + "".join(f"{line}\n" for line in lines)
    detail = f"{added} facts written from {len(job.turns)} turns"
    if waiting:
        detail += f", {len(waiting)} proposal(s) applied"
    return JobOutput(outputs, detail, consumed=[path for path, _ in waiting])


def _facts(job: JobInput) -> list[ExtractedFact]:
    found = pattern_facts(job.turns)
    if job.complete is None or not job.turns:
        return found
    transcript = "\n".join(
        f"[{t.id}] {t.at} {t.role}: {_plain(t.content)}" for t in job.turns if t.role in ("user", "assistant")
    )
    prompt = (
        "Extract the durable facts about the user and their projects from these turns, as a JSON array "
        'of {"text": ..., "category": "facts"|"preferences"|"projects", "subject": key or null, '
        f'"turn_ids": [...]}}. Answer with the array only.\n\nTurns:\n{transcript}\n'
    )
    try:
        return parse_model_facts(job.complete(prompt), job.turns) or found
    except (RuntimeError, ValueError):
        return found


# Review: review.json


def review(job: JobInput) -> JobOutput:
    flags: list[ReviewFlag] = []
    wm_name = job.files.relative(job.files.working_memory)
    for items in parse_sections(job.files.read(job.files.working_memory)).values():
        for line in items:
            dated = _DATED.search(line)
            if dated and job.now.date() - datetime.fromisoformat(dated["day"]).date() > STALE_AFTER:
                flags.append(ReviewFlag(file=wm_name, line=line, reason="stale"))
    for name in SEMANTIC_FILES:
        path = job.files.semantic_dir / name
        seen: dict[str, str] = {}
        for line in job.files.read(path).splitlines():
            if not line.startswith("- "):
                continue
            key = subject_of(line) or line.rsplit(" (", 1)[0].lower()
            if key in seen:
                # The earlier line is the older statement of the same subject.
                flags.append(ReviewFlag(file=job.files.relative(path), line=seen[key], reason="superseded"))
            seen[key] = line
    detail = "heuristics"
    if job.complete is not None:
        found = _model_flags(job, flags)
        if found is not None:
            flags, detail = found, "heuristics and model"
    body = Review(at=job.now, flags=flags).model_dump_json(indent=1)
    return JobOutput({job.files.review_path: body}, f"{len(flags)} flags ({detail})")


REVIEW_MARKER = "REVIEW_MEMORY_FILES"


def _model_flags(job: JobInput, flags: list[ReviewFlag]) -> list[ReviewFlag] | None:
    """The heuristic flags plus the model's; None when its answer cannot be read."""
    assert job.complete is not None
    numbered: list[tuple[str, str]] = []
    for path in [job.files.working_memory, *(job.files.semantic_dir / name for name in SEMANTIC_FILES)]:
        numbered += [
            (job.files.relative(path), line)
            for line in job.files.read(path).splitlines()
            if line.startswith("- ")
        ]
    if not numbered:
        return flags
    listing = "\n".join(f"{n}. [{name}] {line}" for n, (name, line) in enumerate(numbered, 1))
    prompt = (
        f"{REVIEW_MARKER}\nToday is {job.now.date().isoformat()}. Audit these memory lines. Answer with only "
        'a JSON array of {"line": number, "reason": "stale" | "duplicate" | "superseded"} for the lines '
        f"that are out of date, repeated, or replaced by a newer line; [] when none.\n\n{listing}\n"
    )
    try:
        answer = json.loads(_json_array(job.complete(prompt)))
    except (RuntimeError, ValueError):
        return None
    if not isinstance(answer, list):
        return None
    found = list(flags)
    for entry in answer:
        if not isinstance(entry, dict):
            return None
        number, reason = entry.get("line"), entry.get("reason")
        if isinstance(number, int) and 1 <= number <= len(numbered) and reason in _REASONS:
            name, line = numbered[number - 1]
            if not any(f.file == name and f.line == line for f in found):
                found.append(ReviewFlag(file=name, line=line, reason=str(reason)))
    return found


_REASONS = ("stale", "duplicate", "superseded")


def _json_array(answer: str) -> str:
    start, end = answer.find("["), answer.rfind("]")
    if start < 0 or end < start:
        raise ValueError("no JSON array in the answer")
    return answer[start : end + 1]


JOBS: dict[str, Callable[[JobInput], JobOutput]] = {
    "review": review,
    "consolidation": consolidate,
    "extraction": extract,
}
