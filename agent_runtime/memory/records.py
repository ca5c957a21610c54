"""Database rows to models, and the time format stored in memory.db."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from agent_runtime.memory.models import (
    Contradiction,
    ContradictionStatus,
    Episode,
    Fact,
    FactSource,
    FactStatus,
)

FACT_COLUMNS = (
    "f.id, f.text, c.name AS category, f.subject, f.source, f.status, f.created_at, f.updated_at, "
    "f.salience, f.access_count, f.turn_ids, f.supersedes, f.superseded_by, f.has_vector, f.category_id, "
    "f.content_key, f.scope"
)
FACT_FROM = "facts f JOIN categories c ON c.id = f.category_id"

Row = Any  # sqlite3.Row or pysqlite3's Row: both index by name


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value)


def dump_ids(ids: Sequence[str]) -> str:
    return json.dumps(list(dict.fromkeys(str(i) for i in ids)))


def load_ids(raw: str | None) -> list[str]:
    if not raw:
        return []
    loaded = json.loads(raw)
    return [str(item) for item in loaded] if isinstance(loaded, list) else []


def fact_from_row(row: Row) -> Fact:
    return Fact(
        id=row["id"],
        text=row["text"],
        category=row["category"],
        subject=row["subject"],
        source=FactSource(row["source"]),
        status=FactStatus(row["status"]),
        created_at=parse_time(row["created_at"]),
        updated_at=parse_time(row["updated_at"]),
        salience=row["salience"],
        access_count=row["access_count"],
        turn_ids=load_ids(row["turn_ids"]),
        supersedes=row["supersedes"],
        superseded_by=row["superseded_by"],
        has_vector=bool(row["has_vector"]),
        scope=row["scope"],
    )


def episode_from_row(row: Row) -> Episode:
    return Episode(
        id=row["id"],
        start=row["start_at"],
        end=row["end_at"],
        turn_ids=load_ids(row["turn_ids"]),
        summary=row["summary"],
        created_at=parse_time(row["created_at"]),
    )


CONTRADICTION_COLUMNS = (
    "k.id, k.fact_id, f.text AS fact_text, f.source AS fact_source, k.text, k.category, k.subject, "
    "k.source, k.turn_ids, k.status, k.created_at, k.resolved_at, k.resolution, k.new_fact_id"
)
CONTRADICTION_FROM = "contradictions k JOIN facts f ON f.id = k.fact_id"


def contradiction_from_row(row: Row) -> Contradiction:
    return Contradiction(
        id=row["id"],
        fact_id=row["fact_id"],
        fact_text=row["fact_text"],
        fact_source=FactSource(row["fact_source"]),
        text=row["text"],
        category=row["category"],
        subject=row["subject"],
        source=FactSource(row["source"]),
        turn_ids=load_ids(row["turn_ids"]),
        status=ContradictionStatus(row["status"]),
        created_at=parse_time(row["created_at"]),
        resolved_at=parse_time(row["resolved_at"]) if row["resolved_at"] else None,
        resolution=row["resolution"],
        new_fact_id=row["new_fact_id"],
    )
