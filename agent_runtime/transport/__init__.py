"""How the agent talks to the orchestrator: the first stdlib-only calls (boot), the
WebSocket channel, plain HTTP, the check-in thread, and what the agent serves over its channel."""
