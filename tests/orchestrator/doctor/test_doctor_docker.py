"""`flotilla doctor` against the real Docker daemon: an agent held stopped whose container runs
(as a restore used to leave it) and a container of an agent no longer in fleet.yaml are found,
each with the command that fixes it, and the exit code says there are errors."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.backends.base import LABEL_AGENT, LABEL_FLEET
from orchestrator.images.build import ImageBuildResult
from orchestrator.lifecycle import Controls
from orchestrator.state.db import Database
from orchestrator.state.paths import StatePaths
from orchestrator.testing.cli import run_flotilla

pytestmark = pytest.mark.docker

FLEET = """\
version: 1
fleet: {name}
agents:
  kept:
    role: stopped by the operator
"""


@pytest.fixture
def fleet(agent_image: ImageBuildResult, docker_client: Any, tmp_path: Path) -> Iterator[tuple[Path, str]]:
    name = f"flt-test-doctor-{secrets.token_hex(3)}"
    (tmp_path / "fleet.yaml").write_text(FLEET.format(name=name))
    paths = StatePaths.for_fleet_file(tmp_path / "fleet.yaml")
    paths.ensure()
    paths.runtime_file.write_text("docker\n")
    db = Database(paths.db)
    Controls(db).set("kept", "stopped")
    db.close()
    started = []
    try:
        for agent in ("kept", "gone"):
            started.append(
                docker_client.containers.run(
                    agent_image.tag,
                    ["120"],
                    entrypoint=["sleep"],
                    name=f"{name}-{agent}",
                    labels={LABEL_FLEET: name, LABEL_AGENT: agent},
                    network_mode="none",
                    detach=True,
                )
            )
        yield tmp_path, agent_image.tag
    finally:
        for container in started:
            container.remove(force=True)


def test_doctor_finds_a_stopped_agent_that_runs_and_a_leftover_container(fleet: tuple[Path, str]) -> None:
    folder, image = fleet
    shown = run_flotilla(folder, "doctor", "--json", "--image", image)

    assert shown.returncode == 2, shown.stdout + shown.stderr
    findings = json.loads(shown.stdout)["findings"]
    by_check: dict[str, list[dict[str, Any]]] = {}
    for finding in findings:
        by_check.setdefault(finding["check"], []).append(finding)
    assert [f["severity"] for f in by_check["engine"]] == ["ok"]
    assert [f["severity"] for f in by_check["image"]] == ["ok"]
    (held,) = by_check["held_stopped"]
    assert held["severity"] == "error" and held["agent"] == "kept" and held["fix"] == "flotilla stop kept"
    (leftover,) = by_check["leftovers"]
    assert leftover["severity"] == "warning" and "agent gone" in leftover["summary"]
    assert leftover["fix"].startswith("docker rm -f ")
    text = run_flotilla(folder, "doctor", "--image", image).stdout
    assert "fix: flotilla stop kept" in text and "overall: error" in text
