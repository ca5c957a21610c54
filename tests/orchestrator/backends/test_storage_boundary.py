"""An agent that controls its own container tries to make the orchestrator touch host files.

Each test plays the attacker with `docker exec` as the agent's uid (10001) inside a real agent
container of a fleet started with `flotilla up -d`, then checks that nothing outside the
agent's own storage was read, written or overwritten. The fleet runs for the module.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from orchestrator.backends.base import LABEL_AGENT, LABEL_FLEET
from orchestrator.cli.client import ApiClient
from orchestrator.images.build import ImageBuildResult
from orchestrator.state.endpoint import read_endpoint
from orchestrator.state.paths import StatePaths
from orchestrator.testing.cli import run_flotilla, run_flotilla_ok

pytestmark = pytest.mark.docker

AGENT = "target"
AGENT_UID = "10001"
DEADLINE_S = 90.0
# Long enough for the orchestrator to have noticed a change in a folder it watches (its debounce
# is 0.4 s) and for a recreated container to have started.
SETTLE_S = 4.0


@dataclass
class Fleet:
    name: str
    folder: Path

    def flotilla(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        if check:
            return run_flotilla_ok(self.folder, *args, timeout=300)
        return run_flotilla(self.folder, *args, timeout=300)

    @property
    def paths(self) -> StatePaths:
        return StatePaths.for_fleet_file(self.folder / "fleet.yaml")

    def client(self) -> ApiClient:
        endpoint = read_endpoint(self.paths)
        assert endpoint is not None, "the orchestrator is not running"
        return ApiClient(endpoint)

    def container(self, docker_client: Any) -> Any:
        found = docker_client.containers.list(
            filters={"label": [f"{LABEL_FLEET}={self.name}", f"{LABEL_AGENT}={AGENT}"]}
        )
        assert len(found) == 1, found
        return found[0]

    def container_id(self, docker_client: Any) -> str | None:
        found = docker_client.containers.list(
            filters={"label": [f"{LABEL_FLEET}={self.name}", f"{LABEL_AGENT}={AGENT}"]}
        )
        return str(found[0].id) if len(found) == 1 else None

    def healthy(self) -> bool:
        client = self.client()
        try:
            agents = {a["name"]: a for a in client.get("/api/v1/fleet")["agents"]}
        finally:
            client.close()
        return agents.get(AGENT, {}).get("health") == "healthy"


def free_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return str(sock.getsockname()[1])


def wait_for(condition: Any, what: str, deadline_s: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.3)
    raise AssertionError(f"gave up waiting for {what} after {deadline_s:.0f}s")


def as_agent(container: Any, script: str) -> str:
    """Run a shell script inside the agent's container as the agent's own user."""
    code, output = container.exec_run(["/bin/sh", "-c", script], user=f"{AGENT_UID}:{AGENT_UID}")
    text = output.decode("utf-8", "replace")
    assert code == 0, f"the attack script failed ({code}): {text}"
    return text


@pytest.fixture(scope="module")
def fleet(
    docker_client: Any, agent_image: ImageBuildResult, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Fleet]:
    name = f"flt-test-boundary-{secrets.token_hex(3)}"
    folder = tmp_path_factory.mktemp("boundary")
    (folder / "fleet.yaml").write_text(
        f"version: 1\nfleet: {name}\ndefaults:\n  always_on: true\nagents:\n"
        f"  {AGENT}:\n    role: an agent that plays the attacker\n"
    )
    running = Fleet(name, folder)
    try:
        running.flotilla("up", "-d", "--runtime", "docker", "--image", agent_image.tag, "--port", free_port())
        wait_for(running.healthy, "the agent to be healthy")
        yield running
    finally:
        running.flotilla("down", "-v", check=False)


@pytest.fixture
def host_secret(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A root-only 0600 file on the host, outside every agent's storage."""
    secret = f"host-secret-{secrets.token_hex(8)}"
    path = tmp_path / "root-only.txt"
    path.write_text(secret + "\n")
    path.chmod(0o600)
    yield path, secret
    shutil.rmtree(tmp_path, ignore_errors=True)


def _texts_under(folder: Path) -> Iterator[tuple[Path, str]]:
    for root, _dirs, files in os.walk(folder, followlinks=False):
        for name in files:
            path = Path(root) / name
            if path.is_symlink() or not path.is_file():
                continue
            yield path, path.read_bytes().decode("utf-8", "replace")


def test_a_workspace_file_symlinked_to_a_host_file_is_never_read(
    fleet: Fleet, docker_client: Any, host_secret: tuple[Path, str]
) -> None:
    secret_path, secret = host_secret
    container = fleet.container(docker_client)
    endpoint = fleet.paths.endpoint_file
    for target in (secret_path, endpoint):
        as_agent(container, f"rm -f /data/workspace/USER.md && ln -s {target} /data/workspace/USER.md")
        time.sleep(SETTLE_S)
        leaked = [str(path) for path, text in _texts_under(fleet.paths.root) if secret in text]
        assert not leaked, f"the host secret was copied into {leaked}"
        # Neither the host file's content nor the operator token reaches the agent's storage.
        token = endpoint.read_text()
        found = as_agent(container, f"grep -rl -e {secret} /data 2>/dev/null || true")
        assert found.strip() == "", found
        operator_token = _operator_token(token)
        found = as_agent(container, f"grep -rl -e '{operator_token}' /data 2>/dev/null || true")
        assert found.strip() == "", f"the operator token reached the agent: {found}"
        client = fleet.client()
        try:
            shown = client.get(f"/api/v1/agents/{AGENT}/workspace/USER.md")
        finally:
            client.close()
        assert secret not in shown["content"] and operator_token not in shown["content"]


