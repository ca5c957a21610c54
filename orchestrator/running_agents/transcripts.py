"""An agent's transcript as the operator sees it: its turns, with what the orchestrator knows
of each (model, tokens, cost, duration, outcome) and the context events between them.

The messages come from the agent (its turn log is in its own storage, asked over its link);
the run records and the context events (flushes, compactions, prunes) are the orchestrator's.
A turn is the messages of one inbox item; its run record is the one with the same item id.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from pydantic import BaseModel, Field

from agent_runtime.protocol import TranscriptMessage, TranscriptPage
from orchestrator.events import Event
from orchestrator.scheduler.runs import RunView

CONTEXT_EVENTS = frozenset({"context.flushed", "compaction.done", "context.pruned", "context.warning"})
# What the orchestrator did for the agent during a turn, as it recorded it (not as the agent says).
HOST_TOOL_EVENTS = frozenset(
    {"http.requested", "http.refused", "browser.action", "browser.refused", "web_search.ran"}
)
MARKED_EVENTS = CONTEXT_EVENTS | HOST_TOOL_EVENTS


class ContextMark(BaseModel):
    """A flush, compaction, prune or warning of the agent's context, or a request the orchestrator
    made (or refused) for the agent, where it happened."""

    type: str
    at: datetime
    data: dict[str, object] = Field(default_factory=dict)


class TurnRun(BaseModel):
    """What the orchestrator recorded of the turn's run."""

    run_id: str
    trigger: str
    model: str | None = None
    started_at: datetime
    duration_s: float
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    outcome: str
    detail: str = ""
    tool_sources: dict[str, str] = Field(
        default_factory=dict,
        description="Where each tool the run called (other than the agent's built-ins) ran: "
        "host (the orchestrator's own tool), orchestrator_mcp, mcp or peer",
    )


class TranscriptTurn(BaseModel):
    item_id: str | None = None
    started_at: str = Field(description="When its first message was logged")
    run: TurnRun | None = Field(default=None, description="null while the turn is still running")
    messages: list[TranscriptMessage] = Field(default_factory=list)
    marks: list[ContextMark] = Field(default_factory=list, description="Context events during the turn")


class Transcript(BaseModel):
    agent: str
    turns: list[TranscriptTurn] = Field(default_factory=list, description="Oldest first")
    last_id: str | None = Field(default=None, description="Ask again with after=last_id to follow")
    earlier: bool = Field(default=False, description="Older turns exist than the ones shown")
    finished: dict[str, TurnRun] = Field(
        default_factory=dict,
        description="When following (after=): the latest runs by item id, for turns shown while running",
    )


def _group(messages: Iterable[TranscriptMessage]) -> list[TranscriptTurn]:
    turns: list[TranscriptTurn] = []
    for message in messages:
        if not turns or turns[-1].item_id != message.item_id:
            turns.append(TranscriptTurn(item_id=message.item_id, started_at=message.at))
        turns[-1].messages.append(message)
    return turns


def turn_run(run: RunView) -> TurnRun:
    return TurnRun(
        run_id=run.id,
        trigger=run.trigger,
        model=run.model,
        started_at=run.started_at,
        duration_s=run.duration_s,
        tokens_in=run.tokens_in,
        tokens_out=run.tokens_out,
        cost_usd=run.cost_usd,
        outcome=run.outcome,
        detail=run.detail,
        tool_sources={call.name: call.source for call in run.tool_calls if call.source != "builtin"},
    )


def _place_marks(turns: list[TranscriptTurn], events: Iterable[Event]) -> None:
    """Each context event goes to the last turn that had begun when it happened."""
    for event in events:
        if event.type not in MARKED_EVENTS:
            continue
        stamp = event.at.isoformat().replace("+00:00", "Z")
        owner = None
        for turn in turns:
            if turn.started_at <= stamp:
                owner = turn
        if owner is not None:
            owner.marks.append(ContextMark(type=event.type, at=event.at, data=dict(event.data)))


FINISHED_SHOWN = 20


def build_transcript(
    agent: str,
    page: TranscriptPage,
    runs: Iterable[RunView],
    events: Iterable[Event],
    *,
    following: bool = False,
) -> Transcript:
    """The agent's messages grouped into turns, each with its run record and context marks."""
    turns = _group(page.messages)
    turn_runs = [run for run in runs if run.kind == "turn" and run.item_id]
    by_item = {run.item_id: run for run in reversed(turn_runs)}  # the newest run of an item wins
    for turn in turns:
        run = by_item.get(turn.item_id) if turn.item_id else None
        turn.run = turn_run(run) if run is not None else None
    _place_marks(turns, events)
    finished = {run.item_id: turn_run(run) for run in turn_runs[:FINISHED_SHOWN] if run.item_id}
    return Transcript(
        agent=agent,
        turns=turns,
        last_id=page.last_id,
        earlier=page.earlier,
        finished=finished if following else {},
    )
