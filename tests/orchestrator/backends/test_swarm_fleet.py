"""The example fleet on a live single-node Docker Swarm, driven through the `flotilla` command line.

The swarm is this machine's engine in swarm mode (`.ci/run` initialises it on loopback). One
fleet is started for the module and removed at the end; the last test checks that `down`
leaves no service, network, secret or (with -v) volume behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_fleet_e2e import AGENTS, REPO, RunningFleet, unique, wait_for

from orchestrator.backends.base import LABEL_AGENT, LABEL_FLEET
from orchestrator.backends.swarm import LABEL_COMPONENT, agent_network_name, volume_name
from orchestrator.state.endpoint import read_endpoint
from orchestrator.state.paths import StatePaths
from orchestrator.testing.cli import run_flotilla

pytestmark = pytest.mark.docker


class SwarmFleet(RunningFleet):
    def up(self, check: bool = True) -> subprocess.CompletedProcess[str]:
        self.port = self.port or _port()
        return self.flotilla(
            "up", "-d", "--runtime", "swarm", "--port", str(self.port), "--image", self.image, check=check
        )

    def services(self, docker_client: Any, component: str = "agent") -> dict[str, Any]:
        found = docker_client.services.list(
            filters={"label": [f"{LABEL_FLEET}={self.name}", f"{LABEL_COMPONENT}={component}"]}
        )
        return {s.attrs["Spec"]["Labels"][LABEL_AGENT]: s for s in found}

    def running_tasks(self, docker_client: Any, agent: str) -> list[Any]:
        labels = [f"{LABEL_FLEET}={self.name}", f"{LABEL_AGENT}={agent}", f"{LABEL_COMPONENT}=agent"]
        return list(
            docker_client.containers.list(filters={"label": labels, "status": "running"}, ignore_removed=True)
        )

    def task_container(self, docker_client: Any, agent: str) -> Any:
        containers = self.running_tasks(docker_client, agent)
        assert len(containers) == 1, containers
        return containers[0]


def _port() -> int:
    from test_fleet_e2e import _free_port

    return _free_port()


@pytest.fixture(scope="module")
def swarm(docker_client: Any) -> Any:
    state = (docker_client.info().get("Swarm") or {}).get("LocalNodeState")
    if state != "active":
        if os.environ.get("CI"):
            pytest.fail("CI needs a swarm: .ci/run runs `docker swarm init` on loopback")
        pytest.skip("this engine is not in swarm mode (docker swarm init --advertise-addr 127.0.0.1)")
    return docker_client


@pytest.fixture(scope="module")
def image(docker_client: Any) -> Iterator[str]:
    tag = f"{unique('swarm-image')}:latest"
    yield tag
    docker_client.images.remove(tag)


@pytest.fixture(scope="module")
def fleet(swarm: Any, image: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SwarmFleet]:
    name = unique("swarm")
    folder = tmp_path_factory.mktemp(name)
    import shutil

    shutil.copytree(REPO / "examples", folder / "examples")
    shutil.copy(REPO / "PROJECT.md", folder / "PROJECT.md")
    (folder / "fleet.yaml").write_text(
        (REPO / "fleet.yaml").read_text().replace("fleet: demo", f"fleet: {name}")
    )
    running = SwarmFleet(name, folder, image)
    try:
        running.up()
        wait_for(
            lambda: all(a["health"] == "healthy" for a in running.status().values()), "agents to check in"
        )
        yield running
    finally:
        running.flotilla("down", "-v", check=False)


def test_each_agent_is_one_hardened_service_on_its_own_internal_network(
    fleet: SwarmFleet, swarm: Any
) -> None:
    services = fleet.services(swarm)
    assert sorted(services) == sorted(AGENTS)
    for agent, service in services.items():
        spec = service.attrs["Spec"]
        assert spec["Mode"]["Replicated"]["Replicas"] == 1
        container = spec["TaskTemplate"]["ContainerSpec"]
        assert container["User"] == "10001:10001"
        assert container["ReadOnly"] is True
        assert container["CapabilityDrop"] == ["ALL"]
        limits = spec["TaskTemplate"]["Resources"]["Limits"]
        assert limits["MemoryBytes"] == 128 * 1024 * 1024
        assert limits["NanoCPUs"] == 500_000_000
        assert limits["Pids"] == 64
        assert not (spec.get("EndpointSpec") or {}).get("Ports")
        (secret,) = container["Secrets"]
        assert secret["File"]["Name"] == "flotilla-token" and secret["File"]["Mode"] == 0o400
        env = {e.split("=", 1)[0] for e in container["Env"]}
        assert not {n for n in env if any(word in n for word in ("KEY", "SECRET", "PASSWORD"))}
        ((network),) = spec["TaskTemplate"]["Networks"]
        attrs = swarm.networks.get(network["Target"]).attrs
        assert attrs["Name"] == agent_network_name(fleet.name, agent)
        assert attrs["Internal"] is True and attrs["Driver"] == "overlay"


def test_services_name_their_image_so_no_task_start_asks_a_registry(fleet: SwarmFleet, swarm: Any) -> None:
    """By tag, a node asks the registry at each task start (here: a DNS query that leaves the
    machine and takes as long as the resolver does); by image ID it starts from what it holds."""
    image_id = swarm.images.get(fleet.image).id
    for component in ("agent", "relay"):
        for agent, service in fleet.services(swarm, component).items():
            reference = service.attrs["Spec"]["TaskTemplate"]["ContainerSpec"]["Image"]
            assert reference == image_id, (component, agent, reference)


def test_ps_shows_the_runtime_and_each_agents_node(fleet: SwarmFleet, swarm: Any) -> None:
    hostname = swarm.info()["Name"]
    status = fleet.status()
    assert {a["node"] for a in status.values()} == {hostname}
    table = fleet.flotilla("ps").stdout
    assert "(swarm)" in table and "node" in table


def test_send_and_a_peer_ask(fleet: SwarmFleet) -> None:
    result = fleet.flotilla("send", "writer", "hello from the operator")
    assert "[test model]" in result.stdout and "hello from the operator" in result.stdout
    result = fleet.flotilla("send", "coordinator", 'ask researcher find_facts {"topic": "tides"}')
    assert "ask_agent" in result.stdout and "facts" in result.stdout and "ERROR" not in result.stdout


def test_an_agent_reaches_only_its_relay(fleet: SwarmFleet, swarm: Any) -> None:
    bridge = swarm.networks.get("docker_gwbridge").attrs["IPAM"]["Config"][0]["Gateway"]
    probe = (
        "import socket,sys\n"
        "def reach(host, port):\n"
        "    try:\n"
        "        socket.create_connection((host, port), timeout=3).close(); return 'open'\n"
        "    except OSError as exc: return type(exc).__name__\n"
        f"print(reach('{bridge}', {fleet.port}))\n"
        f"print(reach('flotilla-orchestrator', {fleet.port}))\n"
        f"print(reach('flotilla-{fleet.name}-writer-relay', {fleet.port}))\n"
        f"print(reach('flotilla-{fleet.name}-writer', 1))\n"
    )
    container = fleet.task_container(swarm, "researcher")
    code, output = container.exec_run(["python3", "-c", probe])
    direct, relay, other_relay, other_agent = output.decode().split()
    assert code == 0
    assert direct != "open"  # the host's address, orchestrator port included, is unreachable
    assert relay == "open"  # its own relay answers as flotilla-orchestrator
    assert other_relay != "open" and other_agent != "open"  # other agents' networks are not its own


def test_a_killed_task_is_rescheduled_and_no_message_is_lost(fleet: SwarmFleet, swarm: Any) -> None:
    container = fleet.task_container(swarm, "writer")
    container.kill(signal="SIGKILL")
    # Sent while the task is down: the item waits in the inbox for the rescheduled task.
    result = fleet.flotilla("send", "writer", "are you back?", timeout=180)
    assert "are you back?" in result.stdout
    wait_for(lambda: len(fleet.running_tasks(swarm, "writer")) == 1, "one task of the writer")
    assert fleet.task_container(swarm, "writer").id != container.id
    wait_for(lambda: fleet.status()["writer"]["health"] == "healthy", "the writer to check in again")


def _write_marker(fleet: SwarmFleet, swarm: Any, agent: str, text: str) -> None:
    code, output = fleet.task_container(swarm, agent).exec_run(
        ["sh", "-c", f"echo {text} > /data/marker"], user="10001:10001"
    )
    assert code == 0, output


def _marker(fleet: SwarmFleet, swarm: Any, agent: str) -> str:
    code, output = fleet.task_container(swarm, agent).exec_run(["stat", "-c", "%u %a", "/data/marker"])
    assert code == 0, output
    owner = output.decode().strip()
    code, output = fleet.task_container(swarm, agent).exec_run(["cat", "/data/marker"])
    assert code == 0, output
    return f"{owner} {output.decode().strip()}"


def test_logs_show_the_agents_own_output(fleet: SwarmFleet) -> None:
    lines = fleet.flotilla("logs", "--tail", "500", "writer").stdout
    assert f"agent writer of fleet {fleet.name} started" in lines


def test_restart_starts_a_new_task_and_keeps_the_storage(fleet: SwarmFleet, swarm: Any) -> None:
    _write_marker(fleet, swarm, "writer", "kept-across-restart")
    marker = _marker(fleet, swarm, "writer")
    assert marker.startswith("10001 ") and marker.endswith(" kept-across-restart")
    before = fleet.task_container(swarm, "writer").id
    assert "writer restarted" in fleet.flotilla("restart", "writer").stdout
    # The old task has ended by the time `restart` returns: never two tasks on one volume.
    running = [c.id for c in fleet.running_tasks(swarm, "writer")]
    assert before not in running and len(running) <= 1
    wait_for(lambda: len(fleet.running_tasks(swarm, "writer")) == 1, "a new task of the writer")
    assert fleet.task_container(swarm, "writer").id != before
    assert _marker(fleet, swarm, "writer") == marker
    wait_for(lambda: fleet.status()["writer"]["health"] == "healthy", "the writer to check in again")


def _learning(fleet: SwarmFleet, swarm: Any, agent: str, text: str | None = None) -> str:
    """A file of the agent's own storage (its learnings), written or read inside its task."""
    path = "/data/workspace/learnings/moved.md"
    command = f"mkdir -p /data/workspace/learnings && echo {text} > {path}" if text else f"cat {path}"
    code, output = fleet.task_container(swarm, agent).exec_run(["sh", "-c", command], user="10001:10001")
    assert code == 0, output
    return str(output.decode().strip())


