"""What the container engine (or the host, for local processes) can give one agent."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Capacity:
    cpus: float
    memory_bytes: int
    source: str
    """Who said so, for messages: 'the Docker engine', 'this host'."""


def host_capacity() -> Capacity | None:
    """This machine's CPUs and memory, when the OS tells them."""
    try:
        pages = os.sysconf("SC_PHYS_PAGES")
        page_size = os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return None
    cpus = os.cpu_count()
    if cpus is None or pages <= 0 or page_size <= 0:
        return None
    return Capacity(cpus=float(cpus), memory_bytes=pages * page_size, source="this host")


def docker_capacity(info: dict[str, object]) -> Capacity | None:
    """From `docker info`: the engine's CPUs and memory (those of its VM on Docker Desktop)."""
    cpus, memory = info.get("NCPU"), info.get("MemTotal")
    if not isinstance(cpus, int) or not isinstance(memory, int) or cpus <= 0 or memory <= 0:
        return None
    return Capacity(cpus=float(cpus), memory_bytes=memory, source="the Docker engine")
