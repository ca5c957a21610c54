"""`flotilla apply` adding an MCP server package to a running docker fleet: the dry run names the
image build, the CLI builds the fleet's extension of the agent image (offline; its output shown
only with -v or on failure) and the orchestrator recreates the agent whose servers changed with
it, its state kept; the agent then calls the server's tool. Later applies say nothing of images."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker.errors
import pytest

from orchestrator.config.loader import load_fleet
from orchestrator.images.build import ImageBuildResult
from orchestrator.testing.cli import free_port, run_flotilla
from tests.docker_fixtures import unique

pytestmark = pytest.mark.docker

BEFORE = """\
version: 1
fleet: {name}
runtime: docker
defaults:
  always_on: true
agents:
  clock:
    role: tells the time
    resources: {{ memory: 192m }}
"""
AFTER = (
    BEFORE
    + """\
    tools:
      mcp:
        - name: time
          package: mcp-server-time
          command: [python3, -m, mcp_server_time, --local-timezone, UTC]
"""
)


def own_clock(fleet_dir: Path) -> str:
    """This test's agent container (other fleets on the daemon may have a clock agent too)."""
    return f"flotilla-{load_fleet(fleet_dir / 'fleet.yaml').config.fleet}-clock"


@pytest.fixture
def fleet_dir(tmp_path: Path, agent_image: ImageBuildResult) -> Iterator[Path]:
    name = unique("mcpapply")
    (tmp_path / "fleet.yaml").write_text(BEFORE.format(name=name))
    (tmp_path / "after.yaml").write_text(AFTER.format(name=name))
    try:
        started = run_flotilla(tmp_path, "up", "-d", "--port", str(free_port()), timeout=900)
        assert started.returncode == 0, started.stdout + started.stderr
        yield tmp_path
    finally:
        run_flotilla(tmp_path, "down", "-v")


def send(folder: Path, text: str) -> str:
    result = run_flotilla(folder, "send", "clock", text, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_apply_adds_an_mcp_package_to_a_running_docker_fleet(
    fleet_dir: Path, agent_image: ImageBuildResult, docker_client: Any
) -> None:
    (before,) = [c for c in docker_client.containers.list() if c.name == own_clock(fleet_dir)]
    # One image may carry several tags (another checkout's build of the same sources).
    assert agent_image.tag in before.image.tags
    wrote = send(
        fleet_dir, 'call write_file {"path": "memory/notes.md", "content": "written before the apply"}'
    )
    assert "write_file returned:" in wrote
    assert "cannot call time__get_current_time" in send(fleet_dir, "call time__get_current_time {}")

    # The apply must build the extension itself: one left by an earlier run on this daemon goes.
    for image in docker_client.images.list(name=agent_image.tag.rsplit(":", 1)[0]):
        for tag in image.tags:
            if tag.startswith(f"{agent_image.tag}-ext-"):
                with contextlib.suppress(docker.errors.APIError):
                    docker_client.images.remove(tag)
    (fleet_dir / "fleet.yaml").write_text((fleet_dir / "after.yaml").read_text())
    planned = run_flotilla(fleet_dir, "apply", "--dry-run")
    assert planned.returncode == 5, planned.stdout + planned.stderr
    assert f"~ image    agents created or recreated would run {agent_image.tag}-ext-" in planned.stdout
    assert "built by this apply" in planned.stdout
    applied = run_flotilla(fleet_dir, "apply", timeout=900)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    said = applied.stdout + applied.stderr
    assert "image build:" not in said and len(said.splitlines()) < 10, said  # no pip or docker output
    assert f"built {agent_image.tag}-ext-" in said and "mcp-server-time" in said
    assert f"run {agent_image.tag}-ext-" in said
    assert "~ recreate clock" in said and "tools.mcp" in said

    (after,) = [c for c in docker_client.containers.list() if c.name == own_clock(fleet_dir)]
    assert after.id != before.id and any(
        tag.startswith(f"{agent_image.tag}-ext-") for tag in after.image.tags
    )
    reply = send(fleet_dir, 'call time__get_current_time {"timezone": "Asia/Tokyo"}')
    assert "time__get_current_time returned:" in reply and '"timezone": "Asia/Tokyo"' in reply
    kept = run_flotilla(fleet_dir, "workspace", "cat", "clock", "memory/notes.md")
    assert "written before the apply" in kept.stdout, kept.stderr
    runs = json.loads(run_flotilla(fleet_dir, "runs", "clock", "--kind", "turn", "--json").stdout)
    assert any(
        call["name"] == "time__get_current_time" and call["ok"] for run in runs for call in run["tool_calls"]
    )
    again = run_flotilla(fleet_dir, "apply")
    assert again.returncode == 0 and "nothing to change" in again.stdout, again.stdout + again.stderr
    assert "image" not in again.stdout + again.stderr  # not "... is up to date" on every apply
