"""Token buckets: `amount` per `period`, a burst of `amount`, refilled continuously."""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.config.fair_share import Rate


@dataclass
class Bucket:
    rate: Rate
    level: float
    at: float

    @classmethod
    def full(cls, rate: Rate, now: float) -> Bucket:
        return cls(rate, rate.amount, now)

    def refill(self, now: float) -> None:
        elapsed = max(0.0, now - self.at)
        self.level = min(self.rate.amount, self.level + elapsed * self.rate.per_second)
        self.at = now

    def wait_for(self, cost: float, now: float) -> float:
        """Seconds until `cost` fits (0 when it fits now); a cost above the burst counts as the burst."""
        self.refill(now)
        needed = min(cost, self.rate.amount) - self.level
        return 0.0 if needed <= 0 else needed / self.rate.per_second

    def take(self, cost: float) -> None:
        self.level -= min(cost, self.rate.amount)
