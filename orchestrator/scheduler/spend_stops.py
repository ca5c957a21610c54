"""Who the gateway's budgets stop from spending, and until when, as the gateway tells it
(`Budgets.watch_stops`): a tick reads it as data instead of asking the gateway."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Protocol


class StopTeller(Protocol):
    """What tells the scheduler of budget stops (the LLM gateway)."""

    def watch_stops(self, use: Callable[[str | None, datetime | None], None]) -> None: ...


class SpendStops:
    def __init__(self) -> None:
        self._until: dict[str | None, datetime] = {}

    def tell(self, agent: str | None, until: datetime | None) -> None:
        """`agent` (None: the whole fleet) may not spend before `until`; None: it may spend."""
        if until is None:
            self._until.pop(agent, None)
        else:
            self._until[agent] = until

    def stopped(self, agent: str, now: datetime) -> bool:
        """Whether the agent's own stop or the fleet's lasts past `now`."""
        stops = (self._until.get(agent), self._until.get(None))
        return any(until is not None and now < until for until in stops)
