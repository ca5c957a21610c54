"""Routes an agent calls with its own token: its config, check-ins, inbox, events and run
records; ask and tell to its peers; and the channel, one WebSocket that carries the same calls as
frames. Served on the agent address (see orchestrator.api.surfaces)."""

# The modules other packages may import; the rest are this package's own.
__all__ = ["approvals", "channel", "peers", "routes", "tools"]
