"""An HTTP MCP server with a bearer token, reached through the orchestrator by an agent in a Docker
container: the container reaches only the orchestrator, the orchestrator reaches the server on the
host's loopback with the token from its own environment, and the token never enters the container."""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.images.build import ImageBuildResult
from orchestrator.testing.cli import free_port, run_flotilla
from tests.docker_fixtures import unique
from tests.orchestrator.mcp_servers.running import SearchServer

pytest.importorskip("mcp")

pytestmark = pytest.mark.docker

TOKEN = f"sk-search-{secrets.token_hex(12)}"
FLEET = """\
version: 1
fleet: {name}
runtime: docker
defaults:
  always_on: true
agents:
  finder:
    role: finds harbour documents
    resources: {{ memory: 192m }}
    tools:
      mcp:
        - name: search
          url: "http://127.0.0.1:{port}/mcp"
          headers: {{Authorization: "Bearer ${{SEARCH_TOKEN}}"}}
          allow: [find]
"""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[SearchServer]:
    running = SearchServer(free_port(), TOKEN, tmp_path / "seen-tokens")
    running.start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def fleet_dir(tmp_path: Path, agent_image: ImageBuildResult, server: SearchServer) -> Iterator[Path]:
    folder = tmp_path / "fleet"
    folder.mkdir()
    (folder / "fleet.yaml").write_text(FLEET.format(name=unique("mcphttp"), port=server.port))
    env = {**os.environ, "SEARCH_TOKEN": TOKEN}
    try:
        started = run_flotilla(folder, "up", "-d", "--port", str(free_port()), timeout=900, env=env)
        assert started.returncode == 0, started.stdout + started.stderr
        yield folder
    finally:
        run_flotilla(folder, "down", "-v", env=env)


def test_an_agent_in_a_container_calls_an_http_mcp_server_through_the_orchestrator(
    fleet_dir: Path, server: SearchServer, docker_client: Any
) -> None:
    reply = run_flotilla(fleet_dir, "send", "finder", 'call search__find {"query": "moorings"}', timeout=300)
    assert reply.returncode == 0, reply.stderr
    assert "search__find returned:" in reply.stdout and "moorings.md" in reply.stdout
    assert TOKEN in server.tokens_seen()
    runs = json.loads(run_flotilla(fleet_dir, "runs", "finder", "--kind", "turn", "--json").stdout)
    calls = [call for run in runs for call in run["tool_calls"]]
    assert [(c["name"], c["source"], c["ok"]) for c in calls] == [("search__find", "orchestrator_mcp", True)]
    (container,) = [c for c in docker_client.containers.list() if "finder" in c.name]
    assert TOKEN not in json.dumps(container.attrs["Config"]["Env"])
    found = container.exec_run(["grep", "-r", "-l", "-s", TOKEN, "/data", "/tmp", "/proc/1/environ"])
    assert found.output.strip() == b"", found.output
