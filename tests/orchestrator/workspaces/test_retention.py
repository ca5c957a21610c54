"""Workspace version history is pruned by the retention rule in fleet.yaml `limits:`."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agent_runtime.workspace.versioned import Workspace
from orchestrator.config.limits import LimitsConfig
from orchestrator.workspaces.retention import prune_file_history
from tests.orchestrator.conftest import build_services, write_fleet


def soul_versions(workspace: Workspace) -> list[int]:
    return [v.version for v in workspace.history("SOUL.md")]


def blobs(workspace: Workspace) -> list[str]:
    return sorted(p.name for p in (workspace.versions_root / "SOUL").glob("*.md"))


def test_only_the_newest_versions_are_kept(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path)
    for number in range(1, 11):
        workspace.write("SOUL.md", f"soul {number}\n", "agent")
    dropped = prune_file_history(workspace, "SOUL.md", LimitsConfig(workspace_versions=3))
    assert dropped == 7
    assert soul_versions(workspace) == [8, 9, 10]
    assert blobs(workspace) == ["000008.md", "000009.md", "000010.md"]
    assert workspace.read_version("SOUL.md", 9) == "soul 9\n"
    assert workspace.read("SOUL.md") == "soul 10\n"
    # Numbers go on from where they were; nothing is pruned twice.
    assert workspace.write("SOUL.md", "soul 11\n", "operator").version == 11
    assert prune_file_history(workspace, "SOUL.md", LimitsConfig(workspace_versions=3)) == 1
    assert soul_versions(workspace) == [9, 10, 11]


def test_old_versions_go_but_the_newest_always_stays(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path)
    for number in range(1, 4):
        workspace.write("SOUL.md", f"soul {number}\n", "agent")
    rule = LimitsConfig(workspace_versions=100, workspace_version_age="1d")
    assert prune_file_history(workspace, "SOUL.md", rule) == 0
    much_later = datetime.now(UTC) + timedelta(days=2)
    assert prune_file_history(workspace, "SOUL.md", rule, now=much_later) == 2
    assert soul_versions(workspace) == [3]
    assert not workspace.changed_outside("SOUL.md")


def test_a_link_in_place_of_the_version_folder_is_not_followed(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "agent")
    for number in range(1, 6):
        workspace.write("SOUL.md", f"soul {number}\n", "agent")
    elsewhere = tmp_path / "host-folder"
    elsewhere.mkdir()
    lines = [
        {"version": n, "author": "agent", "at": "2020-01-01T00:00:00Z", "size": 1, "sha256": "x"}
        for n in (1, 2)
    ]
    (elsewhere / "index.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (elsewhere / "000001.md").write_text("host file")
    real = workspace.versions_root / "SOUL"
    real.rename(tmp_path / "moved")
    real.symlink_to(elsewhere, target_is_directory=True)
    assert prune_file_history(workspace, "SOUL.md", LimitsConfig(workspace_versions=1)) == 0
    assert (elsewhere / "000001.md").read_text() == "host file"
    assert len((elsewhere / "index.jsonl").read_text().splitlines()) == 2


def test_an_operator_edit_over_the_api_applies_the_rule(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from orchestrator.api.app import create_app

    fleet_file = write_fleet(tmp_path / "fleet")
    fleet_file.write_text(fleet_file.read_text() + "limits:\n  workspace_versions: 2\n")
    services = build_services(fleet_file)
    headers = {"authorization": f"Bearer {services.operator_token}"}
    with TestClient(create_app(services), headers=headers) as operator:
        for number in range(5):
            answer = operator.put(
                "/api/v1/agents/alpha/workspace/SOUL.md", json={"content": f"soul {number}\n"}
            )
            assert answer.status_code == 200, answer.text
        history = operator.get("/api/v1/agents/alpha/workspace/SOUL.md/history").json()
    services.db.close()
    assert [entry["version"] for entry in history["versions"]] == [5, 6]
