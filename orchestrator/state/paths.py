"""Where things live under .flotilla/ next to fleet.yaml."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class StatePaths:
    root: Path

    @classmethod
    def for_fleet_file(cls, fleet_file: Path) -> StatePaths:
        return cls(fleet_file.resolve().parent / ".flotilla")

    @property
    def db(self) -> Path:
        return self.root / "state.db"

    @property
    def agents(self) -> Path:
        return self.root / "agents"

    def agent_dir(self, agent: str) -> Path:
        return self.agents / agent

    def workspace(self, agent: str) -> Path:
        """The operator's copy of the agent's workspace: never mounted into a unit."""
        return self.agent_dir(agent) / "workspace"

    @property
    def backups(self) -> Path:
        """Copies of state.db taken before a migration."""
        return self.root / "backups"

    @property
    def tokens(self) -> Path:
        return self.root / "tokens"

    def token_file(self, agent: str) -> Path:
        """The agent's bearer token, handed to its unit read-only."""
        return self.tokens / agent

    @property
    def agent_data(self) -> Path:
        """The process runtime's agent storage (one folder per agent); Docker uses volumes."""
        return self.root / "agent-data"

    def agent_storage(self, agent: str) -> Path:
        return self.agent_data / agent

    @property
    def disks(self) -> Path:
        """Disk images that give each container's volume its quota."""
        return self.root / "disks"

    @property
    def previous_layout(self) -> Path:
        """Agent folders of the layout where /data was shared with the host, moved aside once."""
        return self.root / "previous-layout"

    @property
    def pid_file(self) -> Path:
        return self.root / "orchestrator.pid"

    @property
    def log_file(self) -> Path:
        return self.root / "orchestrator.log"

    @property
    def endpoint_file(self) -> Path:
        """Where a running orchestrator writes its loopback URL and operator token for the CLI."""
        return self.root / "endpoint.json"

    @property
    def runtime_file(self) -> Path:
        return self.root / "runtime"

    def ensure(self) -> None:
        self.agents.mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o700)
