"""The operator's hold on agents, kept across orchestrator restarts.

- stopped: the agent's unit is stopped and stays so; the supervisor and `apply` leave it down
  until `flotilla start`.
- paused: the unit keeps running and checking in, but is handed no inbox item, allowed no model
  call and given no heartbeat tick; its inbox keeps what arrives. Pausing the whole fleet
  (`flotilla pause --all`) is the kill switch for spend.

Reads come from memory (the inbox and the gateway ask on every claim and call); writes go to
the lifecycle's table of desired states (`orchestrator.lifecycle.desired`) first.
"""

from __future__ import annotations

import threading

from agent_runtime.protocol import utcnow
from orchestrator.lifecycle.desired import DesiredStates, Hold
from orchestrator.state.db import Database

WHOLE_FLEET = "*"
"""The row that pauses every agent (agent names are DNS labels, never `*`)."""


class Controls:
    def __init__(self, db: Database) -> None:
        self._desired = DesiredStates(db)
        self._lock = threading.Lock()
        self._holds: dict[str, Hold] = self._desired.holds()

    def hold_of(self, agent: str) -> Hold | None:
        """The agent's own hold, or `paused` when the whole fleet is."""
        with self._lock:
            own = self._holds.get(agent)
            return own or ("paused" if self._holds.get(WHOLE_FLEET) == "paused" else None)

    def own_hold(self, agent: str) -> Hold | None:
        """The agent's own hold, whatever the fleet's."""
        with self._lock:
            return self._holds.get(agent)

    def is_paused(self, agent: str) -> bool:
        return self.hold_of(agent) == "paused"

    def is_held(self, agent: str) -> bool:
        return self.hold_of(agent) is not None

    def stopped(self) -> frozenset[str]:
        with self._lock:
            return frozenset(agent for agent, hold in self._holds.items() if hold == "stopped")

    @property
    def fleet_paused(self) -> bool:
        with self._lock:
            return self._holds.get(WHOLE_FLEET) == "paused"

    def set(self, agent: str, hold: Hold | None) -> None:
        """Hold an agent (or, with WHOLE_FLEET, pause them all); None releases it."""
        self._desired.set_hold(agent, hold, utcnow())
        with self._lock:
            if hold is None:
                self._holds.pop(agent, None)
            else:
                self._holds[agent] = hold
