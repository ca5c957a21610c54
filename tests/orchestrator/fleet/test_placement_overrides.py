"""Where `flotilla move` put an agent wins over fleet.yaml's placement, and is kept in state."""

from __future__ import annotations

from pathlib import Path

from orchestrator.fleet.placement import placement_of, read_placements, record_placement
from orchestrator.state.paths import StatePaths


def test_a_recorded_node_replaces_the_configured_placement(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path)
    configured = ("node.hostname==a", "node.labels.disk==ssd")
    assert placement_of(paths, "researcher", configured) == configured
    record_placement(paths, "researcher", "b")
    assert placement_of(paths, "researcher", configured) == ("node.hostname==b",)
    assert placement_of(paths, "writer", configured) == configured


def test_the_latest_move_is_kept_for_each_agent(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path)
    record_placement(paths, "researcher", "b")
    record_placement(paths, "writer", "a")
    record_placement(paths, "researcher", "c")
    assert read_placements(StatePaths(tmp_path)).nodes == {"researcher": "c", "writer": "a"}
