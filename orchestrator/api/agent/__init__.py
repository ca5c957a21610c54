"""What an agent asks of the orchestrator with its own token: each action once (`actions`), and
the transports over them: the link, one WebSocket that carries them as frames, and the HTTP
routes (`routes`, `peers`, `tools`, `approvals`). Served on the agent address (see
orchestrator.api.surfaces); the routes are listed in docs/agent-api.md."""

# The modules other packages may import; the rest are this package's own.
__all__ = ["actions", "approvals", "link", "peers", "routes", "tools"]
