"""Runtime backends: docker, swarm, process, and external (agents run by another engine)."""
