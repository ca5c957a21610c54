"""The operator's copy of each agent's workspace: reading it, the one write path into it, the
watcher that records direct edits, and the retention of its versions."""

# The modules other packages may import; the rest are this package's own.
__all__ = ["access", "models", "retention", "watcher"]
