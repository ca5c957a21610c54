"""Leftover temporary files of the orchestrator's own writes, removed at start."""

from __future__ import annotations

from pathlib import Path

from orchestrator.state.cleanup import remove_leftover_temp_files
from orchestrator.state.paths import StatePaths


def test_leftovers_in_orchestrator_folders_go_and_agent_storage_is_not_touched(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path / ".flotilla")
    paths.ensure()
    workspace = paths.workspace("writer")
    workspace.mkdir(parents=True)
    (workspace / "SOUL.md").write_text("kept\n")
    leftovers = [
        workspace / ".SOUL.md.x1y2.tmp",
        paths.agent_dir("writer") / "versions" / "SOUL" / "index.tmp",
        paths.root / "endpoint.tmp",
        paths.root / "units" / "flotilla-demo-writer.tmp",
        paths.backups / "scheduled" / "flotilla-backup-demo-1.tar.tmp",
    ]
    staging = paths.backups / "scheduled" / ".flotilla-backup-abc"
    (staging / "agents").mkdir(parents=True)
    for path in leftovers:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    agent_storage = paths.agent_storage("writer")
    agent_storage.mkdir(parents=True)
    (agent_storage / "history.tmp").write_bytes(b"the agent's own")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "keep.tmp").write_bytes(b"not ours")
    (paths.agents / "link").symlink_to(outside)

    removed = remove_leftover_temp_files(paths)

    assert sorted(removed) == sorted([*leftovers, staging])
    assert not any(path.exists() for path in [*leftovers, staging])
    assert (workspace / "SOUL.md").exists()
    assert (agent_storage / "history.tmp").exists()
    assert (outside / "keep.tmp").exists()
    assert remove_leftover_temp_files(paths) == []
