"""The `flotilla` command line."""

# The modules other packages may import; the rest are this package's own.
__all__ = [
    "alerts",
    "broker",
    "client",
    "costs",
    "errors",
    "history",
    "image",
    "launch_options",
    "log_since",
    "main",
    "memory",
    "operator",
    "render",
    "scheduler",
]
