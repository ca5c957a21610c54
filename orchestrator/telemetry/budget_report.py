"""Each configured budget cap with what was spent of it, what is left and when it resets,
per agent and for the fleet: what the dashboard's gauges show."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, Field

from orchestrator.config.models import BudgetConfig, FleetConfig
from orchestrator.gateway.budget import BUDGET_KINDS, day_window, month_window
from orchestrator.gateway.ledger import Ledger, Spend
from orchestrator.state.db import Database


class BudgetGauge(BaseModel):
    agent: str | None = Field(description="None for a fleet-wide cap")
    period: str = Field(description="daily or monthly (UTC)")
    unit: str = Field(description="usd or tokens")
    limit: float
    spent: float
    remaining: float
    fraction: float = Field(description="spent / limit, 1.0 or more when the cap is reached")
    resets_at: datetime


class BudgetReport(BaseModel):
    gauges: list[BudgetGauge]
    blocked: list[str] = Field(
        description="Agents whose calls are refused: a cap of theirs or the fleet's is spent"
    )


def budget_report(db: Database, config: FleetConfig, now: datetime | None = None) -> BudgetReport:
    now = now or datetime.now(UTC)
    subjects: list[tuple[str | None, BudgetConfig]] = [
        (name, config.budget_of(name)) for name in sorted(config.agents)
    ]
    subjects.append((None, config.budget))
    gauges = [gauge for agent, caps in subjects for gauge in _gauges(db, agent, caps, now)]
    fleet_spent = any(g.agent is None and g.remaining <= 0 for g in gauges)
    blocked = [
        name
        for name in sorted(config.agents)
        if fleet_spent or any(g.agent == name and g.remaining <= 0 for g in gauges)
    ]
    return BudgetReport(gauges=gauges, blocked=blocked)


def _gauges(db: Database, agent: str | None, caps: BudgetConfig, now: datetime) -> list[BudgetGauge]:
    spends: dict[datetime, Spend] = {}
    gauges = []
    for kind in BUDGET_KINDS:
        cap = getattr(caps, kind)
        if cap is None:
            continue
        start, end = day_window(now) if kind.startswith("daily") else month_window(now)
        if start not in spends:
            spends[start] = Ledger.spend(db, agent, start, end)
        spent = spends[start].usd if kind.endswith("_usd") else float(spends[start].tokens)
        period, unit = kind.split("_", 1)
        limit = float(cap)
        gauges.append(
            BudgetGauge(
                agent=agent,
                period=period,
                unit=unit,
                limit=limit,
                spent=spent,
                remaining=max(0.0, limit - spent),
                fraction=spent / limit if limit > 0 else 1.0,
                resets_at=end,
            )
        )
    return gauges
