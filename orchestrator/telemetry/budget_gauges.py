"""Budget gauges: each configured cap, what is left of it and when it resets, per agent and fleet.

An agent whose budget is spent still runs and checks in, but every model call is refused; these
gauges are what an alert rule or a dashboard panel watches to see it coming.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from orchestrator.config.models import FleetConfig
from orchestrator.gateway.ledger import Ledger
from orchestrator.state.db import Database
from orchestrator.telemetry.budget_report import budget_report

LABELS = ["agent", "scope", "period", "unit"]


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
        for gauge in budget_report(self._db, self._config()).gauges:
            scope = "agent" if gauge.agent is not None else "fleet"
            labels = [gauge.agent or "", scope, gauge.period, gauge.unit]
            limit.add_metric(labels, gauge.limit)
            remaining.add_metric(labels, gauge.remaining)
            resets.add_metric(labels, gauge.resets_at.timestamp())
        yield from (limit, remaining, resets)
