"""Heartbeats: the scheduler, its deterministic pre-checks, HEARTBEAT.md rules, run records and
hibernation. See docs/heartbeat.md."""
