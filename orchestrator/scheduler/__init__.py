"""Heartbeats: the scheduler, its deterministic pre-checks, HEARTBEAT.md rules, run records and
hibernation. See docs/heartbeat.md."""

# The modules other packages may import; the rest are this package's own.
__all__ = [
    "admission",
    "cadence",
    "clock",
    "hibernation",
    "models",
    "rules",
    "runs",
    "service",
    "store",
    "wake_boost",
]
