"""An in-memory runtime backend: units are records, nothing runs.

For tests of what sits above the backend (scheduler, supervisor, reconcile): it implements the
whole `Backend` interface, keeps every call in `calls` for assertions, and can be told to fail
an operation (`fail_next`) to exercise error paths.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from orchestrator.backends.base import (
    AgentSpec,
    Backend,
    BackendError,
    NameConflict,
    UnitInfo,
)
from orchestrator.config.capacity import Capacity


class FakeBackend(Backend):
    name = "fake"
    isolation = "none: units are in-memory records of a test backend, nothing runs"

    def __init__(self, memory_bytes: int | None = 64 * 1024 * 1024, host_cpus: float | None = None) -> None:
        """`host_cpus`: the capacity it reports (None: it enforces no limits, as by default)."""
        self._units: dict[str, UnitInfo] = {}
        self._host_cpus = host_cpus
        self.cpus: dict[str, list[float]] = {}
        """Every CPU limit set on a unit in place, in order."""
        self._logs: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        self._memory_bytes = memory_bytes
        self._failures: dict[str, str] = {}
        self.calls: list[tuple[str, str]] = []
        self.fleets: set[str] = set()

    # --- test controls ---------------------------------------------------------------------

    def fail_next(self, operation: str, message: str = "injected failure") -> None:
        """Make the next call of `operation` (e.g. "start", "stop") raise BackendError."""
        with self._lock:
            self._failures[operation] = message

    def add_log(self, unit_id: str, line: str) -> None:
        with self._lock:
            self._logs.setdefault(unit_id, []).append(line)

    def count(self, operation: str, unit_id: str | None = None) -> int:
        with self._lock:
            return sum(1 for op, uid in self.calls if op == operation and unit_id in (None, uid))

    def _enter(self, operation: str, unit_id: str) -> None:
        """Record the call; raise an injected failure. Must hold the lock."""
        self.calls.append((operation, unit_id))
        message = self._failures.pop(operation, None)
        if message is not None:
            raise BackendError(f"{operation} {unit_id}: {message}")

    def _get(self, unit_id: str) -> UnitInfo:
        try:
            return self._units[unit_id]
        except KeyError:
            raise BackendError(f"no unit {unit_id!r}") from None

    # --- Backend ---------------------------------------------------------------------------

    def prepare_fleet(self, fleet: str) -> str:
        with self._lock:
            self._enter("prepare_fleet", fleet)
            self.fleets.add(fleet)
        return "127.0.0.1"

    def teardown_fleet(self, fleet: str) -> None:
        with self._lock:
            self._enter("teardown_fleet", fleet)
            self.fleets.discard(fleet)

    def create(self, spec: AgentSpec) -> UnitInfo:
        with self._lock:
            self._enter("create", spec.unit_name)
            if any(unit.name == spec.unit_name for unit in self._units.values()):
                raise NameConflict(f"a unit named {spec.unit_name!r} exists already")
            unit = UnitInfo(
                id=f"fake-{len(self._units) + 1}-{spec.agent}",
                name=spec.unit_name,
                agent=spec.agent,
                fleet=spec.fleet,
                config_hash=spec.config_hash,
                state="created",
                labels=dict(spec.labels),
            )
            self._units[unit.id] = unit
            return unit

    def start(self, unit_id: str) -> None:
        with self._lock:
            self._enter("start", unit_id)
            unit = self._get(unit_id)
            self._units[unit_id] = replace(
                unit, state="running", started_at=datetime.now(UTC), exit_code=None
            )

    def capacity(self) -> Capacity | None:
        if self._host_cpus is None:
            return None
        return Capacity(cpus=self._host_cpus, memory_bytes=self._memory_bytes or 0, source="the fake backend")

    def set_cpus(self, unit_id: str, cpus: float) -> bool:
        with self._lock:
            self._enter("set_cpus", unit_id)
            self._get(unit_id)
            self.cpus.setdefault(unit_id, []).append(cpus)
        return True

    def stop(self, unit_id: str, timeout_s: float = 10.0) -> None:
        with self._lock:
            self._enter("stop", unit_id)
            unit = self._get(unit_id)
            if unit.state == "running":
                self._units[unit_id] = replace(unit, state="exited", exit_code=0)

    def remove(self, unit_id: str) -> None:
        with self._lock:
            self._enter("remove", unit_id)
            self._get(unit_id)
            del self._units[unit_id]
            self._logs.pop(unit_id, None)

    def inspect(self, unit_id: str) -> UnitInfo:
        with self._lock:
            return self._get(unit_id)

    def logs(self, unit_id: str, follow: bool = False, tail: int = 200) -> Iterator[str]:
        with self._lock:
            self._get(unit_id)
            lines = list(self._logs.get(unit_id, []))
        return iter(lines[-tail:] if tail > 0 else lines)

    def list(self, labels: dict[str, str]) -> list[UnitInfo]:
        with self._lock:
            self._enter("list", ",".join(f"{key}={value}" for key, value in sorted(labels.items())))
            return [
                unit
                for unit in self._units.values()
                if all(unit.labels.get(key) == value for key, value in labels.items())
            ]

    def memory_usage(self, unit_id: str) -> int | None:
        with self._lock:
            unit = self._get(unit_id)
        return self._memory_bytes if unit.state == "running" else None


def fake_spec(fleet: str, agent: str, data_dir: str = "/tmp", config_hash: str = "test") -> AgentSpec:
    """An AgentSpec good enough for the fake backend."""
    return AgentSpec(
        fleet=fleet,
        agent=agent,
        image="flotilla/agent:test",
        data_dir=Path(data_dir),
        orchestrator_url="http://127.0.0.1:1",
        config_hash=config_hash,
        memory_bytes=128 * 1024 * 1024,
        cpus=0.25,
        pids=64,
    )
