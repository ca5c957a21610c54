"""The orchestrator's HTTP API: agent routes, the LLM gateway, the broker and operator routes."""

# The modules other packages may import; the rest are this package's own.
__all__ = ["app", "csrf", "operator", "surfaces"]
