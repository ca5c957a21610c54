"""Choose the runtime backend: docker by default when a daemon answers, or the process backend."""

from __future__ import annotations

from typing import Literal

from orchestrator.backends.base import Backend, BackendUnavailable
from orchestrator.state.paths import StatePaths

Runtime = Literal["docker", "process", "swarm", "external"]
RUNTIMES: tuple[Runtime, ...] = ("docker", "process", "swarm", "external")
IMAGE_RUNTIMES: tuple[Runtime, ...] = ("docker", "swarm")
"""Runtimes that run the agent image (and need it built)."""


def open_backend(runtime: Runtime, paths: StatePaths, agent_listen: str | None = None) -> Backend:
    """Raises BackendUnavailable with one line and a hint when the runtime cannot run here.
    `agent_listen`: the address agents dial for runtimes whose agents run elsewhere (external)."""
    if runtime == "external":
        from orchestrator.backends.external import ExternalBackend

        return ExternalBackend(paths.root / "external", agent_listen)
    if runtime == "process":
        from orchestrator.backends.process import ProcessBackend

        return ProcessBackend(paths.root / "process")
    if runtime == "swarm":
        from orchestrator.backends.swarm import SwarmBackend

        return SwarmBackend()
    try:
        from orchestrator.backends.docker import DockerBackend
    except ImportError as exc:
        raise BackendUnavailable(f"the docker backend cannot load ({exc}); use --runtime process") from None
    return DockerBackend()


def remembered_runtime(paths: StatePaths) -> Runtime | None:
    """The runtime the fleet was last started with, so later commands find its units."""
    try:
        value = paths.runtime_file.read_text().strip()
    except FileNotFoundError:
        return None
    known: dict[str, Runtime] = {name: name for name in RUNTIMES}
    return known.get(value)


def remember_runtime(paths: StatePaths, runtime: Runtime) -> None:
    paths.runtime_file.write_text(runtime + "\n")
