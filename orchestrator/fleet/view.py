"""The fleet in force: the one owner of the loaded fleet that the running parts read.

An apply replaces it once its plan is made; a dry run only reads it. Parts read `current()` each
time they need the fleet, so that they see an applied change at once.

An agent reloads its config between inbox items (each item carries the hash of the config in force),
so a turn under way when an apply lands still runs on the config it started with. For such a turn
the fleet replaced stays readable for `HANDOVER_S` (`previous()`), and no longer: the gateway lets
an agent finish with the models its previous config allowed, but an agent that never reloads does
not keep a model the operator took away.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from orchestrator.config.fleet import LoadedFleet
from orchestrator.secrets import SecretStore
from orchestrator.secrets.redaction import Redaction

# How long the fleet an apply replaced still serves the turns that started under it.
HANDOVER_S = 30.0


class FleetView:
    def __init__(self, fleet: LoadedFleet, clock: Callable[[], float] = time.monotonic) -> None:
        self._fleet = fleet
        self._lock = threading.Lock()
        self._secrets = _secret_store(fleet)
        self._clock = clock
        self._previous: LoadedFleet | None = None
        self._replaced_at = 0.0

    def current(self) -> LoadedFleet:
        return self._fleet

    def replace(self, fleet: LoadedFleet) -> None:
        """Put `fleet` in force (an apply of a changed fleet file)."""
        with self._lock:
            self._previous, self._replaced_at = self._fleet, self._clock()
            self._fleet = fleet
            self._secrets = _secret_store(fleet)

    def previous(self) -> LoadedFleet | None:
        """The fleet the last apply replaced, for `HANDOVER_S` after it; None after that."""
        if self._previous is None or self._clock() - self._replaced_at > HANDOVER_S:
            return None
        return self._previous

    def secrets(self) -> SecretStore:
        """The secrets the fleet in force declares (values read when first used, kept in memory)."""
        return self._secrets

    def redaction(self) -> Redaction:
        """What takes the secret values of the fleet in force out of a text (asked at each use:
        an apply changes the secrets)."""
        return self._secrets.redaction

    def redact_data(self, data: Any) -> Any:
        """`data` (JSON-like) with the secret values of the fleet in force taken out of every string."""
        return self._secrets.redaction.redact_data(data)


def _secret_store(fleet: LoadedFleet) -> SecretStore:
    store = SecretStore(fleet.config.secrets, fleet.root)
    store.load_all()  # redaction must know every value before the first answer comes back
    return store
