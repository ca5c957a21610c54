"""Budget gauges: each configured cap, what is left of it and when it resets, per agent and fleet.

An agent whose budget is spent still runs and checks in, but every model call is refused; these
gauges are what an alert rule or a dashboard panel watches to see it coming.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from orchestrator.config.models import FleetConfig
from orchestrator.events import EventBus
from orchestrator.gateway.budget import Budgets
from orchestrator.gateway.ledger import Ledger
from orchestrator.gateway.models import BudgetWindow
from orchestrator.state.db import Database

LABELS = ["agent", "scope", "period", "unit"]


def _labels(agent: str, window: BudgetWindow) -> list[str]:
    period, unit = window.kind.split("_", 1)
    return [agent, window.scope, period, unit]


class BudgetCollector(Collector):
    """Reads every cap's use through the gateway's own budget arithmetic (one source of truth).

    The fleet-wide caps are reported once, with an empty `agent` label.
    """

    def __init__(self, db: Database, events: EventBus, config: Callable[[], FleetConfig]) -> None:
        self._config = config
        self._budgets = Budgets(db, Ledger(db), events, config, lambda: datetime.now(UTC))
        self._lock = threading.Lock()

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
        with self._lock:
            windows = [
                (agent, window)
                for agent in sorted(self._config().agents)
                for window in self._budgets.status(agent).windows
                if window.scope == "agent"
            ]
            windows += [("", window) for window in self._budgets.fleet_windows()]
        for agent, window in windows:
            labels = _labels(agent, window)
            limit.add_metric(labels, window.limit)
            remaining.add_metric(labels, max(0.0, window.limit - window.spent))
            resets.add_metric(labels, window.resets_at.timestamp())
        yield from (limit, remaining, resets)
