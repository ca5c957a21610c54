"""How an agent keeps its conversation within the model's window: the wire models of fleet.yaml's
`context` settings and the context manager's thresholds.

Apart from `agent_runtime.protocol` (which re-exports them) so that reading fleet.yaml does not
load every wire model: the `flotilla` command validates the file before it starts the
orchestrator.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field

from agent_runtime.wire import WireModel


class ContextThresholds(WireModel):
    flush: float = 0.60
    compact: float = 0.70
    warn: float = 0.80
    prune: float = 0.90


class ContextStrategy(StrEnum):
    """compact: summaries replace older turns; checkpoint: the transcript stays whole and only the
    turns after the last consolidation are replayed, with working memory beside them."""

    COMPACT = "compact"
    CHECKPOINT = "checkpoint"


_UTC_TIME = r"^([01][0-9]|2[0-3]):[0-5][0-9]$"


class CognitionJobSettings(WireModel):
    """When one job of the `checkpoint` strategy runs, and with which model."""

    after_turns: int = Field(ge=1, description="Run once this many turns wait past the job's checkpoint")
    at: list[Annotated[str, Field(pattern=_UTC_TIME)]] = Field(
        default_factory=list, description="Also run at these times of day, UTC (HH:MM)"
    )
    model: str | None = Field(
        default=None, description="The model this job calls (none: the agent's model; `test`: no model)"
    )


def _review() -> CognitionJobSettings:
    return CognitionJobSettings(after_turns=8, at=["03:00", "15:00"])


def _consolidation() -> CognitionJobSettings:
    return CognitionJobSettings(after_turns=6, at=["04:00"])


def _extraction() -> CognitionJobSettings:
    return CognitionJobSettings(after_turns=12, at=["05:00"])


class CognitionJobs(WireModel):
    """The checkpoint strategy's jobs: when each runs and with which model."""

    review: CognitionJobSettings = Field(
        default_factory=_review, description="Audits working memory and the semantic files"
    )
    consolidation: CognitionJobSettings = Field(
        default_factory=_consolidation, description="Rewrites WORKING_MEMORY.md and moves the checkpoint"
    )
    extraction: CognitionJobSettings = Field(
        default_factory=_extraction, description="Maintains facts.md, preferences.md and projects.md"
    )


class ContextSettings(WireModel):
    """How an agent keeps its conversation within the model's window."""

    strategy: ContextStrategy = Field(
        default=ContextStrategy.COMPACT,
        description=(
            "compact: summarize older turns into the context (flush and compaction); checkpoint: keep "
            "the transcript whole, replay only the turns after the consolidation checkpoint, with "
            "WORKING_MEMORY.md injected and semantic files read on demand"
        ),
    )
    replay_turns: int = Field(
        default=60, ge=4, description="checkpoint: at most this many turns replayed after the checkpoint"
    )
    replay_share: float = Field(
        default=0.5, gt=0, le=0.8, description="checkpoint: at most this share of the window replayed"
    )
    adopt_after_turns: int = Field(
        default=6,
        ge=1,
        description=(
            "checkpoint: replayed turns (exchanges: a message, its answer and tool calls) a "
            "consolidation must cover before the replay moves to its checkpoint (and "
            "WORKING_MEMORY.md is re-read) at the start of an item: fewer breaks of the cached "
            "prompt prefix"
        ),
    )
    working_memory_bytes: int = Field(
        default=4096, ge=256, le=32768, description="checkpoint: cap on WORKING_MEMORY.md"
    )
    jobs: CognitionJobs = Field(default_factory=CognitionJobs, description="checkpoint: the memory jobs")
