"""Agents run by another engine (a Kubernetes cluster) that dial this orchestrator.

The orchestrator starts no unit: the engine runs each agent from manifests the operator applied
(`flotilla export kubernetes`) and restarts it by its own policy. What this backend keeps is a
record per agent that the orchestrator expects (its settings hash and labels), so that reconcile
plans against it as against units; whether the agent runs is known from its check-ins. Stopping,
starting, logs and exec belong to the engine: each says so and names the command that does it.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel, ValidationError

from orchestrator.backends.base import (
    LABEL_AGENT,
    LABEL_FLEET,
    AgentSpec,
    Backend,
    BackendError,
    UnitInfo,
)

NEEDS_ADDRESS = (
    "the external runtime needs --agent-listen ADDRESS: the host's address that the cluster's "
    "agent pods reach (the address given to `flotilla export kubernetes --orchestrator-url`)"
)


class ExpectedAgent(BaseModel):
    """An agent the orchestrator expects to dial in: what reconcile compares with fleet.yaml."""

    name: str
    agent: str
    fleet: str
    config_hash: str
    labels: dict[str, str]


class ExpectedAgents(BaseModel):
    agents: dict[str, ExpectedAgent] = {}


class ExternalBackend(Backend):
    name = "external"
    isolation = (
        "set by the engine that runs the agents: the exported pod spec (uid 10001, read-only root, "
        "no capabilities, its own volume) and NetworkPolicies (agents reach only this orchestrator)"
    )
    self_healing = True
    """The engine restarts a pod that stops (its restart policy and liveness probe)."""
    keeps_tokens = True
    runs_on_demand = False

    def __init__(self, root: Path, agent_listen: str | None = None) -> None:
        self._file = root / "expected.json"
        self._agent_listen = agent_listen
        # An apply creates and removes units from several threads at once: each change of the
        # record is one read, change and write under this lock, or one would undo another.
        self._lock = threading.Lock()

    def _read(self) -> ExpectedAgents:
        try:
            return ExpectedAgents.model_validate_json(self._file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return ExpectedAgents()
        except ValidationError as exc:
            raise BackendError(f"{self._file} is not a list of expected agents: {exc}") from None

    def _write(self, expected: ExpectedAgents) -> None:
        self._file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        partial = self._file.with_suffix(".tmp")
        partial.write_text(expected.model_dump_json(indent=2), encoding="utf-8")
        partial.replace(self._file)

    def prepare_fleet(self, fleet: str) -> str:
        if not self._agent_listen:
            raise BackendError(NEEDS_ADDRESS)
        return self._agent_listen

    def teardown_fleet(self, fleet: str) -> None:
        return None

    def create(self, spec: AgentSpec) -> UnitInfo:
        entry = ExpectedAgent(
            name=spec.unit_name,
            agent=spec.agent,
            fleet=spec.fleet,
            config_hash=spec.config_hash,
            labels=spec.labels,
        )
        with self._lock:
            expected = self._read()
            expected.agents[spec.unit_name] = entry
            self._write(expected)
        return _unit(entry)

    def start(self, unit_id: str) -> None:
        """Nothing to start: the engine runs the agent's pod; it dials in when it runs."""
        self._get(unit_id)

    def stop(self, unit_id: str, timeout_s: float = 10.0) -> None:
        entry = self._get(unit_id)
        raise BackendError(
            f"the cluster runs agent {entry.agent!r}, not this orchestrator: stop it there "
            f"(kubectl scale statefulset agent-{entry.agent} --replicas=0), or restart it "
            f"(kubectl rollout restart statefulset agent-{entry.agent})"
        )

    def remove(self, unit_id: str) -> None:
        """Forget the agent; its pod, if any still runs, is the cluster's to delete."""
        with self._lock:
            expected = self._read()
            if expected.agents.pop(unit_id, None) is not None:
                self._write(expected)

    def inspect(self, unit_id: str) -> UnitInfo:
        return _unit(self._get(unit_id))

    def logs(self, unit_id: str, follow: bool = False, tail: int = 200) -> Iterator[str]:
        entry = self._get(unit_id)
        raise BackendError(
            f"the cluster keeps the log of agent {entry.agent!r}: kubectl logs statefulset/agent-{entry.agent}"
        )

    def list(self, labels: dict[str, str]) -> builtins.list[UnitInfo]:
        return [
            _unit(entry)
            for entry in self._read().agents.values()
            if all(entry.labels.get(key) == value for key, value in labels.items())
        ]

    def memory_usage(self, unit_id: str) -> int | None:
        return None

    def release_storage(self, fleet: str, state_root: Path, delete: bool) -> builtins.list[str]:
        """The agents' pods and volumes are the cluster's: this orchestrator only stopped
        expecting them, and says so."""
        return [
            "the agents' pods and their volumes are the cluster's and still there: "
            "`kubectl delete -k DIR` (the export's folder) removes them"
        ]

    def check_move(self, unit_name: str, node: str) -> None:
        raise BackendError(
            "the cluster places the agents' pods: move one with its StatefulSet's nodeSelector or affinity"
        )

    def _get(self, unit_id: str) -> ExpectedAgent:
        entry = self._read().agents.get(unit_id)
        if entry is None:
            raise BackendError(f"no agent {unit_id} is expected by this orchestrator")
        return entry


def _unit(entry: ExpectedAgent) -> UnitInfo:
    """An expected agent as a unit: `running` means handed to the engine, which runs it; whether
    it answers is what its check-ins say (supervision and `flotilla ps` read those)."""
    return UnitInfo(
        id=entry.name,
        name=entry.name,
        agent=entry.labels.get(LABEL_AGENT, entry.agent),
        fleet=entry.labels.get(LABEL_FLEET, entry.fleet),
        config_hash=entry.config_hash,
        state="running",
        labels=entry.labels,
    )
