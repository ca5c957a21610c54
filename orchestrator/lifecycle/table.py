"""The lifecycle's table in state.db: one row per agent (and the row `*` for the whole fleet's
hold), its desired state, the operator's hold on it, the supervisor's restarts of it and its
actual state as the engine last reported it. Each concern reads and writes its own columns
through its module (`desired`, `restarts`, `actual`)."""

from __future__ import annotations

SCHEMA = """
CREATE TABLE IF NOT EXISTS agent_lifecycle (
    agent TEXT PRIMARY KEY,
    desired TEXT NOT NULL DEFAULT 'awake' CHECK (desired IN ('awake', 'asleep')),
    desired_since TEXT,
    hold TEXT CHECK (hold IN ('stopped', 'paused')),
    hold_since TEXT,
    restarts INTEGER NOT NULL DEFAULT 0 CHECK (restarts >= 0),
    restart_reason TEXT NOT NULL DEFAULT '',
    restarted_at TEXT,
    actual TEXT CHECK (actual IN ('absent', 'stopped', 'running')),
    actual_since TEXT
);
"""
