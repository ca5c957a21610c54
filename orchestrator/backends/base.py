"""The small interface every runtime backend implements.

A backend knows how to run one agent as an isolated unit (a container, a process, a
service) and how to find the units it made again by their labels. It knows nothing of
fleets, reconcile plans or supervision: those live above it.
"""

from __future__ import annotations

import abc
import builtins
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from orchestrator.config.capacity import Capacity

if TYPE_CHECKING:
    from orchestrator.backends.sandbox import CodeSandbox

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
AGENT_OWNED = (
    "memory.db",
    "memory.db-wal",
    "history",
    "workspace/learnings",
    "workspace/memory",
    ".runtime/processed.jsonl",
)
"""What of a previous-layout folder or a restored backup belongs in the agent's own storage
(paths relative to /data)."""
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
    placement: tuple[str, ...] = ()
    """Scheduling constraints for backends that place units on nodes (Swarm), e.g. node.hostname==a."""
    carry_from: Path | None = None
    """A previous-layout folder whose agent-owned files (memory, history, learnings) go into the
    agent's new storage before its unit first starts. Copied by the backend inside the unit's
    own confinement, never read by the orchestrator."""
    carry_replaces: bool = False
    """A restored backup: `carry_from` replaces the agent's own files in existing storage too."""
    storage_name: str | None = None
    """The name of the agent's storage when it is not the runtime's default one (a swarm agent
    moved to fresh storage keeps the new volume's name here)."""

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
    node: str | None = None
    """The machine the unit runs on, for backends that span several."""


@dataclass(frozen=True)
class StoppedStorage:
    """The storage of an agent whose unit does not run, and the image its code comes from."""

    fleet: str
    agent: str
    image: str
    data_dir: Path
    """The host folder of backends that use one (the process runtime); Docker names a volume."""


class SnapshotRun(abc.ABC):
    """The agent's snapshot code run without the agent over its storage: the JSON lines it
    writes (agent_runtime.workspace.snapshot), to be checked like an answer over the link."""

    @abc.abstractmethod
    def blocks(self) -> Iterator[bytes]:
        """Its output, in blocks of any size, until it ends."""

    @abc.abstractmethod
    def finish(self) -> str | None:
        """Waits for the run to end and releases it; None when it ended well, else why not."""

    def abort(self) -> None:
        """Ends the run without waiting for the rest of its output, and releases it."""
        self.finish()


@dataclass(frozen=True)
class StoragePlace:
    """An agent's storage: its name and the node that holds it (None: not known, no task yet)."""

    name: str
    node: str | None


class Backend(abc.ABC):
    """create, start, stop, remove, inspect, logs and list by label."""

    name: str
    isolation: str
    self_healing: bool = False
    """The engine restarts a unit that stopped on its own (the supervisor then leaves it)."""
    """One line for `flotilla ps` on how strongly agents are isolated from each other and the host."""

    @abc.abstractmethod
    def prepare_fleet(self, fleet: str) -> str:
        """Make fleet-wide resources (a network) ready; return the address agents dial to."""

    fence_warning: str | None = None
    """Set by guard_fleet when the fleet's agents could not be fenced in; shown by `up` and `ps`."""

    def guard_fleet(self, fleet: str, address: str, port: int) -> str | None:
        """Let the fleet's agents reach address:port on the host and nothing else there.

        Called once the orchestrator listens, on every start. Returns a warning when the backend
        cannot enforce it; a backend without a network of its own has nothing to fence.
        """
        return None

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

    def list_agents(self, fleet: str, agents: Collection[str]) -> builtins.list[UnitInfo]:
        """The units of these agents of the fleet: what a pass over the awake agents of a mostly
        sleeping fleet reads. A backend that can ask for them alone does (less to read than
        the whole fleet); by default the fleet is listed and filtered."""
        wanted = set(agents)
        return [unit for unit in self.list({LABEL_FLEET: fleet}) if unit.agent in wanted]

    def engine_says(self, unit: UnitInfo) -> str:
        """What the engine says of the unit, for an operator asking why an agent is not ready: its
        state and exit code here; an engine that keeps its own reason (a task's error) adds it."""
        code = f", exit code {unit.exit_code}" if unit.exit_code is not None else ""
        return f"unit {unit.state}{code}"

    @abc.abstractmethod
    def memory_usage(self, unit_id: str) -> int | None:
        """Resident memory of the unit in bytes, when known."""

    def capacity(self) -> Capacity | None:
        """The most CPUs and memory one unit can be given, when this backend enforces limits."""
        return None

    def set_cpus(self, unit_id: str, cpus: float) -> bool:
        """Change a unit's CPU limit in place, running or not; False where this runtime cannot
        (nothing was changed)."""
        return False

    def exec(self, unit_id: str, command: builtins.list[str]) -> tuple[int, str]:
        """Run a command inside the unit, as the agent's user: its exit code and output. For
        debugging; a backend that cannot says so."""
        raise BackendError(f"the {self.name} runtime cannot run a command inside an agent")

    def sandbox(self) -> CodeSandbox:
        """What runs the commands of agents' `exec` tool; a backend that has nothing says so."""
        raise BackendError(f"the {self.name} runtime cannot run code for agents")

    def dial_url(self, fleet: str, bind_url: str) -> str:
        """The orchestrator's address as agents dial it, given the address it listens on for them.
        The same for most backends; one that puts a relay between agents and the orchestrator
        returns the relay's address (and makes sure it relays to `bind_url`)."""
        return bind_url

    def release_storage(self, fleet: str, state_root: Path, delete: bool) -> builtins.list[str]:
        """After the fleet's units are gone: let go of what holds their storage (for example
        loop devices) and, with `delete`, remove the storage itself. What was done, one line each."""
        return []

    runs_on_demand: bool = True
    """The orchestrator starts and stops the units itself, so an idle agent can sleep and be woken
    for work. False for an engine that keeps every agent running on its own (a Kubernetes
    cluster): every agent is then always on."""

    keeps_tokens: bool = False
    """An agent keeps its token when its unit is made again: the engine that runs it holds a copy
    the orchestrator cannot rewrite (a Kubernetes Secret)."""

    carries_storage: bool = True
    """The backend fills an agent's new storage with `carry_from` itself. One that cannot (its
    storage may be on another machine) leaves restored files to be handed over the link."""

    def check_move(self, unit_name: str, node: str) -> None:
        """Raise BackendError, changing nothing, when the unit cannot be moved to `node`."""
        raise BackendError(
            f"the {self.name} runtime runs every agent on this machine: there is no node to move to"
        )

    def storage_of(self, unit_name: str) -> StoragePlace:
        """Where the unit's storage is: its node and name. Only runtimes that span machines move."""
        raise BackendError(f"the {self.name} runtime cannot move agents")

    def fresh_storage_name(self, fleet: str, agent: str) -> str:
        """A name for new storage of the agent that no storage of it has had."""
        raise BackendError(f"the {self.name} runtime cannot move agents")

    def remove_storage(self, place: StoragePlace) -> str:
        """Remove storage left by a move (on whichever node holds it); what was done, one line."""
        raise BackendError(f"the {self.name} runtime cannot move agents")

    def storage_notes(self) -> dict[str, str]:
        """Agents whose storage has no quota although one was asked for, and why."""
        return {}

    def snapshot_stopped(self, storage: StoppedStorage) -> SnapshotRun:
        """Start the agent's snapshot code over the storage of an agent that does not run, in
        the agent's own confinement (read-only storage, no network); a backend that cannot
        says so."""
        raise BackendError(f"the {self.name} runtime cannot snapshot the storage of a stopped agent")
