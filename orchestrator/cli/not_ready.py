"""Why agents are not ready: each one's state as the orchestrator sees it and what its engine
says of its unit (for swarm, the task's state and error), for `up` when its wait runs out."""

from __future__ import annotations

from typing import Any

from orchestrator.backends.base import Backend, BackendError, UnitInfo
from orchestrator.backends.select import Runtime, open_backend
from orchestrator.cli.client import ApiClient
from orchestrator.cli.errors import CliError
from orchestrator.fleet.reconcile import fleet_labels
from orchestrator.state.paths import StatePaths


def not_ready_lines(client: ApiClient, runtime: Runtime, paths: StatePaths) -> list[str]:
    """One line per agent meant to run that is not ready; an engine that fails too is said, not raised."""
    try:
        status = client.get("/api/v1/fleet")
    except CliError as exc:
        return [f"the orchestrator cannot say which: {exc}"]
    waiting = [agent for agent in status["agents"] if _meant_to_run(agent) and agent["health"] != "healthy"]
    if not waiting:
        return ["every awake agent checks in, but not all take messages yet (their runtime is still loading)"]
    try:
        backend = open_backend(runtime, paths)
        units = {unit.agent: unit for unit in backend.list(fleet_labels(status["fleet"]))}
    except BackendError as exc:
        return [f"{_seen(agent)}; the engine cannot be asked ({exc})" for agent in waiting]
    return [f"{_seen(agent)}; engine: {_engine_says(backend, units.get(agent['name']))}" for agent in waiting]


def _meant_to_run(agent: dict[str, Any]) -> bool:
    return not agent["hibernated"] and not agent.get("held")


def _seen(agent: dict[str, Any]) -> str:
    return f"{agent['name']}: {agent['state']}, {agent['health']}"


def _engine_says(backend: Backend, unit: UnitInfo | None) -> str:
    if unit is None:
        return "no unit"
    try:
        return backend.engine_says(unit)
    except BackendError as exc:
        return f"cannot be asked ({exc})"
