"""The runtime snapshot handed to an agent with each inbox item: its peers' states, what is left
of its budgets, how many other items wait, and the time. The agent shows it in the item's own
message (the volatile end of its prompt), so it is fresh at every item and never breaks the
prompt prefix a provider caches.

Each item also carries the hash of the agent's config in force when it is handed out: an agent
whose config differs reloads it before the item, so a message sent right after an apply runs on
the applied config (its model among them), never on the one the gateway no longer allows."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from agent_runtime.protocol import CONFIG_HASH_PROTOCOL, BudgetLeft, InboxItem, RuntimeSnapshot
from orchestrator.broker import Inbox
from orchestrator.config.fleet import LoadedFleet
from orchestrator.config.settings import runtime_hash
from orchestrator.gateway.budget import Budgets
from orchestrator.running_agents.health import HealthBoard


class SnapshotTaker:
    def __init__(
        self,
        fleet: Callable[[], LoadedFleet],
        health: HealthBoard,
        inbox: Inbox,
        budgets: Budgets,
        clock: Callable[[], datetime],
    ) -> None:
        self._fleet = fleet
        self._health = health
        self._inbox = inbox
        self._budgets = budgets
        self._clock = clock

    def take(self, agent: str) -> RuntimeSnapshot:
        config = self._fleet().config
        talks_to = config.agents[agent].talks_to if agent in config.agents else []
        peers = {}
        for peer in talks_to:
            sighting = self._health.last(peer)
            running = sighting is not None and self._health.is_checking_in(peer)
            peers[peer] = sighting.checkin.state if running and sighting else "not running"
        budgets = [
            BudgetLeft(
                scope=window.scope,
                kind=window.kind,
                left=max(window.limit - window.spent, 0.0),
                resets_at=window.resets_at,
            )
            for window in self._budgets.status(agent).windows
        ]
        return RuntimeSnapshot(
            at=self._clock(),
            peers=peers,
            budgets=budgets,
            inbox_waiting=self._inbox.counts(agent).queued,
        )

    def stamp(self, agent: str, item: InboxItem) -> InboxItem:
        fleet = self._fleet()
        sighting = self._health.last(agent)
        reads_hash = sighting is not None and sighting.checkin.protocol >= CONFIG_HASH_PROTOCOL
        config_hash = runtime_hash(fleet, agent) if reads_hash and agent in fleet.config.agents else None
        return item.model_copy(update={"snapshot": self.take(agent), "config_hash": config_hash})
