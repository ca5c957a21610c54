"""The Docker engine's errors as BackendError: a command that tears a fleet down or lists it
reports what the engine said in one line, whatever call of the client library failed."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import docker.errors

from orchestrator.backends.base import BackendError

P = ParamSpec("P")
R = TypeVar("R")


def engine_call(doing: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Raise a BackendError naming `doing` (e.g. "removing the fleet's networks") and the engine's
    words for any error of the engine or of the connection to it (requests' errors are OSErrors)."""

    def wrap(call: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(call)
        def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return call(*args, **kwargs)
            except BackendError:
                raise
            except docker.errors.APIError as exc:
                raise BackendError(f"{doing}: the Docker engine said: {exc.explanation or exc}") from exc
            except (docker.errors.DockerException, OSError) as exc:
                raise BackendError(f"{doing}: {exc}") from exc

        return guarded

    return wrap


def gone(exc: docker.errors.APIError) -> bool:
    """The engine says the object is not there, whatever the status (a swarm manager answers 500
    for an overlay network that vanished between its listing and its removal)."""
    return isinstance(exc, docker.errors.NotFound) or "not found" in str(exc.explanation or exc).lower()
