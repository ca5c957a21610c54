"""The extraction job: durable facts from the turns since its checkpoint, into the store.

With a model, the turns are shown to it and it answers with a JSON array of facts (text,
category, subject key, turn ids). Without one, a few fixed patterns on the user's own words
pick up explicit statements ("remember that ...", "my X is Y", "I live in ...", "call me ...").
Every fact is saved with source `extracted` and the ids of the turns it came from, so the
store's rules apply: repeats merge, a user-stated fact is never overwritten (a contradiction is
recorded instead) and a forgotten fact is not learned again.

It also acts on the review job's flags: a fact flagged stale for its relative time ("tomorrow",
"next week") is rewritten with absolute dates, counted from the day it was saved, as a new
version that supersedes it (same source and turns: the words are the same claim, only dated);
lines flagged stale or forgotten are not promoted again.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from agent_runtime.memory.jobs import Job, JobContext, JobFailed, JobPlan, nothing_to_write
from agent_runtime.memory.models import FactSource
from agent_runtime.memory.records import load_ids, parse_time
from agent_runtime.memory.review import RELATIVE_TIME
from agent_runtime.memory.store import MemoryInputError
from agent_runtime.memory.text import content_key, one_line
from agent_runtime.memory.truth import Candidate
from agent_runtime.memory.turns import Position, Turn, read_turns

MAX_TURNS_PER_RUN = 200
MAX_TURN_CHARS = 2000
FLAGGED_KINDS = ("stale", "forgotten")

PROMPT = """You maintain the long-term memory of an AI agent. From the conversation turns below, extract the
durable facts worth remembering for weeks: stable preferences, personal details, names, decisions,
commitments and dates. Skip small talk, questions, passing state, and anything the assistant only
suggested. Write each fact as one standalone sentence ("The user's home city is Lyon."), with
absolute dates (each turn shows its time). Give a short category ("preferences", "people",
"projects", ...) and, when the fact has one value that could later change, a stable subject key
such as "user.home_city".

Answer with only a JSON array, possibly empty, of objects:
{{"text": "...", "category": "...", "subject": "..." or null, "turn_ids": ["ids of the turns it comes from"]}}

