"""The small interface every runtime backend implements.

A backend knows how to run one agent as an isolated unit (a container, a process, a
service) and how to find the units it made again by their labels. It knows nothing of
fleets, reconcile plans or supervision: those live above it.
"""

from __future__ import annotations

import abc
import builtins
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal

LABEL_PREFIX = "io.flotilla"
LABEL_FLEET = f"{LABEL_PREFIX}.fleet"
LABEL_AGENT = f"{LABEL_PREFIX}.agent"
LABEL_CONFIG_HASH = f"{LABEL_PREFIX}.config-hash"
LABEL_MANAGED = f"{LABEL_PREFIX}.managed"
LABEL_ENDPOINT = f"{LABEL_PREFIX}.endpoint"
LABEL_STATE = f"{LABEL_PREFIX}.state"
"""The .flotilla folder that owns a unit: two folders cannot run fleets of the same name."""
LABEL_LAYOUT = f"{LABEL_PREFIX}.layout"
"""How the unit's storage is laid out; a unit of an older layout is recreated."""
STORAGE_LAYOUT = "2"
"""2: the agent's /data is its own storage, the token a read-only file; nothing is shared."""

UnitState = Literal["created", "running", "exited", "dead", "missing"]
Health = Literal["starting", "healthy", "unhealthy", "none"]


class BackendError(Exception):
    """A backend operation failed; the message is meant for the operator."""


class BackendUnavailable(BackendError):
    """The backend cannot run here at all (for example: no Docker daemon answers)."""


class NameConflict(BackendError):
    """A unit with the wanted name exists and was not created by Flotilla."""


@dataclass(frozen=True)
class AgentSpec:
    """Everything a backend needs to run one agent. Holds no secret (the token is a file path)."""

    fleet: str
    agent: str
    image: str
    data_dir: Path
    """The agent's own storage for backends that use a host folder (the process runtime);
    the orchestrator never opens a path in it. Docker gives each agent a volume instead."""
    orchestrator_url: str
    config_hash: str
    memory_bytes: int
    cpus: float
    pids: int
    env: dict[str, str] = field(default_factory=dict)
    token_file: Path | None = None
    """An orchestrator-owned file holding the agent's token, handed to the unit read-only."""
    disk_bytes: int | None = None
    """The quota of the agent's storage, where the backend can enforce one."""

    @property
    def state_root(self) -> Path:
        """The fleet's .flotilla folder."""
        return self.data_dir.parent.parent

    @property
    def unit_name(self) -> str:
        return f"flotilla-{self.fleet}-{self.agent}"

    @property
    def labels(self) -> dict[str, str]:
        return {
            LABEL_MANAGED: "true",
            LABEL_FLEET: self.fleet,
            LABEL_AGENT: self.agent,
            LABEL_CONFIG_HASH: self.config_hash,
            LABEL_ENDPOINT: self.orchestrator_url,
            LABEL_STATE: str(self.state_root),
            LABEL_LAYOUT: STORAGE_LAYOUT,
        }


@dataclass(frozen=True)
class UnitInfo:
    """What a backend can tell about one running (or stopped) agent unit."""

    id: str
    name: str
    agent: str
    fleet: str
    config_hash: str
    state: UnitState
    health: Health = "none"
    started_at: datetime | None = None
    exit_code: int | None = None
    restart_count: int = 0
    labels: dict[str, str] = field(default_factory=dict)


class Backend(abc.ABC):
    """create, start, stop, remove, inspect, logs and list by label."""

    name: str
    isolation: str
    """One line for `flotilla ps` on how strongly agents are isolated from each other and the host."""

    @abc.abstractmethod
    def prepare_fleet(self, fleet: str) -> str:
        """Make fleet-wide resources (a network) ready; return the address agents dial to."""

    @abc.abstractmethod
    def teardown_fleet(self, fleet: str) -> None:
        """Remove fleet-wide resources made by prepare_fleet."""

    @abc.abstractmethod
    def create(self, spec: AgentSpec) -> UnitInfo: ...

    @abc.abstractmethod
    def start(self, unit_id: str) -> None: ...

    def run(self, spec: AgentSpec) -> UnitInfo:
        """Create a unit and start it (a backend may do both with fewer calls)."""
        unit = self.create(spec)
        self.start(unit.id)
        return unit

    @abc.abstractmethod
    def stop(self, unit_id: str, timeout_s: float = 10.0) -> None: ...

    @abc.abstractmethod
    def remove(self, unit_id: str) -> None: ...

    @abc.abstractmethod
    def inspect(self, unit_id: str) -> UnitInfo: ...

    @abc.abstractmethod
    def logs(self, unit_id: str, follow: bool = False, tail: int = 200) -> Iterator[str]: ...

    @abc.abstractmethod
    def list(self, labels: dict[str, str]) -> list[UnitInfo]: ...

    @abc.abstractmethod
    def memory_usage(self, unit_id: str) -> int | None:
        """Resident memory of the unit in bytes, when known."""

    def release_storage(self, fleet: str, state_root: Path, delete: bool) -> builtins.list[str]:
        """After the fleet's units are gone: let go of what holds their storage (for example
        loop devices) and, with `delete`, remove the storage itself. What was done, one line each."""
        return []

    def storage_notes(self) -> dict[str, str]:
        """Agents whose storage has no quota although one was asked for, and why."""
        return {}
