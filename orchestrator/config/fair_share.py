"""`limits.rates` and `limits.retention` in fleet.yaml: each agent's fair share of what agents share.

Rates bound how fast an agent may report events and send tells and asks (as the sender, to one
recipient, and what all peers together may put into one recipient's inbox); retention bounds
how long and how much of what the orchestrator stores for each agent is kept. A rate is written
`COUNT/PERIOD` (`60/m`, `5/s`, `1000/h`, `16m/h` for bytes); the count is also the burst.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, field_validator

from orchestrator.config.units import parse_duration, parse_memory

_RATE = re.compile(r"^\s*([0-9.]+\s*[kmg]?i?b?)\s*/\s*(\d*\s*(?:ms|s|m|h|d))\s*$", re.IGNORECASE)
DAY_S = 86400.0
# The ledger's detail must outlive the longest budget window (a calendar month).
MIN_USAGE_DETAIL_S = 32 * DAY_S


@dataclass(frozen=True)
class Rate:
    """`amount` per `period_s` seconds, with a burst of `amount`."""

    amount: float
    period_s: float

    @property
    def per_second(self) -> float:
        return self.amount / self.period_s

    def describe(self, unit: str = "") -> str:
        amount = f"{self.amount:g}{unit}"
        return f"{amount} per {self.period_s:g}s"


def parse_rate(text: str, *, sizes: bool = False) -> Rate:
    """'60/m' -> Rate(60, 60.0); with sizes, '16m/h' -> Rate(16 MiB, 3600.0). Raises ValueError."""
    match = _RATE.match(text)
    if not match:
        example = "16m/h" if sizes else "60/m"
        raise ValueError(f"invalid rate {text!r}: use COUNT/PERIOD, e.g. {example}")
    count_text, period_text = match.group(1).strip(), match.group(2).strip()
    if not period_text[0].isdigit():
        period_text = "1" + period_text
    amount = float(parse_memory(count_text)) if sizes else _count(count_text, text)
    if amount <= 0:
        raise ValueError(f"invalid rate {text!r}: the count must be greater than zero")
    return Rate(amount, parse_duration(period_text))


def _count(count: str, text: str) -> float:
    try:
        return float(count)
    except ValueError:
        raise ValueError(
            f"invalid rate {text!r}: the count must be a number (sizes only for bytes)"
        ) from None


class RatesConfig(BaseModel):
    """How fast each agent may use what it shares with the rest of the fleet (429 above it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    events: str = Field(default="120/m", description="Events one agent may report")
    runs: str = Field(default="120/m", description="Run records one agent may post")
    tells: str = Field(
        default="60/m", description="Tells one agent may send, to anyone, refused ones included"
    )
    asks: str = Field(default="60/m", description="Asks one agent may send, to anyone, refused ones included")
    pair: str = Field(default="20/m", description="Tells and asks from one agent to one recipient")
    pair_bytes: str = Field(
        default="16m/h", description="Bytes of tell texts and ask inputs from one agent to one recipient"
    )
    intake: str = Field(
        default="60/m", description="Tells and asks all peers together may put into one agent's inbox"
    )
    pending: int = Field(
        default=20, ge=1, le=10_000, description="Unfinished items one agent may have in one peer's inbox"
    )

    @field_validator("events", "runs", "tells", "asks", "pair", "intake")
    @classmethod
    def _count_rate(cls, value: str) -> str:
        parse_rate(value)
        return value

    @field_validator("pair_bytes")
    @classmethod
    def _byte_rate(cls, value: str) -> str:
        parse_rate(value, sizes=True)
        return value

    def rate(self, name: str) -> Rate:
        """One of events, runs, tells, asks, pair, pair_bytes, intake."""
        value: str = getattr(self, name)
        return parse_rate(value, sizes=name == "pair_bytes")


class KeepRule(BaseModel):
    """What is kept of one kind of record: for at most `age`, and at most `size` bytes per agent."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    age: str = Field(description="Records older than this go (e.g. 30d)")
    size: str | int = Field(description="Per agent: past this, the oldest records go (e.g. 8m)")

    @field_validator("age")
    @classmethod
    def _age(cls, value: str) -> str:
        parse_duration(value)
        return value

    @field_validator("size")
    @classmethod
    def _size(cls, value: str | int) -> str | int:
        if parse_memory(value) < 64 * 1024:
            raise ValueError(f"{value!r} is below the floor of 64k")
        return value

    @property
    def age_s(self) -> float:
        return parse_duration(self.age)

    @property
    def size_bytes(self) -> int:
        return parse_memory(self.size)


def _keep(age: str, size: str) -> KeepRule:
    return KeepRule(age=age, size=size)


class RetentionConfig(BaseModel):
    """Retention of everything the orchestrator stores for agents, applied while it runs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    every: str = Field(default="1m", description="How often the rules are applied")
    events: KeepRule = Field(default_factory=lambda: _keep("30d", "4m"), description="Events, per agent")
    messages: KeepRule = Field(
        default_factory=lambda: _keep("30d", "1m"),
        description="The broker's log of asks and tells, per sender",
    )
    inbox: KeepRule = Field(
        default_factory=lambda: _keep("7d", "8m"),
        description="Finished inbox items (delivered, failed, expired, dropped), per recipient",
    )
    runs: KeepRule = Field(default_factory=lambda: _keep("90d", "2m"), description="Run records, per agent")
    usage_detail: str = Field(
        default="35d",
        description="Per-call rows of the model usage ledger; older ones live on as daily totals",
    )

    @field_validator("every")
    @classmethod
    def _every(cls, value: str) -> str:
        if not 1.0 <= parse_duration(value) <= DAY_S:
            raise ValueError(f"{value!r} must be between 1s and 1d")
        return value

    @field_validator("usage_detail")
    @classmethod
    def _usage_detail(cls, value: str) -> str:
        if parse_duration(value) < MIN_USAGE_DETAIL_S:
            raise ValueError(f"{value!r} is shorter than a budget month (32d at least)")
        return value

    @property
    def every_s(self) -> float:
        return parse_duration(self.every)

    @property
    def usage_detail_s(self) -> float:
        return parse_duration(self.usage_detail)

    @property
    def per_agent_bytes(self) -> int:
        """What the rules let the orchestrator keep for one agent, in stored bytes of records."""
        return sum(rule.size_bytes for rule in (self.events, self.messages, self.inbox, self.runs))
