"""From inside an agent container, only the fleet's orchestrator port is reachable.

Every listener here is started by the test itself, on the host, and every address dialled is the
gateway of a Docker network the test created: no traffic leaves this machine.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker.errors
import pytest
from test_docker_backend import SLEEP, make_spec
from test_fleet_e2e import REPO, RunningFleet, all_healthy, wait_for

from orchestrator.backends.docker import DockerBackend, network_name
from orchestrator.backends.firewall import chain_name, install_fence, iptables_usable
from orchestrator.images.build import ImageBuildResult
from orchestrator.state.endpoint import read_endpoint
from orchestrator.state.paths import StatePaths
from tests.docker_fixtures import unique

pytestmark = pytest.mark.docker

PROBE = (
    "import socket, sys\n"
    "try:\n"
    "    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3).close()\n"
    "except OSError as exc:\n"
    "    print('refused', exc); sys.exit(1)\n"
    "print('connected')\n"
)


class Listener:
    """A TCP listener on the host that accepts and closes every connection."""

    def __init__(self, host: str, port: int = 0) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.sock.listen(16)
        self.port: int = self.sock.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()


@dataclass
class FencedFleet:
    name: str
    gateway: str
    agent_listener: Listener


@pytest.fixture
def needs_iptables() -> None:
    if not iptables_usable():
        pytest.skip("the fleet firewall needs root and iptables on the host")


@pytest.fixture
def backend(docker_client: Any, agent_image: ImageBuildResult) -> DockerBackend:
    return DockerBackend(docker_client, command=SLEEP)


@pytest.fixture
def fleets(backend: DockerBackend, docker_client: Any) -> Iterator[list[FencedFleet]]:
    """Two fleets, each with its network, its fence and a listener standing in for its orchestrator."""
    made: list[FencedFleet] = []
    listeners: list[Listener] = []
    try:
        for _ in range(2):
            name = unique("fence")
            gateway = backend.prepare_fleet(name)
            listener = Listener(gateway)
            listeners.append(listener)
            made.append(FencedFleet(name, gateway, listener))
            backend.guard_fleet(name, gateway, listener.port)
        yield made
    finally:
        for listener in listeners:
            listener.close()
        for fleet in made:
            for unit in backend.list({"io.flotilla.fleet": fleet.name}):
                backend.remove(unit.id)
            backend.teardown_fleet(fleet.name)
            with contextlib.suppress(docker.errors.NotFound):
                docker_client.networks.get(network_name(fleet.name)).remove()


@pytest.fixture
def agent(
    backend: DockerBackend, fleets: list[FencedFleet], agent_image: ImageBuildResult, tmp_path: Path
) -> Iterator[Any]:
    first = fleets[0]
    url = f"http://{first.gateway}:{first.agent_listener.port}"
    spec = make_spec(first.name, "scout", agent_image.tag, tmp_path / "scout", url)
    unit = backend.run(spec)
    try:
        yield backend._client.containers.get(unit.id)
    finally:
        backend.remove(unit.id)
        # Its volume and disk too: each run would otherwise leave both behind.
        backend.release_storage(first.name, spec.state_root, delete=True)


def reaches(container: Any, host: str, port: int) -> bool:
    result = container.exec_run(["python3", "-c", PROBE, host, str(port)])
    output = result.output.decode()
    assert ("connected" in output) or ("refused" in output), output
    return bool(result.exit_code == 0)


def test_a_host_service_on_all_addresses_is_out_of_reach(
    needs_iptables: None, fleets: list[FencedFleet], agent: Any
) -> None:
    host_service = Listener("0.0.0.0")
    try:
        assert not reaches(agent, fleets[0].gateway, host_service.port)
        assert host_service.accepted == 0
    finally:
        host_service.close()


def test_another_fleets_orchestrator_is_out_of_reach(
    needs_iptables: None, fleets: list[FencedFleet], agent: Any
) -> None:
    other = fleets[1]
    assert not reaches(agent, other.gateway, other.agent_listener.port)
    assert other.agent_listener.accepted == 0


def test_another_port_on_the_gateway_is_out_of_reach(
    needs_iptables: None, fleets: list[FencedFleet], agent: Any
) -> None:
    second_port = Listener(fleets[0].gateway)
    try:
        assert not reaches(agent, fleets[0].gateway, second_port.port)
    finally:
        second_port.close()


def test_the_orchestrator_agent_port_stays_reachable(
    needs_iptables: None, fleets: list[FencedFleet], agent: Any
) -> None:
    own = fleets[0]
    assert reaches(agent, own.gateway, own.agent_listener.port)
    assert own.agent_listener.accepted >= 1


HTTP_PROBE = (
    "import sys, urllib.request, urllib.error\n"
    "request = urllib.request.Request(sys.argv[1], headers={'authorization': 'Bearer ' + sys.argv[2]})\n"
    "try:\n"
    "    print(urllib.request.urlopen(request, timeout=5).status)\n"
    "except urllib.error.HTTPError as refused:\n"
    "    print(refused.code)\n"
)


def http_status(container: Any, url: str, token: str) -> int:
    result = container.exec_run(["python3", "-c", HTTP_PROBE, url, token])
    return int(result.output.decode().strip().splitlines()[-1])


def listing(chain: str) -> str | None:
    """`iptables -S chain`, or None when the chain does not exist."""
    done = subprocess.run(["iptables", "-S", chain], check=False, capture_output=True, text=True)
    return done.stdout if done.returncode == 0 else None


def test_the_fence_is_a_chain_of_its_own_removed_with_the_network(
    needs_iptables: None, backend: DockerBackend, fleets: list[FencedFleet]
) -> None:
    fleet = fleets[0]
    chain = chain_name(fleet.name)
    listed = listing(chain)
    assert listed is not None and f"--dport {fleet.agent_listener.port}" in listed
    # Installing again (an orchestrator restart adopting the fleet) changes nothing.
    backend.guard_fleet(fleet.name, fleet.gateway, fleet.agent_listener.port)
    assert listing(chain) == listed
    assert (listing("INPUT") or "").count(f"-j {chain}") == 1
    assert (listing("DOCKER-USER") or "").count(f"-j {chain}") == 1
    backend.teardown_fleet(fleet.name)
    assert listing(chain) is None
    assert chain not in (listing("INPUT") or "")
    assert chain not in (listing("DOCKER-USER") or "")


def test_a_jump_left_for_an_earlier_bridge_is_replaced(
    needs_iptables: None, backend: DockerBackend, fleets: list[FencedFleet]
) -> None:
    fleet = fleets[0]
    chain = chain_name(fleet.name)
    install_fence(fleet.name, "br-0ld0ld0ld0l", fleet.gateway, fleet.agent_listener.port)
    assert "br-0ld0ld0ld0l" in (listing("INPUT") or "")
    backend.guard_fleet(fleet.name, fleet.gateway, fleet.agent_listener.port)
    jumps = [line for line in (listing("INPUT") or "").splitlines() if line.endswith(f"-j {chain}")]
    assert len(jumps) == 1 and "br-0ld0ld0ld0l" not in jumps[0]


def test_a_real_fleet_is_fenced_from_up_to_down(
    needs_iptables: None, agent_image: ImageBuildResult, docker_client: Any, tmp_path: Path
) -> None:
    """`flotilla up`: agents check in through the fence, a host service stays out of reach; `down` lifts it."""
    name = unique("fenced")
    folder = tmp_path / "fleet"
    shutil.copytree(REPO / "examples", folder / "examples")
    shutil.copy(REPO / "PROJECT.md", folder / "PROJECT.md")
    (folder / "fleet.yaml").write_text(
        (REPO / "fleet.yaml").read_text().replace("fleet: demo", f"fleet: {name}")
    )
    fleet = RunningFleet(name, folder, agent_image.tag)
    host_service = Listener("0.0.0.0")
    try:
        fleet.up()
        wait_for(lambda: all_healthy(fleet), "every agent to check in through the fence")
        writer = docker_client.containers.get(fleet.container_ids(docker_client)["writer"])
        gateway = docker_client.networks.get(network_name(name)).attrs["IPAM"]["Config"][0]["Gateway"]
        assert reaches(writer, gateway, fleet.port)
        assert not reaches(writer, gateway, host_service.port)
        assert listing(chain_name(name)) is not None
        # An operator token that leaked into a container is of no use from inside it.
        operator_token = read_endpoint(StatePaths.for_fleet_file(folder / "fleet.yaml"))
        assert operator_token is not None
        fleet_url = f"http://{gateway}:{fleet.port}/api/v1/fleet"
        assert http_status(writer, fleet_url, operator_token.token) == 404
        assert http_status(writer, f"http://{gateway}:{fleet.port}/agent/v1/config", "not-a-token") == 401
        with contextlib.closing(fleet.client()) as client:
            assert client.get("/api/v1/fleet")["warnings"] == []
    finally:
        host_service.close()
        fleet.flotilla("down", "-v", check=False)
    assert listing(chain_name(name)) is None
    assert chain_name(name) not in (listing("INPUT") or "")