def _mounted_volume(fleet: SwarmFleet, swarm: Any, agent: str) -> str:
    mounts = fleet.services(swarm)[agent].attrs["Spec"]["TaskTemplate"]["ContainerSpec"]["Mounts"]
    return str(next(m["Source"] for m in mounts if m["Target"] == "/data"))


def _fleet_volumes(fleet: SwarmFleet, swarm: Any) -> set[str]:
    return {v.name for v in swarm.volumes.list() if v.name.startswith(f"flotilla-{fleet.name}-")}


def _recalls(fleet: SwarmFleet, agent: str, words: str, fact: str) -> bool:
    result = fleet.flotilla("memory", "search", agent, words, "--json", check=False)
    return result.returncode == 0 and fact in result.stdout


def test_move_carries_the_agents_state_over_its_channel(fleet: SwarmFleet, swarm: Any) -> None:
    """The one node here is both source and target: the agent runs on a fresh volume, is handed
    its snapshot over its link, and its old volume goes, so what it knew survives only if the
    channel carried it."""
    node = swarm.info()["Name"]
    fact = "The relay station on the ridge opens at dawn"
    fleet.flotilla("memory", "add", "researcher", fact)
    _learning(fleet, swarm, "researcher", "moved-with-its-agent")
    old_volume = _mounted_volume(fleet, swarm, "researcher")
    service_before = fleet.services(swarm)["researcher"].id

    result = fleet.flotilla("move", "researcher", "--node", node, timeout=400)

    assert f"researcher moved to {node} with its state" in result.stdout, result.stdout
    print(f"move on swarm: {result.stdout.strip()}")
    assert f"removed volume {old_volume}" in result.stdout
    service = fleet.services(swarm)["researcher"]
    assert service.id != service_before
    constraints = service.attrs["Spec"]["TaskTemplate"]["Placement"]["Constraints"]
    assert constraints == [f"node.hostname=={node}"]
    new_volume = _mounted_volume(fleet, swarm, "researcher")
    assert new_volume != old_volume
    names = {v.name for v in swarm.volumes.list()}
    assert new_volume in names and old_volume not in names
    wait_for(lambda: len(fleet.running_tasks(swarm, "researcher")) == 1, "the moved researcher's task")
    assert _learning(fleet, swarm, "researcher") == "moved-with-its-agent"
    assert _recalls(fleet, "researcher", "relay station ridge", fact)
    wait_for(lambda: fleet.status()["researcher"]["health"] == "healthy", "the researcher to check in")
    assert fleet.status()["researcher"]["node"] == node
    assert "[test model]" in fleet.flotilla("send", "researcher", "settled in?").stdout
    assert not (fleet.folder / ".flotilla" / "moves" / "researcher").exists()


