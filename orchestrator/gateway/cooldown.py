"""Cooldowns of failing models: a model whose call failed after its retries is skipped by the
fallback chains of every agent for a while, longer each time it fails again in a row.

The steps follow what operators of the peer gateways expect (60 s, then 300 s, then 1500 s): a
short outage costs a minute of fallback, a provider that stays down is asked again only every 25
minutes. A success ends the model's cooldown and its count. Cooldowns are the gateway's memory
of the last minutes, not state: an orchestrator restart starts with none.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

from pydantic import BaseModel, Field

COOLDOWN_STEPS_S = (60.0, 300.0, 1500.0)
T = TypeVar("T")


class ModelCooldown(BaseModel):
    """A model the fallback chains skip until `until`."""

    model: str = Field(description="provider:model")
    failures: int = Field(description="Calls that failed after their retries, in a row")
    until: datetime = Field(description="When it is tried again (UTC)")
    seconds_left: float = Field(description="Seconds until it is tried again")
    error: str = Field(description="Why its last call failed")


@dataclass
class _Failing:
    failures: int
    until: datetime
    error: str


class Cooldowns:
    def __init__(self, clock: Callable[[], datetime], steps_s: Sequence[float] = COOLDOWN_STEPS_S) -> None:
        self._clock = clock
        self._steps = tuple(steps_s)
        self._failing: dict[str, _Failing] = {}

    def failed(self, model: str, error: str) -> ModelCooldown | None:
        """Record a call of `model` that failed after its retries; returns the cooldown it starts.
        Calls already under way when the model started cooling down fail too: they start none and
        do not lengthen it, or one outage seen by many calls at once would count as many in a row."""
        now = self._clock()
        earlier = self._failing.get(model)
        if earlier is not None and earlier.until > now:
            return None
        failures = earlier.failures + 1 if earlier is not None else 1
        seconds = self._steps[min(failures, len(self._steps)) - 1]
        until = now + timedelta(seconds=seconds)
        self._failing[model] = _Failing(failures, until, error)
        return ModelCooldown(model=model, failures=failures, until=until, seconds_left=seconds, error=error)

    def succeeded(self, model: str) -> None:
        self._failing.pop(model, None)

    def cooling(self, model: str) -> bool:
        failing = self._failing.get(model)
        return failing is not None and failing.until > self._clock()

    def order(self, chain: Sequence[tuple[str, T]]) -> list[tuple[str, T]]:
        """The links of a chain (model, anything) to try, in order: those not cooling down; when
        every one is, the one whose cooldown ends first (a chain is never left with nothing)."""
        ready = [link for link in chain if not self.cooling(link[0])]
        if ready or not chain:
            return ready
        return [min(chain, key=lambda link: self._failing[link[0]].until)]

    def report(self) -> list[ModelCooldown]:
        """The models cooling down now, the first to be tried again first."""
        now = self._clock()
        found = [
            ModelCooldown(
                model=model,
                failures=failing.failures,
                until=failing.until,
                seconds_left=round((failing.until - now).total_seconds(), 1),
                error=failing.error,
            )
            # A copy: /metrics reads this from another thread while calls record failures.
            for model, failing in list(self._failing.items())
            if failing.until > now
        ]
        return sorted(found, key=lambda cooldown: cooldown.until)
