"""The base of every wire model, and the clock their timestamps default to."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict


def utcnow() -> datetime:
    return datetime.now(UTC)


class WireModel(BaseModel):
    """Base for wire models: unknown fields are refused so both sides stay in step."""

    model_config = ConfigDict(extra="forbid")
