"""fleet.yaml's seeds reach running agents, without overwriting what someone changed since.

Each workspace file fleet.yaml seeds (SOUL, INSTRUCTIONS, USER, INTERFACE, HEARTBEAT) records
the digest of the text it was last seeded with (`.flotilla/agents/<agent>/seeds.json`, beside
the operator's copy). When fleet.yaml's text changes:

- the live file is still the last seeded text: the new text is written through the one
  versioned write path (author `fleet.yaml`) and sent to the agent;
- the agent or the operator changed the file since: nothing is overwritten; the conflict is
  reported (`apply` and `apply --dry-run` name it) until `apply --force-seed AGENT FILE` takes
  fleet.yaml's text, or fleet.yaml is changed to match. A conflict is a standing state, not a
  pending change: no apply would change it, so `apply --dry-run` does not exit 1 for it alone.

A file never recorded (a fleet folder older than this record) counts as seeded when its text
equals fleet.yaml's, and as a conflict otherwise.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agent_runtime import Workspace
from orchestrator.config.fleet import LoadedFleet
from orchestrator.fleet.scaffold import seed_files
from orchestrator.state.paths import StatePaths

SEEDS_FILE = "seeds.json"
SEEDED_FILES = ("SOUL.md", "INSTRUCTIONS.md", "USER.md", "INTERFACE.md", "HEARTBEAT.md")
SeedStatus = Literal["same", "write", "conflict"]


@dataclass(frozen=True)
class SeedChange:
    agent: str
    file: str
    status: SeedStatus
    text: str

    def __str__(self) -> str:
        if self.status == "write":
            return f"seed     {self.agent}: {self.file} from fleet.yaml"
        return (
            f"conflict {self.agent}: {self.file} changed since fleet.yaml seeded it; kept as it is, "
            f"which no apply changes (`flotilla apply --force-seed {self.agent} {self.file}` takes "
            "fleet.yaml's text; a fleet.yaml matching the file ends the conflict)"
        )


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _record_path(paths: StatePaths, agent: str) -> Path:
    return paths.agent_dir(agent) / SEEDS_FILE


def _recorded(paths: StatePaths, agent: str) -> dict[str, str]:
    try:
        data = json.loads(_record_path(paths, agent).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def record_seed(paths: StatePaths, agent: str, file: str, text: str) -> None:
    recorded = _recorded(paths, agent) | {file: _digest(text)}
    path = _record_path(paths, agent)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(recorded, indent=1, sort_keys=True), encoding="utf-8")
    tmp.replace(path)


def plan_seeds(
    fleet: LoadedFleet, agent: str, paths: StatePaths, force: frozenset[str] = frozenset()
) -> list[SeedChange]:
    """What applying fleet.yaml's seeds to this agent's operator copy would do, file by file."""
    recorded = _recorded(paths, agent)
    workspace = Workspace(paths.agent_dir(agent))
    changes = []
    for file, text in seed_files(fleet, agent).items():
        wanted = _digest(text)
        live = workspace.read(file)
        last = recorded.get(file)
        if wanted == last or (last is None and live == text):
            status: SeedStatus = "same"
        elif file in force or live == "" or _digest(live) == last:
            status = "write"
        else:
            status = "conflict"
        changes.append(SeedChange(agent, file, status, text))
    return changes


def pending(changes: list[SeedChange]) -> list[SeedChange]:
    return [change for change in changes if change.status != "same"]
