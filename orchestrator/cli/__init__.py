"""The `flotilla` command line."""

from orchestrator.fleet.validation import register_fleet_checks

# Every command that loads fleet.yaml validates it with the checks of the packages above config.
register_fleet_checks()

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
