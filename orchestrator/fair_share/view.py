"""The operator's view of each agent's fair share, as the API serves it and the CLI prints it."""

from __future__ import annotations

from pydantic import BaseModel

from orchestrator.config.fair_share import RatesConfig, RetentionConfig
from orchestrator.fair_share.limiter import LimitState
from orchestrator.fair_share.retention import RetentionReport


class StoredBytes(BaseModel):
    """What the orchestrator's records of one agent take, counted as retention counts them."""

    agent: str
    events: int = 0
    messages: int = 0
    inbox: int = 0
    runs: int = 0

    @property
    def total(self) -> int:
        return self.events + self.messages + self.inbox + self.runs


class FairShareView(BaseModel):
    rates: RatesConfig
    retention: RetentionConfig
    per_agent_bound_bytes: int
    """What the retention sizes let each agent's records take, all kinds together."""
    agents: list[LimitState]
    """Limits each agent was refused by since the orchestrator started; `limited_since` is set
    while it still is."""
    stored: list[StoredBytes]
    last_retention: RetentionReport | None = None
