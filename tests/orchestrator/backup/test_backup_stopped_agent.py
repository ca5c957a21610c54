"""A fleet with one agent stopped is backed up whole on the real Docker daemon: the stopped
agent's files are snapshotted by a throwaway container of its image (its volume read-only, no
network), the archive verifies, and restored on a "fresh machine" the agent recalls its facts."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.backends.base import LABEL_AGENT, LABEL_FLEET
from orchestrator.backends.docker_snapshot import LABEL_SNAPSHOT_OF
from orchestrator.images.build import ImageBuildResult
from orchestrator.testing.cli import free_port, run_flotilla

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[3]
FACT = "The night train to Porto leaves from platform 9"


def flotilla(folder: Path, *args: str, timeout: float = 300) -> str:
    result = run_flotilla(folder, *args, timeout=timeout)
    assert result.returncode == 0, f"flotilla {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def up(folder: Path, image: str) -> None:
    flotilla(folder, "up", "-d", "--runtime", "docker", "--port", str(free_port()), "--image", image)


@pytest.fixture
def stopped_backup(
    agent_image: ImageBuildResult, fleet: str, tmp_path: Path, docker_client: Any
) -> Iterator[dict[str, Any]]:
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    shutil.copytree(REPO / "examples", old / "examples")
    (old / "fleet.yaml").write_text(
        (REPO / "fleet.yaml").read_text().replace("fleet: demo", f"fleet: {fleet}")
    )
    facts: dict[str, Any] = {"old": old, "new": new, "archive": tmp_path / "fleet.tar"}
    try:
        up(old, agent_image.tag)
        flotilla(old, "memory", "add", "writer", FACT)
        flotilla(old, "stop", "writer")
        started = time.monotonic()
        facts["backup"] = run_flotilla(old, "backup", "-o", str(facts["archive"]), "--json")
        facts["backup_s"] = time.monotonic() - started
        facts["leftovers"] = docker_client.containers.list(all=True, filters={"label": LABEL_SNAPSHOT_OF})
        flotilla(old, "down", "-v")
        facts["verify"] = run_flotilla(
            facts["archive"].parent, "verify", str(facts["archive"]), file=None, timeout=300
        )
        new.mkdir()
        flotilla(new, "restore", str(facts["archive"]))
        up(new, agent_image.tag)
        facts["restored_status"] = json.loads(flotilla(new, "ps", "--json"))
        facts["restored_units"] = {
            c.labels.get(LABEL_AGENT): c.status
            for c in docker_client.containers.list(all=True, filters={"label": f"{LABEL_FLEET}={fleet}"})
        }
        yield facts
    finally:
        for folder in (new, old):
            if (folder / "fleet.yaml").exists():
                run_flotilla(folder, "down", "-v")


def test_a_stopped_agent_is_backed_up_whole_and_restored(stopped_backup: dict[str, Any]) -> None:
    backup = stopped_backup["backup"]
    assert backup.returncode == 0, backup.stdout + backup.stderr
    parts = {a["name"]: a for a in json.loads(backup.stdout)["agents"]}
    assert parts["writer"]["complete"] and parts["writer"]["stopped"] and parts["writer"]["has_memory"]
    assert not parts["researcher"]["stopped"] and parts["researcher"]["complete"]
    assert not stopped_backup["leftovers"]  # the throwaway container is gone
    verify = stopped_backup["verify"]
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "writer (stopped)" in verify.stdout
    # Stopped in the backup, stopped after the restore: its container is made, not started.
    restored = {a["name"]: a for a in stopped_backup["restored_status"]["agents"]}
    assert restored["writer"]["held"] == "stopped", restored["writer"]
    assert stopped_backup["restored_units"].get("writer") != "running", stopped_backup["restored_units"]
    assert restored["writer"]["state"] != "running"
    flotilla(stopped_backup["new"], "start", "writer")
    found = flotilla(stopped_backup["new"], "memory", "search", "writer", "night train Porto", "--json")
    assert FACT in found
    print(f"\nbackup with one agent stopped: {stopped_backup['backup_s']:.2f}s")