def _operator_token(endpoint_json: str) -> str:
    import json

    token = json.loads(endpoint_json)["token"]
    assert isinstance(token, str) and len(token) > 16
    return token


def test_a_refused_folder_symlinked_to_a_host_folder_is_never_written(
    fleet: Fleet, docker_client: Any, tmp_path: Path
) -> None:
    host_folder = tmp_path / "host-folder"
    host_folder.mkdir()
    container = fleet.container(docker_client)
    over_cap = "x" * (64 * 1024)
    as_agent(
        container,
        f"rm -rf /data/refused && ln -s {host_folder} /data/refused && "
        f"printf '%s' '{over_cap}' > /data/workspace/SOUL.md.new && "
        "mv /data/workspace/SOUL.md.new /data/workspace/SOUL.md",
    )
    time.sleep(SETTLE_S)
    assert list(host_folder.iterdir()) == [], (
        "the orchestrator wrote into a host folder of the agent's choosing"
    )


def test_a_token_file_symlinked_to_a_host_file_is_never_overwritten(
    fleet: Fleet, docker_client: Any, tmp_path: Path
) -> None:
    victim = tmp_path / "victim.conf"
    victim.write_text("precious host configuration\n")
    victim.chmod(0o644)
    container = fleet.container(docker_client)
    as_agent(
        container,
        f"mkdir -p /data/.runtime && rm -f /data/.runtime/token.tmp && ln -s {victim} /data/.runtime/token.tmp",
    )
    before = container.id
    container.remove(force=True)  # the supervisor recreates a vanished agent from scratch
    wait_for(lambda: fleet.container_id(docker_client) not in (None, before), "the agent to be recreated")
    time.sleep(SETTLE_S)
    assert victim.read_text() == "precious host configuration\n"
    assert victim.stat().st_mode & 0o777 == 0o644
    wait_for(fleet.healthy, "the recreated agent to be healthy")


def test_memory_add_works_right_after_up_on_a_fresh_agent(
    docker_client: Any, agent_image: ImageBuildResult, tmp_path: Path
) -> None:
    """The memory database lives in the agent's storage: the agent creates it when asked."""
    name = f"flt-test-fresh-{secrets.token_hex(3)}"
    (tmp_path / "fleet.yaml").write_text(f"version: 1\nfleet: {name}\nagents:\n  {AGENT}:\n    role: fresh\n")
    fresh = Fleet(name, tmp_path)
    try:
        fresh.flotilla("up", "-d", "--runtime", "docker", "--image", agent_image.tag, "--port", free_port())
        added = fresh.flotilla("memory", "add", AGENT, "The harbour master is Ines Duarte")
        assert "saved as #1" in added.stdout, added.stdout
        listed = fresh.flotilla("memory", "list", AGENT)
        assert "The harbour master is Ines Duarte" in listed.stdout
        container = fresh.container(docker_client)
        assert as_agent(container, "test -f /data/memory.db && echo yes").strip() == "yes"
        assert not (fresh.paths.agent_dir(AGENT) / "memory.db").exists()
        # Stopped and started again: the volume keeps the agent's memory.
        fresh.flotilla("down")
        fresh.flotilla("up", "-d", "--runtime", "docker", "--image", agent_image.tag, "--port", free_port())
        assert "Ines Duarte" in fresh.flotilla("memory", "search", AGENT, "harbour master").stdout
    finally:
        fresh.flotilla("down", "-v", check=False)
    assert docker_client.volumes.list(filters={"label": f"{LABEL_FLEET}={name}"}) == []


def test_an_agents_own_workspace_write_goes_through_the_operator_copy(
    fleet: Fleet, docker_client: Any
) -> None:
    """The agent's tool writes are accepted (capped, versioned with the agent as author) by the
    orchestrator's copy, and an operator edit reaches the agent's working copy."""
    result = fleet.flotilla(
        "send", AGENT, 'call update_workspace {"name": "USER.md", "content": "The operator likes tea."}'
    )
    assert "ERROR" not in result.stdout, result.stdout
    operator_copy = fleet.paths.workspace(AGENT) / "USER.md"
    assert operator_copy.read_text() == "The operator likes tea."
    history = fleet.flotilla("workspace", "history", AGENT, "USER.md").stdout
    assert "agent" in history
    over_cap = "x" * 5000
    refused = fleet.flotilla(
        "send", AGENT, f'call update_workspace {{"name": "USER.md", "content": "{over_cap}"}}'
    )
    assert "cap" in refused.stdout
    assert operator_copy.read_text() == "The operator likes tea."
    operator_copy.write_text("Edited by hand on the host.\n")
    container = fleet.container(docker_client)
    wait_for(
        lambda: as_agent(container, "cat /data/workspace/USER.md") == "Edited by hand on the host.\n",
        "the operator's edit to reach the agent",
        deadline_s=15,
    )