def test_a_move_that_fails_leaves_the_agent_where_it_was_with_its_storage(
    fleet: SwarmFleet, swarm: Any
) -> None:
    """Given no time to answer on the target, the agent is brought back on its old volume."""
    node = swarm.info()["Name"]
    fact = "The writer keeps the spare key under the blue stone"
    fleet.flotilla("memory", "add", "writer", fact)
    _learning(fleet, swarm, "writer", "stays-put")
    old_volume = _mounted_volume(fleet, swarm, "writer")
    volumes_before = _fleet_volumes(fleet, swarm)

    result = fleet.flotilla("move", "writer", "--node", node, "--within", "0", check=False, timeout=400)

    assert result.returncode != 0
    out = result.stdout + result.stderr
    assert f"moving writer to {node} failed" in out and f"old storage {old_volume}" in out, out
    assert _mounted_volume(fleet, swarm, "writer") == old_volume
    assert _fleet_volumes(fleet, swarm) == volumes_before  # the fresh volume went
    wait_for(lambda: len(fleet.running_tasks(swarm, "writer")) == 1, "the writer's task on its old volume")
    assert _learning(fleet, swarm, "writer") == "stays-put"
    assert _recalls(fleet, "writer", "spare key blue stone", fact)
    wait_for(lambda: fleet.status()["writer"]["health"] == "healthy", "the writer to check in again")
    assert "[test model]" in fleet.flotilla("send", "writer", "still home?", timeout=180).stdout
    placements = fleet.folder / ".flotilla" / "placements.json"
    assert not placements.exists() or "writer" not in placements.read_text()


