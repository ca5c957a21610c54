"""The fleet the scheduler's parts read, held as data: the fleet view hands over each fleet an
apply puts in force, so a tick reads its agents' settings without asking the view."""

from __future__ import annotations

from orchestrator.config.fleet import LoadedFleet
from orchestrator.config.models import FleetConfig
from orchestrator.fleet.view import FleetView


class FleetInForce:
    def __init__(self, view: FleetView) -> None:
        self.loaded: LoadedFleet = view.current()
        view.watch(self._use)

    def _use(self, fleet: LoadedFleet) -> None:
        self.loaded = fleet

    @property
    def config(self) -> FleetConfig:
        return self.loaded.config

    @property
    def name(self) -> str:
        return self.loaded.name
