"""A count of recent requests per key over a sliding window: at most `limit` in any `window_s`.
Used where a limit is stated as "N a minute" to people (a hook's senders, a chat channel's)."""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Hashable

TRACKED_KEYS = 10_000
"""Beyond this many keys, those idle for a whole window are forgotten (a bound on memory when
every request comes from a new sender)."""


class SlidingWindows:
    def __init__(self, window_s: float) -> None:
        self._window_s = window_s
        self._lock = threading.Lock()
        self._recent: dict[Hashable, deque[float]] = {}

    def admit(self, key: Hashable, limit: int, now: float) -> float | None:
        """None when the request is admitted (and counted); else the whole seconds to wait."""
        with self._lock:
            if len(self._recent) > TRACKED_KEYS:
                self._recent = {
                    k: times
                    for k, times in self._recent.items()
                    if times and times[-1] > now - self._window_s
                }
            recent = self._recent.setdefault(key, deque())
            while recent and recent[0] <= now - self._window_s:
                recent.popleft()
            if len(recent) >= limit:
                return float(max(1, math.ceil(recent[0] + self._window_s - now)))
            recent.append(now)
            return None