def test_move_to_an_unknown_node_changes_nothing(fleet: SwarmFleet, swarm: Any) -> None:
    before = fleet.services(swarm)["writer"].id
    result = fleet.flotilla("move", "writer", "--node", "no-such-node", check=False)
    assert result.returncode != 0
    assert "no ready swarm node named 'no-such-node'" in result.stdout + result.stderr
    assert fleet.services(swarm)["writer"].id == before


def test_an_orchestrator_restart_adopts_the_services(fleet: SwarmFleet, swarm: Any) -> None:
    before = {agent: s.id for agent, s in fleet.services(swarm).items()}
    paths = StatePaths.for_fleet_file(fleet.folder / "fleet.yaml")
    endpoint = read_endpoint(paths)
    assert endpoint is not None
    os.kill(endpoint.pid, signal.SIGTERM)
    wait_for(lambda: read_endpoint(paths) is None, "the orchestrator to stop")
    fleet.up()
    assert {agent: s.id for agent, s in fleet.services(swarm).items()} == before, fleet.log()[-3000:]
    wait_for(lambda: all(a["health"] == "healthy" for a in fleet.status().values()), "agents to check in")
    assert "[test model]" in fleet.flotilla("send", "researcher", "still there?").stdout


BACKUP: dict[str, Path] = {}
RESTORED_FACT = "The lighthouse keeper's cat is called Biscuit"


def test_a_backup_is_taken_while_the_swarm_fleet_runs(
    fleet: SwarmFleet, tmp_path_factory: pytest.TempPathFactory
) -> None:
    fleet.flotilla("memory", "add", "writer", RESTORED_FACT)
    archive = tmp_path_factory.mktemp("swarm-backup") / "fleet.tar"
    fleet.flotilla("backup", "-o", str(archive), timeout=300)
    verified = run_flotilla(archive.parent, "verify", str(archive), file=None, timeout=300)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    BACKUP["archive"] = archive


def test_down_leaves_nothing_behind(fleet: SwarmFleet, swarm: Any, tmp_path: Path) -> None:
    fleet.flotilla("down", "-v")
    label = {"label": f"{LABEL_FLEET}={fleet.name}"}
    assert swarm.services.list(filters=label) == []
    assert [n.name for n in swarm.networks.list(filters=label)] == []
    assert swarm.secrets.list(filters=label) == []
    wait_for(lambda: not swarm.containers.list(all=True, filters=label), "task containers to go")
    names = {v.name for v in swarm.volumes.list()}
    assert not {volume_name(fleet.name, agent) for agent in AGENTS} & names
    assert not [name for name in names if name.startswith(f"flotilla-{fleet.name}-")]  # moved ones too


def test_the_backup_is_restored_into_a_fresh_swarm_fleet(
    fleet: SwarmFleet, swarm: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """After `down -v` (nothing of the fleet left on the swarm), the archive restored into an
    empty folder and started on swarm: the agents are handed their own files over their links."""
    if "archive" not in BACKUP:
        pytest.skip("needs the backup taken earlier in this module")
    restored = SwarmFleet(fleet.name, tmp_path_factory.mktemp("swarm-restored"), fleet.image)
    result = restored.flotilla("restore", str(BACKUP["archive"]), timeout=300)
    assert "restored fleet" in result.stdout
    try:
        started = time.monotonic()
        restored.up()
        wait_for(
            lambda: _recalls(restored, "writer", "lighthouse keeper cat", RESTORED_FACT),
            "the restored writer to recall its fact",
        )
        print(f"restore on swarm: the writer recalled its fact {time.monotonic() - started:.1f}s after up")
        assert _recalls(
            restored, "researcher", "relay station ridge", "The relay station on the ridge opens at dawn"
        )
        wait_for(
            lambda: not (restored.folder / ".flotilla" / "restore" / "writer").exists(), "the restore to end"
        )
        wait_for(
            lambda: all(a["health"] == "healthy" for a in restored.status().values()), "agents to check in"
        )
        assert (
            "[test model]"
            in restored.flotilla("send", "writer", "back from the archive?", timeout=180).stdout
        )
    finally:
        restored.flotilla("down", "-v", check=False)
