"""The operator's access to an agent's memory, which lives in the agent's own storage and is
asked of the agent over its link."""

# The modules other packages may import; the rest are this package's own.
__all__ = ["access", "forgetting", "models"]
