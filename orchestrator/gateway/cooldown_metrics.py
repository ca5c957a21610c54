"""The gateway's model cooldowns as Prometheus gauges, one series per model an agent may call:
0 while the model is served, so that an alert can compare it over time."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from orchestrator.fleet.view import FleetView
from orchestrator.gateway.cooldown import ModelCooldown


class CooldownCollector(Collector):
    def __init__(self, fleet: FleetView, cooling: Callable[[], list[ModelCooldown]]) -> None:
        self._fleet = fleet
        self._cooling = cooling

    def collect(self) -> Iterator[GaugeMetricFamily]:
        cooling = {cooldown.model: cooldown for cooldown in self._cooling()}
        models = sorted(set(self._fleet.current().config.chat_models) | set(cooling))
        seconds = GaugeMetricFamily(
            "flotilla_model_cooldown_seconds",
            "Seconds until the fallback chains try the model again after it failed (0: it is tried)",
            labels=["model"],
        )
        failures = GaugeMetricFamily(
            "flotilla_model_failures_in_a_row",
            "Calls of the model that failed after their retries since it last answered, while it cools down",
            labels=["model"],
        )
        for model in models:
            found = cooling.get(model)
            seconds.add_metric([model], found.seconds_left if found else 0.0)
            failures.add_metric([model], found.failures if found else 0)
        yield from (seconds, failures)
