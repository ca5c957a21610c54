"""Prometheus metrics of the fleet, computed at scrape time from the orchestrator's state."""
