"""API bodies of the scheduler's operator routes."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from agent_runtime.protocol import HeartbeatReason
from orchestrator.scheduler.runs import TickOutcome

SkipReason = Literal["busy", "budget", "missed", "held"]


class TickResult(BaseModel):
    """What one heartbeat tick did."""

    agent: str
    run_id: str
    outcome: TickOutcome
    trigger: Literal["schedule", "manual"]
    scheduled_at: datetime
    skipped: SkipReason | None = None
    item_id: str | None = Field(default=None, description="The heartbeat item queued for the agent")
    reasons: list[HeartbeatReason] = Field(default_factory=list)
    woke: bool = Field(default=False, description="The agent was hibernated and has been started")
    detail: str = ""

    def summary(self) -> str:
        if self.outcome == "skipped":
            return f"skipped: {self.skipped}" + (f" ({self.detail})" if self.detail else "")
        if self.outcome == "idle":
            return "idle: nothing to do, no model call"
        queued = f"queued heartbeat item {self.item_id}" if self.item_id else "woke the agent for queued work"
        return f"run: {queued}" + (" (agent woken)" if self.woke and self.item_id else "")


class RuleStatus(BaseModel):
    line: int
    when: str
    task: str
    last_done: datetime | None = None
    next_due: datetime
    due: bool


class RuleProblem(BaseModel):
    line: int
    text: str
    message: str


class HeartbeatStatus(BaseModel):
    """`flotilla heartbeat --check AGENT`: the schedule, the rules and any problem with them."""

    agent: str
    schedule: str | None = Field(description="None: this agent has no heartbeat")
    missed: Literal["coalesce", "skip"] | None = None
    next_run: datetime | None = None
    last_tick: datetime | None = None
    hibernated: bool = False
    hibernate_after_s: float | None = None
    heartbeat_model: str | None = None
    rules_source: str
    rules: list[RuleStatus] = Field(default_factory=list)
    errors: list[RuleProblem] = Field(default_factory=list)
