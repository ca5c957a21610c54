"""The docker runtime with an MCP server from PyPI: `flotilla up` extends the agent image, offline,
with the packages fleet.yaml names, and the agent in its container calls the server's tools."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.config.loader import load_fleet
from orchestrator.images.build import ImageBuildResult, build_image
from orchestrator.images.extension import extension_packages
from orchestrator.testing.cli import free_port, run_flotilla
from tests.docker_fixtures import unique

pytestmark = pytest.mark.docker

FLEET = """\
version: 1
fleet: {name}
runtime: docker
defaults:
  always_on: true
agents:
  clock:
    role: tells the time
    resources: {{ memory: 192m }}
    tools:
      mcp:
        - name: time
          package: mcp-server-time
          command: [python3, -m, mcp_server_time, --local-timezone, UTC]
      rules:
        time__convert_time: {{approval: required}}
      approval_timeout: 3s
"""


@pytest.fixture
def fleet_dir(tmp_path: Path, agent_image: ImageBuildResult, docker_client: Any) -> Iterator[Path]:
    (tmp_path / "fleet.yaml").write_text(FLEET.format(name=unique("mcp")))
    try:
        started = run_flotilla(tmp_path, "up", "-d", "--port", str(free_port()), timeout=900)
        assert started.returncode == 0, started.stdout + started.stderr
        yield tmp_path
    finally:
        run_flotilla(tmp_path, "down", "-v")


def test_an_agent_container_runs_an_mcp_server_from_its_extended_image(
    fleet_dir: Path, agent_image: ImageBuildResult, docker_client: Any, source_snapshot: Path
) -> None:
    config = load_fleet(fleet_dir / "fleet.yaml").config
    assert extension_packages(config) == ["mcp-server-time", "mcp>=1.20"]
    (container,) = [c for c in docker_client.containers.list() if c.name == f"flotilla-{config.fleet}-clock"]
    assert any(tag.startswith(f"{agent_image.tag}-ext-") for tag in container.image.tags)
    # The extension inherits the agent image's labels: a later `image build` must still find the
    # agent image itself, not re-tag the extension as the agent image.
    again = build_image(source_snapshot, tag=agent_image.tag, client=docker_client)
    assert (again.built, again.image_id) == (False, agent_image.image_id)
    reply = run_flotilla(fleet_dir, "send", "clock", 'call time__get_current_time {"timezone": "Asia/Tokyo"}')
    assert reply.returncode == 0, reply.stderr
    assert "time__get_current_time returned:" in reply.stdout and '"timezone": "Asia/Tokyo"' in reply.stdout
    late = run_flotilla(
        fleet_dir,
        "send",
        "clock",
        'call time__convert_time {"source_timezone": "UTC", "time": "09:00", "target_timezone": "Asia/Tokyo"}',
    )
    assert "DENIED: time__convert_time was not run: no operator decided in time" in late.stdout
    runs = json.loads(run_flotilla(fleet_dir, "runs", "clock", "--kind", "turn", "--json").stdout)
    calls = [call for run in runs for call in run["tool_calls"]]
    assert {(c["name"], c["source"], c["approval"]) for c in calls} == {
        ("time__get_current_time", "mcp", None),
        ("time__convert_time", "mcp", "expired"),
    }
