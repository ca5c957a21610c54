"""Budget gauges: each configured cap, what is left of it and when it resets, per agent and fleet.

An agent whose budget is spent still runs and checks in, but every model call is refused; these
gauges are what an alert rule or a dashboard panel watches to see it coming.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from orchestrator.config.models import BudgetConfig, FleetConfig
from orchestrator.gateway.budget import BUDGET_KINDS, day_window, month_window
from orchestrator.gateway.ledger import Ledger, Spend
from orchestrator.gateway.models import BudgetKind
from orchestrator.state.db import Database

LABELS = ["agent", "scope", "period", "unit"]
KINDS: tuple[BudgetKind, ...] = BUDGET_KINDS


class BudgetCollector(Collector):
    """Every configured cap with what is left of it, from the gateway's daily spend roll-up and
    its own windows (UTC day, UTC month). The fleet-wide caps carry an empty `agent` label."""

    def __init__(self, db: Database, config: Callable[[], FleetConfig]) -> None:
        self._db = db
        self._config = config
        Ledger(db)  # its tables exist before the gateway's first call

    def collect(self) -> Iterator[GaugeMetricFamily]:
        limit = GaugeMetricFamily(
            "flotilla_budget_limit", "A configured budget cap (USD or tokens) per period", labels=LABELS
        )
        remaining = GaugeMetricFamily(
            "flotilla_budget_remaining",
            "What is left of a budget cap in the current period (0 when spent)",
            labels=LABELS,
        )
        resets = GaugeMetricFamily(
            "flotilla_budget_reset_timestamp_seconds",
            "When the current period of a budget cap ends (Unix time)",
            labels=LABELS,
        )
        config, now = self._config(), datetime.now(UTC)
        subjects: list[tuple[str, str | None, BudgetConfig]] = [
            (agent, agent, config.budget_of(agent)) for agent in sorted(config.agents)
        ]
        subjects.append(("", None, config.budget))
        for label, subject, caps in subjects:
            scope = "agent" if subject is not None else "fleet"
            spends: dict[datetime, Spend] = {}
            for kind in KINDS:
                cap = getattr(caps, kind)
                if cap is None:
                    continue
                start, end = day_window(now) if kind.startswith("daily") else month_window(now)
                if start not in spends:
                    spends[start] = Ledger.spend(self._db, subject, start, end)
                spent = spends[start].usd if kind.endswith("_usd") else float(spends[start].tokens)
                period, unit = kind.split("_", 1)
                labels = [label, scope, period, unit]
                limit.add_metric(labels, float(cap))
                remaining.add_metric(labels, max(0.0, float(cap) - spent))
                resets.add_metric(labels, end.timestamp())
        yield from (limit, remaining, resets)
