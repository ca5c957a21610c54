"""Where `flotilla move` put an agent: a node that takes precedence over fleet.yaml's placement,
and the storage it was given there.

Kept in `.flotilla/placements.json` ({"nodes": {agent: node}, "storage": {agent: name}}), so the
agent stays on its node, with its storage, when its unit is made again (an apply that changes
its settings, an orchestrator restart, `down` and `up`). Naming the node in fleet.yaml's
`placement` makes the move permanent there too.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, Field

from orchestrator.state.paths import StatePaths


class Placements(BaseModel):
    nodes: dict[str, str] = Field(default_factory=dict, description="agent -> node hostname")
    storage: dict[str, str] = Field(default_factory=dict, description="agent -> its storage's name")


def _file(paths: StatePaths) -> Path:
    return paths.root / "placements.json"


def read_placements(paths: StatePaths) -> Placements:
    try:
        return Placements.model_validate(json.loads(_file(paths).read_text()))
    except FileNotFoundError:
        return Placements()


def node_constraint(node: str) -> str:
    return f"node.hostname=={node}"


def placement_of(paths: StatePaths, agent: str, configured: tuple[str, ...]) -> tuple[str, ...]:
    """The scheduling constraints of an agent: its moved-to node, else fleet.yaml's placement."""
    node = read_placements(paths).nodes.get(agent)
    return (node_constraint(node),) if node else configured


def storage_name_of(paths: StatePaths, agent: str) -> str | None:
    """The name of the storage a move gave the agent; None: the runtime's default one."""
    return read_placements(paths).storage.get(agent)


def record_placement(paths: StatePaths, agent: str, node: str, storage: str | None = None) -> None:
    placements = read_placements(paths)
    placements.nodes[agent] = node
    if storage is not None:
        placements.storage[agent] = storage
    target = _file(paths)
    partial = target.with_suffix(".partial")
    partial.write_text(placements.model_dump_json(indent=2))
    partial.replace(target)
