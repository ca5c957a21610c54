"""Backups of a fleet: one tar archive with a manifest (`flotilla backup`, `verify`, `restore`)."""

# The modules other packages may import; the rest are this package's own.
__all__ = [
    "archive",
    "fleet_backups",
    "link_restore",
    "manifest",
    "push",
    "restore",
    "schedule",
    "snapshot",
    "stopped_agents",
    "verify",
]
