"""Prometheus metrics of the fleet, computed at scrape time from the orchestrator's state."""

# The modules other packages may import; the rest are this package's own.
__all__ = ["collector"]
