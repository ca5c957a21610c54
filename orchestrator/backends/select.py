"""Choose the runtime backend: docker by default when a daemon answers, or the process backend."""

from __future__ import annotations

from typing import Literal

from orchestrator.backends.base import Backend, BackendUnavailable
from orchestrator.state.paths import StatePaths

Runtime = Literal["docker", "process"]
RUNTIMES: tuple[Runtime, ...] = ("docker", "process")


def open_backend(runtime: Runtime, paths: StatePaths) -> Backend:
    """Raises BackendUnavailable with one line and a hint when the runtime cannot run here."""
    if runtime == "process":
        from orchestrator.backends.process import ProcessBackend

        return ProcessBackend(paths.root / "process")
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
    return "process" if value == "process" else "docker" if value == "docker" else None


def remember_runtime(paths: StatePaths, runtime: Runtime) -> None:
    paths.runtime_file.write_text(runtime + "\n")
