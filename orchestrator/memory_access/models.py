"""Bodies of the operator's memory routes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_runtime.memory import Contradiction, EpisodeHit, Fact, FactHit, FactVersion, MemoryMode


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FactCreate(_Body):
    text: str = Field(min_length=1)
    category: str | None = None
    subject: str | None = Field(default=None, description="A stable key, e.g. 'user.home_city'")


class FactEdit(_Body):
    text: str = Field(min_length=1)
    category: str | None = None


class ResolveContradiction(_Body):
    keep: Literal["old", "new"]


class FactList(BaseModel):
    facts: list[Fact]


class FactDetail(BaseModel):
    fact: Fact
    history: list[Fact] = Field(description="Every version of the fact's subject, oldest first")


class MemorySearchResult(BaseModel):
    mode: MemoryMode
    facts: list[FactHit]
    episodes: list[EpisodeHit]


class MemoryHistoryResult(BaseModel):
    mode: MemoryMode
    versions: list[FactVersion] = Field(
        description="The facts found with their other versions (or those current at as_of), newest first "
        "within each fact, each with when it was valid"
    )


class ForgetResult(BaseModel):
    forgotten: list[int] = Field(description="The fact, its older versions and any restatement, now erased")
    restatements: list[int] = Field(
        default_factory=list,
        description="Other facts that restate it, still kept (forget them with it: with_restatements)",
    )


class ContradictionList(BaseModel):
    contradictions: list[Contradiction]


class RunJob(_Body):
    job: str = Field(
        min_length=1,
        max_length=64,
        description="A job name: `review`, or qualified by family: `maintenance/review`, `cognition/review`",
    )