Turns:
{turns}
"""


class ExtractedFact(BaseModel):
    model_config = ConfigDict(extra="ignore")

    text: str = Field(min_length=1)
    category: str | None = None
    subject: str | None = None
    turn_ids: list[str] = Field(default_factory=list)


_FACTS = TypeAdapter(list[ExtractedFact])


@dataclass
class _Pattern:
    regex: re.Pattern[str]
    template: str
    subject: str | None = None
    category: str = "user"


_PATTERNS = [
    _Pattern(
        re.compile(r"\b(?:my name is|call me)\s+(?P<value>[\w .'-]{1,60})", re.I),
        "The user's name is {value}",
        "user.name",
    ),
    _Pattern(
        re.compile(r"\bi (?:live|am living|now live) in\s+(?P<value>.{2,80})", re.I),
        "The user lives in {value}",
        "user.home",
    ),
    _Pattern(
        re.compile(r"\bi work (?:at|for)\s+(?P<value>.{2,80})", re.I),
        "The user works at {value}",
        "user.employer",
    ),
    _Pattern(
        re.compile(r"\bmy (?P<what>[\w' -]{2,40}?) (?:is|are)\s+(?P<value>.{1,120})", re.I),
        "The user's {what} is {value}",
        "user.{what}",
    ),
    _Pattern(
        re.compile(
            r"\bi (?P<verb>prefer|like|love|hate|dislike|don't like|do not like)\s+(?P<value>.{2,120})", re.I
        ),
        "The user {verb} {value}",
    ),
]
_REMEMBER = re.compile(r"\b(?:please\s+)?remember(?: that)?\s+(?P<value>.{3,300})", re.I)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
_VERBS = {
    "prefer": "prefers",
    "like": "likes",
    "love": "loves",
    "hate": "hates",
    "dislike": "dislikes",
    "don't like": "does not like",
    "do not like": "does not like",
}


def _match_patterns(sentence: str) -> ExtractedFact | None:
    for pattern in _PATTERNS:
        match = pattern.regex.search(sentence)
        if match is None:
            continue
        values = {key: value.strip(" .!") for key, value in match.groupdict().items()}
        if "verb" in values:
            values["verb"] = _VERBS.get(values["verb"].lower(), values["verb"])
        subject = (
            pattern.subject.format(**{k: v.lower() for k, v in values.items()}) if pattern.subject else None
        )
        return ExtractedFact(
            text=pattern.template.format(**values) + ".", category=pattern.category, subject=subject
        )
    return None


def pattern_facts(turns: list[Turn]) -> list[ExtractedFact]:
    """Facts the user stated explicitly, found without a model."""
    found: dict[str, ExtractedFact] = {}
    for turn in turns:
        if turn.role != "user":
            continue
        for piece in _SENTENCE.findall(turn.content[:MAX_TURN_CHARS]):
            sentence = piece.strip()
            if not sentence or sentence.endswith("?"):
                continue
            fact = _match_patterns(sentence)
            if fact is None:
                remembered = _REMEMBER.search(sentence)
                if remembered is None:
                    continue
                value = remembered["value"].strip(" .!")
                fact = _match_patterns(value) or ExtractedFact(
                    text=value[0].upper() + value[1:] + ".", category="notes"
                )
            fact.turn_ids = [turn.id]
            found.setdefault(content_key(fact.text), fact)
    return list(found.values())


def _strip_fences(answer: str) -> str:
    text = answer.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    return text.strip()


def parse_model_facts(answer: str, turns: list[Turn]) -> list[ExtractedFact]:
    text = _strip_fences(answer)
    start, end = text.find("["), text.rfind("]")
    if start < 0 or end < start:
        raise JobFailed(f"model answer is not a JSON array of facts: {one_line(answer, 120)!r}")
    try:
        facts = _FACTS.validate_python(json.loads(text[start : end + 1]))
    except (json.JSONDecodeError, ValidationError) as bad:
        raise JobFailed(f"model answer is not a JSON array of facts: {one_line(str(bad), 200)}") from None
    known = {turn.id for turn in turns}
    user_turns = [turn.id for turn in turns if turn.role == "user"]
    for fact in facts:
        fact.turn_ids = [t for t in fact.turn_ids if t in known] or user_turns
    return facts


def _transcript(turns: list[Turn]) -> str:
    lines = []
    for turn in turns:
        if turn.role in ("user", "assistant") and turn.content.strip():
            lines.append(f"[{turn.id}] {turn.at} {turn.role}: {one_line(turn.content, MAX_TURN_CHARS)}")
    return "\n".join(lines)


class ExtractionJob(Job):
    name = "extraction"
    artifact = "facts in memory.db (source extracted)"

    def plan(self, ctx: JobContext) -> JobPlan:
        rewrites = _stale_rewrites(ctx)
        after = Position.from_json(ctx.checkpoint.get("position"))
        batch = read_turns(ctx.history_dir, after, MAX_TURNS_PER_RUN)
        if not batch and not rewrites:
            return JobPlan(write=nothing_to_write, checkpoint=dict(ctx.checkpoint), detail="no new turns")
        if not batch:
            return JobPlan(
                write=lambda: _save(ctx, rewrites, "rewrote stale"),
                checkpoint=dict(ctx.checkpoint),
                detail=f"no new turns, {len(rewrites)} stale facts dated",
            )
        turns = [turn for turn, _ in batch]
        last = batch[-1][1]
        model = None
        transcript = _transcript(turns)
        if ctx.complete is not None and transcript:
            facts = parse_model_facts(ctx.ask_model(PROMPT.format(turns=transcript)), turns)
            model = ctx.model
        else:
            facts = pattern_facts(turns)
        flagged = self._flagged_keys(ctx)
        candidates: list[Candidate] = []
        for fact in facts:
            if content_key(fact.text) in flagged:
                continue
            try:
                candidates.append(
                    ctx.store.prepare(
                        fact.text,
                        category=fact.category,
                        source=FactSource.EXTRACTED,
                        turn_ids=fact.turn_ids,
                        subject=fact.subject,
                    )
                )
            except MemoryInputError:
                continue
            ctx.check()

        def write() -> list[str]:
            return _save(ctx, rewrites, "rewrote stale") + _save(ctx, candidates, "")

        return JobPlan(
            write=write,
            checkpoint={"position": last.to_json(), "turns": last.to_json()},
            input_from=str(after),
            input_to=str(last),
            model=model,
            detail=f"{len(turns)} turns, {len(candidates)} facts"
            + (f", {len(rewrites)} stale facts dated" if rewrites else ""),
        )

    @staticmethod
    def _flagged_keys(ctx: JobContext) -> set[str]:
        """Facts the review job flagged as stale or forgotten are not promoted again."""
        rows = ctx.store.query(
            "SELECT target_ref FROM review_items WHERE status = 'open' AND target_kind = 'key' "
            f"AND kind IN ({', '.join('?' * len(FLAGGED_KINDS))})",
            FLAGGED_KINDS,
        )
        return {str(row[0]) for row in rows}


def _save(ctx: JobContext, candidates: list[Candidate], label: str) -> list[str]:
    changes = []
    for candidate in candidates:
        result = ctx.store.save_prepared(candidate)
        prefix = f"{label} fact {candidate.supersedes}: " if label else ""
        changes.append(
            f"{prefix}{result.outcome.value} fact {result.fact_id}: {one_line(candidate.text, 120)}"
        )
    return changes


def _stale_rewrites(ctx: JobContext) -> list[Candidate]:
    """New, dated versions of the active facts the review flagged stale for their relative time."""
    from agent_runtime.memory.consolidation import absolute_dates

    rows = ctx.store.query(
        "SELECT f.id, f.text, f.source, f.subject, f.turn_ids, f.created_at, c.name AS category "
        "FROM review_items r JOIN facts f ON f.id = CAST(r.target_ref AS INTEGER) "
        "JOIN categories c ON c.id = f.category_id "
        "WHERE r.status = 'open' AND r.kind = 'stale' AND r.target_kind = 'fact' AND f.status = 'active'"
    )
    rewrites = []
    for row in rows:
        if not RELATIVE_TIME.search(row["text"]):
            continue
        dated = absolute_dates(row["text"], parse_time(row["created_at"]).date())
        if dated == row["text"]:
            continue
        rewrites.append(
            ctx.store.prepare(
                dated,
                category=row["category"],
                source=row["source"],
                turn_ids=load_ids(row["turn_ids"]),
                subject=row["subject"],
                supersedes=int(row["id"]),
            )
        )
        ctx.check()
    return rewrites
