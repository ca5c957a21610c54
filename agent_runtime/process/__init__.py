"""The agent process: its entry point, its settings, and what it is doing right now."""
