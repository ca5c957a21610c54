"""The memory store's records and settings, as pydantic models (they cross the operator API)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# The gateway's built-in embedding model, computed offline in the orchestrator's process.
LOCAL_EMBEDDING_MODEL = "wordllama-256"
# The gateway's built-in multilingual model (multilingual-e5-small), also computed offline there.
MULTILINGUAL_EMBEDDING_MODEL = "multilingual-e5-small"
# multilingual-e5-small with the English model all-MiniLM-L6-v2 beside it in one vector, also
# computed offline there: the default when both packages are installed.
BLENDED_EMBEDDING_MODEL = "e5-minilm"


@dataclass(frozen=True)
class SimilarityScale:
    """Where a model's cosines lie: `floor`, the cosine of a fact a query does not ask for, and
    `ceiling`, the cosine of the fact it asks for. Search weighs the vector part of its score on
    this scale, so that a model whose cosines all sit between 0.7 and 0.9 counts as much beside
    the keyword part as one whose cosines spread from 0 to 1."""

    floor: float = 0.0
    ceiling: float = 1.0
    # The weight of the vector part measured for the model (the keyword part takes the rest);
    # None: `MemoryConfig.vector_weight` and `keyword_weight`.
    vector_weight: float | None = None

    def __post_init__(self) -> None:
        if not self.ceiling > self.floor:
            raise ValueError(f"similarity scale: ceiling {self.ceiling} is not above floor {self.floor}")
        if self.vector_weight is not None and not 0.0 <= self.vector_weight <= 1.0:
            raise ValueError(f"similarity scale: vector weight {self.vector_weight} is not within 0..1")

    def score(self, cosine: float) -> float:
        """The cosine mapped onto 0..1 by the model's floor and ceiling."""
        return min(1.0, max(0.0, (cosine - self.floor) / (self.ceiling - self.floor)))


# Cosines taken as they are (clipped to 0..1).
IDENTITY_SCALE = SimilarityScale()


class FactSource(StrEnum):
    """Where a fact came from. See `PRECEDENCE`."""

    USER_STATED = "user_stated"
    OPERATOR = "operator"
    AGENT = "agent"
    EXTRACTED = "extracted"
    INFERRED = "inferred"


# Who may overwrite whom. A newer fact replaces an older one on the same subject only when its
# source ranks at least as high; otherwise it becomes a pending contradiction for the operator.
# What a person said (the user, or the operator running the fleet) outranks what the agent
# decided to note, which outranks what a background job read out of the history, which
# outranks a guess.
PRECEDENCE: dict[FactSource, int] = {
    FactSource.USER_STATED: 3,
    FactSource.OPERATOR: 3,
    FactSource.AGENT: 2,
    FactSource.EXTRACTED: 1,
    FactSource.INFERRED: 0,
}

# Sources that a forget barrier stops. A person restating a forgotten fact lifts the barrier.
BARRED_SOURCES = frozenset({FactSource.AGENT, FactSource.EXTRACTED, FactSource.INFERRED})

# Salience a new fact starts with: a person's word matters more than a guess.
INITIAL_SALIENCE: dict[FactSource, float] = {
    FactSource.USER_STATED: 1.0,
    FactSource.OPERATOR: 1.0,
    FactSource.AGENT: 0.8,
    FactSource.EXTRACTED: 0.7,
    FactSource.INFERRED: 0.5,
}


class FactStatus(StrEnum):
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    FORGOTTEN = "forgotten"


class Fact(BaseModel):
    id: int
    text: str
    category: str
    subject: str | None = None
    source: FactSource
    status: FactStatus
    created_at: datetime
    updated_at: datetime
    salience: float
    access_count: int = 0
    turn_ids: list[str] = Field(default_factory=list)
    supersedes: int | None = None
    superseded_by: int | None = None
    has_vector: bool = False
    scope: str = Field(default="", description="'' (the agent's shared memory) or a person's principal")


class SaveOutcome(StrEnum):
    SAVED = "saved"
    MERGED = "merged"  # a duplicate: the existing fact was reinforced instead
    SUPERSEDED = "superseded"  # saved, and it replaced an older fact on the same subject
    CONTRADICTION = "contradiction"  # not saved: it disagrees with a fact of higher precedence
    BLOCKED = "blocked"  # not saved: the fact was forgotten on purpose


class SaveResult(BaseModel):
    outcome: SaveOutcome
    fact_id: int | None = None
    replaced_id: int | None = Field(default=None, description="The fact this one superseded or merged into")
    contradiction_id: int | None = None
    detail: str = ""
    redacted: list[str] = Field(
        default_factory=list, description="Kinds of credential replaced by a marker before saving"
    )


class ForgetResult(BaseModel):
    """What a forget did: the facts erased, and the restatements left (not asked to go too)."""

    forgotten: list[int] = Field(description="The fact, its older versions and any restatement forgotten")
    restatements: list[int] = Field(
        default_factory=list,
        description="Other active facts that restate it and are still kept (forget them with it "
        "by asking with_restatements)",
    )


class FactHit(BaseModel):
    fact: Fact
    score: float
    vector_score: float = 0.0
    keyword_score: float = 0.0
    tier: Literal["category", "flat", "keyword"] = "flat"


