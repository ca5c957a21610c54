"""The example fleet on the real Docker daemon, driven through the `flotilla` command line.

One fleet is started for the module (`flotilla up -d`) and removed at the end (`down -v`).
Waiting loops poll for a state with a generous deadline; they assert what happened, not how
fast it happened.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker.errors
import pytest

from orchestrator.backends.base import LABEL_AGENT, LABEL_CONFIG_HASH, LABEL_FLEET, LABEL_MANAGED
from orchestrator.cli.client import ApiClient
from orchestrator.state.endpoint import read_endpoint
from orchestrator.state.paths import StatePaths
from orchestrator.testing.cli import run_flotilla, run_flotilla_ok

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[3]
AGENTS = ("coordinator", "researcher", "writer")
DEADLINE_S = 90.0


def unique(topic: str) -> str:
    return f"flt-test-{topic}-{secrets.token_hex(3)}"


@dataclass
class RunningFleet:
    name: str
    folder: Path
    image: str
    port: int = 0

    def up(self, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Start (or restart) the orchestrator, always on the same port so agents can find it again."""
        self.port = self.port or _free_port()
        port = str(self.port)
        return self.flotilla(
            "up", "-d", "--runtime", "docker", "--port", port, "--image", self.image, check=check
        )

    def flotilla(
        self, *args: str, check: bool = True, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        if check:
            return run_flotilla_ok(self.folder, *args, timeout=timeout)
        return run_flotilla(self.folder, *args, timeout=timeout)

    def client(self) -> ApiClient:
        endpoint = read_endpoint(StatePaths.for_fleet_file(self.folder / "fleet.yaml"))
        assert endpoint is not None, "the orchestrator is not running"
        return ApiClient(endpoint)

    def status(self) -> dict[str, dict[str, Any]]:
        client = self.client()
        try:
            return {a["name"]: a for a in client.get("/api/v1/fleet")["agents"]}
        finally:
            client.close()

    def log(self) -> str:
        return (self.folder / ".flotilla" / "orchestrator.log").read_text(errors="replace")

    def container_ids(self, docker_client: Any) -> dict[str, str]:
        found = docker_client.containers.list(all=True, filters={"label": f"{LABEL_FLEET}={self.name}"})
        return {c.labels[LABEL_AGENT]: c.id for c in found}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(condition: Callable[[], bool], what: str, deadline_s: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    raise AssertionError(f"gave up waiting for {what} after {deadline_s:.0f}s")


@pytest.fixture(scope="module")
def image(docker_client: Any) -> Iterator[str]:
    """An image tag of this module's own, so that other builds of the shared tag cannot disturb it."""
    tag = f"{unique('e2e-image')}:latest"
    yield tag
    # Untag only: the same image may carry the shared tag too.
    with contextlib.suppress(docker.errors.ImageNotFound):
        docker_client.images.remove(tag)


@pytest.fixture(scope="module")
def running_fleet(image: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningFleet]:
    name = unique("e2e")
    folder = tmp_path_factory.mktemp("fleet")
    shutil.copytree(REPO / "examples", folder / "examples")
    shutil.copy(REPO / "PROJECT.md", folder / "PROJECT.md")
    text = (REPO / "fleet.yaml").read_text().replace("fleet: demo", f"fleet: {name}")
    (folder / "fleet.yaml").write_text(text)
    fleet = RunningFleet(name, folder, image)
    try:
        fleet.up()
        yield fleet
    finally:
        fleet.flotilla("down", "-v", check=False)


def all_healthy(fleet: RunningFleet) -> bool:
    return all(a["health"] == "healthy" for a in fleet.status().values())


def test_example_fleet_is_up_with_one_labelled_container_per_agent(
    running_fleet: RunningFleet, docker_client: Any
) -> None:
    status = running_fleet.status()
    assert sorted(status) == sorted(AGENTS)
    assert all(a["health"] == "healthy" and a["state"] == "running" for a in status.values())
    containers = docker_client.containers.list(filters={"label": f"{LABEL_FLEET}={running_fleet.name}"})
    assert sorted(c.labels[LABEL_AGENT] for c in containers) == sorted(AGENTS)
    for container in containers:
        assert container.labels[LABEL_MANAGED] == "true"
        assert len(container.labels[LABEL_CONFIG_HASH]) == 16
    workspace = running_fleet.folder / ".flotilla" / "agents" / "writer" / "workspace"
    for name in (
        "SOUL.md",
        "INSTRUCTIONS.md",
        "USER.md",
        "MEMORY.md",
        "INTERFACE.md",
        "HEARTBEAT.md",
        "AGENTS.md",
        "PROJECT.md",
        "SYSTEM.md",
    ):
        assert (workspace / name).is_file(), name
    assert (workspace / "memory").is_dir() and (workspace / "learnings").is_dir()


def test_ps_shows_the_engines_host_as_each_agents_node(
    running_fleet: RunningFleet, docker_client: Any
) -> None:
    host = docker_client.info()["Name"]
    assert {a["node"] for a in running_fleet.status().values()} == {host}
    assert host in running_fleet.flotilla("ps").stdout


def test_containers_are_hardened(running_fleet: RunningFleet, docker_client: Any) -> None:
    network = docker_client.networks.get(f"flotilla-{running_fleet.name}")
    assert network.attrs["Internal"] is True
    assert network.attrs["Options"].get("com.docker.network.bridge.enable_icc") == "false"
    for container in docker_client.containers.list(filters={"label": f"{LABEL_FLEET}={running_fleet.name}"}):
        attrs = container.attrs
        host = attrs["HostConfig"]
        assert attrs["Config"]["User"].split(":")[0] == "10001"
        assert host["ReadonlyRootfs"] is True
        assert host["CapDrop"] == ["ALL"]
        assert "no-new-privileges:true" in host["SecurityOpt"]
        assert host["Memory"] == 128 * 1024 * 1024
        assert host["NanoCpus"] == 500_000_000
        assert host["PidsLimit"] == 64
        assert not host["PortBindings"]
        assert list(attrs["NetworkSettings"]["Networks"]) == [network.name]
        env_names = {entry.split("=", 1)[0] for entry in attrs["Config"]["Env"]}
        assert not {n for n in env_names if any(s in n for s in ("KEY", "TOKEN", "SECRET", "PASSWORD"))}


def test_send_reaches_an_agent_and_streams_its_reply(running_fleet: RunningFleet, docker_client: Any) -> None:
    result = running_fleet.flotilla("send", "writer", "hello from the operator")
    assert "[test model]" in result.stdout
    assert "hello from the operator" in result.stdout
    # The history is in the agent's own storage: read it from inside its container.
    container = docker_client.containers.get(running_fleet.container_ids(docker_client)["writer"])
    code, output = container.exec_run(["/bin/sh", "-c", "cat /data/history/*.jsonl"], user="10001:10001")
    assert code == 0, output
    lines = [json.loads(line) for line in output.decode().splitlines() if line.strip()]
    assert any(line["role"] == "user" and "hello from the operator" in line["content"] for line in lines)


def test_an_agent_asks_a_peer_and_uses_the_answer(running_fleet: RunningFleet) -> None:
    request = 'ask researcher find_facts {"topic": "tides"}'
    result = running_fleet.flotilla("send", "coordinator", request)
    assert "ask_agent" in result.stdout
    assert "facts" in result.stdout
    assert "ERROR" not in result.stdout


def test_memory_survives_a_container_restart(running_fleet: RunningFleet, docker_client: Any) -> None:
    save = 'call memory_save {"text": "The harbour master is called Ines Duarte", "category": "people"}'
    running_fleet.flotilla("send", "researcher", save)
    container = docker_client.containers.get(running_fleet.container_ids(docker_client)["researcher"])
    container.restart(timeout=5)
    wait_for(lambda: running_fleet.status()["researcher"]["health"] == "healthy", "researcher to come back")
    found = running_fleet.flotilla("send", "researcher", 'call memory_search {"query": "harbour master"}')
    assert "Ines Duarte" in found.stdout


def test_a_killed_agent_is_restarted(running_fleet: RunningFleet, docker_client: Any) -> None:
    before = running_fleet.status()["writer"]["restarts"]
    container = docker_client.containers.get(running_fleet.container_ids(docker_client)["writer"])
    container.kill(signal="SIGKILL")
    wait_for(
        lambda: (
            running_fleet.status()["writer"]["restarts"] > before
            and running_fleet.status()["writer"]["health"] == "healthy"
        ),
        "the writer to be restarted and healthy",
    )
    events = running_fleet.flotilla("events", "--json").stdout
    assert "agent.restarted" in events


def test_an_orchestrator_restart_adopts_running_containers(
    running_fleet: RunningFleet, docker_client: Any
) -> None:
    before = running_fleet.container_ids(docker_client)
    endpoint = read_endpoint(StatePaths.for_fleet_file(running_fleet.folder / "fleet.yaml"))
    assert endpoint is not None
    subprocess.run(["kill", str(endpoint.pid)], check=True)
    wait_for(
        lambda: read_endpoint(StatePaths.for_fleet_file(running_fleet.folder / "fleet.yaml")) is None,
        "the orchestrator to stop",
    )
    assert running_fleet.container_ids(docker_client) == before, (
        "stopping the orchestrator left agents running"
    )
    running_fleet.up()
    assert running_fleet.container_ids(docker_client) == before, running_fleet.log()[-3000:]
    wait_for(lambda: all_healthy(running_fleet), "the adopted agents to check in again")


def test_apply_dry_run_shows_the_plan_and_changes_nothing(
    running_fleet: RunningFleet, docker_client: Any
) -> None:
    before = running_fleet.container_ids(docker_client)
    path = running_fleet.folder / "fleet.yaml"
    original = path.read_text()
    path.write_text(
        original.replace("role: the writer who", "role: the editor who").replace(
            "soul: You write plain", "resources: { memory: 160m }\n    soul: You write plain"
        )
    )
    try:
        plan = running_fleet.flotilla("apply", "--dry-run", check=False)
        assert plan.returncode == 5, plan.stdout + plan.stderr
        assert "~ recreate writer" in plan.stdout
        assert "resources.memory (new container)" in plan.stdout
        assert "role (the agent reloads its config)" in plan.stdout
        assert running_fleet.container_ids(docker_client) == before
    finally:
        path.write_text(original)


def test_adding_and_removing_an_agent_leaves_the_other_containers_alone(
    running_fleet: RunningFleet, docker_client: Any
) -> None:
    before = running_fleet.container_ids(docker_client)
    path = running_fleet.folder / "fleet.yaml"
    original = path.read_text()
    path.write_text(original + "\n  critic:\n    role: the critic who reads drafts\n")
    try:
        added = running_fleet.flotilla("apply")
        assert "+ create   critic" in added.stdout, added.stdout
        after = running_fleet.container_ids(docker_client)
        assert {a: after[a] for a in AGENTS} == before
        wait_for(lambda: running_fleet.status()["critic"]["health"] == "healthy", "critic to check in")
    finally:
        path.write_text(original)
    removed = running_fleet.flotilla("apply")
    assert "- remove   critic" in removed.stdout, removed.stdout
    assert running_fleet.container_ids(docker_client) == before


def test_validate_refuses_resources_the_engine_cannot_give(
    running_fleet: RunningFleet, tmp_path: Path
) -> None:
    text = (running_fleet.folder / "fleet.yaml").read_text()
    (tmp_path / "fleet.yaml").write_text(text.replace("memory: 128m, cpus: 0.5", "memory: 4096g, cpus: 4096"))
    shutil.copytree(running_fleet.folder / "examples", tmp_path / "examples")
    result = run_flotilla(tmp_path, "validate", "--runtime", "docker", file=None)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "defaults.resources.memory: memory '4096g' is more than the Docker engine has" in result.stderr
    assert "defaults.resources.cpus: cpus 4096 is more than the Docker engine has" in result.stderr


def test_down_removes_what_it_created_and_nothing_else(
    image: str, docker_client: Any, tmp_path: Path
) -> None:
    name = unique("down")
    (tmp_path / "fleet.yaml").write_text(f"version: 1\nfleet: {name}\nagents:\n  solo:\n    role: alone\n")
    fleet = RunningFleet(name, tmp_path, image)
    foreign = docker_client.containers.create(
        image,
        name=unique("foreign"),
        entrypoint=["python3", "-c", "import time; time.sleep(60)"],
        labels={"purpose": name},
    )
    try:
        fleet.up()
        assert set(fleet.container_ids(docker_client)) == {"solo"}
        result = fleet.flotilla("down")
        assert f"flotilla-{name}-solo" in result.stdout
        assert fleet.container_ids(docker_client) == {}
        assert not docker_client.networks.list(names=[f"flotilla-{name}"])
        foreign.reload()
        assert foreign.status == "created"
        assert (tmp_path / ".flotilla" / "agents" / "solo" / "workspace" / "SOUL.md").is_file()
    finally:
        foreign.remove(force=True)
        fleet.flotilla("down", "-v", check=False)


def test_a_name_clash_with_a_foreign_container_is_refused(
    image: str, docker_client: Any, tmp_path: Path
) -> None:
    name = unique("clash")
    (tmp_path / "fleet.yaml").write_text(f"version: 1\nfleet: {name}\nagents:\n  solo:\n    role: alone\n")
    fleet = RunningFleet(name, tmp_path, image)
    squatter = docker_client.containers.create(
        "flotilla/base:bookworm", name=f"flotilla-{name}-solo", entrypoint=["python3", "-c", "print()"]
    )
    try:
        result = fleet.up(check=False)
        assert result.returncode == 1
        assert (
            f"a container named flotilla-{name}-solo exists and was not created by Flotilla" in result.stderr
        )
        assert "Traceback" not in result.stderr
        squatter.reload()
        assert squatter.status == "created" and squatter.name == f"flotilla-{name}-solo"
    finally:
        fleet.flotilla("down", "-v", check=False)
        squatter.remove(force=True)


def test_a_fleet_of_the_same_name_from_another_folder_is_refused(
    running_fleet: RunningFleet, docker_client: Any, tmp_path: Path
) -> None:
    before = running_fleet.container_ids(docker_client)
    (tmp_path / "fleet.yaml").write_text(
        f"version: 1\nfleet: {running_fleet.name}\nagents:\n  solo:\n    role: a\n"
    )
    twin = RunningFleet(running_fleet.name, tmp_path, running_fleet.image)
    result = twin.up(check=False)
    assert result.returncode == 1
    assert f"a fleet named '{running_fleet.name}' already runs from {running_fleet.folder}" in result.stderr
    assert running_fleet.container_ids(docker_client) == before
