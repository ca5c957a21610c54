"""How long to wait before trying a provider again, and whether to try at all."""

from __future__ import annotations

from dataclasses import dataclass

from agent_runtime import DEFAULT_JITTER, backoff_delay
from orchestrator.gateway.providers.base import UpstreamError


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff over a bounded number of attempts per model.

    A Retry-After the provider sends is honoured when it is at most `max_retry_after_s`;
    a longer one ends the attempts on that model (the fallback model, if any, is next).
    """

    attempts: int = 3
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0
    max_retry_after_s: float = 10.0
    jitter: float = DEFAULT_JITTER
    """Each delay is shortened by up to this fraction at random, so callers refused together do
    not all retry in the same instant."""

    def delay_after(self, attempt: int, error: UpstreamError) -> float | None:
        """Seconds to wait before attempt `attempt + 1`, or None to stop trying this model."""
        if not error.retryable or attempt >= self.attempts:
            return None
        if error.retry_after_s is not None:
            return error.retry_after_s if error.retry_after_s <= self.max_retry_after_s else None
        return backoff_delay(attempt, self.base_delay_s, self.max_delay_s, jitter=self.jitter)
