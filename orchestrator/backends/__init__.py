"""Runtime backends: docker, swarm, process, and external (agents run by another engine)."""

# The modules other packages may import; the rest are this package's own.
__all__ = [
    "base",
    "docker",
    "docker_listing",
    "docker_sandbox",
    "docker_snapshot",
    "docker_storage",
    "external",
    "firewall",
    "process",
    "process_sandbox",
    "sandbox",
    "select",
    "swarm",
]
