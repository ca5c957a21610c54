"""Runtime backends: docker, process."""
