"""The fleet in force: the one owner of the loaded fleet that the running parts read.

An apply replaces it once its plan is made; a dry run only reads it. Parts read `current()` each
time they need the fleet, so that they see an applied change at once.
"""

from __future__ import annotations

import threading

from orchestrator.config.fleet import LoadedFleet
from orchestrator.secrets import SecretStore


class FleetView:
    def __init__(self, fleet: LoadedFleet) -> None:
        self._fleet = fleet
        self._lock = threading.Lock()
        self._secrets = _secret_store(fleet)

    def current(self) -> LoadedFleet:
        return self._fleet

    def replace(self, fleet: LoadedFleet) -> None:
        """Put `fleet` in force (an apply of a changed fleet file)."""
        with self._lock:
            self._fleet = fleet
            self._secrets = _secret_store(fleet)

    def secrets(self) -> SecretStore:
        """The secrets the fleet in force declares (values read when first used, kept in memory)."""
        return self._secrets


def _secret_store(fleet: LoadedFleet) -> SecretStore:
    store = SecretStore(fleet.config.secrets, fleet.root)
    store.load_all()  # redaction must know every value before the first answer comes back
    return store
