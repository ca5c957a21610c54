"""Exponential backoff with jitter: how every loop that retries, on either side of the agent
boundary, spaces its attempts. Standard library only: the agent's boot uses it before anything
else is loaded.

Each delay doubles from `base_s` up to `max_s`, then is shortened by up to `jitter` of itself at
random, so that many waiters that failed together (agents after an orchestrator restart, alerts
after a webhook outage) do not all come back in the same instant. The jitter only shortens: a
delay never exceeds its nominal value, which callers may rely on as an upper bound.
"""

from __future__ import annotations

import random
from collections.abc import Callable

DEFAULT_JITTER = 0.2
_MAX_DOUBLINGS = 62


def nominal_delay(failures: int, base_s: float, max_s: float) -> float:
    """The delay after the n-th consecutive failure (n >= 1), before jitter."""
    return float(min(max_s, base_s * 2 ** min(max(failures, 1) - 1, _MAX_DOUBLINGS)))


def backoff_delay(
    failures: int,
    base_s: float,
    max_s: float,
    *,
    jitter: float = DEFAULT_JITTER,
    rand: Callable[[], float] = random.random,
) -> float:
    """Seconds to wait after the n-th consecutive failure: the nominal delay, less up to
    `jitter` of it."""
    return nominal_delay(failures, base_s, max_s) * (1.0 - jitter * rand())


class Backoff:
    """Delays between consecutive failed attempts, reset by a success."""

    def __init__(
        self,
        base_s: float,
        max_s: float,
        *,
        jitter: float = DEFAULT_JITTER,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.base_s = base_s
        self.max_s = max_s
        self.jitter = jitter
        self._rand = rand
        self.failures = 0

    def next(self) -> float:
        """The delay after one more failure."""
        self.failures += 1
        return backoff_delay(self.failures, self.base_s, self.max_s, jitter=self.jitter, rand=self._rand)

    def reset(self) -> None:
        self.failures = 0
