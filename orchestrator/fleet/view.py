"""The fleet in force: the one owner of the loaded fleet that the running parts read.

An apply replaces it once its plan is made; a dry run only reads it. Parts read `current()` each
time they need the fleet, so that they see an applied change at once.

Parts that read the fleet or its redaction on every tick or record hold them as data: the view
hands each change to whoever asked to `watch` (a fleet put in force) or `watch_redaction` (the
secret values to take out of what is stored), so reading them asks the view nothing.

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

from orchestrator.config.fleet import LoadedFleet
from orchestrator.secrets import SecretStore
from orchestrator.state.redaction import Redaction

FleetWatcher = Callable[[LoadedFleet], None]
RedactionWatcher = Callable[[Redaction], None]

# How long the fleet an apply replaced still serves the turns that started under it.
HANDOVER_S = 30.0


class FleetView:
    def __init__(self, fleet: LoadedFleet, clock: Callable[[], float] = time.monotonic) -> None:
        self._fleet = fleet
        self._lock = threading.Lock()
        self._fleet_watchers: list[FleetWatcher] = []
        self._redaction_watchers: list[RedactionWatcher] = []
        self._secrets = self._secret_store(fleet)
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
            self._secrets = self._secret_store(fleet)
            watchers = list(self._fleet_watchers)
        for use in watchers:
            use(fleet)
        self._redaction_changed()

    def watch(self, use: FleetWatcher) -> None:
        """`use` gets each fleet put in force from now on (the one in force now is `current()`)."""
        with self._lock:
            self._fleet_watchers.append(use)

    def watch_redaction(self, use: RedactionWatcher) -> None:
        """`use` gets the redaction in force now, then each new one: after an apply, and when a
        secret is read for the first time."""
        with self._lock:
            self._redaction_watchers.append(use)
        use(self.redaction())

    def _redaction_changed(self) -> None:
        with self._lock:
            watchers = list(self._redaction_watchers)
        redaction = self.redaction()
        for use in watchers:
            use(redaction)

    def _secret_store(self, fleet: LoadedFleet) -> SecretStore:
        store = SecretStore(fleet.config.secrets, fleet.root)
        store.load_all()  # redaction must know every value before the first answer comes back
        store.on_new_value = self._redaction_changed
        return store

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
