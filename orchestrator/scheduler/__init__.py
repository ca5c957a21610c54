"""Heartbeats: the scheduler, its deterministic pre-checks, HEARTBEAT.md rules, run records and
the sleep policy. See docs/heartbeat.md."""

# The modules other packages may import; the rest are this package's own.
__all__ = [
    "admission",
    "cadence",
    "clock",
    "models",
    "rules",
    "runs",
    "service",
    "sleep_policy",
    "store",
    "wake_boost",
]
