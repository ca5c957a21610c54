"""The files an agent keeps: its capped, versioned workspace files (identity, MEMORY.md,
HEARTBEAT.md), the model's confined file access, learnings, daily logs, the turn history and
INTERFACE.md as a contract."""