class FactVersion(BaseModel):
    """One version of a fact, with the time it was current (`timeline`)."""

    fact: Fact
    valid_from: datetime
    valid_until: datetime | None = Field(
        description="When the version that replaced it was saved; None: current"
    )
    replaced_by: int | None = None
    current: bool
    score: float

    def valid_at(self, moment: datetime) -> bool:
        return self.valid_from <= moment and (self.valid_until is None or moment < self.valid_until)


class Episode(BaseModel):
    id: int
    start: str
    end: str
    turn_ids: list[str] = Field(default_factory=list)
    summary: str
    created_at: datetime


class EpisodeHit(BaseModel):
    episode: Episode
    score: float


class ContradictionStatus(StrEnum):
    PENDING = "pending"
    RESOLVED = "resolved"
    DISMISSED = "dismissed"  # the fact it disputed was forgotten meanwhile


class Contradiction(BaseModel):
    id: int
    fact_id: int
    fact_text: str
    fact_source: FactSource
    text: str
    category: str
    subject: str | None = None
    source: FactSource
    turn_ids: list[str] = Field(default_factory=list)
    status: ContradictionStatus
    created_at: datetime
    resolved_at: datetime | None = None
    resolution: Literal["kept_old", "kept_new"] | None = None
    new_fact_id: int | None = None


class MemoryMode(StrEnum):
    HYBRID = "hybrid"
    KEYWORD = "keyword"


class MemoryStatus(BaseModel):
    mode: MemoryMode
    embedding_model: str | None
    dimensions: int
    facts_active: int
    facts_superseded: int
    facts_forgotten: int
    missing_vectors: int
    episodes: int
    pending_contradictions: int
    barriers: int
    consecutive_failures: int = 0
    next_retry_in_s: float | None = None
    last_error: str | None = None
    damaged: str | None = None
    """Set while the store is the fresh one that replaced a damaged memory.db: when, what was
    wrong, where the damaged file is kept (keyword-only until the operator acts)."""


class MemoryConfig(BaseModel):
    """Tuning of the store. Similarities are cosine similarities of the embedding model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dimensions: int = Field(default=1536, ge=8, le=8192, multiple_of=8)
    embedding_model: str | None = Field(
        default=None, description="Name recorded with the vectors; a change re-embeds every fact"
    )
    vector_weight: float = 0.7
    keyword_weight: float = 0.3
    access_boost: float = Field(default=0.05, description="Score boost per recorded access")
    access_cap: int = Field(default=10, description="Accesses beyond this add no boost")
    decay_factor: float = Field(default=0.95, gt=0, le=1, description="Salience kept per maintenance pass")
    salience_floor: float = 0.05
    duplicate_similarity: float = Field(
        default=0.97, description="Near-duplicate above this (and same words)"
    )
    subject_similarity: float = Field(
        default=0.85, description="A fact saved without a category joins the category of a fact this close"
    )
    attribute_similarity: float = Field(
        default=0.5,
        description="Same subject above this, in one category, when what differs is the value of one "
        "attribute of one thing (set from the labelled memory benchmark, docs/memory.md)",
    )
    contradiction_similarity: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Two facts without a shared subject key that disagree on a value (a number, a "
        "negation, a name) contradict above this similarity. None: the figure measured for the "
        "embedding model, or no such rule for a model without one. Never applied to vectors "
        "without meaning (the test model's)",
    )
    barrier_similarity: float = Field(default=0.95, description="A forgotten fact matches above this")
    restatement_similarity: float = Field(
        default=0.85, description="A fact this close to a forgotten one is listed as its restatement"
    )
    category_similarity: float = Field(default=0.35, description="A category is relevant above this")
    auto_category_similarity: float = Field(
        default=0.5, description="A fact saved without a category joins the nearest centroid above this"
    )
    good_similarity: float = Field(default=0.5, description="Category results this good skip the flat pass")
    min_similarity: float = Field(
        default=0.2, description="Search leaves out facts below this similarity unless a keyword matched"
    )
    neighbor_k: int = Field(default=5, ge=1, description="Neighbors checked for duplicates and subjects")
    candidate_factor: int = Field(default=4, ge=1)
    min_candidates: int = Field(default=32, ge=1)
    keyword_candidates: int = Field(default=40, ge=1)
    top_categories: int = Field(default=3, ge=1)
    failure_limit: int = Field(default=3, ge=1, description="Consecutive failures before keyword-only mode")
    retry_base_s: float = Field(default=30.0, gt=0)
    retry_max_s: float = Field(default=3600.0, gt=0)
    reindex_on_model_change: bool = Field(
        default=True, description="Drop and rebuild vectors when the embedding model or size changed"
    )
    cache_mb: int = Field(default=16, ge=1)
    matrix_max_mb: int | None = Field(
        default=None,
        ge=0,
        description="Largest int8 matrix held in memory for the search over every fact (dimensions "
        "bytes per fact); beyond it that search scans in SQL, exact but slower. None: 40% of the "
        "memory this process may use (its container's limit, else the machine's)",
    )
    max_text_chars: int = Field(default=4000, ge=16)
